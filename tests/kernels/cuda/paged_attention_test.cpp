// GPU paged attention (one pass and split-K with the merge kernel) against
// the CPU reference: prefill chunks and long decodes in one batch, scattered
// block tables, MHA / GQA / MQA groups, head_dim 40..256 (odd ones take the
// scalar-load path).
#include "kernels/paged_attention.cuh"
#include "kernels/reference/kv_store.hpp"
#include "kernels/reference/paged_attention.hpp"
#include "tests/kernels/cuda/cuda_test_util.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpu = dynamo::kernels::gpu;
namespace ref = dynamo::kernels::ref;
using namespace dynamo::kernels::gpu::test;

namespace {

struct seq_spec {
  uint32_t start_pos, n_query;
};

struct split_spec {
  uint32_t partition_size, max_partitions; // 0, 1: no split
  uint32_t decode_kernel_min_rows = 0;     // split steps: 0 = the decode kernel, UINT32_MAX = the query-tile one
};

void check_attention(uint32_t n_head, uint32_t n_kv, uint32_t hd, const std::vector<seq_spec>& specs, split_spec split) {
  const uint32_t bs = 16;
  uint32_t blocks_needed = 0;
  for (const auto& s : specs) blocks_needed += (s.start_pos + s.n_query + bs - 1) / bs;
  const uint32_t num_blocks = blocks_needed + 3;
  std::vector<uint32_t> pool(num_blocks);
  std::iota(pool.begin(), pool.end(), 0u);
  std::reverse(pool.begin(), pool.end()); // tables point backwards: scattered, non-contiguous
  std::rotate(pool.begin(), pool.begin() + 2, pool.end());

  const size_t per_kv = size_t(bs) * n_kv * hd;
  std::vector<float> cache(num_blocks * 2 * per_kv, 0.0f); // [block][k|v][slot][head][dim]
  const ref::paged_kv_view view{cache.data(), cache.data() + per_kv, ref::kv_dtype::f32, 2 * per_kv, bs, n_kv, hd};

  const uint32_t max_blocks = 80;
  std::vector<uint32_t> tables(specs.size() * max_blocks, 0);
  std::vector<std::vector<uint32_t>> seq_blocks(specs.size());
  std::vector<ref::attention_sequence> ref_seqs;
  std::vector<uint32_t> positions, token_seq;
  size_t next_block = 0;
  uint32_t seed = 1000 * hd + n_head;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    const uint32_t n_pos = s.start_pos + s.n_query, nb = (n_pos + bs - 1) / bs;
    BOOST_REQUIRE_LE(nb, max_blocks);
    for (uint32_t b = 0; b < nb; ++b) seq_blocks[i].push_back(pool[next_block++]);
    std::copy(seq_blocks[i].begin(), seq_blocks[i].end(), tables.begin() + i * max_blocks);
    const auto k = random_bf16_values(size_t(n_pos) * n_kv * hd, ++seed);
    const auto v = random_bf16_values(size_t(n_pos) * n_kv * hd, ++seed);
    std::vector<uint32_t> slots(n_pos);
    for (uint32_t p = 0; p < n_pos; ++p) slots[p] = seq_blocks[i][p / bs] * bs + p % bs;
    ref::kv_store({k.data(), size_t(n_kv) * hd, v.data(), size_t(n_kv) * hd, slots.data(), n_pos, view});
    ref_seqs.push_back({uint32_t(positions.size()), s.n_query, s.start_pos, seq_blocks[i].data(), nb});
    for (uint32_t j = 0; j < s.n_query; ++j) {
      positions.push_back(s.start_pos + j);
      token_seq.push_back(uint32_t(i));
    }
  }
  const auto n_tokens = static_cast<uint32_t>(positions.size());
  const size_t q_stride = size_t(n_head + 2 * n_kv) * hd; // Q inside a fused QKV row
  const size_t out_stride = size_t(n_head) * hd;
  const auto q = random_bf16_values(n_tokens * q_stride, ++seed, -2.0f, 2.0f);
  const float scale = 1.0f / std::sqrt(float(hd));

  std::vector<float> want(n_tokens * out_stride, NAN);
  ref::paged_attention({q.data(), q_stride, want.data(), out_stride, n_head, scale, ref_seqs, view, nullptr});

