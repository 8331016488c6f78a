// quantize_row -> dequantize_row round trips of every type, with error bounds
// that follow from each format's step size, and the quantizer's refusals.
// (Byte-exactness against the PyPI gguf package's quantizers is checked by
// tests/runtime/gguf/dequant_check.py for the types it can quantize.)
#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/quantize.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

using namespace dynamo::kernels::ref;

namespace {

std::vector<float> gaussian(size_t n, uint32_t seed, float sd) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> round_trip(tensor_type t, const std::vector<float>& x) {
  std::vector<std::byte> q(*row_bytes(t, x.size()));
  BOOST_REQUIRE(quantize_row(t, x.data(), q.data(), x.size()));
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), x.size());
  return y;
}

/// Root-mean-square error relative to the root-mean-square of x.
double relative_rmse(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    s += double(x[i]) * x[i];
  }
  return std::sqrt(e / s);
}

float absmax(const float* x, size_t n) {
  float a = 0;
  for (size_t i = 0; i < n; ++i) a = std::max(a, std::fabs(x[i]));
  return a;
}

constexpr float half_ulp16 = 1.0f / 2048.0f; // relative rounding of an fp16 scale

} // namespace

BOOST_AUTO_TEST_SUITE(quant_round_trip)

BOOST_AUTO_TEST_CASE(f32_is_lossless_and_f16_bf16_within_half_ulp) {
  auto x = gaussian(256, 1, 3.0f);
  BOOST_TEST(round_trip(tensor_type::f32, x) == x, boost::test_tools::per_element());
  auto h = round_trip(tensor_type::f16, x);
  auto b = round_trip(tensor_type::bf16, x);
  for (size_t i = 0; i < x.size(); ++i) {
    BOOST_TEST(std::fabs(h[i] - x[i]) <= std::fabs(x[i]) * std::ldexp(1.0f, -11) + std::ldexp(1.0f, -25));
    BOOST_TEST(std::fabs(b[i] - x[i]) <= std::fabs(x[i]) * std::ldexp(1.0f, -8));
  }
}

BOOST_AUTO_TEST_CASE(q8_0_error_is_at_most_half_a_step) {
  auto x = gaussian(32 * 16, 2, 1.0f);
  auto y = round_trip(tensor_type::q8_0, x);
  for (size_t blk = 0; blk < 16; ++blk) {
    const float step = absmax(&x[blk * 32], 32) / 127.0f;
    for (size_t j = 0; j < 32; ++j) {
      const size_t i = blk * 32 + j;
      // Half a step, plus the fp16 rounding of d scaled by |q| <= 127.
      BOOST_TEST(std::fabs(y[i] - x[i]) <= 0.5f * step + 127.0f * step * half_ulp16 + 1e-7f);
    }
  }
}

