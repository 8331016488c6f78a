// runtime/protocol/kv_transfer.hpp: the two layout names and their offsets.
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_transfer.hpp"

#include <boost/test/unit_test.hpp>

#include <ostream>
#include <set>

namespace dynamo {
inline std::ostream& boost_test_print_type(std::ostream& os, errc e) { return os << to_string(e); }
namespace protocol {
inline std::ostream& boost_test_print_type(std::ostream& os, disagg_role r) {
  return os << static_cast<int>(r);
}
} // namespace protocol
} // namespace dynamo

using namespace dynamo;
using namespace dynamo::protocol;

BOOST_AUTO_TEST_SUITE(kv_layout_names)

BOOST_AUTO_TEST_CASE(head_major_offsets_follow_layer_kv_head_token_dim) {
  // 2 layers, 4 tokens, 2 heads, 8 dims, f16: 512 bytes like block-major.
  auto l = make_head_major_layout(2, 4, 2, 8, kv_dtype::f16);
  BOOST_TEST(l.name == "head-major");
  BOOST_TEST(l.bytes_per_block == 512u);
  BOOST_TEST(static_cast<bool>(validate(l)));
  BOOST_TEST(head_major_offset(l, 0, 0, 0, 0, 1) == 2u);
  BOOST_TEST(head_major_offset(l, 0, 0, 1, 0, 0) == 16u);  // next token
  BOOST_TEST(head_major_offset(l, 0, 0, 0, 1, 0) == 64u);  // next head
  BOOST_TEST(head_major_offset(l, 0, 1, 0, 0, 0) == 128u); // V after K
  BOOST_TEST(head_major_offset(l, 1, 0, 0, 0, 0) == 256u); // next layer
  BOOST_TEST(head_major_offset(l, 1, 1, 3, 1, 7) == 510u); // last element
  BOOST_TEST(element_offset(l, 0, 0, 0, 1, 0).value_or(0) == 64u);
  auto b = make_block_major_layout(2, 4, 2, 8, kv_dtype::f16);
  BOOST_TEST(element_offset(b, 0, 0, 0, 1, 0).value_or(0) == 16u);
  b.name = "layer-major";
  BOOST_TEST(!element_offset(b, 0, 0, 0, 1, 0).has_value());
}

BOOST_AUTO_TEST_CASE(head_major_offsets_cover_the_block_exactly_once) {
  auto l = make_head_major_layout(2, 3, 2, 4, kv_dtype::f32);
  std::set<uint64_t> seen;
  for (uint32_t layer = 0; layer < 2; ++layer)
    for (uint32_t kv = 0; kv < 2; ++kv)
      for (uint32_t t = 0; t < 3; ++t)
        for (uint32_t h = 0; h < 2; ++h)
          for (uint32_t d = 0; d < 4; ++d) {
            const uint64_t off = head_major_offset(l, layer, kv, t, h, d);
            BOOST_REQUIRE(off % 4 == 0 && off < l.bytes_per_block);
            BOOST_REQUIRE(seen.insert(off).second);
          }
  BOOST_TEST(seen.size() * 4 == l.bytes_per_block);
}

BOOST_AUTO_TEST_CASE(names_must_match_even_with_equal_dimensions) {
  auto a = make_block_major_layout(2, 4, 2, 8, kv_dtype::f16);
  auto h = make_head_major_layout(2, 4, 2, 8, kv_dtype::f16);
  BOOST_TEST(a.bytes_per_block == h.bytes_per_block);
  auto r = check_compatible(h, a);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  BOOST_TEST(message_of(r.error()) == "layout mismatch: name head-major != block-major");
  BOOST_TEST(static_cast<bool>(check_compatible(h, make_head_major_layout(2, 4, 2, 8, kv_dtype::f16))));
}

BOOST_AUTO_TEST_CASE(disagg_params_round_trip) {
  disagg_params p;
  p.role = disagg_role::decode;
  kv_prefill_result r;
  r.hold_id = "req-7";
  r.block_ids = {4, 2, 9};
  r.num_tokens = 10;
  r.first_token = 77;
  r.layout = make_head_major_layout(2, 4, 2, 8, kv_dtype::f32);
  p.prefill = r;
  auto back = decode<disagg_params>(encode(p));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->role == disagg_role::decode);
  BOOST_REQUIRE(back->prefill.has_value());
  BOOST_TEST(back->prefill->block_ids == r.block_ids);
  BOOST_TEST(back->prefill->first_token == 77u);
  BOOST_TEST((back->prefill->layout == r.layout));
  BOOST_TEST(!decode<disagg_params>(bytes{0xc1}));
}

BOOST_AUTO_TEST_SUITE_END()
