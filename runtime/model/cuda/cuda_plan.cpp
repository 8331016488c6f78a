#include "runtime/model/cuda/cuda_plan.hpp"

#include "runtime/engine/logit_edit_state.hpp"

#include "kernels/counter_rng.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace dynamo::model {
namespace {

size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/// Appends tensors to an arena, each aligned.
struct arena_builder {
  size_t size = 0;
  cuda_tensor_slot add(uint32_t rows, uint32_t cols, bool f32 = false) {
    cuda_tensor_slot s{align_up(size, cuda_tensor_alignment), rows, cols, f32};
    size = s.offset + s.bytes();
    return s;
  }
};

caf::error bad_entry(const engine::batch_entry& e, const std::string& what) {
  return make_error(errc::invalid_argument, "batch entry for sequence " + std::to_string(e.seq_id) + ": " + what);
}

} // namespace

cuda_weight_layout plan_weights(const decoder_config& c, const decoder_weights& w) {
  const uint32_t E = c.n_embd, qd = c.n_head * c.head_dim, kvd = c.n_kv_head * c.head_dim;
  const moe_config& m = c.moe;
  const bool shared = c.is_moe() && c.traits().shared_expert;
  arena_builder a;
  auto opt = [&](bool present, uint32_t rows, uint32_t cols, bool f32 = false) {
    return present ? a.add(rows, cols, f32) : cuda_tensor_slot{};
  };
  cuda_weight_layout l;
  l.tied = w.tied_embeddings;
  l.token_embd = a.add(c.n_vocab, E);
  l.output_norm = a.add(1, E, true);
  l.output = l.tied ? l.token_embd : a.add(c.n_vocab, E);
  l.layers.resize(c.n_layer);
  for (uint32_t i = 0; i < c.n_layer; ++i) {
    cuda_layer_slots& s = l.layers[i];
    const decoder_layer_weights* src = i < w.layers.size() ? &w.layers[i] : nullptr;
    s.attn_norm = a.add(1, E, true);
    s.wqkv = a.add(qd + 2 * kvd, E);
    s.bqkv = opt(src != nullptr && !src->bq.empty(), 1, qd + 2 * kvd, true);
    s.q_norm = opt(src != nullptr && !src->q_norm.empty(), 1, c.head_dim, true);
    s.k_norm = opt(src != nullptr && !src->k_norm.empty(), 1, c.head_dim, true);
    s.wo = a.add(E, qd);
    s.bo = opt(src != nullptr && !src->bo.empty(), 1, E, true);
    s.ffn_norm = a.add(1, E, true);
    s.wgu = opt(!c.is_moe(), 2 * c.n_ff, E);
    s.wdown = opt(!c.is_moe(), E, c.n_ff);
    s.router = opt(c.is_moe(), m.n_expert, E, true);
    s.wgu_exps = opt(c.is_moe(), m.n_expert * 2 * m.n_ff_expert, E);
    s.wdown_exps = opt(c.is_moe(), m.n_expert * E, m.n_ff_expert);
    s.shared_gate_inp = opt(shared, 1, E, true);
    s.wgu_shexp = opt(shared, 2 * m.n_ff_shared, E);
    s.wdown_shexp = opt(shared, E, m.n_ff_shared);
  }
  l.total_bytes = align_up(a.size, cuda_tensor_alignment);
  return l;
}

