#include "kernels/reference/bias_add.hpp"

#include <boost/test/unit_test.hpp>

#include <vector>

using namespace dynamo::kernels::ref;

BOOST_AUTO_TEST_SUITE(bias_add_op)

BOOST_AUTO_TEST_CASE(adds_the_bias_to_every_row_and_leaves_the_stride_gap_alone) {
  // Two rows of 3 values, 4 apart: the 4th value of each row is not part of it.
  std::vector<float> y = {1.0f, 2.0f, 3.0f, 9.0f, /**/ -1.0f, 0.5f, 0.0f, 9.0f};
  const std::vector<float> bias = {0.25f, -2.0f, 10.0f};
  bias_add({y.data(), 4, bias.data(), 2, 3});
  BOOST_TEST(y == (std::vector<float>{1.25f, 0.0f, 13.0f, 9.0f, -0.75f, -1.5f, 10.0f, 9.0f}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