  std::vector<__nv_bfloat16> cache_bf16 = to_bf16_vector(cache);
  device_buffer<__nv_bfloat16> d_cache(cache_bf16);
  device_buffer<__nv_bfloat16> d_q(to_bf16_vector(q));
  device_buffer<__nv_bfloat16> d_out(n_tokens * out_stride);
  device_buffer<uint32_t> d_pos(positions), d_seq(token_seq), d_tables(tables);
  device_buffer<float> d_ws(std::max<size_t>(1, gpu::paged_attention_workspace_floats(n_tokens, n_head, hd,
                                                                                      split.max_partitions)));
  gpu::paged_attention_args a;
  a.q = d_q.get();
  a.q_stride = q_stride;
  a.out = d_out.get();
  a.out_stride = out_stride;
  a.n_tokens = n_tokens;
  a.n_head = n_head;
  a.scale = scale;
  a.kv = {d_cache.get(), d_cache.get() + per_kv, 2 * per_kv, bs, n_kv, hd};
  a.positions = d_pos.get();
  a.token_seq = d_seq.get();
  a.block_tables = d_tables.get();
  a.block_table_stride = max_blocks;
  a.partition_size = split.partition_size;
  a.max_partitions = split.max_partitions;
  a.workspace = d_ws.get();
  a.decode_kernel_min_rows = split.decode_kernel_min_rows;
  CUDA_CHECK(gpu::launch_paged_attention(a, nullptr));
  const auto got = to_float_vector(d_out.download());
  BOOST_TEST_INFO("heads " << n_head << "/" << n_kv << " head_dim " << hd << " partition " << split.partition_size
                           << " x " << split.max_partitions << " decode kernel from " << split.decode_kernel_min_rows);
  const double err = nmse(got, want);
  BOOST_TEST(err < nmse_bf16_out);
  if (err >= nmse_bf16_out) { // say where it goes wrong: the first bad element's token, head and dim
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::abs(got[i] - want[i]) > 0.02f + 0.02f * std::abs(want[i])) {
        const size_t t = i / out_stride, h = (i % out_stride) / hd, d = i % hd;
        BOOST_TEST_MESSAGE("first mismatch: token " << t << " (position " << positions[t] << ") head " << h
                                                    << " dim " << d << ": got " << got[i] << " want " << want[i]);
        break;
      }
    }
  }
}

struct head_shape {
  uint32_t n_head, n_kv, hd;
};
const head_shape shapes[] = {{4, 4, 64}, {9, 3, 64}, {8, 2, 128}, {8, 1, 128}, {4, 2, 80}, {6, 3, 40}, {4, 2, 256},
                             {4, 2, 36}}; // 36: rows not 16-byte aligned, the scalar-load kernels

} // namespace

BOOST_AUTO_TEST_SUITE(paged_attention_cuda)

BOOST_AUTO_TEST_CASE(one_key_returns_its_value_row) {
  // Position 0 sees only itself: each head's output is its KV head's V row.
  check_attention(2, 1, 64, {{0, 1}}, {0, 1});
  check_attention(2, 1, 40, {{0, 1}}, {0, 1});
}

BOOST_AUTO_TEST_CASE(mixed_prefill_and_decode_batch_matches_reference) {
  // A fresh prompt, a chunk after 50 cached tokens, and decodes up to 700 deep.
  const std::vector<seq_spec> specs = {{0, 37}, {50, 13}, {700, 1}, {5, 1}, {129, 1}};
  for (const auto& s : shapes) check_attention(s.n_head, s.n_kv, s.hd, specs, {0, 1});
}

BOOST_AUTO_TEST_CASE(split_k_decode_matches_reference) {
  const std::vector<seq_spec> decodes = {{0, 1}, {16, 1}, {700, 1}, {1000, 1}, {63, 1}, {64, 1}};
  for (const uint32_t from : {0u, UINT32_MAX}) { // the decode kernel, then the query-tile kernel
    for (const auto& s : shapes) {
      check_attention(s.n_head, s.n_kv, s.hd, decodes, {64, 16, from}); // every context fits the partitions
      check_attention(s.n_head, s.n_kv, s.hd, decodes, {64, 4, from});  // the last partition absorbs the tail
    }
  }
}

BOOST_AUTO_TEST_CASE(split_k_also_handles_prefill_tokens) {
  const std::vector<seq_spec> specs = {{0, 37}, {50, 13}, {300, 2}};
  check_attention(8, 2, 128, specs, {32, 8, 0});
  check_attention(8, 2, 128, specs, {32, 8, UINT32_MAX});
}

BOOST_AUTO_TEST_CASE(rejects_groups_larger_than_eight_and_huge_heads) {
  gpu::paged_attention_args a;
  a.n_tokens = 1;
  a.q = a.out = reinterpret_cast<__nv_bfloat16*>(0x1000);
  a.positions = a.token_seq = a.block_tables = reinterpret_cast<const uint32_t*>(0x1000);
  a.kv = {reinterpret_cast<__nv_bfloat16*>(0x1000), reinterpret_cast<__nv_bfloat16*>(0x1000), 0, 16, 1, 64};
  a.n_head = 16; // group 16
  a.q_stride = a.out_stride = 16 * 64;
  BOOST_TEST(gpu::launch_paged_attention(a, nullptr) == cudaErrorInvalidValue);
  a.n_head = 1;
  a.kv.head_dim = 512;
  a.q_stride = a.out_stride = 512;
  BOOST_TEST(gpu::launch_paged_attention(a, nullptr) == cudaErrorInvalidValue);
}

BOOST_AUTO_TEST_SUITE_END()
