// Block layouts, fp16/bf16 conversion, hand-built blocks with exact expected
// floats for every type, and quantize -> dequantize round trips.
#include "runtime/gguf/dequant.hpp"
#include "runtime/gguf/half.hpp"
#include "runtime/gguf/quantize.hpp"

#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace dynamo;
using namespace dynamo::gguf;

namespace {

template <class Block>
std::vector<float> dequant_block(tensor_type t, const Block& b, size_t n) {
  std::vector<std::byte> bytes(sizeof(Block));
  std::memcpy(bytes.data(), &b, sizeof(Block));
  std::vector<float> out(n);
  auto r = dequantize_row(t, bytes, out);
  BOOST_REQUIRE(r);
  return out;
}

std::vector<float> random_vector(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = dist(rng);
  return v;
}

std::vector<float> round_trip(tensor_type t, const std::vector<float>& x) {
  auto q = quantize(t, x);
  BOOST_REQUIRE(q);
  std::vector<float> y(x.size());
  BOOST_REQUIRE(dequantize_row(t, *q, y));
  return y;
}

} // namespace

BOOST_AUTO_TEST_SUITE(half_conversion)

BOOST_AUTO_TEST_CASE(fp16_decodes_normals_subnormals_and_specials) {
  BOOST_TEST(fp16_to_fp32(0x3C00) == 1.0f);
  BOOST_TEST(fp16_to_fp32(0xC000) == -2.0f);
  BOOST_TEST(fp16_to_fp32(0x3555) == 0.333251953125f);
  BOOST_TEST(fp16_to_fp32(0x7BFF) == 65504.0f);
  BOOST_TEST(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24));
  BOOST_TEST(fp16_to_fp32(0x03FF) == std::ldexp(1023.0f, -24));
  BOOST_TEST(std::signbit(fp16_to_fp32(0x8000)));
  BOOST_TEST(std::isinf(fp16_to_fp32(0xFC00)));
  BOOST_TEST(std::isnan(fp16_to_fp32(0x7E00)));
}

BOOST_AUTO_TEST_CASE(fp16_encode_rounds_to_nearest_even_and_round_trips_every_value) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f))
      BOOST_TEST(std::isnan(fp16_to_fp32(fp32_to_fp16(f))));
    else
      BOOST_TEST(fp32_to_fp16(f) == h);
  }
  BOOST_TEST(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3C00); // tie -> even
  BOOST_TEST(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3C02);
  BOOST_TEST(fp32_to_fp16(65520.0f) == 0x7C00);  // overflow -> inf
  BOOST_TEST(fp32_to_fp16(65519.0f) == 0x7BFF);
  BOOST_TEST(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0x0000); // half of min subnormal: tie -> 0
  BOOST_TEST(fp32_to_fp16(std::ldexp(1.5f, -25)) == 0x0001);
}

BOOST_AUTO_TEST_CASE(bf16_is_the_upper_half_with_rounding) {
  BOOST_TEST(bf16_to_fp32(0x3F80) == 1.0f);
  BOOST_TEST(bf16_to_fp32(0xC040) == -3.0f);
  BOOST_TEST(fp32_to_bf16(1.0f) == 0x3F80);
  BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F808000u)) == 0x3F80); // tie -> even
  BOOST_TEST(fp32_to_bf16(std::bit_cast<float>(0x3F818000u)) == 0x3F82);
  BOOST_TEST(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tensor_types)

BOOST_AUTO_TEST_CASE(geometry_matches_ggml) {
  BOOST_TEST(geometry_of(tensor_type::q4_0)->block_bytes == 18u);
  BOOST_TEST(geometry_of(tensor_type::q4_1)->block_bytes == 20u);
  BOOST_TEST(geometry_of(tensor_type::q8_0)->block_bytes == 34u);
  BOOST_TEST(geometry_of(tensor_type::q4_k)->block_bytes == 144u);
  BOOST_TEST(geometry_of(tensor_type::q6_k)->block_bytes == 210u);
  BOOST_TEST(geometry_of(tensor_type::q4_k)->block_elems == 256u);
  BOOST_TEST(geometry_of(tensor_type::bf16)->name == "BF16");
  BOOST_TEST(!geometry_of(static_cast<tensor_type>(4)));   // removed Q4_2
  BOOST_TEST(!geometry_of(static_cast<tensor_type>(999)));
  BOOST_TEST(type_name(static_cast<tensor_type>(999)) == "type999");
}

BOOST_AUTO_TEST_CASE(row_bytes_needs_whole_blocks) {
  BOOST_TEST(*row_bytes(tensor_type::q4_1, 576) == 18u * 20u);
  BOOST_TEST(*row_bytes(tensor_type::q6_k, 512) == 420u);
  BOOST_TEST(*row_bytes(tensor_type::f16, 3) == 6u);
  BOOST_TEST(!row_bytes(tensor_type::q8_0, 33));
  BOOST_TEST(!row_bytes(static_cast<tensor_type>(5), 32));
}

