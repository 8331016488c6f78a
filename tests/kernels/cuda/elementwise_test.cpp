// GPU embedding, RMSNorm (+ residual, + row gather), RoPE (+ per-head Q/K
// norms), bias add, SwiGLU and KV store against the CPU references, over odd
// shapes.
#include "kernels/bias_add.cuh"
#include "kernels/embedding.cuh"
#include "kernels/kv_store.cuh"
#include "kernels/reference/bias_add.hpp"
#include "kernels/reference/embedding.hpp"
#include "kernels/reference/kv_store.hpp"
#include "kernels/reference/rms_norm.hpp"
#include "kernels/reference/rope.hpp"
#include "kernels/reference/swiglu.hpp"
#include "kernels/rms_norm.cuh"
#include "kernels/rope.cuh"
#include "kernels/swiglu.cuh"
#include "tests/kernels/cuda/cuda_test_util.hpp"

#include <cmath>
#include <numeric>

namespace gpu = dynamo::kernels::gpu;
namespace ref = dynamo::kernels::ref;
using namespace dynamo::kernels::gpu::test;

BOOST_AUTO_TEST_SUITE(elementwise)

BOOST_AUTO_TEST_CASE(embedding_gathers_bf16_and_f16_rows_exactly) {
  for (const auto dtype : {gpu::half_type::bf16, gpu::half_type::f16}) {
    for (const uint32_t n_embd : {64u, 100u, 577u}) {
      const uint32_t vocab = 37;
      const auto values = random_bf16_values(size_t(vocab) * n_embd, 7 + n_embd);
      std::vector<uint16_t> bits(values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        bits[i] = dtype == gpu::half_type::bf16 ? ref::fp32_to_bf16(values[i]) : ref::fp32_to_fp16(values[i]);
      }
      const std::vector<uint32_t> ids = {5, 0, 36, 5, 12, 40 /* out of range: zero row */, 1};
      const auto n = static_cast<uint32_t>(ids.size());
      device_buffer<uint16_t> table(bits);
      device_buffer<uint32_t> d_ids(ids);
      const size_t stride = n_embd + 3;
      device_buffer<float> out(n * stride);
      out.fill_bytes(0);
      CUDA_CHECK(gpu::launch_embedding({table.get(), dtype, vocab, n_embd, d_ids.get(), n, out.get(), stride}, nullptr));
      const auto got = out.download();

      const ref::weight_matrix w{dtype == gpu::half_type::bf16 ? ref::tensor_type::bf16 : ref::tensor_type::f16,
                                 n_embd, vocab, bits.data()};
      for (uint32_t t = 0; t < n; ++t) {
        std::vector<float> want(n_embd, 0.0f);
        if (ids[t] < vocab) ref::embedding({w, &ids[t], 1, want.data(), n_embd});
        for (uint32_t i = 0; i < n_embd; ++i) BOOST_TEST_REQUIRE(got[t * stride + i] == want[i]);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(rms_norm_with_residual_and_row_gather_matches_reference) {
  for (const uint32_t n : {64u, 576u, 4097u, 9000u}) {
    for (const bool with_residual : {false, true}) {
      for (const bool gather : {false, true}) {
        const uint32_t n_x_rows = 7;
        const std::vector<uint32_t> rows = gather ? std::vector<uint32_t>{6, 2, 3} : std::vector<uint32_t>{};
        const uint32_t n_rows = gather ? uint32_t(rows.size()) : n_x_rows;
        auto x = random_bf16_values(size_t(n_x_rows) * n, n, -2.0f, 2.0f);
        const auto res = random_bf16_values(size_t(n_x_rows) * n, n + 1);
        const auto weight = random_bf16_values(n, n + 2, 0.5f, 1.5f);

        device_buffer<float> d_x(x);
        device_buffer<__nv_bfloat16> d_res(to_bf16_vector(res));
        device_buffer<float> d_w(weight);
        device_buffer<__nv_bfloat16> d_out(size_t(n_rows) * n);
        device_buffer<uint32_t> d_rows(gather ? rows : std::vector<uint32_t>{0});
        gpu::rms_norm_args a;
        a.x = d_x.get();
        a.x_stride = n;
        a.residual = with_residual ? d_res.get() : nullptr;
        a.residual_stride = n;
        a.weight = d_w.get();
        a.out = d_out.get();
        a.out_stride = n;
        a.rows = gather ? d_rows.get() : nullptr;
        a.n_rows = n_rows;
        a.n = n;
        a.eps = 1e-5f;
        CUDA_CHECK(gpu::launch_rms_norm(a, nullptr));
        const auto got = to_float_vector(d_out.download());
        const auto got_x = d_x.download();

        std::vector<float> want(size_t(n_rows) * n);
        std::vector<float> want_x = x;
        for (uint32_t i = 0; i < n_rows; ++i) {
          const uint32_t r = gather ? rows[i] : i;
          ref::rms_norm({want_x.data() + size_t(r) * n, n, with_residual ? res.data() + size_t(r) * n : nullptr, n,
                         weight.data(), want.data() + size_t(i) * n, n, 1, n, 1e-5f});
        }
        BOOST_TEST_INFO("n " << n << " residual " << with_residual << " gather " << gather);
        BOOST_TEST(nmse(got, want) < nmse_bf16_out);
        BOOST_TEST(nmse(got_x, want_x) < nmse_f32_out); // x += residual, in fp32, on the same rows only
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(rope_norm_and_neox_match_reference) {
  struct shape {
    uint32_t n_heads, head_dim, rot_dim;
  };
  for (const auto style : {gpu::rope_style::norm, gpu::rope_style::neox}) {
    for (const shape s : {shape{5, 64, 64}, shape{12, 128, 128}, shape{3, 80, 48}}) {
      const uint32_t n_tokens = 9, max_pos = 300;
      const size_t stride = size_t(s.n_heads) * s.head_dim + 32; // e.g. V follows Q and K in the row
      const std::vector<uint32_t> pos = {0, 1, 2, 17, 100, 101, 255, 299, 3};
      auto x = random_bf16_values(n_tokens * stride, s.head_dim + s.n_heads, -3.0f, 3.0f);
      const auto table = ref::make_rope_table(s.rot_dim, max_pos, 500000.0f);

      device_buffer<__nv_bfloat16> d_x(to_bf16_vector(x));
      device_buffer<uint32_t> d_pos(pos);
      device_buffer<float> d_cos(table.cos), d_sin(table.sin);
      gpu::rope_args a;
      a.x = d_x.get();
      a.x_stride = stride;
      a.n_tokens = n_tokens;
      a.n_heads = s.n_heads;
      a.head_dim = s.head_dim;
      a.rot_dim = s.rot_dim;
      a.positions = d_pos.get();
      a.cos = d_cos.get();
      a.sin = d_sin.get();
      a.max_positions = max_pos;
      a.style = style;
      CUDA_CHECK(gpu::launch_rope(a, nullptr));
      const auto got = to_float_vector(d_x.download());

      auto want = x;
      ref::rope({want.data(), stride, n_tokens, s.n_heads, s.head_dim, pos.data(), &table,
                 style == gpu::rope_style::norm ? ref::rope_style::norm : ref::rope_style::neox});
      BOOST_TEST_INFO("style " << int(style) << " heads " << s.n_heads << " head_dim " << s.head_dim);
      BOOST_TEST(nmse(got, want) < nmse_bf16_out);
      // Dimensions past rot_dim and the rest of the row are untouched, bit for bit.
      for (uint32_t t = 0; t < n_tokens; ++t) {
        for (size_t i = 0; i < stride; ++i) {
          const bool rotated = i < size_t(s.n_heads) * s.head_dim && i % s.head_dim < s.rot_dim;
          if (!rotated) BOOST_TEST_REQUIRE(got[t * stride + i] == x[t * stride + i]);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(rope_with_per_head_q_and_k_norms_matches_rms_norm_then_rope) {
  struct shape {
    uint32_t n_q, n_k, head_dim, rot_dim;
  };
  for (const auto style : {gpu::rope_style::norm, gpu::rope_style::neox}) {
    for (const shape s : {shape{4, 2, 128, 128}, shape{8, 4, 64, 64}, shape{3, 1, 80, 48}, shape{2, 2, 256, 256}}) {
      for (const int which : {0, 1, 2}) { // 0: Q and K norms, 1: Q only, 2: K only
        const uint32_t n_tokens = 7, max_pos = 300, n_heads = s.n_q + s.n_k;
        const size_t stride = size_t(n_heads) * s.head_dim + 40; // V follows Q and K in the row
        const std::vector<uint32_t> pos = {0, 1, 5, 17, 100, 299, 3};
        const float eps = 1e-6f;
        const auto x = random_bf16_values(n_tokens * stride, s.head_dim + n_heads + which, -3.0f, 3.0f);
        const auto q_norm = random_bf16_values(s.head_dim, 5 + which, 0.5f, 1.5f);
        const auto k_norm = random_bf16_values(s.head_dim, 6 + which, 0.5f, 1.5f);
        const auto table = ref::make_rope_table(s.rot_dim, max_pos, 1000000.0f);
        const bool use_q = which != 2, use_k = which != 1;

        device_buffer<__nv_bfloat16> d_x(to_bf16_vector(x));
        device_buffer<uint32_t> d_pos(pos);
        device_buffer<float> d_cos(table.cos), d_sin(table.sin), d_qn(q_norm), d_kn(k_norm);
        gpu::rope_args a;
        a.x = d_x.get();
        a.x_stride = stride;
        a.n_tokens = n_tokens;
        a.n_heads = n_heads;
        a.head_dim = s.head_dim;
        a.rot_dim = s.rot_dim;
        a.positions = d_pos.get();
        a.cos = d_cos.get();
        a.sin = d_sin.get();
        a.max_positions = max_pos;
        a.style = style;
        a.q_norm = use_q ? d_qn.get() : nullptr;
        a.k_norm = use_k ? d_kn.get() : nullptr;
        a.n_q_heads = s.n_q;
        a.norm_eps = eps;
        CUDA_CHECK(gpu::launch_rope(a, nullptr));
        const auto got = to_float_vector(d_x.download());

        // The CPU forward's order: RMSNorm over each head in fp32, then RoPE.
        auto want = x;
        for (uint32_t t = 0; t < n_tokens; ++t) {
          float* q = want.data() + t * stride;
          float* k = q + size_t(s.n_q) * s.head_dim;
          if (use_q) ref::rms_norm({q, s.head_dim, nullptr, 0, q_norm.data(), q, s.head_dim, s.n_q, s.head_dim, eps});
          if (use_k) ref::rms_norm({k, s.head_dim, nullptr, 0, k_norm.data(), k, s.head_dim, s.n_k, s.head_dim, eps});
        }
        ref::rope({want.data(), stride, n_tokens, n_heads, s.head_dim, pos.data(), &table,
                   style == gpu::rope_style::norm ? ref::rope_style::norm : ref::rope_style::neox});
        BOOST_TEST_INFO("style " << int(style) << " heads " << s.n_q << "+" << s.n_k << " head_dim " << s.head_dim
                                 << " rot_dim " << s.rot_dim << " norms " << which);
        BOOST_TEST(nmse(got, want) < nmse_bf16_out);
        // One rounding only: every value is within one bf16 step of the fp32 result.
        for (size_t i = 0; i < size_t(n_tokens) * stride; ++i) {
          BOOST_TEST_REQUIRE(std::fabs(got[i] - want[i]) <= std::fabs(want[i]) * (1.0f / 256) + 1e-5f);
        }
        // The rest of the row (V) is untouched, bit for bit.
        for (uint32_t t = 0; t < n_tokens; ++t) {
          for (size_t i = size_t(n_heads) * s.head_dim; i < stride; ++i) {
            BOOST_TEST_REQUIRE(got[t * stride + i] == x[t * stride + i]);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bias_add_matches_reference_and_keeps_the_rest_of_the_row) {
  for (const uint32_t n : {1u, 100u, 1600u}) {
    const uint32_t n_tokens = 5;
    const size_t stride = n + 7;
    const auto y = random_bf16_values(n_tokens * stride, n, -4.0f, 4.0f);
    const auto bias = random_bf16_values(n, n + 1, -1.0f, 1.0f);
    device_buffer<__nv_bfloat16> d_y(to_bf16_vector(y));
    device_buffer<float> d_bias(bias);
    CUDA_CHECK(gpu::launch_bias_add({d_y.get(), stride, d_bias.get(), n_tokens, n}, nullptr));
    const auto got = to_float_vector(d_y.download());
    auto want = y;
    ref::bias_add({want.data(), stride, bias.data(), n_tokens, n});
    BOOST_TEST_INFO("n " << n);
    // bf16 + bf16 rounded once: exactly the rounded fp32 sum.
    for (uint32_t t = 0; t < n_tokens; ++t) {
      for (size_t i = 0; i < stride; ++i) {
        const size_t at = t * stride + i;
        BOOST_TEST_REQUIRE(got[at] == (i < n ? round_bf16(want[at]) : y[at]));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(swiglu_reads_fused_gate_up_and_matches_reference) {
  struct shape {
    uint32_t n, n_tokens;
  };
  // 70000 rows: more than a grid's 65535 y-blocks (MoE steps run SwiGLU per token-expert pair).
  for (const shape sh : {shape{100, 3}, shape{1536, 3}, shape{64, 70000}}) {
    const uint32_t n = sh.n, n_tokens = sh.n_tokens;
    const auto gu = random_bf16_values(size_t(n_tokens) * 2 * n, n, -6.0f, 6.0f);
    device_buffer<__nv_bfloat16> d_gu(to_bf16_vector(gu));
    device_buffer<__nv_bfloat16> d_out(size_t(n_tokens) * n);
    CUDA_CHECK(gpu::launch_swiglu({d_gu.get(), d_gu.get() + n, 2 * size_t(n), d_out.get(), n, n_tokens, n}, nullptr));
    const auto got = to_float_vector(d_out.download());
    std::vector<float> want(size_t(n_tokens) * n);
    ref::swiglu({gu.data(), gu.data() + n, 2 * size_t(n), want.data(), n, n_tokens, n});
    BOOST_TEST(nmse(got, want) < nmse_bf16_out);
  }
}

BOOST_AUTO_TEST_CASE(kv_store_writes_slots_like_reference_and_skips_no_slot) {
  const uint32_t bs = 16, n_kv = 3, hd = 64, num_blocks = 6, n_tokens = 20;
  const size_t per_kv = size_t(bs) * n_kv * hd;
  const size_t row = size_t(n_kv) * hd, stride = row * 3 + 8; // K and V rows inside a wider QKV-like row
  const auto src = random_bf16_values(n_tokens * stride, 3);
  std::vector<uint32_t> slots(n_tokens);
  std::iota(slots.begin(), slots.end(), 0u);
  for (auto& s : slots) s = (s * 37 + 5) % (num_blocks * bs); // distinct, scattered
  slots[4] = gpu::no_slot;

  // Cache laid out [block][k|v][head][slot][dim] so block_stride and the V offset matter.
  device_buffer<__nv_bfloat16> cache(num_blocks * 2 * per_kv);
  cache.fill_bytes(0);
  device_buffer<__nv_bfloat16> d_src(to_bf16_vector(src));
  device_buffer<uint32_t> d_slots(slots);
  gpu::kv_store_args a;
  a.k = d_src.get() + row;
  a.k_stride = stride;
  a.v = d_src.get() + 2 * row;
  a.v_stride = stride;
  a.slots = d_slots.get();
  a.n_tokens = n_tokens;
  a.kv = {cache.get(), cache.get() + per_kv, 2 * per_kv, bs, n_kv, hd};
  CUDA_CHECK(gpu::launch_kv_store(a, nullptr));
  const auto got = to_float_vector(cache.download());

  std::vector<float> want(num_blocks * 2 * per_kv, 0.0f);
  ref::paged_kv_view view{want.data(), want.data() + per_kv, ref::kv_dtype::f32, 2 * per_kv, bs, n_kv, hd};
  for (uint32_t t = 0; t < n_tokens; ++t) {
    if (slots[t] == gpu::no_slot) continue;
    ref::kv_store({src.data() + t * stride + row, stride, src.data() + t * stride + 2 * row, stride, &slots[t], 1, view});
  }
  BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
