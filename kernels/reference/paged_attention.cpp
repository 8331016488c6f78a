#include "kernels/reference/paged_attention.hpp"

#include "kernels/reference/simd_kernels.hpp"
#include "kernels/reference/softmax.hpp"

#include <algorithm>
#include <vector>

namespace dynamo::kernels::ref {
namespace {

struct query_ref {
  uint32_t seq;   ///< index into args.seqs
  uint32_t index; ///< query token within the sequence
};

/// Scratch of one thread: scores [group, n_keys] and one K/V row in fp32.
struct scratch {
  std::vector<float> scores;
  std::vector<float> row;
};

/// Pointer to (key position j, kv head) of K or V as fp32: in place for an
/// fp32 cache, converted into `buf` for fp16 (exact).
const float* kv_row(const paged_kv_view& kv, const detail::kernel_table& kt, const void* base,
                    const attention_sequence& s, uint32_t j, uint32_t kv_head, float* buf) {
  const size_t off = kv.offset(s.block_table[j / kv.block_size], j % kv.block_size, kv_head);
  if (kv.dtype == kv_dtype::f32) return static_cast<const float*>(base) + off;
  kt.load_f16(static_cast<const uint16_t*>(base) + off, buf, kv.head_dim);
  return buf;
}

/// One (query token, KV head): the query heads of its group share each K and
/// V row load. Per query head the arithmetic is that of a lone head: scores
/// in key order, softmax, then values accumulated in key order.
void attend_group(const paged_attention_args& a, const detail::kernel_table& kt, const attention_sequence& s,
                  uint32_t i, uint32_t kv_head) {
  const paged_kv_view& kv = a.kv;
  const uint32_t group = a.n_head / kv.n_kv_head;
  const uint32_t hd = kv.head_dim;
  const uint32_t token = s.q_offset + i;
  const uint32_t head0 = kv_head * group;
  const float* q = a.q + token * a.q_stride + static_cast<size_t>(head0) * hd;
  float* out = a.out + token * a.out_stride + static_cast<size_t>(head0) * hd;
  const uint32_t n_keys = s.start_pos + i + 1;

  thread_local scratch sc;
  if (sc.scores.size() < size_t(group) * n_keys) sc.scores.resize(size_t(group) * n_keys);
  if (sc.row.size() < hd) sc.row.resize(hd);
  float* scores = sc.scores.data();
  for (uint32_t j = 0; j < n_keys; ++j) {
    const float* k = kv_row(kv, kt, kv.k, s, j, kv_head, sc.row.data());
    for (uint32_t g = 0; g < group; ++g) scores[g * n_keys + j] = kt.dot(q + g * hd, k, hd) * a.scale;
  }
  for (uint32_t g = 0; g < group; ++g) softmax(scores + g * n_keys, n_keys);
  std::fill(out, out + size_t(group) * hd, 0.0f);
  for (uint32_t j = 0; j < n_keys; ++j) {
    const float* v = kv_row(kv, kt, kv.v, s, j, kv_head, sc.row.data());
    for (uint32_t g = 0; g < group; ++g) kt.axpy_f32(scores[g * n_keys + j], v, out + g * hd, hd);
  }
}

} // namespace

void paged_attention(const paged_attention_args& a) {
  const auto& kt = detail::active_kernels();
  thread_local std::vector<query_ref> queries;
  queries.clear();
  for (uint32_t s = 0; s < a.seqs.size(); ++s) {
    for (uint32_t i = 0; i < a.seqs[s].n_query; ++i) queries.push_back({s, i});
  }
  // Work item = (query token, KV head); the longest (last) tokens first, so
  // the dynamic claiming of the pool balances the causal triangle.
  const uint32_t n_kv = a.kv.n_kv_head;
  const auto n_items = static_cast<uint32_t>(queries.size() * n_kv);
  const auto n_queries = static_cast<uint32_t>(queries.size());
  // A pointer, not the thread_local name: workers would see their own copy.
  const query_ref* const qs = queries.data();
  auto item = [&a, &kt, qs, n_queries, n_kv](uint32_t it) {
    const query_ref& qr = qs[n_queries - 1 - it / n_kv];
    attend_group(a, kt, a.seqs[qr.seq], qr.index, it % n_kv);
  };
  if (a.pool != nullptr) {
    a.pool->parallel_for(n_items, item);
  } else {
    for (uint32_t it = 0; it < n_items; ++it) item(it);
  }
}

} // namespace dynamo::kernels::ref
