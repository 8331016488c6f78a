#include "kernels/reference/embedding.hpp"
#include "kernels/reference/repack.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>

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

BOOST_AUTO_TEST_CASE(a_table_with_a_lane_copy_is_read_from_the_copy_alone) {
  // The model releases a repacked table's file pages; the lookup must not
  // need them. 576 (SmolLM2's width): the 32-value block types' tail too.
  const uint32_t vocab = 7;
  const uint32_t ids[] = {6, 0, 3};
  for (const uint32_t k : {512u, 576u}) {
    for (const tensor_type t : {tensor_type::q4_0, tensor_type::q4_1, tensor_type::q5_0, tensor_type::q5_1,
                                tensor_type::iq4_nl, tensor_type::q8_0, tensor_type::iq4_xs, tensor_type::q4_k,
                                tensor_type::q5_k, tensor_type::q6_k}) {
      if (!lanes_fit(t, k)) continue;
      const test::owned_weight table(t, k, vocab, 23);
      const std::vector<std::byte> lanes = repack_lanes(table.view);
      weight_matrix copy_only = table.view;
      copy_only.data = nullptr;
      copy_only.lanes = lanes.data();
      copy_only.lanes_stride = lanes_row_bytes(t, k);
      std::vector<float> out(3 * k);
      embedding({copy_only, ids, 3, out.data(), k});
      for (uint32_t i = 0; i < 3; ++i) {
        BOOST_TEST_REQUIRE(std::memcmp(out.data() + i * k, table.dequantized.data() + ids[i] * k, k * sizeof(float)) == 0,
                           type_name(t) << " k " << k);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