std::vector<cuda_upload> plan_uploads(const decoder_weights& w, const cuda_weight_layout& l) {
  std::vector<cuda_upload> out;
  auto matrix = [&](const weight_matrix& m, const cuda_tensor_slot& dst, uint32_t row0 = 0) {
    out.push_back({m, {}, dst, row0, 0});
  };
  auto vector = [&](const std::vector<float>& v, const cuda_tensor_slot& dst, uint32_t col0 = 0) {
    out.push_back({{}, v, dst, 0, col0});
  };
  matrix(w.token_embd, l.token_embd);
  vector(w.output_norm, l.output_norm);
  if (!l.tied) matrix(w.output, l.output);
  for (size_t i = 0; i < l.layers.size() && i < w.layers.size(); ++i) {
    const decoder_layer_weights& src = w.layers[i];
    const cuda_layer_slots& dst = l.layers[i];
    vector(src.attn_norm, dst.attn_norm);
    matrix(src.wq, dst.wqkv);
    matrix(src.wk, dst.wqkv, src.wq.n);
    matrix(src.wv, dst.wqkv, src.wq.n + src.wk.n);
    if (!dst.bqkv.empty()) {
      vector(src.bq, dst.bqkv);
      vector(src.bk, dst.bqkv, src.wq.n);
      vector(src.bv, dst.bqkv, src.wq.n + src.wk.n);
    }
    if (!dst.q_norm.empty()) vector(src.q_norm, dst.q_norm);
    if (!dst.k_norm.empty()) vector(src.k_norm, dst.k_norm);
    matrix(src.wo, dst.wo);
    if (!dst.bo.empty()) vector(src.bo, dst.bo);
    vector(src.ffn_norm, dst.ffn_norm);
    if (!dst.wgu.empty()) {
      matrix(src.w_gate, dst.wgu);
      matrix(src.w_up, dst.wgu, src.w_gate.n);
      matrix(src.w_down, dst.wdown);
    }
    if (!dst.router.empty()) {
      const moe_layer_weights& m = src.moe;
      matrix(m.router, dst.router);
      const uint32_t n_expert = m.router.n, F = m.gate.rows;
      for (uint32_t e = 0; e < n_expert; ++e) {
        matrix(m.gate.expert(e), dst.wgu_exps, e * 2 * F);
        matrix(m.up.expert(e), dst.wgu_exps, e * 2 * F + F);
      }
      matrix(m.down.stacked, dst.wdown_exps); // already expert after expert
    }
    if (!dst.shared_gate_inp.empty()) {
      const moe_layer_weights& m = src.moe;
      matrix(m.shared_gate_inp, dst.shared_gate_inp);
      matrix(m.shared_gate, dst.wgu_shexp);
      matrix(m.shared_up, dst.wgu_shexp, m.shared_gate.n);
      matrix(m.shared_down, dst.wdown_shexp);
    }
  }
  return out;
}

cuda_attention_split plan_attention_split(uint32_t max_model_len, uint32_t block_size, uint32_t partition,
                                          uint32_t cap) noexcept {
  if (partition == 0 || block_size == 0 || max_model_len == 0 || cap == 0) return {0, 1};
  uint64_t p = std::max<uint64_t>(partition, (uint64_t(max_model_len) + cap - 1) / cap);
  p = (p + block_size - 1) / block_size * block_size;
  const auto n = static_cast<uint32_t>((max_model_len + p - 1) / p);
  return {static_cast<uint32_t>(p), std::max(1u, n)};
}

cuda_attention_split step_attention_split(const cuda_attention_split& base, uint32_t max_seqs, uint32_t n_seqs,
                                          uint32_t block_size, uint32_t min_partition) noexcept {
  if (base.partition_size == 0 || n_seqs == 0 || n_seqs > max_seqs || block_size == 0) return base;
  const uint64_t keys = uint64_t(base.partition_size) * base.max_partitions; // the context the base covers
  const uint64_t room = std::min<uint64_t>(uint64_t(base.max_partitions) * (max_seqs / n_seqs), 65535);
  uint64_t p = std::max<uint64_t>({min_partition, (keys + room - 1) / room, 1});
  p = (p + block_size - 1) / block_size * block_size;
  if (p >= base.partition_size) return base;
  return {static_cast<uint32_t>(p), static_cast<uint32_t>((keys + p - 1) / p)};
}

