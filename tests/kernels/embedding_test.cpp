#include "kernels/reference/embedding.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

BOOST_AUTO_TEST_SUITE(embedding_op)

BOOST_AUTO_TEST_CASE(rows_are_gathered_and_dequantized_for_every_type) {
  const uint32_t k = 256, vocab = 11;
  const uint32_t ids[] = {3, 0, 10, 3};
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = static_cast<tensor_type>(id);
    if (!is_computed(t)) continue;
    const test::owned_weight table(t, k, vocab, 17);
    const uint32_t stride = k + 3;
    std::vector<float> out(4 * stride, -1.0f);
    embedding({table.view, ids, 4, out.data(), stride});
    for (uint32_t i = 0; i < 4; ++i) {
      for (uint32_t j = 0; j < k; ++j) {
        BOOST_TEST_REQUIRE(out[i * stride + j] == table.dequantized[ids[i] * k + j], type_name(t));
      }
      BOOST_TEST(out[i * stride + k] == -1.0f); // stride padding untouched
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
