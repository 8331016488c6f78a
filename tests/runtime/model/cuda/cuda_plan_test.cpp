// The CUDA executor's host-side arithmetic, without a device: weight and
// activation layouts, fused-weight upload plan, split-K geometry, KV sizing
// from memory, graph buckets, batch checks, and step metadata packing checked
// against the CPU engine's interpretation (slots, attention sequences).
#include "runtime/model/cuda/cuda_plan.hpp"

#include "kernels/counter_rng.hpp"
#include "kernels/reference/kv_store.hpp"
#include "kernels/reference/paged_attention.hpp"
#include "runtime/model/sampler.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <random>

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

} // namespace

BOOST_AUTO_TEST_SUITE(cuda_plan)

BOOST_AUTO_TEST_CASE(weight_layout_is_aligned_disjoint_and_fuses_qkv_and_gate_up) {
  const auto c = smollm2();
  for (const bool tied : {true, false}) {
    const auto l = plan_weights(c, tied);
    std::vector<cuda_tensor_slot> all = {l.token_embd, l.output_norm};
    if (!tied) all.push_back(l.output);
    for (const auto& s : l.layers) all.insert(all.end(), {s.attn_norm, s.wqkv, s.wo, s.ffn_norm, s.wgu, s.wdown});
    for (size_t i = 0; i < all.size(); ++i) {
      BOOST_TEST(all[i].offset % cuda_tensor_alignment == 0u);
      BOOST_TEST(all[i].offset + all[i].bytes() <= l.total_bytes);
      for (size_t j = i + 1; j < all.size(); ++j) BOOST_TEST_REQUIRE(!overlaps(all[i], all[j]));
    }
    BOOST_TEST(l.layers.size() == 30u);
    BOOST_TEST(l.layers[0].wqkv.rows == (9u + 2 * 3) * 64);
    BOOST_TEST(l.layers[0].wqkv.cols == 576u);
    BOOST_TEST(l.layers[0].wgu.rows == 2u * 1536);
    BOOST_TEST(l.layers[0].wdown.cols == 1536u);
    BOOST_TEST(l.layers[0].attn_norm.f32);
    BOOST_TEST(l.token_embd.bytes() == size_t(49152) * 576 * 2);
    BOOST_TEST((l.output.offset == l.token_embd.offset) == tied);
    // SmolLM2 in bf16: 134.5 M parameters -> ~269 MB, tied head stored once.
    if (tied) BOOST_TEST(l.total_bytes / 1e6 == 269.0, boost::test_tools::tolerance(0.01));
  }
}

BOOST_AUTO_TEST_CASE(uploads_stack_q_k_v_and_gate_up_rows) {
  random_model_options o = test_model_options();
  o.n_layer = 2;
  o.tied_embeddings = false;
  auto m = tiny_model(o);
  const auto& c = m->config();
  const auto l = plan_weights(c, false);
  const auto up = plan_uploads(m->weights(), l);
  BOOST_TEST(up.size() == 3u + 2 * 9);
  const auto& w0 = m->weights().layers[0];
  const uint32_t qd = c.n_head * c.head_dim, kvd = c.n_kv_head * c.head_dim;
  bool saw_k = false, saw_v = false, saw_up = false;
  for (const auto& u : up) {
    if (u.matrix == &w0.wk) {
      saw_k = true;
      BOOST_TEST(u.row0 == qd);
      BOOST_TEST(u.dst.offset == l.layers[0].wqkv.offset);
    }
    if (u.matrix == &w0.wv) {
      saw_v = true;
      BOOST_TEST(u.row0 == qd + kvd);
      BOOST_TEST(u.row0 + u.matrix->n == l.layers[0].wqkv.rows);
    }
    if (u.matrix == &w0.w_up) {
      saw_up = true;
      BOOST_TEST(u.row0 == c.n_ff);
      BOOST_TEST(u.dst.offset == l.layers[0].wgu.offset);
    }
    if (u.matrix != nullptr) BOOST_TEST(u.matrix->k == u.dst.cols);
    if (u.norm != nullptr) BOOST_TEST(u.norm->size() == u.dst.cols);
  }
  BOOST_TEST((saw_k && saw_v && saw_up));
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
  const cuda_tensor_slot all[] = {a.x, a.h, a.qkv, a.attn, a.delta, a.gu, a.act, a.hs, a.logits, a.attn_ws, a.sampled};
  for (size_t i = 0; i < std::size(all); ++i) {
    BOOST_TEST(all[i].offset + all[i].bytes() <= a.total_bytes);
    for (size_t j = i + 1; j < std::size(all); ++j) BOOST_TEST(!overlaps(all[i], all[j]));
  }
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

BOOST_AUTO_TEST_CASE(models_with_layers_the_cuda_forward_lacks_are_refused_by_name) {
  BOOST_TEST(static_cast<bool>(check_cuda_support(*tiny_model())));
  random_model_options o = test_model_options();
  o.arch = architecture::qwen3;
  auto qwen3 = check_cuda_support(*tiny_model(o));
  BOOST_REQUIRE(!qwen3);
  BOOST_TEST(code_of(qwen3.error()) == errc::unsupported);
  BOOST_TEST(message_of(qwen3.error()).find("per-head Q/K norms") != std::string::npos, message_of(qwen3.error()));
  o.arch = architecture::qwen2moe;
  o.n_expert = 4;
  o.n_expert_used = 2;
  auto moe = check_cuda_support(*tiny_model(o));
  BOOST_REQUIRE(!moe);
  BOOST_TEST(message_of(moe.error()).find("mixture-of-experts FFNs, attention biases") != std::string::npos,
             message_of(moe.error()));
}

BOOST_AUTO_TEST_SUITE_END()