BOOST_AUTO_TEST_CASE(q4_0_and_q5_0_error_is_at_most_one_step) {
  // The signed extreme maps to the lowest level; its opposite clips one step short.
  for (const auto& [t, levels] : {std::pair{tensor_type::q4_0, 8.0f}, std::pair{tensor_type::q5_0, 16.0f}}) {
    auto x = gaussian(32 * 16, 3, 1.0f);
    auto y = round_trip(t, x);
    for (size_t blk = 0; blk < 16; ++blk) {
      const float step = absmax(&x[blk * 32], 32) / levels;
      for (size_t j = 0; j < 32; ++j) {
        BOOST_TEST_REQUIRE(std::fabs(y[blk * 32 + j] - x[blk * 32 + j]) <= step * 1.01f, type_name(t));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(q4_1_and_q5_1_error_is_at_most_half_a_step_plus_scale_rounding) {
  for (const auto& [t, levels] : {std::pair{tensor_type::q4_1, 15.0f}, std::pair{tensor_type::q5_1, 31.0f}}) {
    auto x = gaussian(32 * 16, 4, 1.0f);
    auto y = round_trip(t, x);
    for (size_t blk = 0; blk < 16; ++blk) {
      const auto [lo, hi] = std::minmax_element(&x[blk * 32], &x[blk * 32] + 32);
      const float step = (*hi - *lo) / levels;
      const float tol = 0.5f * step + (std::fabs(*lo) + levels * step) * std::ldexp(1.0f, -10);
      for (size_t j = 0; j < 32; ++j) BOOST_TEST_REQUIRE(std::fabs(y[blk * 32 + j] - x[blk * 32 + j]) <= tol, type_name(t));
    }
  }
}

BOOST_AUTO_TEST_CASE(k_quants_and_iq4_stay_within_one_sub_block_step_and_beat_their_legacy_peers) {
  // Gaussian rows with a per-sub-block spread that varies 30x, as real weight
  // rows do: the super-block's scale must serve small and large sub-blocks.
  auto x = gaussian(256 * 8, 5, 1.0f);
  for (size_t s = 0; s < x.size() / 32; ++s) {
    const float f = 0.1f + 3.0f * static_cast<float>((s * 7) % 11) / 10.0f;
    for (size_t j = 0; j < 32; ++j) x[s * 32 + j] *= f;
  }
  const struct {
    tensor_type t;
    double max_rmse;   ///< relative RMSE bound (measured: 0.070, 0.036, 0.018, 0.076, 0.077)
    tensor_type peer;  ///< a 32-block format of about as many bits
    float steps;       ///< levels spanning a sub-block's range, for the per-element bound
  } cases[] = {{tensor_type::q4_k, 0.08, tensor_type::q4_1, 15.0f},
               {tensor_type::q5_k, 0.04, tensor_type::q5_1, 31.0f},
               {tensor_type::q6_k, 0.02, tensor_type::q5_1, 63.0f},
               {tensor_type::iq4_nl, 0.085, tensor_type::q4_0, 15.0f},
               {tensor_type::iq4_xs, 0.085, tensor_type::q4_0, 15.0f}};
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT("type " << type_name(c.t)) {
      const auto y = round_trip(c.t, x);
      const double e = relative_rmse(x, y), peer = relative_rmse(x, round_trip(c.peer, x));
      BOOST_TEST_MESSAGE(type_name(c.t) << ": relative RMSE " << e << " (" << type_name(c.peer) << " " << peer << ")");
      BOOST_TEST(e < c.max_rmse);
      BOOST_TEST(e < peer);
      // No element is off by more than 1.5 steps of the widest sub-block of its
      // block: the sub-block scales (and mins) are themselves quantized
      // relative to the block's largest, which costs up to ~0.25 of its step.
      const size_t block = geometry_of(c.t)->block_elems;
      for (size_t b0 = 0; b0 < x.size(); b0 += block) {
        float widest = 0.0f;
        for (size_t s = b0; s < b0 + block; s += 32) {
          const auto [lo, hi] = std::minmax_element(&x[s], &x[s] + 32);
          widest = std::max(widest, *hi - *lo);
        }
        for (size_t i = b0; i < b0 + block; ++i) BOOST_TEST_REQUIRE(std::fabs(y[i] - x[i]) <= 1.5f * widest / c.steps);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(exactly_representable_vectors_survive) {
  // Multiples of 0.5 in [-4, 3.5]: Q4_0 with d = -0.5 represents them exactly, Q4_1 too.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>((j * 5) % 16 - 8);
  x[3] = -4.0f; // the max-magnitude value, negative, so d = +0.5
  BOOST_TEST(round_trip(tensor_type::q4_0, x) == x, boost::test_tools::per_element());
  BOOST_TEST(round_trip(tensor_type::q4_1, x) == x, boost::test_tools::per_element());
  // Multiples of 0.25 in [-4, 3.75]: Q5_0 (d = -0.25) and Q5_1.
  for (int j = 0; j < 32; ++j) x[j] = 0.25f * static_cast<float>((j * 7) % 32 - 16); // x[0] = -4 is the extreme
  BOOST_TEST(round_trip(tensor_type::q5_0, x) == x, boost::test_tools::per_element());
  BOOST_TEST(round_trip(tensor_type::q5_1, x) == x, boost::test_tools::per_element());
  // Integers with max magnitude 127: Q8_0's d is exactly 1.
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j * 8 - 124);
  x[5] = 127.0f;
  BOOST_TEST(round_trip(tensor_type::q8_0, x) == x, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(all_zero_rows_stay_zero) {
  const std::vector<float> x(256, 0.0f);
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = static_cast<tensor_type>(id);
    if (!can_quantize(t)) continue;
    BOOST_TEST_CONTEXT("type " << type_name(t)) {
      const auto y = round_trip(t, x);
      for (float v : y) BOOST_TEST_REQUIRE(v == 0.0f);
    }
  }
}

BOOST_AUTO_TEST_CASE(quantize_refuses_unknown_types_and_partial_blocks) {
  std::vector<float> x(256, 1.0f);
  std::vector<std::byte> out(1024, std::byte{0x5a});
  BOOST_TEST(!quantize_row(static_cast<tensor_type>(10), x.data(), out.data(), 256)); // Q2_K
  BOOST_TEST(!quantize_row(tensor_type::q4_k, x.data(), out.data(), 224));
  BOOST_TEST(!quantize_row(tensor_type::q8_0, x.data(), out.data(), 40));
  BOOST_TEST((std::all_of(out.begin(), out.end(), [](std::byte b) { return b == std::byte{0x5a}; })));
  BOOST_TEST(quantize_row(tensor_type::q4_k, x.data(), out.data(), 256));
}

BOOST_AUTO_TEST_SUITE_END()
