#include "kernels/reference/moe.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

using namespace dynamo::kernels::ref;

BOOST_AUTO_TEST_SUITE(moe_op)

BOOST_AUTO_TEST_CASE(routes_each_token_to_its_top_k_experts_with_softmax_weights) {
  // Token 0: experts 2 > 0 > 3 > 1; token 1: expert 1 and a tie between 0 and 3.
  const std::vector<float> logits = {1.0f, -1.0f, 3.0f, 0.5f, /**/ 0.0f, 2.0f, -5.0f, 0.0f};
  std::vector<uint32_t> expert(4);
  std::vector<float> weight(4);
  moe_route({logits.data(), 4, 2, 4, 2, false, 1.0f, expert.data(), weight.data()});
  const double z0 = std::exp(1.0) + std::exp(-1.0) + std::exp(3.0) + std::exp(0.5);
  BOOST_TEST(expert[0] == 2u);
  BOOST_TEST(expert[1] == 0u);
  BOOST_TEST(weight[0] == std::exp(3.0) / z0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(weight[1] == std::exp(1.0) / z0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(expert[2] == 1u);
  BOOST_TEST(expert[3] == 0u); // ties go to the lower id
}

BOOST_AUTO_TEST_CASE(renormalised_weights_sum_to_the_scale) {
  const std::vector<float> logits = {0.3f, 1.7f, -0.2f, 0.9f, 2.2f, -1.0f};
  std::vector<uint32_t> expert(3);
  std::vector<float> weight(3);
  moe_route({logits.data(), 6, 1, 6, 3, true, 2.5f, expert.data(), weight.data()});
  BOOST_TEST(expert[0] == 4u);
  BOOST_TEST(expert[1] == 1u);
  BOOST_TEST(expert[2] == 3u);
  BOOST_TEST(weight[0] + weight[1] + weight[2] == 2.5f, boost::test_tools::tolerance(1e-6f));
  // Ratios are those of the softmax: exp(2.2 - 1.7).
  BOOST_TEST(weight[0] / weight[1] == std::exp(0.5f), boost::test_tools::tolerance(1e-5f));
}

BOOST_AUTO_TEST_CASE(strided_rows_and_k_equal_to_all_experts) {
  // Rows are 5 floats apart; only the first 3 are logits.
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 99.0f, 99.0f, /**/ 5.0f, 5.0f, 5.0f, 99.0f, 99.0f};
  std::vector<uint32_t> expert(6);
  std::vector<float> weight(6);
  moe_route({logits.data(), 5, 2, 3, 3, true, 1.0f, expert.data(), weight.data()});
  BOOST_TEST((expert == std::vector<uint32_t>{2, 1, 0, 0, 1, 2}));
  for (int j = 3; j < 6; ++j) BOOST_TEST(weight[j] == 1.0f / 3.0f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()
