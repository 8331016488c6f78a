// The ggml type table (geometry, names, which ids are computed) and the
// fp16/bf16 conversions.
#include "kernels/reference/tensor_type.hpp"

#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <limits>

using namespace dynamo::kernels::ref;

BOOST_AUTO_TEST_SUITE(tensor_types)

BOOST_AUTO_TEST_CASE(geometry_matches_ggml) {
  // (id, elements, bytes) from ggml-common.h's static_asserts.
  const struct {
    uint32_t id, elems, bytes;
    const char* name;
  } want[] = {{0, 1, 4, "F32"},       {1, 1, 2, "F16"},       {2, 32, 18, "Q4_0"},   {3, 32, 20, "Q4_1"},
              {6, 32, 22, "Q5_0"},    {7, 32, 24, "Q5_1"},    {8, 32, 34, "Q8_0"},   {12, 256, 144, "Q4_K"},
              {13, 256, 176, "Q5_K"}, {14, 256, 210, "Q6_K"}, {20, 32, 18, "IQ4_NL"}, {23, 256, 136, "IQ4_XS"},
              {30, 1, 2, "BF16"},     {10, 256, 84, "Q2_K"},  {42, 64, 18, "Q2_0"}};
  for (const auto& w : want) {
    const auto g = geometry_of(static_cast<tensor_type>(w.id));
    BOOST_REQUIRE_MESSAGE(g, "id " << w.id);
    BOOST_TEST(g->block_elems == w.elems, "id " << w.id);
    BOOST_TEST(g->block_bytes == w.bytes, "id " << w.id);
    BOOST_TEST(g->name == w.name);
  }
  BOOST_TEST(!geometry_of(static_cast<tensor_type>(4)));  // removed Q4_2
  BOOST_TEST(!geometry_of(static_cast<tensor_type>(9)));  // Q8_1: size changed between versions
  BOOST_TEST(!geometry_of(static_cast<tensor_type>(999)));
  BOOST_TEST(type_name(static_cast<tensor_type>(999)) == "type999");
  BOOST_TEST(type_name(tensor_type::q5_k) == "Q5_K");
}

BOOST_AUTO_TEST_CASE(names_parse_in_any_case) {
  BOOST_TEST((type_from_name("q4_k") == tensor_type::q4_k));
  BOOST_TEST((type_from_name("IQ4_XS") == tensor_type::iq4_xs));
  BOOST_TEST((type_from_name("bf16") == tensor_type::bf16));
  BOOST_TEST((type_from_name("Q2_K") == static_cast<tensor_type>(10)));
  BOOST_TEST(!type_from_name("q4_k_m"));
  BOOST_TEST(!type_from_name(""));
}

BOOST_AUTO_TEST_CASE(only_the_named_types_are_computed) {
  int computed = 0;
  for (uint32_t id = 0; id < 64; ++id) computed += is_computed(static_cast<tensor_type>(id));
  BOOST_TEST(computed == 13);
  BOOST_TEST(is_computed(tensor_type::q5_1));
  BOOST_TEST(!is_computed(static_cast<tensor_type>(10))); // Q2_K: sized, not computed
}

BOOST_AUTO_TEST_CASE(row_bytes_needs_whole_blocks) {
  BOOST_TEST(*row_bytes(tensor_type::q4_1, 576) == 18u * 20u);
  BOOST_TEST(*row_bytes(tensor_type::q5_0, 576) == 18u * 22u);
  BOOST_TEST(*row_bytes(tensor_type::q6_k, 512) == 420u);
  BOOST_TEST(*row_bytes(tensor_type::f16, 3) == 6u);
  BOOST_TEST(!row_bytes(tensor_type::q8_0, 33));
  BOOST_TEST(!row_bytes(tensor_type::q5_k, 576));
  BOOST_TEST(!row_bytes(static_cast<tensor_type>(5), 32));
  const weight_matrix w{tensor_type::q5_1, 64, 3, nullptr};
  BOOST_TEST(w.stride() == 48u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(half_conversion)

BOOST_AUTO_TEST_CASE(fp16_decodes_normals_subnormals_and_specials) {
  BOOST_TEST(fp16_to_fp32(0x3C00) == 1.0f);
  BOOST_TEST(fp16_to_fp32(0xC000) == -2.0f);
  BOOST_TEST(fp16_to_fp32(0x3555) == 0.333251953125f);
  BOOST_TEST(fp16_to_fp32(0x7BFF) == 65504.0f);
  BOOST_TEST(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));
  BOOST_TEST(fp16_to_fp32(0x03FF) == std::ldexp(1023.0f, -24));
  BOOST_TEST(fp16_to_fp32(0x0200) == std::ldexp(1.0f, -15));
  BOOST_TEST(std::signbit(fp16_to_fp32(0x8000)));
  BOOST_TEST(std::isinf(fp16_to_fp32(0xFC00)));
  BOOST_TEST(std::isnan(fp16_to_fp32(0x7E00)));
}

BOOST_AUTO_TEST_CASE(fp16_encode_rounds_to_nearest_even_and_round_trips_every_value) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      BOOST_TEST_REQUIRE(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
    } else {
      BOOST_TEST_REQUIRE(fp32_to_fp16(f) == h);
    }
  }
  BOOST_TEST(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00); // tie -> even
  BOOST_TEST(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  BOOST_TEST(fp32_to_fp16(65520.0f) == 0x7C00); // overflow -> inf
  BOOST_TEST(fp32_to_fp16(65519.0f) == 0x7BFF);
  BOOST_TEST(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000); // half of min subnormal: tie -> 0
  BOOST_TEST(fp32_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
  BOOST_TEST(fp32_to_fp16(std::numeric_limits<float>::infinity()) == 0x7C00);
}

BOOST_AUTO_TEST_CASE(bf16_is_the_upper_half_with_rounding) {
  BOOST_TEST(bf16_to_fp32(0x3F80) == 1.0f);
  BOOST_TEST(bf16_to_fp32(0xC040) == -3.0f);
  BOOST_TEST(fp32_to_bf16(1.0f) == 0x3F80);
  BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)) == 0x3F80); // tie -> even
  BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)) == 0x3F82); // tie -> even, up
  BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F808001u)) == 0x3F81); // above the tie
  BOOST_TEST(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

BOOST_AUTO_TEST_SUITE_END()