cuda_activation_layout plan_activations(const decoder_config& c, uint32_t max_tokens, uint32_t max_seqs,
                                        const cuda_attention_split& split) {
  const uint32_t qd = c.n_head * c.head_dim, kvd = c.n_kv_head * c.head_dim, T = max_tokens, R = max_seqs;
  const moe_config& m = c.moe;
  const bool shared = c.is_moe() && c.traits().shared_expert;
  // FFN width per token: gate|up of the dense FFN, or of a token's k experts
  // (its k pair rows side by side) and of the shared expert.
  const uint32_t ffn = c.is_moe() ? std::max(m.n_expert_used * m.n_ff_expert, shared ? m.n_ff_shared : 0u) : c.n_ff;
  const uint32_t P = c.is_moe() ? T * m.n_expert_used : 0;
  arena_builder a;
  cuda_activation_layout l;
  l.x = a.add(T, c.n_embd, true);
  l.h = a.add(T, c.n_embd);
  l.qkv = a.add(T, qd + 2 * kvd);
  l.attn = a.add(T, qd);
  l.delta = a.add(T, c.n_embd);
  l.gu = a.add(T, 2 * ffn);
  l.act = a.add(T, ffn);
  l.hs = a.add(R, c.n_embd);
  l.logits = a.add(R, c.n_vocab, true);
  l.attn_ws = split.partition_size == 0 ? a.add(0, c.head_dim + 2, true)
                                        : a.add(R * c.n_head * split.max_partitions, c.head_dim + 2, true);
  l.sampled = a.add(1, R, true);
  if (c.is_moe()) {
    l.moe_expert = a.add(1, P, true);
    l.moe_weight = a.add(1, P, true);
    l.moe_start = a.add(1, m.n_expert + 1, true);
    l.pair_token = a.add(1, P, true);
    l.pair_row = a.add(1, P, true);
    l.moe_y = a.add(P, c.n_embd);
  }
  if (shared) {
    l.shared_gate = a.add(1, T, true);
    l.shared_y = a.add(T, c.n_embd);
  }
  l.total_bytes = align_up(a.size, cuda_tensor_alignment);
  return l;
}

uint32_t kv_blocks_for_memory(const kv_memory_inputs& in) noexcept {
  if (in.block_bytes == 0 || in.free_bytes > in.total_bytes) return 0;
  const double allowed = std::clamp(in.fraction, 0.0, 1.0) * static_cast<double>(in.total_bytes);
  // Never more than what is actually free now, whatever the fraction says.
  const double budget = std::min(allowed - static_cast<double>(in.own_bytes), static_cast<double>(in.free_bytes)) -
                        static_cast<double>(in.reserve_bytes);
  if (!(budget > 0.0)) return 0;
  const double blocks = std::floor(budget / static_cast<double>(in.block_bytes));
  return static_cast<uint32_t>(std::min(blocks, double(UINT32_MAX)));
}

std::vector<uint32_t> graph_buckets(uint32_t max_batch) {
  std::vector<uint32_t> out;
  for (uint64_t b = 1; b <= max_batch; b *= 2) out.push_back(static_cast<uint32_t>(b));
  if (max_batch > 0 && out.back() != max_batch) out.push_back(max_batch);
  return out;
}

std::optional<uint32_t> choose_graph_bucket(std::span<const uint32_t> buckets, uint32_t n) noexcept {
  if (n == 0) return std::nullopt;
  for (uint32_t b : buckets) {
    if (b >= n) return b;
  }
  return std::nullopt;
}

