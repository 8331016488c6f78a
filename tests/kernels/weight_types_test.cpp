#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/weight_types.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

using namespace dynamo::kernels::ref;

BOOST_AUTO_TEST_SUITE(weight_types)

BOOST_AUTO_TEST_CASE(block_sizes_match_ggml) {
  BOOST_TEST(row_bytes(weight_type::q4_0, 64) == 36u);
  BOOST_TEST(row_bytes(weight_type::q4_1, 576) == 360u);
  BOOST_TEST(row_bytes(weight_type::q8_0, 576) == 612u);
  BOOST_TEST(row_bytes(weight_type::q4_k, 512) == 288u);
  BOOST_TEST(row_bytes(weight_type::q6_k, 256) == 210u);
  BOOST_TEST(row_bytes(weight_type::f16, 10) == 20u);
  BOOST_TEST(is_supported(3));
  BOOST_TEST(!is_supported(6)); // Q5_0 is not supported
}

BOOST_AUTO_TEST_CASE(fp16_conversion_of_special_values_is_exact) {
  BOOST_TEST(fp16_to_fp32(0x3c00) == 1.0f);
  BOOST_TEST(fp16_to_fp32(0xc000) == -2.0f);
  BOOST_TEST(fp16_to_fp32(0x7bff) == 65504.0f);
  BOOST_TEST(fp16_to_fp32(0x0001) == std::ldexp(1.0f, -24)); // smallest subnormal
  BOOST_TEST(fp16_to_fp32(0x0200) == std::ldexp(1.0f, -15));
  BOOST_TEST(std::isinf(fp16_to_fp32(0x7c00)));
  BOOST_TEST(std::isnan(fp16_to_fp32(0x7e00)));
  BOOST_TEST(fp32_to_fp16(1.0f) == 0x3c00);
  BOOST_TEST(fp32_to_fp16(65520.0f) == 0x7c00);          // rounds up to inf
  BOOST_TEST(fp32_to_fp16(std::ldexp(1.0f, -25)) == 0);   // tie to even: zero
  BOOST_TEST(fp32_to_fp16(std::ldexp(1.5f, -25)) == 1);   // above the tie
  BOOST_TEST(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00); // tie to even
  BOOST_TEST(fp32_to_fp16(1.0f + std::ldexp(3.0f, -11)) == 0x3c02); // tie to even, up
}

BOOST_AUTO_TEST_CASE(fp16_round_trips_every_finite_half) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    BOOST_REQUIRE_EQUAL(fp32_to_fp16(f), h);
  }
}

BOOST_AUTO_TEST_CASE(q4_nibbles_hold_elements_0_to_15_low_and_16_to_31_high) {
  block_q4_1 b{};
  b.d = fp32_to_fp16(2.0f);
  b.m = fp32_to_fp16(-1.0f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((j & 0xf) | ((15 - j) << 4));
  float y[32];
  dequantize_row(weight_type::q4_1, &b, y, 32);
  for (int j = 0; j < 16; ++j) {
    BOOST_TEST(y[j] == 2.0f * j - 1.0f);
    BOOST_TEST(y[j + 16] == 2.0f * (15 - j) - 1.0f);
  }
  block_q4_0 c{};
  c.d = fp32_to_fp16(0.5f);
  for (int j = 0; j < 16; ++j) c.qs[j] = 0x0f; // low 15, high 0
  dequantize_row(weight_type::q4_0, &c, y, 32);
  BOOST_TEST(y[0] == 3.5f);
  BOOST_TEST(y[16] == -4.0f);
}

BOOST_AUTO_TEST_CASE(dequantize_matches_the_gguf_python_package) {
  // data/dequant_fixture.txt comes from make_dequant_fixture.py (gguf.quants).
  std::ifstream in(test::source_dir() + "/tests/kernels/data/dequant_fixture.txt");
  BOOST_REQUIRE_MESSAGE(in.good(), "missing tests/kernels/data/dequant_fixture.txt");
  const std::pair<std::string, weight_type> types[] = {{"q4_0", weight_type::q4_0},
                                                       {"q4_1", weight_type::q4_1},
                                                       {"q8_0", weight_type::q8_0},
                                                       {"q4_k", weight_type::q4_k},
                                                       {"q6_k", weight_type::q6_k}};
  int seen = 0;
  std::string name, hex, floats;
  uint32_t n = 0;
  while (in >> name >> n) {
    in >> hex;
    std::getline(in, floats); // rest of the hex line
    std::getline(in, floats);
    std::vector<std::byte> raw(hex.size() / 2);
    for (size_t i = 0; i < raw.size(); ++i) {
      raw[i] = static_cast<std::byte>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    }
    std::istringstream fs(floats);
    std::vector<float> want(n);
    for (auto& w : want) fs >> w;
    for (const auto& [tn, t] : types) {
      if (tn != name) continue;
      BOOST_TEST_CONTEXT("type " << name) {
        BOOST_REQUIRE_EQUAL(raw.size(), row_bytes(t, n));
        std::vector<float> got(n);
        dequantize_row(t, raw.data(), got.data(), n);
        for (uint32_t i = 0; i < n; ++i) BOOST_REQUIRE_EQUAL(got[i], want[i]);
        ++seen;
      }
    }
  }
  BOOST_TEST(seen == 5);
}

BOOST_AUTO_TEST_CASE(quantize_then_dequantize_is_close) {
  const auto x = test::random_floats(256, 7);
  for (auto t : {weight_type::q4_0, weight_type::q4_1, weight_type::q8_0, weight_type::f16,
                 weight_type::bf16}) {
    std::vector<std::byte> q(row_bytes(t, 256));
    BOOST_REQUIRE(quantize_row(t, x.data(), q.data(), 256));
    std::vector<float> y(256);
    dequantize_row(t, q.data(), y.data(), 256);
    // Half a grid step over [-1, 1]: Q4_1 1/15, Q8_0 1/254, halves ~1e-3; Q4_0
    // maps the largest magnitude to -8 and clips its opposite at +7: 1/8.
    float tol = 0.004f;
    if (t == weight_type::q4_0) tol = 0.126f;
    if (t == weight_type::q4_1) tol = 0.067f;
    if (t == weight_type::q8_0) tol = 0.004f;
    for (int i = 0; i < 256; ++i) BOOST_REQUIRE_SMALL(y[i] - x[i], tol);
  }
}

BOOST_AUTO_TEST_SUITE_END()