BOOST_AUTO_TEST_CASE(dequantize_row_rejects_partial_blocks_short_input_and_unsupported_types) {
  std::vector<std::byte> src(34);
  std::vector<float> dst(31);
  auto r = dequantize_row(tensor_type::q8_0, src, dst);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  dst.resize(64);
  r = dequantize_row(tensor_type::q8_0, src, dst);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  dst.resize(256);
  src.resize(176);
  r = dequantize_row(static_cast<tensor_type>(13), src, dst); // Q5_K: sized, not computed
  BOOST_TEST(code_of(r.error()) == errc::unsupported);
  BOOST_TEST(message_of(r.error()).find("Q5_K") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(hand_built_blocks)

BOOST_AUTO_TEST_CASE(q4_0_low_nibbles_are_the_first_half) {
  block_q4_0 b{};
  b.d = 0x3800; // 0.5
  for (int j = 0; j < 16; ++j)
    b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant_block(tensor_type::q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    BOOST_TEST(y[j] == 0.5f * static_cast<float>(j - 8));
    BOOST_TEST(y[j + 16] == 0.5f * static_cast<float>(7 - j));
  }
}

BOOST_AUTO_TEST_CASE(q4_1_adds_the_min) {
  block_q4_1 b{};
  b.d = 0x3400; // 0.25
  b.m = 0xBC00; // -1
  for (int j = 0; j < 16; ++j)
    b.qs[j] = static_cast<uint8_t>(((j * 7) & 15) | ((j ^ 5) << 4));
  auto y = dequant_block(tensor_type::q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    BOOST_TEST(y[j] == 0.25f * static_cast<float>((j * 7) & 15) - 1.0f);
    BOOST_TEST(y[j + 16] == 0.25f * static_cast<float>(j ^ 5) - 1.0f);
  }
  BOOST_TEST(y[0] == -1.0f);
  BOOST_TEST(y[16] == 0.25f); // (0 ^ 5) * 0.25 - 1
}

BOOST_AUTO_TEST_CASE(q8_0_is_signed) {
  block_q8_0 b{};
  b.d = 0x4000; // 2
  for (int j = 0; j < 32; ++j)
    b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  auto y = dequant_block(tensor_type::q8_0, b, 32);
  BOOST_TEST(y[0] == -256.0f);
  BOOST_TEST(y[16] == 0.0f);
  BOOST_TEST(y[31] == 240.0f);
}

BOOST_AUTO_TEST_CASE(q4_k_unpacks_six_bit_scales_and_mins) {
  // Chosen sub-block scales/mins; 4..7 use the high bits stored in bytes 0..7.
  const uint8_t sc[8] = {1, 2, 3, 4, 33, 50, 63, 17};
  const uint8_t mn[8] = {0, 5, 10, 60, 48, 7, 31, 16};
  block_q4_k b{};
  b.d = 0x3C00;    // 1
  b.dmin = 0x3800; // 0.5
  for (int j = 0; j < 4; ++j) {
    b.scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    b.scales[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    b.scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
  for (int i = 0; i < 128; ++i)
    b.qs[i] = static_cast<uint8_t>((i % 16) | (((i / 3) % 16) << 4));
  auto y = dequant_block(tensor_type::q4_k, b, 256);
  // Element e: chunk c = e / 64 of 32 bytes; first 32 use low nibbles (sub-block 2c), next 32 high (2c+1).
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64, sub = 2 * c + r / 32, byte = 32 * c + r % 32;
    const int q = r < 32 ? (byte % 16) : ((byte / 3) % 16);
    const float expect = 1.0f * static_cast<float>(sc[sub]) * static_cast<float>(q) - 0.5f * static_cast<float>(mn[sub]);
    BOOST_TEST(y[e] == expect, "element " << e);
  }
  BOOST_TEST(y[128] == 33.0f * 0.0f - 24.0f); // chunk 2 low: q = 0, sc 33, min 48 * 0.5
}

BOOST_AUTO_TEST_CASE(q6_k_reads_d_at_the_end_and_signed_scales) {
  block_q6_k b{};
  for (int i = 0; i < 128; ++i)
    b.ql[i] = static_cast<uint8_t>((i * 5) & 0xFF);
  for (int i = 0; i < 64; ++i)
    b.qh[i] = static_cast<uint8_t>((i * 37 + 11) & 0xFF);
  for (int i = 0; i < 16; ++i)
    b.scales[i] = static_cast<int8_t>(i - 8);
  b.d = 0x3800; // 0.5
  auto y = dequant_block(tensor_type::q6_k, b, 256);
  // Element e: half h, group g of 32 (0..3), lane l; nibble from ql, 2 bits from qh, scale per 16.
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const int qlb = b.ql[64 * h + l + (g % 2) * 32];
    const int lo = g < 2 ? (qlb & 15) : (qlb >> 4);
    const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
    const int scale = b.scales[8 * h + l / 16 + 2 * g];
    const float expect = 0.5f * static_cast<float>(scale) * static_cast<float>((lo | (hi << 4)) - 32);
    BOOST_TEST(y[e] == expect, "element " << e);
  }
}

BOOST_AUTO_TEST_CASE(f16_and_bf16_rows_widen_exactly) {
  const uint16_t h[2] = {0x3C00, 0xC500}; // 1, -5
  std::vector<std::byte> src(4);
  std::memcpy(src.data(), h, 4);
  std::vector<float> y(2);
  BOOST_REQUIRE(dequantize_row(tensor_type::f16, src, y));
  BOOST_TEST(y == (std::vector<float>{1.0f, -5.0f}), boost::test_tools::per_element());
  const uint16_t bf[2] = {0x4049, 0xBF80}; // 3.140625, -1
  std::memcpy(src.data(), bf, 4);
  BOOST_REQUIRE(dequantize_row(tensor_type::bf16, src, y));
  BOOST_TEST(y == (std::vector<float>{3.140625f, -1.0f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(quant_round_trip)

BOOST_AUTO_TEST_CASE(f32_is_lossless_and_f16_bf16_within_half_ulp) {
  auto x = random_vector(256, 1, 3.0f);
  BOOST_TEST(round_trip(tensor_type::f32, x) == x, boost::test_tools::per_element());
  auto h = round_trip(tensor_type::f16, x);
  auto b = round_trip(tensor_type::bf16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    BOOST_TEST(std::fabs(h[i] - x[i]) <= std::fabs(x[i]) * std::ldexp(1.0f, -11) + std::ldexp(1.0f, -25));
    BOOST_TEST(std::fabs(b[i] - x[i]) <= std::fabs(x[i]) * std::ldexp(1.0f, -8));
  }
}

BOOST_AUTO_TEST_CASE(q8_0_error_is_at_most_half_a_step) {
  auto x = random_vector(32 * 16, 2, 1.0f);
  auto y = round_trip(tensor_type::q8_0, x);
  for (size_t blk = 0; blk < 16; ++blk) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j)
      amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    const float step = amax / 127.0f;
    for (size_t j = 0; j < 32; ++j) {
      const size_t i = blk * 32 + j;
      // Half a step, plus the fp16 rounding of d scaled by |q| <= 127.
      BOOST_TEST(std::fabs(y[i] - x[i]) <= 0.5f * step + 127.0f * step * std::ldexp(1.0f, -11) + 1e-7f);
    }
  }
}

BOOST_AUTO_TEST_CASE(q4_0_error_is_at_most_one_step) {
  auto x = random_vector(32 * 16, 3, 1.0f);
  auto y = round_trip(tensor_type::q4_0, x);
  for (size_t blk = 0; blk < 16; ++blk) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j)
      amax = std::max(amax, std::fabs(x[blk * 32 + j]));
    const float step = amax / 8.0f; // the extreme opposite the max clamps at 7 steps
    for (size_t j = 0; j < 32; ++j)
      BOOST_TEST(std::fabs(y[blk * 32 + j] - x[blk * 32 + j]) <= step * 1.01f);
  }
}

BOOST_AUTO_TEST_CASE(q4_1_error_is_at_most_half_a_step_plus_min_rounding) {
  auto x = random_vector(32 * 16, 4, 1.0f);
  auto y = round_trip(tensor_type::q4_1, x);
  for (size_t blk = 0; blk < 16; ++blk) {
    float lo = x[blk * 32], hi = lo;
    for (size_t j = 0; j < 32; ++j) {
      lo = std::min(lo, x[blk * 32 + j]);
      hi = std::max(hi, x[blk * 32 + j]);
    }
    const float step = (hi - lo) / 15.0f;
    const float tol = 0.5f * step + (std::fabs(lo) + 15.0f * step) * std::ldexp(1.0f, -10);
    for (size_t j = 0; j < 32; ++j)
      BOOST_TEST(std::fabs(y[blk * 32 + j] - x[blk * 32 + j]) <= tol);
  }
}

BOOST_AUTO_TEST_CASE(exactly_representable_vectors_survive_q4_0_q4_1_and_q8_0) {
  // Multiples of 0.5 in [-4, 3.5]: Q4_0 with d = -0.5 and Q8_0 represent them exactly.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j)
    x[j] = 0.5f * static_cast<float>((j * 5) % 16 - 8);
  x[3] = -4.0f; // the max-magnitude value, negative, so d = +0.5
  BOOST_TEST(round_trip(tensor_type::q4_0, x) == x, boost::test_tools::per_element());
  BOOST_TEST(round_trip(tensor_type::q4_1, x) == x, boost::test_tools::per_element());
  // Integers with max magnitude 127: Q8_0's d is exactly 1.
  for (int j = 0; j < 32; ++j)
    x[j] = static_cast<float>(j * 8 - 124);
  x[5] = 127.0f;
  BOOST_TEST(round_trip(tensor_type::q8_0, x) == x, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(all_zero_blocks_stay_zero) {
  std::vector<float> x(64, 0.0f);
  for (auto t : {tensor_type::q4_0, tensor_type::q4_1, tensor_type::q8_0})
    BOOST_TEST(round_trip(t, x) == x, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(quantize_rejects_k_quants_and_partial_blocks) {
  std::vector<float> x(256, 1.0f);
  BOOST_TEST(code_of(quantize(tensor_type::q4_k, x).error()) == errc::unsupported);
  x.resize(40);
  BOOST_TEST(code_of(quantize(tensor_type::q8_0, x).error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