expected<void> check_batch(const engine::batch& b, const cuda_batch_limits& lim) {
  if (b.entries.size() > lim.max_seqs) {
    return make_error(errc::invalid_argument, "batch of " + std::to_string(b.entries.size()) +
                                                  " sequences exceeds the executor's max_num_seqs " +
                                                  std::to_string(lim.max_seqs));
  }
  for (const engine::block_copy& c : b.block_copies) {
    if (c.src >= lim.num_blocks || c.dst >= lim.num_blocks) {
      return make_error(errc::invalid_argument, "block copy " + std::to_string(c.src) + " -> " +
                                                    std::to_string(c.dst) + " outside the pool");
    }
  }
  uint64_t total = 0;
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const auto& e = b.entries[i];
    if (e.fork_of) { // samples an earlier entry's row
      const bool parent = std::any_of(b.entries.begin(), b.entries.begin() + static_cast<std::ptrdiff_t>(i),
                                      [&](const auto& q) { return q.seq_id == *e.fork_of && q.sample && !q.fork_of; });
      if (!e.tokens.empty() || !e.sample || !parent) return bad_entry(e, "a fork needs a sampled parent before it");
      continue;
    }
    if (e.tokens.empty()) return bad_entry(e, "no tokens");
    const uint64_t end = uint64_t(e.start_pos) + e.tokens.size();
    if (end > lim.max_model_len) {
      return bad_entry(e, "positions up to " + std::to_string(end) + " exceed the context length " +
                              std::to_string(lim.max_model_len));
    }
    const uint64_t blocks_needed = (end + lim.block_size - 1) / lim.block_size;
    if (e.block_table.size() < blocks_needed) {
      return bad_entry(e, "block table has " + std::to_string(e.block_table.size()) + " blocks, " +
                              std::to_string(blocks_needed) + " needed");
    }
    for (uint64_t i = 0; i < blocks_needed; ++i) {
      if (e.block_table[i] >= lim.num_blocks) {
        return bad_entry(e, "block id " + std::to_string(e.block_table[i]) + " outside the pool of " +
                                std::to_string(lim.num_blocks));
      }
    }
    for (uint32_t t : e.tokens) {
      if (t >= lim.n_vocab) return bad_entry(e, "token id " + std::to_string(t) + " >= vocabulary size");
    }
    total += e.tokens.size();
  }
  if (total != b.num_tokens) {
    return make_error(errc::invalid_argument, "batch num_tokens " + std::to_string(b.num_tokens) +
                                                  " but its entries hold " + std::to_string(total));
  }
  if (total > lim.max_tokens) {
    return make_error(errc::invalid_argument, "batch of " + std::to_string(total) +
                                                  " tokens exceeds the executor's max_num_tokens " +
                                                  std::to_string(lim.max_tokens));
  }
  return {};
}

cuda_step_layout make_step_layout(uint32_t token_cap, uint32_t seq_cap, uint32_t row_cap,
                                  uint32_t table_stride) noexcept {
  cuda_step_layout l;
  l.token_cap = token_cap;
  l.seq_cap = seq_cap;
  l.row_cap = row_cap;
  l.table_stride = table_stride;
  size_t at = 0;
  auto take = [&](size_t bytes) {
    const size_t off = at;
    at = align_up(at + bytes, 16);
    return off;
  };
  l.ids = take(size_t(token_cap) * 4);
  l.positions = take(size_t(token_cap) * 4);
  l.slots = take(size_t(token_cap) * 4);
  l.token_seq = take(size_t(token_cap) * 4);
  l.lm_rows = take(size_t(row_cap) * 4);
  l.tables = take(size_t(seq_cap) * table_stride * 4);
  l.params = take(size_t(row_cap) * sizeof(cuda_sample_row));
  l.total_bytes = at;
  return l;
}

