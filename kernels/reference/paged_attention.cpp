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

/// One (query token, query head): scores over the visible keys, softmax,
/// weighted sum of values.
void attend_one(const paged_attention_args& a, const detail::kernel_table& kt,
                const attention_sequence& s, uint32_t i, uint32_t head) {
  const paged_kv_view& kv = a.kv;
  const uint32_t kv_head = head / (a.n_head / kv.n_kv_head);
  const uint32_t hd = kv.head_dim;
  const uint32_t token = s.q_offset + i;
  const float* q = a.q + token * a.q_stride + static_cast<size_t>(head) * hd;
  float* out = a.out + token * a.out_stride + static_cast<size_t>(head) * hd;
  const uint32_t n_keys = s.start_pos + i + 1;

  thread_local std::vector<float> scores;
  if (scores.size() < n_keys) scores.resize(n_keys);
  const bool f16 = kv.dtype == kv_dtype::f16;
  for (uint32_t j = 0; j < n_keys; ++j) {
    const size_t off = kv.offset(s.block_table[j / kv.block_size], j % kv.block_size, kv_head);
    const float d = f16 ? kt.dot_f16(q, static_cast<const uint16_t*>(kv.k) + off, hd)
                        : kt.dot_f32(q, static_cast<const float*>(kv.k) + off, hd);
    scores[j] = d * a.scale;
  }
  softmax(scores.data(), n_keys);
  std::fill(out, out + hd, 0.0f);
  for (uint32_t j = 0; j < n_keys; ++j) {
    const size_t off = kv.offset(s.block_table[j / kv.block_size], j % kv.block_size, kv_head);
    if (f16) {
      kt.axpy_f16(scores[j], static_cast<const uint16_t*>(kv.v) + off, out, hd);
    } else {
      kt.axpy_f32(scores[j], static_cast<const float*>(kv.v) + off, out, hd);
    }
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
  // Work item = (query token, head); the longest (last) tokens first, so the
  // dynamic claiming of the pool balances the causal triangle.
  const auto n_items = static_cast<uint32_t>(queries.size() * a.n_head);
  const auto n_queries = static_cast<uint32_t>(queries.size());
  // A pointer, not the thread_local name: workers would see their own copy.
  const query_ref* const qs = queries.data();
  auto item = [&a, &kt, qs, n_queries](uint32_t it) {
    const query_ref& qr = qs[n_queries - 1 - it / a.n_head];
    attend_one(a, kt, a.seqs[qr.seq], qr.index, it % a.n_head);
  };
  if (a.pool != nullptr) {
    a.pool->parallel_for(n_items, item);
  } else {
    for (uint32_t it = 0; it < n_items; ++it) item(it);
  }
}

} // namespace dynamo::kernels::ref
