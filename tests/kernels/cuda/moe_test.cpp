// The GPU MoE ops against their CPU references: routing (router logits,
// softmax, top-k with ties to the lower id, renormalisation, the shared
// expert's gate logit), grouping (exact), the grouped expert matmul (against
// ref::matmul per expert) and the combine (with and without a shared expert).
#include "kernels/moe.cuh"
#include "kernels/reference/matmul.hpp"
#include "kernels/reference/moe.hpp"
#include "tests/kernels/cuda/cuda_test_util.hpp"
#include "tests/kernels/test_util.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace gpu = dynamo::kernels::gpu;
namespace ref = dynamo::kernels::ref;
using namespace dynamo::kernels::gpu::test;

namespace {

std::vector<uint32_t> random_experts(size_t n, uint32_t n_expert, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto& e : v) e = rng() % n_expert;
  return v;
}

/// The experts of each token distinct, as routing produces them.
std::vector<uint32_t> routed_experts(uint32_t n_tokens, uint32_t k, uint32_t n_expert, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v;
  std::vector<uint32_t> ids(n_expert);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    for (uint32_t e = 0; e < n_expert; ++e) ids[e] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    v.insert(v.end(), ids.begin(), ids.begin() + k);
  }
  return v;
}

struct grouping {
  std::vector<uint32_t> start, pair_token, pair_row;
};

grouping group_on_host(const std::vector<uint32_t>& expert, uint32_t k, uint32_t n_expert) {
  grouping g{std::vector<uint32_t>(n_expert + 1), std::vector<uint32_t>(expert.size()),
             std::vector<uint32_t>(expert.size())};
  ref::moe_group({expert.data(), uint32_t(expert.size()), k, n_expert, g.start.data(), g.pair_token.data(),
                  g.pair_row.data()});
  return g;
}

} // namespace

BOOST_AUTO_TEST_SUITE(moe_gpu)

BOOST_AUTO_TEST_CASE(route_matches_the_reference_on_the_same_logits) {
  struct shape {
    uint32_t n_tokens, n_embd, n_expert, k;
    bool normalize, shared;
    float scale;
  };
  for (const shape s : {shape{5, 64, 8, 2, false, false, 1.0f}, shape{9, 256, 60, 4, false, true, 1.0f},
                        shape{33, 128, 128, 8, true, false, 1.0f}, shape{3, 96, 16, 1, true, false, 2.5f},
                        shape{4, 64, 6, 6, true, true, 1.0f}}) {
    BOOST_TEST_CONTEXT("tokens " << s.n_tokens << " experts " << s.n_expert << " k " << s.k) {
      const size_t x_stride = s.n_embd + 8;
      const auto x = random_bf16_values(s.n_tokens * x_stride, s.n_expert + s.k, -2.0f, 2.0f);
      const auto router = random_bf16_values(size_t(s.n_expert) * s.n_embd, s.n_expert, -0.2f, 0.2f);
      const auto gate_w = random_bf16_values(s.n_embd, 3, -0.2f, 0.2f);
      device_buffer<__nv_bfloat16> d_x(to_bf16_vector(x));
      device_buffer<float> d_router(router), d_gate_w(gate_w);
      device_buffer<uint32_t> d_expert(size_t(s.n_tokens) * s.k);
      device_buffer<float> d_weight(size_t(s.n_tokens) * s.k), d_gate(s.n_tokens),
          d_logits(size_t(s.n_tokens) * s.n_expert);
      gpu::moe_route_args a;
      a.x = d_x.get();
      a.x_stride = x_stride;
      a.router = d_router.get();
      a.shared_gate_w = s.shared ? d_gate_w.get() : nullptr;
      a.n_tokens = s.n_tokens;
      a.n_embd = s.n_embd;
      a.n_expert = s.n_expert;
      a.k = s.k;
      a.normalize = s.normalize;
      a.scale = s.scale;
      a.expert = d_expert.get();
      a.weight = d_weight.get();
      a.shared_gate = s.shared ? d_gate.get() : nullptr;
      a.logits = d_logits.get();
      CUDA_CHECK(gpu::launch_moe_route(a, nullptr));
      const auto logits = d_logits.download();

      // The logits are fp32 dot products of the same values.
      std::vector<float> want_logits(logits.size()), want_gate(s.n_tokens);
      for (uint32_t t = 0; t < s.n_tokens; ++t) {
        double g = 0.0;
        for (uint32_t e = 0; e < s.n_expert; ++e) {
          double d = 0.0;
          for (uint32_t i = 0; i < s.n_embd; ++i) d += double(x[t * x_stride + i]) * router[size_t(e) * s.n_embd + i];
          want_logits[size_t(t) * s.n_expert + e] = float(d);
        }
        for (uint32_t i = 0; i < s.n_embd; ++i) g += double(x[t * x_stride + i]) * gate_w[i];
        want_gate[t] = float(g);
      }
      BOOST_TEST(nmse(logits, want_logits) < nmse_f32_out);
      if (s.shared) BOOST_TEST(nmse(d_gate.download(), want_gate) < nmse_f32_out);

      // Softmax, top-k and weights: the reference on the GPU's own logits.
      std::vector<uint32_t> want_expert(size_t(s.n_tokens) * s.k);
      std::vector<float> want_weight(want_expert.size());
      ref::moe_route({logits.data(), s.n_expert, s.n_tokens, s.n_expert, s.k, s.normalize, s.scale,
                      want_expert.data(), want_weight.data()});
      BOOST_TEST(d_expert.download() == want_expert, boost::test_tools::per_element());
      BOOST_TEST(nmse(d_weight.download(), want_weight) < nmse_f32_out);
    }
  }
}

