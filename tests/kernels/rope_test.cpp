#include "kernels/reference/rope.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

BOOST_AUTO_TEST_SUITE(rope_op)

BOOST_AUTO_TEST_CASE(norm_style_rotates_adjacent_pairs_by_pos_times_base_power) {
  const uint32_t d = 8, pos = 5;
  const float base = 100000.0f;
  const auto table = make_rope_table(d, 16, base);
  auto x = test::random_floats(d, 1);
  const auto orig = x;
  rope({x.data(), d, 1, 1, d, &pos, &table, rope_style::norm});
  for (uint32_t i = 0; i < d / 2; ++i) {
    const double theta = pos * std::pow(double(base), -2.0 * i / d);
    const double a = orig[2 * i], b = orig[2 * i + 1];
    BOOST_TEST(std::fabs(x[2 * i] - (a * std::cos(theta) - b * std::sin(theta))) < 1e-6);
    BOOST_TEST(std::fabs(x[2 * i + 1] - (a * std::sin(theta) + b * std::cos(theta))) < 1e-6);
  }
}

BOOST_AUTO_TEST_CASE(norm_on_gguf_permuted_rows_equals_neox_on_hf_rows) {
  // llama.cpp's converter stores HF row i at 2i and row i + d/2 at 2i + 1.
  const uint32_t d = 64, heads = 3;
  const auto table = make_rope_table(d, 300, 10000.0f);
  const uint32_t positions[] = {0, 1, 299};
  for (const uint32_t pos : positions) {
    auto hf = test::random_floats(heads * d, pos + 3);
    std::vector<float> gguf(heads * d);
    for (uint32_t h = 0; h < heads; ++h) {
      for (uint32_t i = 0; i < d / 2; ++i) {
        gguf[h * d + 2 * i] = hf[h * d + i];
        gguf[h * d + 2 * i + 1] = hf[h * d + i + d / 2];
      }
    }
    rope({hf.data(), heads * d, 1, heads, d, &pos, &table, rope_style::neox});
    rope({gguf.data(), heads * d, 1, heads, d, &pos, &table, rope_style::norm});
    for (uint32_t h = 0; h < heads; ++h) {
      for (uint32_t i = 0; i < d / 2; ++i) {
        BOOST_TEST(gguf[h * d + 2 * i] == hf[h * d + i]);
        BOOST_TEST(gguf[h * d + 2 * i + 1] == hf[h * d + i + d / 2]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(position_zero_is_identity_and_partial_rotary_leaves_the_tail) {
  const uint32_t d = 16, rot = 8;
  const auto table = make_rope_table(rot, 8, 10000.0f);
  auto x = test::random_floats(2 * d, 9);
  const auto orig = x;
  const uint32_t positions[] = {0, 7};
  rope({x.data(), d, 2, 1, d, positions, &table, rope_style::neox});
  for (uint32_t i = 0; i < d; ++i) BOOST_TEST(x[i] == orig[i]);
  for (uint32_t i = rot; i < d; ++i) BOOST_TEST(x[d + i] == orig[d + i]);
  BOOST_TEST(x[d] != orig[d]);
}

BOOST_AUTO_TEST_CASE(linear_scaling_and_frequency_factors_divide_the_angles) {
  // Llama 3.1: pair i's frequency is divided by factor_i; linear scaling
  // multiplies positions by freq_scale.
  const uint32_t d = 8;
  const float base = 500000.0f, scale = 0.25f;
  const std::vector<float> factors = {1.0f, 2.0f, 4.5f, 8.0f};
  const auto table = make_rope_table(d, 64, base, scale, factors);
  for (const uint32_t pos : {1u, 17u, 63u}) {
    for (uint32_t i = 0; i < d / 2; ++i) {
      const double theta = pos * double(scale) * std::pow(double(base), -2.0 * i / d) / factors[i];
      BOOST_TEST(std::fabs(table.cos[pos * d / 2 + i] - std::cos(theta)) < 1e-7);
      BOOST_TEST(std::fabs(table.sin[pos * d / 2 + i] - std::sin(theta)) < 1e-7);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
