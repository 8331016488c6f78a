// The CUDA executor's host-side arithmetic, without a device: weight and
// activation layouts of every architecture (biases, Q/K norms, MoE stacks,
// shared experts), the upload plan replayed into a host image of the arena,
// split-K geometry, KV sizing from memory, graph buckets, batch checks, and
// step metadata packing checked against the CPU engine's interpretation.
#include "runtime/model/cuda/cuda_plan.hpp"

#include "kernels/counter_rng.hpp"
#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/kv_store.hpp"
#include "kernels/reference/paged_attention.hpp"
#include "runtime/model/sampler.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;

namespace {

decoder_config smollm2() {
  decoder_config c;
  c.arch = architecture::llama;
  c.n_layer = 30;
  c.n_embd = 576;
  c.n_ff = 1536;
  c.n_head = 9;
  c.n_kv_head = 3;
  c.head_dim = 64;
  c.rot_dim = 64;
  c.n_vocab = 49152;
  c.context_length = 8192;
  return c;
}

bool overlaps(const cuda_tensor_slot& a, const cuda_tensor_slot& b) {
  return a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

/// Weights with `n_layer` layers and none of the optional tensors.
decoder_weights plain_weights(uint32_t n_layer, bool tied) {
  decoder_weights w;
  w.tied_embeddings = tied;
  w.layers.resize(n_layer);
  return w;
}

std::vector<cuda_tensor_slot> layer_slots(const cuda_layer_slots& s) {
  return {s.attn_norm, s.wqkv,   s.bqkv,       s.q_norm,     s.k_norm,          s.wo,        s.bo,
          s.ffn_norm,  s.wgu,    s.wdown,      s.router,     s.wgu_exps,        s.wdown_exps, s.shared_gate_inp,
          s.wgu_shexp, s.wdown_shexp};
}

/// Every non-empty slot of the layout.
std::vector<cuda_tensor_slot> all_slots(const cuda_weight_layout& l) {
  std::vector<cuda_tensor_slot> all = {l.token_embd, l.output_norm};
  if (!l.tied) all.push_back(l.output);
  for (const auto& s : l.layers) {
    for (const auto& t : layer_slots(s)) {
      if (!t.empty()) all.push_back(t);
    }
  }
  return all;
}

void check_disjoint_and_aligned(const std::vector<cuda_tensor_slot>& all, size_t total) {
  for (size_t i = 0; i < all.size(); ++i) {
    BOOST_TEST(all[i].offset % cuda_tensor_alignment == 0u);
    BOOST_TEST(all[i].offset + all[i].bytes() <= total);
    for (size_t j = i + 1; j < all.size(); ++j) BOOST_TEST_REQUIRE(!overlaps(all[i], all[j]));
  }
}

uint16_t bf16_bits(float f) { // round to nearest even (finite values)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// The weight arena as the executor fills it, built on the host: matrices
/// dequantized and rounded to bf16 (fp32 for fp32 slots), vectors copied.
/// `writes` counts the writes of every arena element (by its first byte).
struct host_arena {
  std::vector<std::byte> bytes;
  std::vector<uint8_t> writes;
  bool misfit = false; ///< an upload wrote outside its slot, or a type did not fit

  host_arena(const std::vector<cuda_upload>& uploads, size_t total) : bytes(total), writes(total) {
    for (const auto& u : uploads) {
      const size_t elem = u.dst.f32 ? 4 : 2;
      auto put = [&](uint32_t row, uint32_t col, float v) {
        if (row >= u.dst.rows || col >= u.dst.cols) {
          misfit = true;
          return;
        }
        const size_t at = u.dst.offset + (size_t(row) * u.dst.cols + col) * elem;
        ++writes[at];
        if (u.dst.f32) {
          std::memcpy(bytes.data() + at, &v, 4);
        } else {
          const uint16_t b = bf16_bits(v);
          std::memcpy(bytes.data() + at, &b, 2);
        }
      };
      if (!u.vector.empty()) {
        misfit = misfit || !u.dst.f32;
        for (size_t i = 0; i < u.vector.size(); ++i) put(0, u.col0 + uint32_t(i), u.vector[i]);
        continue;
      }
      misfit = misfit || u.matrix.k != u.dst.cols;
      std::vector<float> row(u.matrix.k);
      for (uint32_t r = 0; r < u.matrix.n; ++r) {
        kernels::ref::dequantize_row(u.matrix.type, u.matrix.row(r), row.data(), u.matrix.k);
        for (uint32_t i = 0; i < u.matrix.k; ++i) put(u.row0 + r, i, row[i]);
      }
    }
  }

  /// Element (row, col) of a slot as a float.
  [[nodiscard]] float at(const cuda_tensor_slot& s, uint32_t row, uint32_t col) const {
    const size_t off = s.offset + (size_t(row) * s.cols + col) * (s.f32 ? 4 : 2);
    if (s.f32) {
      float f;
      std::memcpy(&f, bytes.data() + off, 4);
      return f;
    }
    uint16_t b;
    std::memcpy(&b, bytes.data() + off, 2);
    return kernels::ref::bf16_to_fp32(b);
  }

  /// True when every element of `s` was written exactly once.
  [[nodiscard]] bool covered_once(const cuda_tensor_slot& s) const {
    const size_t elem = s.f32 ? 4 : 2;
    for (size_t i = 0; i < size_t(s.rows) * s.cols; ++i) {
      if (writes[s.offset + i * elem] != 1) return false;
    }
    return true;
  }
};

/// Row r of `m` as the device holds it: dequantized, rounded to bf16 unless `f32`.
std::vector<float> device_row(const weight_matrix& m, uint32_t r, bool f32) {
  std::vector<float> v(m.k);
  kernels::ref::dequantize_row(m.type, m.row(r), v.data(), m.k);
  if (!f32) {
    for (auto& x : v) {
      const uint32_t u = uint32_t(bf16_bits(x)) << 16;
      std::memcpy(&x, &u, 4);
    }
  }
  return v;
}

std::vector<float> slot_row(const host_arena& a, const cuda_tensor_slot& s, uint32_t r) {
  std::vector<float> v(s.cols);
  for (uint32_t i = 0; i < s.cols; ++i) v[i] = a.at(s, r, i);
  return v;
}

/// One tiny model of each architecture the CUDA executor serves.
std::vector<std::pair<std::string, random_model_options>> every_architecture() {
  std::vector<std::pair<std::string, random_model_options>> out;
  auto base = [](architecture a) {
    random_model_options o = test_model_options();
    o.arch = a;
    o.type = gguf::tensor_type::q8_0;
    return o;
  };
  out.emplace_back("llama", base(architecture::llama));
  {
    auto o = base(architecture::llama);
    o.n_expert = 4;
    o.n_expert_used = 2;
    o.attn_output_bias = true;
    o.tied_embeddings = false;
    out.emplace_back("mixtral+bo", o);
  }
  out.emplace_back("qwen2", base(architecture::qwen2));
  {
    auto o = base(architecture::qwen2moe);
    o.n_expert = 4;
    o.n_expert_used = 2;
    o.n_ff_expert = 64;
    o.n_ff_shared = 96;
    out.emplace_back("qwen2moe", o);
  }
  {
    auto o = base(architecture::qwen3);
    o.head_dim = 32; // 4 heads of 32: Q is 128 wide, n_embd 64
    out.emplace_back("qwen3", o);
  }
  {
    auto o = base(architecture::qwen3moe);
    o.n_expert = 6;
    o.n_expert_used = 3;
    o.n_ff_expert = 32;
    out.emplace_back("qwen3moe", o);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_plan)

BOOST_AUTO_TEST_CASE(weight_layout_is_aligned_disjoint_and_fuses_qkv_and_gate_up) {
  const auto c = smollm2();
  for (const bool tied : {true, false}) {
    const auto l = plan_weights(c, plain_weights(c.n_layer, tied));
    check_disjoint_and_aligned(all_slots(l), l.total_bytes);
    BOOST_TEST(l.layers.size() == 30u);
    BOOST_TEST(l.layers[0].wqkv.rows == (9u + 2 * 3) * 64);
    BOOST_TEST(l.layers[0].wqkv.cols == 576u);
    BOOST_TEST(l.layers[0].wgu.rows == 2u * 1536);
    BOOST_TEST(l.layers[0].wdown.cols == 1536u);
    BOOST_TEST(l.layers[0].attn_norm.f32);
    BOOST_TEST(l.layers[0].bqkv.empty());
    BOOST_TEST(l.layers[0].router.empty());
    BOOST_TEST(l.token_embd.bytes() == size_t(49152) * 576 * 2);
    BOOST_TEST((l.output.offset == l.token_embd.offset) == tied);
    // SmolLM2 in bf16: 134.5 M parameters -> ~269 MB, tied head stored once.
    if (tied) BOOST_TEST(l.total_bytes / 1e6 == 269.0, boost::test_tools::tolerance(0.01));
  }
}

BOOST_AUTO_TEST_CASE(moe_layout_stacks_experts_and_keeps_the_router_fp32) {
  // Qwen3-30B-A3B's shape, 2 layers.
  decoder_config c = smollm2();
  c.arch = architecture::qwen3moe;
  c.n_layer = 2;
  c.n_embd = 2048;
  c.n_head = 32;
  c.n_kv_head = 4;
  c.head_dim = 128;
  c.rot_dim = 128;
  c.n_vocab = 151936;
  c.moe = {128, 8, 768, 0, true, 1.0f};
  auto w = plain_weights(2, false);
  w.layers[1].q_norm.resize(128); // layer 1 only: slots follow each layer's tensors
  w.layers[1].k_norm.resize(128);
  const auto l = plan_weights(c, w);
  check_disjoint_and_aligned(all_slots(l), l.total_bytes);
  for (const auto& s : l.layers) {
    BOOST_TEST(s.wgu.empty());
    BOOST_TEST(s.wdown.empty());
    BOOST_TEST((s.router.rows == 128u && s.router.cols == 2048u && s.router.f32));
    BOOST_TEST((s.wgu_exps.rows == 128u * 2 * 768 && s.wgu_exps.cols == 2048u && !s.wgu_exps.f32));
    BOOST_TEST((s.wdown_exps.rows == 128u * 2048 && s.wdown_exps.cols == 768u));
    BOOST_TEST(s.shared_gate_inp.empty()); // qwen3moe has no shared expert
    BOOST_TEST(s.wgu_shexp.empty());
  }
  BOOST_TEST(l.layers[0].q_norm.empty());
  BOOST_TEST((l.layers[1].q_norm.rows == 1u && l.layers[1].q_norm.cols == 128u && l.layers[1].k_norm.f32));
  // Qwen2-MoE adds the shared expert and its fp32 gate.
  c.arch = architecture::qwen2moe;
  c.moe = {60, 4, 1408, 5632, false, 1.0f};
  const auto q2 = plan_weights(c, plain_weights(2, false));
  check_disjoint_and_aligned(all_slots(q2), q2.total_bytes);
  BOOST_TEST((q2.layers[0].shared_gate_inp.rows == 1u && q2.layers[0].shared_gate_inp.f32));
  BOOST_TEST(q2.layers[0].wgu_shexp.rows == 2u * 5632);
  BOOST_TEST(q2.layers[0].wdown_shexp.cols == 5632u);
}

BOOST_AUTO_TEST_CASE(uploads_stack_q_k_v_and_gate_up_rows) {
  random_model_options o = test_model_options();
  o.n_layer = 2;
  o.tied_embeddings = false;
  auto m = tiny_model(o);
  const auto& c = m->config();
  const auto l = plan_weights(c, m->weights());
  const auto up = plan_uploads(m->weights(), l);
  BOOST_TEST(up.size() == 3u + 2 * 9);
  const auto& w0 = m->weights().layers[0];
  const uint32_t qd = c.n_head * c.head_dim, kvd = c.n_kv_head * c.head_dim;
  bool saw_k = false, saw_v = false, saw_up = false;
  for (const auto& u : up) {
    if (u.matrix.data == w0.wk.data) {
      saw_k = true;
      BOOST_TEST(u.row0 == qd);
      BOOST_TEST(u.dst.offset == l.layers[0].wqkv.offset);
    }
    if (u.matrix.data == w0.wv.data) {
      saw_v = true;
      BOOST_TEST(u.row0 == qd + kvd);
      BOOST_TEST(u.row0 + u.matrix.n == l.layers[0].wqkv.rows);
    }
    if (u.matrix.data == w0.w_up.data) {
      saw_up = true;
      BOOST_TEST(u.row0 == c.n_ff);
      BOOST_TEST(u.dst.offset == l.layers[0].wgu.offset);
    }
    if (u.matrix.data != nullptr) BOOST_TEST(u.matrix.k == u.dst.cols);
    if (!u.vector.empty()) BOOST_TEST(u.vector.size() == u.dst.cols);
  }
  BOOST_TEST((saw_k && saw_v && saw_up));
}

BOOST_AUTO_TEST_CASE(uploads_fill_every_slot_of_every_architecture_exactly_once) {
  for (const auto& [name, o] : every_architecture()) {
    BOOST_TEST_CONTEXT(name) {
      auto m = tiny_model(o);
      const auto l = plan_weights(m->config(), m->weights());
      check_disjoint_and_aligned(all_slots(l), l.total_bytes);
      const host_arena a(plan_uploads(m->weights(), l), l.total_bytes);
      BOOST_TEST(!a.misfit);
      for (const auto& s : all_slots(l)) BOOST_TEST_REQUIRE(a.covered_once(s));
    }
  }
}

BOOST_AUTO_TEST_CASE(uploaded_arena_holds_biases_norms_experts_and_routers_where_the_forward_reads_them) {
  for (const auto& [name, o] : every_architecture()) {
    BOOST_TEST_CONTEXT(name) {
      auto m = tiny_model(o);
      const auto& c = m->config();
      const auto l = plan_weights(c, m->weights());
      const host_arena a(plan_uploads(m->weights(), l), l.total_bytes);
      const uint32_t qd = c.n_head * c.head_dim, kvd = c.n_kv_head * c.head_dim;
      for (uint32_t li = 0; li < c.n_layer; ++li) {
        const auto& w = m->weights().layers[li];
        const auto& s = l.layers[li];
        const architecture_traits& t = c.traits();
        BOOST_TEST_REQUIRE(s.bqkv.empty() == !t.qkv_bias);
        BOOST_TEST_REQUIRE(s.q_norm.empty() == !t.qk_norm);
        BOOST_TEST_REQUIRE(s.bo.empty() == !o.attn_output_bias);
        if (!s.bqkv.empty()) { // bq | bk | bv, fp32 as loaded
          for (uint32_t i = 0; i < qd; ++i) BOOST_TEST_REQUIRE(a.at(s.bqkv, 0, i) == w.bq[i]);
          for (uint32_t i = 0; i < kvd; ++i) BOOST_TEST_REQUIRE(a.at(s.bqkv, 0, qd + i) == w.bk[i]);
          for (uint32_t i = 0; i < kvd; ++i) BOOST_TEST_REQUIRE(a.at(s.bqkv, 0, qd + kvd + i) == w.bv[i]);
        }
        if (!s.q_norm.empty()) {
          BOOST_TEST(slot_row(a, s.q_norm, 0) == w.q_norm, boost::test_tools::per_element());
          BOOST_TEST(slot_row(a, s.k_norm, 0) == w.k_norm, boost::test_tools::per_element());
        }
        if (!s.bo.empty()) BOOST_TEST(slot_row(a, s.bo, 0) == w.bo, boost::test_tools::per_element());
        BOOST_TEST_REQUIRE(s.router.empty() == !c.is_moe());
        if (!c.is_moe()) continue;
        const moe_layer_weights& mw = w.moe;
        const uint32_t F = c.moe.n_ff_expert, E = c.n_embd;
        for (uint32_t e = 0; e < c.moe.n_expert; ++e) {
          BOOST_TEST_REQUIRE(slot_row(a, s.router, e) == device_row(mw.router, e, true),
                             boost::test_tools::per_element());
          for (uint32_t r = 0; r < F; r += 7) { // expert e: its gate rows, then its up rows
            BOOST_TEST_REQUIRE(slot_row(a, s.wgu_exps, e * 2 * F + r) == device_row(mw.gate.expert(e), r, false),
                               boost::test_tools::per_element());
            BOOST_TEST_REQUIRE(slot_row(a, s.wgu_exps, e * 2 * F + F + r) == device_row(mw.up.expert(e), r, false),
                               boost::test_tools::per_element());
          }
          for (uint32_t r = 0; r < E; r += 5) {
            BOOST_TEST_REQUIRE(slot_row(a, s.wdown_exps, e * E + r) == device_row(mw.down.expert(e), r, false),
                               boost::test_tools::per_element());
          }
        }
        BOOST_TEST_REQUIRE(s.shared_gate_inp.empty() == !mw.has_shared_expert());
        if (s.shared_gate_inp.empty()) continue;
        const uint32_t S = c.moe.n_ff_shared;
        BOOST_TEST(slot_row(a, s.shared_gate_inp, 0) == device_row(mw.shared_gate_inp, 0, true),
                   boost::test_tools::per_element());
        BOOST_TEST(slot_row(a, s.wgu_shexp, 3) == device_row(mw.shared_gate, 3, false),
                   boost::test_tools::per_element());
        BOOST_TEST(slot_row(a, s.wgu_shexp, S + 3) == device_row(mw.shared_up, 3, false),
                   boost::test_tools::per_element());
        BOOST_TEST(slot_row(a, s.wdown_shexp, 9) == device_row(mw.shared_down, 9, false),
                   boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(attention_split_grows_partitions_for_long_contexts) {
  auto check = [](uint32_t len, uint32_t bs, uint32_t part, uint32_t want_p, uint32_t want_n) {
    const auto s = plan_attention_split(len, bs, part);
    BOOST_TEST_INFO("len " << len << " partition " << part);
    BOOST_TEST(s.partition_size == want_p);
    BOOST_TEST(s.max_partitions == want_n);
  };
  check(8192, 16, 256, 256, 32);
  check(100, 16, 256, 256, 1);
  check(131072, 16, 256, 2048, 64); // capped at 64 partitions
  check(1000, 16, 250, 256, 4);     // rounded up to whole blocks
  check(8192, 16, 0, 0, 1);         // off
}

BOOST_AUTO_TEST_CASE(small_decode_steps_split_keys_finer_within_the_workspace) {
  const cuda_attention_split base{256, 32}; // 8192 keys, workspace for 256 sequences x 32 partials
  auto check = [&](uint32_t n_seqs, uint32_t bs, uint32_t want_p, uint32_t want_n) {
    const auto s = step_attention_split(base, 256, n_seqs, bs);
    BOOST_TEST_INFO("n_seqs " << n_seqs << " block " << bs);
    BOOST_TEST(s.partition_size == want_p);
    BOOST_TEST(s.max_partitions == want_n);
    BOOST_TEST(uint64_t(n_seqs) * s.max_partitions <= 256u * 32u); // the partials fit the workspace
    BOOST_TEST(uint64_t(s.partition_size) * s.max_partitions >= 8192u); // every key is covered
  };
  check(1, 16, 64, 128);   // down to the 64-key floor
  check(64, 16, 64, 128);  // 64 x 128 partials = the workspace exactly
  check(128, 16, 128, 64);
  check(256, 16, 256, 32); // a full batch keeps the base split
  check(1, 48, 96, 86);    // whole blocks: 64 rounds up to 96
  const auto off = step_attention_split({0, 1}, 256, 1, 16);
  BOOST_TEST(off.partition_size == 0u);
}

BOOST_AUTO_TEST_CASE(activation_layout_sizes_follow_the_limits) {
  const auto c = smollm2();
  const auto split = plan_attention_split(8192, 16, 256);
  const auto a = plan_activations(c, 8192, 256, split);
  BOOST_TEST(a.x.bytes() == size_t(8192) * 576 * 4);
  BOOST_TEST(a.qkv.bytes() == size_t(8192) * 15 * 64 * 2);
  BOOST_TEST(a.gu.bytes() == size_t(8192) * 2 * 1536 * 2);
  BOOST_TEST(a.logits.bytes() == size_t(256) * 49152 * 4);
  BOOST_TEST(a.attn_ws.bytes() == size_t(256) * 9 * 32 * 66 * 4);
  BOOST_TEST(a.sampled.bytes() == size_t(256) * 4);
  BOOST_TEST(a.moe_y.empty());
  BOOST_TEST(a.shared_y.empty());
  const cuda_tensor_slot all[] = {a.x, a.h, a.qkv, a.attn, a.delta, a.gu, a.act, a.hs, a.logits, a.attn_ws, a.sampled};
  for (size_t i = 0; i < std::size(all); ++i) {
    BOOST_TEST(all[i].offset + all[i].bytes() <= a.total_bytes);
    for (size_t j = i + 1; j < std::size(all); ++j) BOOST_TEST(!overlaps(all[i], all[j]));
  }
}

BOOST_AUTO_TEST_CASE(moe_activations_hold_every_token_expert_pair) {
  decoder_config c = smollm2();
  c.arch = architecture::qwen2moe;
  c.n_embd = 2048;
  c.moe = {60, 4, 1408, 5632, false, 1.0f};
  const uint32_t T = 1024;
  for (const uint32_t shared_ff : {5632u, 8192u, 1000u}) {
    c.moe.n_ff_shared = shared_ff;
    const auto a = plan_activations(c, T, 64, plan_attention_split(4096, 16, 256));
    BOOST_TEST_INFO("shared ff " << shared_ff);
    const size_t P = size_t(T) * 4;
    // gate|up holds P rows of 2F and T rows of 2S.
    BOOST_TEST(a.gu.bytes() >= P * 2 * 1408 * 2);
    BOOST_TEST(a.gu.bytes() >= size_t(T) * 2 * shared_ff * 2);
    BOOST_TEST(a.gu.bytes() == size_t(T) * 2 * std::max(4u * 1408, shared_ff) * 2);
    BOOST_TEST(a.act.bytes() == a.gu.bytes() / 2);
    BOOST_TEST(a.moe_expert.bytes() == P * 4);
    BOOST_TEST(a.moe_weight.bytes() == P * 4);
    BOOST_TEST(a.pair_token.bytes() == P * 4);
    BOOST_TEST(a.pair_row.bytes() == P * 4);
    BOOST_TEST(a.moe_start.bytes() == 61u * 4);
    BOOST_TEST(a.moe_y.bytes() == P * 2048 * 2);
    BOOST_TEST(a.shared_gate.bytes() == size_t(T) * 4);
    BOOST_TEST(a.shared_y.bytes() == size_t(T) * 2048 * 2);
    const cuda_tensor_slot all[] = {a.x,          a.h,          a.qkv,       a.attn,       a.delta,    a.gu,
                                    a.act,        a.hs,         a.logits,    a.attn_ws,    a.sampled,  a.moe_expert,
                                    a.moe_weight, a.moe_start,  a.pair_token, a.pair_row,  a.moe_y,    a.shared_gate,
                                    a.shared_y};
    for (size_t i = 0; i < std::size(all); ++i) {
      BOOST_TEST(all[i].offset % cuda_tensor_alignment == 0u);
      BOOST_TEST(all[i].offset + all[i].bytes() <= a.total_bytes);
      for (size_t j = i + 1; j < std::size(all); ++j) BOOST_TEST_REQUIRE(!overlaps(all[i], all[j]));
    }
  }
  c.arch = architecture::qwen3moe; // no shared expert
  c.moe = {128, 8, 768, 0, true, 1.0f};
  const auto q3 = plan_activations(c, T, 64, {});
  BOOST_TEST(q3.shared_y.empty());
  BOOST_TEST(q3.gu.bytes() == size_t(T) * 2 * 8 * 768 * 2);
}

BOOST_AUTO_TEST_CASE(kv_blocks_come_from_the_fraction_minus_what_is_used) {
  const size_t GiB = size_t(1) << 30;
  const size_t block = size_t(2) << 20;
  // 80 GiB device, this executor holds 20 GiB (weights + activations): 0.9 * 80 - 20 - 0.5 = 51.5 GiB.
  BOOST_TEST(kv_blocks_for_memory({80 * GiB, 60 * GiB, 0.9, GiB / 2, block, 20 * GiB}) == 51u * 512 + 256);
  // Another process holds 50 GiB: only what is free bounds us, 10 - 0.5 = 9.5 GiB.
  BOOST_TEST(kv_blocks_for_memory({80 * GiB, 10 * GiB, 0.9, GiB / 2, block, 20 * GiB}) == 9u * 512 + 256);
  // Our own weights fill our share: nothing left for KV.
  BOOST_TEST(kv_blocks_for_memory({80 * GiB, 8 * GiB, 0.9, GiB / 2, block, 72 * GiB}) == 0u);
  // Two executors at 0.45 each on one device: the second, after the first took 36 GiB,
  // gets 0.45 * 80 - 1 - 0.5 = 34.5 GiB (free is 43).
  BOOST_TEST(kv_blocks_for_memory({80 * GiB, 43 * GiB, 0.45, GiB / 2, block, GiB}) == 34u * 512 + 256);
  // Never more than is free, even at fraction 1.
  BOOST_TEST(kv_blocks_for_memory({80 * GiB, 4 * GiB, 1.0, 0, block, 0}) == 2048u);
  BOOST_TEST(kv_blocks_for_memory({80 * GiB, 60 * GiB, 0.9, 0, 0, 0}) == 0u);
  // The 8B model's KV block (32 layers, 8 KV heads, 128 dims, 16 tokens, bf16) is 2 MiB.
  BOOST_TEST(size_t(32) * 2 * 16 * 8 * 128 * 2 == block);
}

BOOST_AUTO_TEST_CASE(graph_buckets_are_powers_of_two_up_to_the_cap) {
  BOOST_TEST(graph_buckets(256) == (std::vector<uint32_t>{1, 2, 4, 8, 16, 32, 64, 128, 256}),
             boost::test_tools::per_element());
  BOOST_TEST(graph_buckets(48) == (std::vector<uint32_t>{1, 2, 4, 8, 16, 32, 48}), boost::test_tools::per_element());
  BOOST_TEST(graph_buckets(0).empty());
  const auto b = graph_buckets(256);
  BOOST_TEST(*choose_graph_bucket(b, 1) == 1u);
  BOOST_TEST(*choose_graph_bucket(b, 3) == 4u);
  BOOST_TEST(*choose_graph_bucket(b, 64) == 64u);
  BOOST_TEST(*choose_graph_bucket(b, 129) == 256u);
  BOOST_TEST(!choose_graph_bucket(b, 257).has_value());
  BOOST_TEST(!choose_graph_bucket(b, 0).has_value());
}

BOOST_AUTO_TEST_CASE(check_batch_rejects_what_the_cpu_forward_rejects_and_over_capacity) {
  const cuda_batch_limits lim{100, 64, 4, 10, 16, 3};
  auto ok = [&](const engine::batch& b) { return static_cast<bool>(check_batch(b, lim)); };
  auto code = [&](const engine::batch& b) { return code_of(check_batch(b, lim).error()); };
  BOOST_TEST(ok(make_batch({entry(1, {1, 2, 3}, 0, {0}), entry(2, {5}, 7, {1, 2})})));
  BOOST_TEST(code(make_batch({entry(1, {}, 0, {0})})) == errc::invalid_argument);          // no tokens
  BOOST_TEST(code(make_batch({entry(1, {1}, 64, {0})})) == errc::invalid_argument);        // past the context
  BOOST_TEST(code(make_batch({entry(1, {1, 2}, 3, {0})})) == errc::invalid_argument);      // table too short
  BOOST_TEST(code(make_batch({entry(1, {1}, 0, {10})})) == errc::invalid_argument);        // block outside the pool
  BOOST_TEST(code(make_batch({entry(1, {100}, 0, {0})})) == errc::invalid_argument);       // token id
  auto wrong = make_batch({entry(1, {1}, 0, {0})});
  wrong.num_tokens = 2;
  BOOST_TEST(code(wrong) == errc::invalid_argument);                                        // num_tokens
  BOOST_TEST(code(make_batch({entry(1, std::vector<uint32_t>(17, 1), 0, {0, 1, 2, 3, 4})})) ==
             errc::invalid_argument);                                                       // > max tokens
  BOOST_TEST(code(make_batch({entry(1, {1}, 0, {0}), entry(2, {1}, 0, {1}), entry(3, {1}, 0, {2}),
                              entry(4, {1}, 0, {3})})) == errc::invalid_argument);          // > max seqs
}

BOOST_AUTO_TEST_CASE(pack_step_flattens_a_mixed_batch_like_the_cpu_forward) {
  // A decode at position 9 (blocks 7, 2, 5) and a prefill chunk at 2..4 (blocks 3, 1), block size 4.
  auto d = entry(11, {42}, 9, {7, 2, 5});
  d.sampling.temperature = 0.8f;
  d.sampling.top_k = 5;
  d.sampling.top_p = 0.5f;
  d.sampling.seed = 1234;
  auto pf = entry(12, {1, 2, 3}, 2, {3, 1});
  pf.sampling.temperature = 1.0f; // unseeded
  auto skip = entry(13, {9, 9}, 0, {6}, /*sample=*/false);
  const auto b = make_batch({d, pf, skip});
  const auto p = pack_step(b, 4, 5, /*process_seed=*/77);
  BOOST_TEST(!p.decode_only);
  BOOST_TEST(p.n_tokens == 6u);
  BOOST_TEST(p.ids == (std::vector<uint32_t>{42, 1, 2, 3, 9, 9}), boost::test_tools::per_element());
  BOOST_TEST(p.positions == (std::vector<uint32_t>{9, 2, 3, 4, 0, 1}), boost::test_tools::per_element());
  // slot = table[pos / 4] * 4 + pos % 4
  BOOST_TEST(p.slots == (std::vector<uint32_t>{5 * 4 + 1, 3 * 4 + 2, 3 * 4 + 3, 1 * 4 + 0, 6 * 4 + 0, 6 * 4 + 1}),
             boost::test_tools::per_element());
  BOOST_TEST(p.token_seq == (std::vector<uint32_t>{0, 1, 1, 1, 2, 2}), boost::test_tools::per_element());
  BOOST_TEST(p.tables == (std::vector<uint32_t>{7, 2, 5, 0, 0, 3, 1, 0, 0, 0, 6, 0, 0, 0, 0}),
             boost::test_tools::per_element());
  // LM-head rows: the last token of each sampled entry only.
  BOOST_TEST(p.lm_rows == (std::vector<uint32_t>{0, 3}), boost::test_tools::per_element());
  BOOST_TEST(p.row_entry == (std::vector<int32_t>{0, 1}), boost::test_tools::per_element());
  BOOST_TEST_REQUIRE(p.params.size() == 2u);
  BOOST_TEST(p.params[0].seed == 1234u);
  BOOST_TEST(p.params[0].position == 10u);
  BOOST_TEST(p.params[0].top_k == 5);
  BOOST_TEST(p.params[0].top_p == 0.5f);
  BOOST_TEST(p.params[1].seed == kernels::rng_stream_seed(false, 0, 77, 12));
  BOOST_TEST(p.params[1].position == 5u);
}

BOOST_AUTO_TEST_CASE(pack_step_pads_a_decode_batch_to_its_graph_bucket) {
  auto a = entry(1, {5}, 6, {2, 4}), c = entry(3, {8}, 0, {9});
  auto bb = entry(2, {7}, 3, {1}, /*sample=*/false);
  const auto p = pack_step(make_batch({a, bb, c}), 4, 3, 0, /*pad_to=*/4);
  BOOST_TEST(p.decode_only);
  BOOST_TEST(p.n_tokens == 4u);
  BOOST_TEST(p.n_seqs == 4u);
  BOOST_TEST(p.ids == (std::vector<uint32_t>{5, 7, 8, 0}), boost::test_tools::per_element());
  BOOST_TEST(p.positions == (std::vector<uint32_t>{6, 3, 0, 0}), boost::test_tools::per_element());
  BOOST_TEST(p.slots == (std::vector<uint32_t>{4 * 4 + 2, 1 * 4 + 3, 9 * 4, cuda_no_slot}),
             boost::test_tools::per_element());
  BOOST_TEST(p.token_seq == (std::vector<uint32_t>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(p.tables == (std::vector<uint32_t>{2, 4, 0, 1, 0, 0, 9, 0, 0, 0, 0, 0}), boost::test_tools::per_element());
  // Every token has a logits row; the sampler runs on the real rows and the
  // unsampled entry's row is ignored.
  BOOST_TEST(p.lm_rows == (std::vector<uint32_t>{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(p.n_sample_rows == 3u);
  BOOST_TEST(p.row_entry == (std::vector<int32_t>{0, -1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(pack_step_carries_grammar_masks_with_their_logits_rows) {
  // Entries 0 and 2 are guided (2 mask words), entry 1 is not; entry 3 forks
  // entry 2 and draws on its row, whose mask is already applied.
  auto a = entry(1, {5}, 6, {2, 4}), b = entry(2, {7}, 3, {1}), c = entry(3, {1, 2}, 0, {9});
  a.allowed_tokens = {0x1, 0x2};
  c.allowed_tokens = {0xF0, 0x0F};
  engine::batch_entry fork;
  fork.seq_id = 4;
  fork.sample = true;
  fork.fork_of = 3;
  fork.allowed_tokens = c.allowed_tokens;
  const auto p = pack_step(make_batch({a, b, c, fork}), 4, 3, 0);
  BOOST_TEST(p.mask_words == 2u);
  BOOST_TEST(p.mask_rows == (std::vector<uint32_t>{0, 2}), boost::test_tools::per_element());
  BOOST_TEST(p.masks == (std::vector<uint64_t>{0x1, 0x2, 0xF0, 0x0F}), boost::test_tools::per_element());
  // A graph step: the rows are the entries' indices.
  const auto g = pack_step(make_batch({b, a}), 4, 3, 0, /*pad_to=*/4);
  BOOST_TEST(g.mask_rows == (std::vector<uint32_t>{1}), boost::test_tools::per_element());
  BOOST_TEST(g.masks == (std::vector<uint64_t>{0x1, 0x2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(packed_metadata_drives_the_reference_attention_like_the_batch_does) {
  // Store K/V through the packed slots and attend through the packed per-token
  // tables; compare with the CPU forward's own per-entry interpretation.
  const uint32_t bs = 4, n_kv = 2, hd = 8, n_head = 4, num_blocks = 12, stride = 6;
  // A mixed batch (eager), and a decode batch padded to a graph bucket.
  const auto mixed = make_batch({entry(1, {3}, 9, {7, 2, 5}), entry(2, {1, 2, 3, 4, 5}, 2, {3, 1, 11}),
                                 entry(3, {6, 7}, 0, {0})});
  const auto decodes = make_batch({entry(1, {3}, 9, {7, 2, 5}), entry(2, {4}, 17, {3, 1, 11, 4, 8}),
                                   entry(3, {6}, 0, {0})});
  for (const auto& [b, pad] : {std::pair{mixed, 0u}, std::pair{decodes, 4u}}) {
    const auto p = pack_step(b, bs, stride, 0, pad);
    BOOST_TEST_INFO("padded to " << pad);
    const size_t row = size_t(n_kv) * hd, per_kv = size_t(bs) * row;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    auto rnd = [&](size_t n) {
      std::vector<float> v(n);
      for (auto& x : v) x = dist(rng);
      return v;
    };
    // History of each sequence (positions before start_pos), stored via the batch's tables.
    std::vector<float> cache_a(num_blocks * 2 * per_kv, 0.0f);
    const kernels::ref::paged_kv_view va{cache_a.data(), cache_a.data() + per_kv, kernels::ref::kv_dtype::f32,
                                         2 * per_kv, bs, n_kv, hd};
    for (const auto& e : b.entries) {
      const auto k = rnd(e.start_pos * row), v = rnd(e.start_pos * row);
      for (uint32_t pos = 0; pos < e.start_pos; ++pos) {
        const uint32_t slot = e.block_table[pos / bs] * bs + pos % bs;
        kernels::ref::kv_store({k.data() + pos * row, row, v.data() + pos * row, row, &slot, 1, va});
      }
    }
    auto cache_b = cache_a;
    const kernels::ref::paged_kv_view vb{cache_b.data(), cache_b.data() + per_kv, kernels::ref::kv_dtype::f32,
                                         2 * per_kv, bs, n_kv, hd};
    const auto k_new = rnd(p.n_tokens * row), v_new = rnd(p.n_tokens * row);
    const auto q = rnd(p.n_tokens * n_head * hd);
    const size_t q_stride = size_t(n_head) * hd;

    // (a) the CPU forward's interpretation: slots and sequences from the batch entries.
    std::vector<kernels::ref::attention_sequence> seqs;
    uint32_t t0 = 0;
    for (const auto& e : b.entries) {
      for (uint32_t j = 0; j < e.tokens.size(); ++j) {
        const uint32_t pos = e.start_pos + j, slot = e.block_table[pos / bs] * bs + pos % bs, t = t0 + j;
        kernels::ref::kv_store({k_new.data() + t * row, row, v_new.data() + t * row, row, &slot, 1, va});
      }
      seqs.push_back({t0, uint32_t(e.tokens.size()), e.start_pos, e.block_table.data(), uint32_t(e.block_table.size())});
      t0 += uint32_t(e.tokens.size());
    }
    std::vector<float> out_a(b.num_tokens * q_stride, 0.0f);
    kernels::ref::paged_attention({q.data(), q_stride, out_a.data(), q_stride, n_head, 0.35f, seqs, va, nullptr});

    // (b) the packed metadata: per-token slots, and each token a one-query
    // sequence at its position using its table row (what the GPU kernel does).
    for (uint32_t t = 0; t < p.n_tokens; ++t) {
      if (p.slots[t] == cuda_no_slot) continue;
      kernels::ref::kv_store({k_new.data() + t * row, row, v_new.data() + t * row, row, &p.slots[t], 1, vb});
    }
    std::vector<kernels::ref::attention_sequence> per_token;
    for (uint32_t t = 0; t < p.n_tokens; ++t) {
      per_token.push_back({t, 1, p.positions[t], p.tables.data() + size_t(p.token_seq[t]) * stride, stride});
    }
    std::vector<float> out_b(p.n_tokens * q_stride, 0.0f);
    kernels::ref::paged_attention({q.data(), q_stride, out_b.data(), q_stride, n_head, 0.35f, per_token, vb, nullptr});

    // Padding tokens store nothing, and real tokens see exactly the batch's attention.
    BOOST_TEST(cache_a == cache_b, boost::test_tools::per_element());
    out_b.resize(out_a.size());
    BOOST_TEST(out_a == out_b, boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(step_image_holds_every_array_at_its_offset) {
  const auto b = make_batch({entry(1, {4, 5}, 0, {3}), entry(2, {6}, 2, {8})});
  const auto p = pack_step(b, 4, 2, 9);
  const auto l = make_step_layout(p.n_tokens, p.n_seqs, std::max(p.n_lm_rows, p.n_sample_rows), 2);
  BOOST_TEST(l.total_bytes % 16 == 0u);
  for (size_t off : {l.ids, l.positions, l.slots, l.token_seq, l.lm_rows, l.tables, l.params}) BOOST_TEST(off % 16 == 0u);
  std::vector<std::byte> image(l.total_bytes);
  write_step(p, l, image);
  auto u32 = [&](size_t off, size_t i) {
    uint32_t v;
    std::memcpy(&v, image.data() + off + 4 * i, 4);
    return v;
  };
  BOOST_TEST(u32(l.ids, 2) == 6u);
  BOOST_TEST(u32(l.positions, 2) == 2u);
  BOOST_TEST(u32(l.slots, 1) == 3u * 4 + 1);
  BOOST_TEST(u32(l.token_seq, 2) == 1u);
  BOOST_TEST(u32(l.lm_rows, 1) == 2u);
  BOOST_TEST(u32(l.tables, 2) == 8u);
  cuda_sample_row r;
  std::memcpy(&r, image.data() + l.params + sizeof(cuda_sample_row), sizeof r);
  BOOST_TEST(r.position == 3u);
}

BOOST_AUTO_TEST_CASE(gpu_rng_stream_equals_the_cpu_sampler_stream) {
  for (uint64_t seed : {0ull, 1ull, 42ull, 0xdeadbeefcafef00dull}) {
    for (uint32_t pos : {0u, 1u, 17u, 4096u, 0xffffffffu}) {
      BOOST_TEST(kernels::rng_uniform(seed, pos) == sampler::uniform(seed, pos));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