BOOST_AUTO_TEST_CASE(route_breaks_ties_toward_the_lower_expert_id) {
  // Rows 3 and 5 are equal and dominate: their logits are bit-identical.
  const uint32_t n_tokens = 4, n_embd = 64, n_expert = 8;
  const auto x = random_bf16_values(n_tokens * n_embd, 1, 0.5f, 1.0f); // positive
  auto router = random_bf16_values(size_t(n_expert) * n_embd, 2, -0.01f, 0.01f);
  for (uint32_t i = 0; i < n_embd; ++i) router[3 * n_embd + i] = router[5 * n_embd + i] = 0.125f;
  device_buffer<__nv_bfloat16> d_x(to_bf16_vector(x));
  device_buffer<float> d_router(router);
  for (const uint32_t k : {1u, 2u}) {
    device_buffer<uint32_t> d_expert(n_tokens * k);
    device_buffer<float> d_weight(n_tokens * k);
    gpu::moe_route_args a;
    a.x = d_x.get();
    a.x_stride = n_embd;
    a.router = d_router.get();
    a.n_tokens = n_tokens;
    a.n_embd = n_embd;
    a.n_expert = n_expert;
    a.k = k;
    a.normalize = true;
    a.expert = d_expert.get();
    a.weight = d_weight.get();
    CUDA_CHECK(gpu::launch_moe_route(a, nullptr));
    const auto expert = d_expert.download();
    const auto weight = d_weight.download();
    for (uint32_t t = 0; t < n_tokens; ++t) {
      BOOST_TEST(expert[t * k] == 3u);
      if (k == 1) BOOST_TEST(weight[t] == 1.0f, boost::test_tools::tolerance(1e-6f)); // p * (1 / p)
      if (k == 2) {
        BOOST_TEST(expert[t * k + 1] == 5u);
        BOOST_TEST(weight[t * k] == weight[t * k + 1]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(group_equals_the_reference_exactly) {
  struct shape {
    uint32_t n_tokens, k, n_expert;
  };
  for (const shape s : {shape{1, 1, 8}, shape{1, 8, 128}, shape{7, 2, 8}, shape{300, 4, 60}, shape{1000, 8, 128},
                        shape{4096, 2, 8}}) {
    BOOST_TEST_CONTEXT("tokens " << s.n_tokens << " k " << s.k << " experts " << s.n_expert) {
      // Not routed: repeats within a token too, which grouping must handle as well.
      const auto expert = random_experts(size_t(s.n_tokens) * s.k, s.n_expert, s.n_tokens + s.k);
      const auto want = group_on_host(expert, s.k, s.n_expert);
      const auto n_pairs = uint32_t(expert.size());
      device_buffer<uint32_t> d_expert(expert), d_start(s.n_expert + 1), d_token(n_pairs), d_row(n_pairs);
      CUDA_CHECK(gpu::launch_moe_group(
          {d_expert.get(), n_pairs, s.k, s.n_expert, d_start.get(), d_token.get(), d_row.get()}, nullptr));
      BOOST_TEST(d_start.download() == want.start, boost::test_tools::per_element());
      BOOST_TEST(d_token.download() == want.pair_token, boost::test_tools::per_element());
      BOOST_TEST(d_row.download() == want.pair_row, boost::test_tools::per_element());
    }
  }
  // No pairs: every expert empty.
  device_buffer<uint32_t> d_start(9);
  d_start.fill_bytes(0x7f);
  CUDA_CHECK(gpu::launch_moe_group({nullptr, 0, 2, 8, d_start.get(), nullptr, nullptr}, nullptr));
  BOOST_TEST(d_start.download() == std::vector<uint32_t>(9, 0u), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(grouped_matmul_matches_the_reference_matmul_per_expert) {
  struct shape {
    uint32_t n_tokens, k_used, n_expert, n, k;
    bool gather; // x_row = pair_token (gate|up) or identity rows (down)
    bool skewed; // most pairs on two experts: tiles of 16 rows, several per expert
  };
  for (const shape s : {shape{5, 2, 8, 64, 64, true, false}, shape{40, 2, 8, 130, 100, true, true},
                        shape{33, 4, 16, 96, 2048, false, false}, shape{300, 8, 64, 256, 128, true, false},
                        shape{1, 8, 128, 192, 256, true, false}}) {
    BOOST_TEST_CONTEXT("tokens " << s.n_tokens << " k " << s.k_used << " experts " << s.n_expert << " n " << s.n
                                 << " k_in " << s.k << " gather " << s.gather) {
      auto expert = routed_experts(s.n_tokens, s.k_used, s.n_expert, s.n + s.k);
      if (s.skewed) {
        for (uint32_t t = 0; t < s.n_tokens; ++t) {
          if (t % 5 != 0) {
            expert[t * s.k_used] = 1;
            expert[t * s.k_used + 1] = 6;
          }
        }
      }
      const auto g = group_on_host(expert, s.k_used, s.n_expert);
      const auto n_rows = uint32_t(expert.size());
      const uint32_t in_rows = s.gather ? s.n_tokens : n_rows;
      const size_t x_stride = s.k + 16, y_stride = s.n + 8;
      const auto x = random_bf16_values(in_rows * x_stride, s.k, -1.0f, 1.0f);
      const auto w = random_bf16_values(size_t(s.n_expert) * s.n * s.k, s.n, -0.1f, 0.1f);
      std::vector<uint16_t> w_bits(w.size());
      for (size_t i = 0; i < w.size(); ++i) w_bits[i] = ref::fp32_to_bf16(w[i]);

      device_buffer<__nv_bfloat16> d_x(to_bf16_vector(x)), d_w(to_bf16_vector(w));
      device_buffer<uint32_t> d_start(g.start), d_token(g.pair_token);
      device_buffer<__nv_bfloat16> d_y(n_rows * y_stride);
      d_y.fill_bytes(0xff); // NaN: any row or column the kernel misses shows
      gpu::moe_matmul_args a;
      a.x = d_x.get();
      a.x_stride = x_stride;
      a.x_row = s.gather ? d_token.get() : nullptr;
      a.w = d_w.get();
      a.w_stride = s.k;
      a.expert_start = d_start.get();
      a.y = d_y.get();
      a.y_stride = y_stride;
      a.n_rows = n_rows;
      a.n_expert = s.n_expert;
      a.n = s.n;
      a.k = s.k;
      CUDA_CHECK(gpu::launch_moe_matmul(a, nullptr));
      const auto got_all = to_float_vector(d_y.download());

      // The CPU engine's way: gather each expert's rows, one ref::matmul per expert.
      std::vector<float> xe(size_t(n_rows) * s.k), want(size_t(n_rows) * s.n), got(want.size());
      for (uint32_t r = 0; r < n_rows; ++r) {
        const uint32_t src = s.gather ? g.pair_token[r] : r;
        std::copy_n(x.data() + src * x_stride, s.k, xe.data() + size_t(r) * s.k);
        std::copy_n(got_all.data() + r * y_stride, s.n, got.data() + size_t(r) * s.n);
      }
      const ref::weight_matrix stacked{ref::tensor_type::bf16, s.k, s.n_expert * s.n, w_bits.data()};
      for (uint32_t e = 0; e < s.n_expert; ++e) {
        const uint32_t r0 = g.start[e], count = g.start[e + 1] - r0;
        if (count == 0) continue;
        const ref::weight_matrix we{ref::tensor_type::bf16, s.k, s.n, stacked.row(e * s.n)};
        ref::matmul({xe.data() + size_t(r0) * s.k, s.k, count, {&we, 1}, want.data() + size_t(r0) * s.n, s.n});
      }
      BOOST_TEST(nmse(got, want) < nmse_bf16_out);
      // The padding columns of y stay untouched (all-ones bits).
      for (uint32_t r = 0; r < n_rows; ++r) {
        for (size_t i = s.n; i < y_stride; ++i) BOOST_TEST_REQUIRE(std::isnan(got_all[r * y_stride + i]));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(combine_matches_the_reference_with_and_without_a_shared_expert) {
  for (const bool shared : {false, true}) {
    for (const uint32_t n : {64u, 1000u}) {
      const uint32_t n_tokens = 11, k = 4, n_expert = 16, n_pairs = n_tokens * k;
      const auto expert = routed_experts(n_tokens, k, n_expert, n);
      const auto g = group_on_host(expert, k, n_expert);
      const size_t y_stride = n + 4, s_stride = n + 2, out_stride = n + 6;
      const auto y = random_bf16_values(n_pairs * y_stride, n, -2.0f, 2.0f);
      const auto weight = ref::test::random_floats(n_pairs, n + 1, 0.0f, 1.0f);
      const auto sh = random_bf16_values(n_tokens * s_stride, n + 2, -2.0f, 2.0f);
      const auto gate = ref::test::random_floats(n_tokens, n + 3, -3.0f, 3.0f);
      device_buffer<__nv_bfloat16> d_y(to_bf16_vector(y)), d_sh(to_bf16_vector(sh));
      device_buffer<float> d_weight(weight), d_gate(gate);
      device_buffer<uint32_t> d_row(g.pair_row);
      device_buffer<__nv_bfloat16> d_out(n_tokens * out_stride);
      gpu::moe_combine_args a;
      a.y = d_y.get();
      a.y_stride = y_stride;
      a.weight = d_weight.get();
      a.pair_row = d_row.get();
      a.shared = shared ? d_sh.get() : nullptr;
      a.shared_stride = s_stride;
      a.shared_gate = shared ? d_gate.get() : nullptr;
      a.out = d_out.get();
      a.out_stride = out_stride;
      a.n_tokens = n_tokens;
      a.k = k;
      a.n = n;
      CUDA_CHECK(gpu::launch_moe_combine(a, nullptr));
      const auto got = to_float_vector(d_out.download());
      std::vector<float> want(n_tokens * out_stride, 0.0f);
      ref::moe_combine({y.data(), y_stride, weight.data(), g.pair_row.data(), shared ? sh.data() : nullptr, s_stride,
                        shared ? gate.data() : nullptr, want.data(), out_stride, n_tokens, k, n});
      std::vector<float> got_rows, want_rows;
      for (uint32_t t = 0; t < n_tokens; ++t) {
        got_rows.insert(got_rows.end(), got.begin() + t * out_stride, got.begin() + t * out_stride + n);
        want_rows.insert(want_rows.end(), want.begin() + t * out_stride, want.begin() + t * out_stride + n);
      }
      BOOST_TEST_INFO("shared " << shared << " n " << n);
      BOOST_TEST(nmse(got_rows, want_rows) < nmse_bf16_out);
    }
  }
}

BOOST_AUTO_TEST_CASE(launchers_refuse_bad_arguments) {
  device_buffer<uint32_t> u(16);
  device_buffer<float> f(16);
  device_buffer<__nv_bfloat16> b(16);
  gpu::moe_route_args r;
  r.x = b.get();
  r.x_stride = 4;
  r.router = f.get();
  r.n_tokens = 1;
  r.n_embd = 4;
  r.n_expert = 2;
  r.k = 3; // > n_expert
  r.expert = u.get();
  r.weight = f.get();
  BOOST_TEST(gpu::launch_moe_route(r, nullptr) == cudaErrorInvalidValue);
  r.k = 1;
  r.shared_gate_w = f.get(); // without an output for its logit
  BOOST_TEST(gpu::launch_moe_route(r, nullptr) == cudaErrorInvalidValue);
  BOOST_TEST(gpu::launch_moe_group({u.get(), 4, 2, gpu::moe_max_experts + 1, u.get(), u.get(), u.get()}, nullptr) ==
             cudaErrorInvalidValue);
  gpu::moe_matmul_args m;
  m.x = b.get();
  m.x_stride = 2; // < k
  m.w = b.get();
  m.w_stride = 4;
  m.expert_start = u.get();
  m.y = b.get();
  m.y_stride = 4;
  m.n_rows = 1;
  m.n_expert = 1;
  m.n = 4;
  m.k = 4;
  BOOST_TEST(gpu::launch_moe_matmul(m, nullptr) == cudaErrorInvalidValue);
  CUDA_CHECK(cudaGetLastError()); // nothing was launched
}

BOOST_AUTO_TEST_SUITE_END()