cuda_packed_step pack_step(const engine::batch& b, uint32_t block_size, uint32_t table_stride, uint64_t process_seed,
                           uint32_t pad_to) {
  cuda_packed_step p;
  p.decode_only = !b.entries.empty();
  for (const auto& e : b.entries) p.decode_only = p.decode_only && e.tokens.size() == 1;
  const bool graph = pad_to > 0;
  auto params_of = [&](const engine::batch_entry& e, uint32_t row) {
    const auto& s = e.sampling;
    return cuda_sample_row{kernels::rng_stream_seed(s.seed.has_value(), s.seed.value_or(0), process_seed, e.seq_id),
                           e.sample_position,
                           s.temperature,
                           s.top_p,
                           s.top_k,
                           row,
                           s.min_p,
                           s.logprobs ? static_cast<int32_t>(std::min(*s.logprobs, protocol::max_top_logprobs)) : -1,
                           0};
  };
  auto add_edits = [&](const engine::batch_entry& e, uint32_t row) {
    const kernels::logit_penalties pen = engine::penalties_of(e.sampling);
    for (const kernels::logit_edit& ed : e.logit_edits) p.edits.push_back(cuda_edit_item{row, 0, ed, pen});
    if (!e.allowed_tokens.empty()) {
      if (p.mask_words == 0) p.mask_words = static_cast<uint32_t>(e.allowed_tokens.size());
      p.mask_rows.push_back(row);
      const size_t at = p.masks.size();
      p.masks.resize(at + p.mask_words, 0); // one vocabulary per engine: the sizes agree
      std::copy_n(e.allowed_tokens.begin(), std::min<size_t>(p.mask_words, e.allowed_tokens.size()), p.masks.begin() + at);
    }
  };
  std::vector<std::pair<uint64_t, uint32_t>> row_of_seq; // sampled entries' logits rows, for forks
  for (uint32_t i = 0; i < b.entries.size(); ++i) {
    const auto& e = b.entries[i];
    if (e.fork_of) { // no tokens; a draw on the parent's row (graph steps have no forks)
      const auto it = std::find_if(row_of_seq.begin(), row_of_seq.end(),
                                   [&](const auto& r) { return r.first == *e.fork_of; });
      p.tables.resize(p.tables.size() + table_stride, 0); // keeps table row == entry index
      if (it == row_of_seq.end()) continue;           // check_batch rejects this
      p.params.push_back(params_of(e, it->second));
      p.row_entry.push_back(int32_t(i));
      continue;
    }
    const auto first = static_cast<uint32_t>(p.ids.size());
    for (uint32_t j = 0; j < e.tokens.size(); ++j) {
      const uint32_t pos = e.start_pos + j;
      p.ids.push_back(e.tokens[j]);
      p.positions.push_back(pos);
      p.slots.push_back(e.block_table[pos / block_size] * block_size + pos % block_size);
      p.token_seq.push_back(i);
    }
    const size_t row0 = p.tables.size();
    p.tables.resize(row0 + table_stride, 0);
    std::copy_n(e.block_table.begin(), std::min<size_t>(e.block_table.size(), table_stride), p.tables.begin() + row0);
    const uint32_t last = first + static_cast<uint32_t>(e.tokens.size()) - 1;
    if (graph) {
      // Every token has a logits row (row i: decode-only); rows of unsampled entries are ignored.
      p.params.push_back(e.sample ? params_of(e, i) : cuda_sample_row{});
      p.row_entry.push_back(e.sample ? int32_t(i) : -1);
      if (e.sample) add_edits(e, i);
    } else if (e.sample) {
      const auto row = static_cast<uint32_t>(p.lm_rows.size());
      p.lm_rows.push_back(last);
      p.params.push_back(params_of(e, row));
      p.row_entry.push_back(int32_t(i));
      row_of_seq.emplace_back(e.seq_id, row);
      add_edits(e, row);
    }
  }
  if (graph) {
    for (auto t = static_cast<uint32_t>(p.ids.size()); t < pad_to; ++t) {
      p.ids.push_back(0);
      p.positions.push_back(0);
      p.slots.push_back(cuda_no_slot);
      p.token_seq.push_back(t);
      p.tables.resize(p.tables.size() + table_stride, 0);
    }
    p.lm_rows.resize(pad_to);
    for (uint32_t r = 0; r < pad_to; ++r) p.lm_rows[r] = r;
  }
  p.n_tokens = static_cast<uint32_t>(p.ids.size());
  p.n_seqs = static_cast<uint32_t>(p.tables.size() / std::max(1u, table_stride));
  p.n_lm_rows = static_cast<uint32_t>(p.lm_rows.size());
  p.n_sample_rows = static_cast<uint32_t>(p.params.size());
  return p;
}

void write_step(const cuda_packed_step& p, const cuda_step_layout& l, std::span<std::byte> image) noexcept {
  auto put = [&](size_t off, const void* src, size_t bytes) {
    if (bytes > 0) std::memcpy(image.data() + off, src, bytes);
  };
  put(l.ids, p.ids.data(), p.ids.size() * 4);
  put(l.positions, p.positions.data(), p.positions.size() * 4);
  put(l.slots, p.slots.data(), p.slots.size() * 4);
  put(l.token_seq, p.token_seq.data(), p.token_seq.size() * 4);
  put(l.lm_rows, p.lm_rows.data(), p.lm_rows.size() * 4);
  put(l.tables, p.tables.data(), p.tables.size() * 4);
  put(l.params, p.params.data(), p.params.size() * sizeof(cuda_sample_row));
}

} // namespace dynamo::model
