#include "kernels/reference/paged_attention.hpp"

#include "kernels/reference/simd_kernels.hpp"
#include "kernels/reference/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dynamo::kernels::ref {
namespace {

/// Up to this many query tokens of one sequence share each K and V row load
/// (an fp16 cache is read in place, converted in registers); fewer when
/// their scores would pass max_block_scores floats.
constexpr uint32_t max_block_queries = 16;
constexpr size_t max_block_scores = size_t(1) << 20;

struct query_block {
  uint32_t seq;   ///< index into args.seqs
  uint32_t first; ///< first query token of the block within the sequence
  uint32_t count;
};

/// Scratch of one thread: scores [query][group head][n_keys of the block's
/// last query], and the arguments of one row-kernel call.
struct scratch {
  std::vector<float> scores;
  std::vector<const float*> in; ///< the queries (K) or score rows (V) of one row-kernel call
  std::vector<float*> out;      ///< their score rows (K) or outputs (V)
};

/// softmax (softmax.hpp) with exp_row's e^x: the max, e^(x - max), their sum
/// in double (eight partial sums in a fixed tree, then the tail in order),
/// times 1 / sum. Not finite max: softmax's own handling.
void softmax_scores(const detail::kernel_table& kt, float* x, uint32_t n) {
  const float max = *std::max_element(x, x + n);
  if (!std::isfinite(max)) {
    softmax(x, n);
    return;
  }
  kt.exp_row(x, n, max);
  double acc[8] = {};
  uint32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (uint32_t l = 0; l < 8; ++l) acc[l] += x[i + l];
  }
  double sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
  for (; i < n; ++i) sum += x[i];
  const float inv = static_cast<float>(1.0 / sum);
  for (uint32_t j = 0; j < n; ++j) x[j] *= inv;
}

/// Per KV block (the n rows from key j0), the (query token, head) pairs that
/// see its first m rows go to the row kernels together, so each row is loaded
/// once per call for all of them: `add(i, g)` puts a pair into sc.in / sc.out,
/// `call(m)` runs them. m rises with the token (causal), so runs are contiguous.
template <class NKeys, class Add, class Call>
void for_each_run(scratch& sc, uint32_t count, uint32_t group, uint32_t j0, uint32_t n, NKeys n_keys, Add&& add,
                  Call&& call) {
  uint32_t run_m = 0;
  sc.in.clear();
  sc.out.clear();
  for (uint32_t i = 0; i < count; ++i) {
    if (n_keys(i) <= j0) continue;
    const uint32_t m = std::min(n, n_keys(i) - j0);
    if (m != run_m && !sc.in.empty()) {
      call(run_m);
      sc.in.clear();
      sc.out.clear();
    }
    run_m = m;
    for (uint32_t g = 0; g < group; ++g) add(i, g);
  }
  if (!sc.in.empty()) call(run_m);
}

/// A block of query tokens of one sequence and one KV head: per KV block,
/// its rows are loaded once for every query token and query head of the
/// group. Per (query token, query head) the arithmetic is that of a lone
/// one: scores in key order, softmax, values accumulated in key order.
void attend_block(const paged_attention_args& a, const detail::kernel_table& kt, const attention_sequence& s,
                  const query_block& qb, uint32_t kv_head) {
  const paged_kv_view& kv = a.kv;
  const uint32_t group = a.n_head / kv.n_kv_head, hd = kv.head_dim, bs = kv.block_size;
  const uint32_t head0 = kv_head * group;
  const uint32_t keys_max = s.start_pos + qb.first + qb.count; // keys of the block's last query
  auto n_keys = [&](uint32_t i) { return s.start_pos + qb.first + i + 1; };
  auto q_of = [&](uint32_t i, uint32_t g) {
    return a.q + (s.q_offset + qb.first + i) * a.q_stride + static_cast<size_t>(head0 + g) * hd;
  };
  auto out_of = [&](uint32_t i, uint32_t g) {
    return a.out + (s.q_offset + qb.first + i) * a.out_stride + static_cast<size_t>(head0 + g) * hd;
  };

  thread_local scratch sc;
  const size_t n_scores = size_t(qb.count) * group * keys_max;
  if (sc.scores.size() < n_scores) sc.scores.resize(n_scores);
  auto scores_of = [&](uint32_t i, uint32_t g) { return sc.scores.data() + (size_t(i) * group + g) * keys_max; };

  // Rows [0, n) of KV head kv_head in the block holding key j0: fp32, or fp16
  // (the row kernels convert in registers, exactly).
  const bool f16 = kv.dtype == kv_dtype::f16;
  auto rows_at = [&](const void* base, uint32_t j0) {
    const size_t off = kv.offset(s.block_table[j0 / bs], 0, kv_head);
    return f16 ? static_cast<const void*>(static_cast<const uint16_t*>(base) + off)
               : static_cast<const void*>(static_cast<const float*>(base) + off);
  };
  for (uint32_t j0 = 0; j0 < keys_max; j0 += bs) {
    const uint32_t n = std::min(bs, keys_max - j0);
    const void* k = rows_at(kv.k, j0);
    for_each_run(
        sc, qb.count, group, j0, n, n_keys,
        [&](uint32_t i, uint32_t g) {
          sc.in.push_back(q_of(i, g));
          sc.out.push_back(scores_of(i, g) + j0);
        },
        [&](uint32_t m) {
          const auto n_q = static_cast<uint32_t>(sc.in.size());
          if (f16)
            kt.dot_rows_f16(sc.in.data(), n_q, static_cast<const uint16_t*>(k), hd, m, hd, a.scale, sc.out.data());
          else
            kt.dot_rows(sc.in.data(), n_q, static_cast<const float*>(k), hd, m, hd, a.scale, sc.out.data());
        });
  }
  for (uint32_t i = 0; i < qb.count; ++i) {
    for (uint32_t g = 0; g < group; ++g) {
      softmax_scores(kt, scores_of(i, g), n_keys(i));
      std::fill_n(out_of(i, g), hd, 0.0f);
    }
  }
  for (uint32_t j0 = 0; j0 < keys_max; j0 += bs) {
    const uint32_t n = std::min(bs, keys_max - j0);
    const void* v = rows_at(kv.v, j0);
    for_each_run(
        sc, qb.count, group, j0, n, n_keys,
        [&](uint32_t i, uint32_t g) {
          sc.in.push_back(scores_of(i, g) + j0);
          sc.out.push_back(out_of(i, g));
        },
        [&](uint32_t m) {
          const auto n_q = static_cast<uint32_t>(sc.in.size());
          if (f16)
            kt.axpy_rows_f16(sc.in.data(), n_q, static_cast<const uint16_t*>(v), hd, m, sc.out.data(), hd);
          else
            kt.axpy_rows(sc.in.data(), n_q, static_cast<const float*>(v), hd, m, sc.out.data(), hd);
        });
  }
}

} // namespace

void paged_attention(const paged_attention_args& a) {
  const auto& kt = detail::active_kernels();
  const uint32_t group = a.n_head / a.kv.n_kv_head;
  thread_local std::vector<query_block> blocks;
  blocks.clear();
  for (uint32_t s = 0; s < a.seqs.size(); ++s) {
    const attention_sequence& seq = a.seqs[s];
    const size_t keys_max = size_t(seq.start_pos) + seq.n_query;
    const auto fit = static_cast<uint32_t>(std::max<size_t>(1, max_block_scores / (size_t(group) * keys_max)));
    const uint32_t per_block = std::min(max_block_queries, fit);
    for (uint32_t i = 0; i < seq.n_query; i += per_block) {
      blocks.push_back({s, i, std::min(per_block, seq.n_query - i)});
    }
  }
  // Work item = (query block, KV head); the longest (last) blocks first, so
  // the dynamic claiming of the pool balances the causal triangle.
  const uint32_t n_kv = a.kv.n_kv_head;
  const auto n_blocks = static_cast<uint32_t>(blocks.size());
  const auto n_items = n_blocks * n_kv;
  // A pointer, not the thread_local name: workers would see their own copy.
  const query_block* const qbs = blocks.data();
  auto item = [&a, &kt, qbs, n_blocks, n_kv](uint32_t it) {
    const query_block& qb = qbs[n_blocks - 1 - it / n_kv];
    attend_block(a, kt, a.seqs[qb.seq], qb, it % n_kv);
  };
  if (a.pool != nullptr) {
    a.pool->parallel_for(n_items, item);
  } else {
    for (uint32_t it = 0; it < n_items; ++it) item(it);
  }
}

} // namespace dynamo::kernels::ref
