#include "runtime/gguf/writer.hpp"
#include "runtime/model/kv_cache.hpp"
#include "runtime/model/decoder_model.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::model;

namespace {

struct variant {
  bool drop_block_count = false;
  const char* arch = "llama";
  const char* prefix = "llama";
  uint32_t kv_heads = 2;
  std::string skip_tensor;
};

/// A writer holding a 1-layer f32 model, changed as `v` says.
gguf::writer small_file(const variant& v = {}) {
  gguf::writer w;
  const std::string a = v.prefix;
  w.set_string("general.architecture", v.arch);
  if (!v.drop_block_count) w.set_u32(a + ".block_count", 1);
  w.set_u32(a + ".context_length", 64);
  w.set_u32(a + ".embedding_length", 32);
  w.set_u32(a + ".feed_forward_length", 64);
  w.set_u32(a + ".attention.head_count", 4);
  w.set_u32(a + ".attention.head_count_kv", v.kv_heads);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
  auto add = [&](const std::string& n, std::vector<uint64_t> dims) {
    if (n == v.skip_tensor) return;
    uint64_t count = 1;
    for (auto d : dims) count *= d;
    BOOST_REQUIRE(w.add_tensor(n, dims, gguf::tensor_type::f32, std::vector<float>(count, 0.5f)));
  };
  add("token_embd.weight", {32, 10});
  add("output_norm.weight", {32});
  add("blk.0.attn_norm.weight", {32});
  add("blk.0.attn_q.weight", {32, 32});
  add("blk.0.attn_k.weight", {32, 16});
  add("blk.0.attn_v.weight", {32, 16});
  add("blk.0.attn_output.weight", {32, 32});
  add("blk.0.ffn_norm.weight", {32});
  add("blk.0.ffn_gate.weight", {32, 64});
  add("blk.0.ffn_up.weight", {32, 64});
  add("blk.0.ffn_down.weight", {64, 32});
  return w;
}

expected<std::shared_ptr<const decoder_model>> load(const gguf::writer& w) {
  auto f = gguf::file::from_bytes(w.bytes());
  BOOST_REQUIRE(f);
  return decoder_model::from_file(std::move(*f));
}

} // namespace

BOOST_AUTO_TEST_SUITE(decoder_model_unit)

BOOST_AUTO_TEST_CASE(config_and_weights_are_read_with_defaults_filled_in) {
  auto m = load(small_file());
  BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
  const decoder_config& c = (*m)->config();
  BOOST_TEST(c.n_layer == 1u);
  BOOST_TEST(c.n_head == 4u);
  BOOST_TEST(c.n_kv_head == 2u);
  BOOST_TEST(c.head_dim == 8u); // embedding_length / head_count
  BOOST_TEST(c.rot_dim == 8u);
  BOOST_TEST(c.n_vocab == 10u); // rows of token_embd when vocab_size is absent
  BOOST_TEST(c.rope_base == 10000.0f);
  BOOST_TEST(c.rms_eps == 1e-6f);
  const decoder_weights& w = (*m)->weights();
  BOOST_TEST(w.tied_embeddings);
  BOOST_TEST(w.output.data == w.token_embd.data);
  BOOST_TEST(w.layers.at(0).wk.n == 16u);
  BOOST_TEST(w.layers.at(0).w_down.k == 64u);
  BOOST_TEST(w.layers.at(0).ffn_norm.size() == 32u);
}

BOOST_AUTO_TEST_CASE(a_missing_required_key_is_named_in_the_error) {
  auto m = load(small_file({.drop_block_count = true}));
  BOOST_REQUIRE(!m);
  BOOST_TEST(code_of(m.error()) == errc::corrupt_file);
  BOOST_TEST(message_of(m.error()).find("'llama.block_count'") != std::string::npos, message_of(m.error()));
}

BOOST_AUTO_TEST_CASE(another_architecture_is_unsupported_and_the_supported_ones_are_listed) {
  auto m = load(small_file({.arch = "mamba"}));
  BOOST_REQUIRE(!m);
  BOOST_TEST(code_of(m.error()) == errc::unsupported);
  BOOST_TEST(message_of(m.error()) ==
                 "architecture 'mamba' is not supported (supported: llama, qwen2, qwen2moe, qwen3, qwen3moe)",
             message_of(m.error()));
}

BOOST_AUTO_TEST_CASE(a_tensor_the_architecture_does_not_use_is_refused_by_name) {
  auto w = small_file();
  BOOST_REQUIRE(w.add_tensor("blk.0.attn_q_norm.weight", {8}, gguf::tensor_type::f32, std::vector<float>(8, 1.0f)));
  auto m = load(w);
  BOOST_REQUIRE(!m);
  BOOST_TEST(code_of(m.error()) == errc::unsupported);
  BOOST_TEST(message_of(m.error()).find("'blk.0.attn_q_norm.weight' is not part of the llama model") !=
                 std::string::npos,
             message_of(m.error()));
}

BOOST_AUTO_TEST_CASE(yarn_rope_scaling_is_refused_linear_scaling_is_read) {
  auto w = small_file();
  w.set_string("llama.rope.scaling.type", "yarn");
  auto yarn = load(w);
  BOOST_REQUIRE(!yarn);
  BOOST_TEST(code_of(yarn.error()) == errc::unsupported);
  BOOST_TEST(message_of(yarn.error()).find("'yarn'") != std::string::npos, message_of(yarn.error()));
  w.set_string("llama.rope.scaling.type", "linear");
  w.set_f32("llama.rope.scaling.factor", 4.0f);
  auto linear = load(w);
  BOOST_REQUIRE_MESSAGE(linear, (linear ? "" : describe(linear.error())));
  BOOST_TEST((*linear)->config().rope_freq_scale == 0.25f);
}

BOOST_AUTO_TEST_CASE(every_architecture_reads_its_own_keys_and_tensors) {
  random_model_options o = model::test::test_model_options();
  o.arch = architecture::qwen3moe;
  o.n_head = 4;
  o.head_dim = 32; // q width 128 != n_embd 64: attention.key_length
  o.n_expert = 6;
  o.n_expert_used = 2;
  o.n_ff_expert = 96;
  auto m = model::test::tiny_model(o);
  const decoder_config& c = m->config();
  BOOST_TEST((c.arch == architecture::qwen3moe));
  BOOST_TEST((c.rope == kernels::ref::rope_style::neox));
  BOOST_TEST(c.head_dim == 32u);
  BOOST_TEST(c.moe.n_expert == 6u);
  BOOST_TEST(c.moe.n_expert_used == 2u);
  BOOST_TEST(c.moe.n_ff_expert == 96u);
  BOOST_TEST(c.moe.norm_topk);
  const auto& l = m->weights().layers.at(1);
  BOOST_TEST(l.q_norm.size() == 32u);
  BOOST_TEST(l.moe.router.n == 6u);
  BOOST_TEST(l.moe.gate.rows == 96u);
  BOOST_TEST(l.moe.down.expert(5).n == 64u);
  BOOST_TEST(l.moe.down.expert(5).k == 96u);
  BOOST_TEST(!l.moe.has_shared_expert());
  BOOST_TEST(l.w_gate.data == nullptr);
  BOOST_TEST(m->active_weight_bytes() < m->weight_bytes());

  o = model::test::test_model_options();
  o.arch = architecture::qwen2;
  auto q2 = model::test::tiny_model(o);
  BOOST_TEST(q2->weights().layers.at(0).bk.size() == 32u); // 2 KV heads x 16
  BOOST_TEST(!q2->config().is_moe());

  o.arch = architecture::qwen2moe;
  o.n_expert = 4;
  o.n_expert_used = 2;
  o.n_ff_shared = 96;
  auto q2m = model::test::tiny_model(o);
  BOOST_TEST(q2m->weights().layers.at(0).moe.has_shared_expert());
  BOOST_TEST(q2m->weights().layers.at(0).moe.shared_down.k == 96u);
  BOOST_TEST(!q2m->config().moe.norm_topk);

  o = model::test::test_model_options();
  o.llama3_rope_freqs = true;
  auto l3 = model::test::tiny_model(o);
  BOOST_TEST(l3->weights().rope_freqs.size() == 8u); // head_dim 16 / 2
  BOOST_TEST(l3->weights().rope_freqs.front() == 1.0f);
}

BOOST_AUTO_TEST_CASE(an_architecture_reads_its_own_key_prefix_and_requires_its_tensors) {
  auto keys = load(small_file({.arch = "qwen2"})); // keys say llama.*
  BOOST_REQUIRE(!keys);
  BOOST_TEST(message_of(keys.error()).find("'qwen2.block_count' is required") != std::string::npos,
             message_of(keys.error()));
  auto biases = load(small_file({.arch = "qwen2", .prefix = "qwen2"})); // Qwen2 needs Q/K/V biases
  BOOST_REQUIRE(!biases);
  BOOST_TEST(code_of(biases.error()) == errc::corrupt_file);
  BOOST_TEST(message_of(biases.error()).find("'blk.0.attn_q.bias' is missing") != std::string::npos,
             message_of(biases.error()));
  auto experts = load(small_file({.arch = "qwen3moe", .prefix = "qwen3moe"}));
  BOOST_REQUIRE(!experts);
  BOOST_TEST(message_of(experts.error()).find("'qwen3moe.expert_count' is required") != std::string::npos,
             message_of(experts.error()));
}

BOOST_AUTO_TEST_CASE(head_counts_that_do_not_divide_are_rejected) {
  auto m = load(small_file({.kv_heads = 3}));
  BOOST_REQUIRE(!m);
  BOOST_TEST(message_of(m.error()).find("not a multiple of head_count_kv 3") != std::string::npos,
             message_of(m.error()));
}

BOOST_AUTO_TEST_CASE(a_missing_or_misshaped_tensor_is_named) {
  auto w = small_file();
  BOOST_REQUIRE(w.add_tensor("output.weight", {32, 9}, gguf::tensor_type::f32, std::vector<float>(32 * 9, 0.0f)));
  auto m = load(w);
  BOOST_REQUIRE(!m);
  BOOST_TEST(message_of(m.error()).find("'output.weight' has shape [32, 9], expected [32, 10]") != std::string::npos,
             message_of(m.error()));

  auto missing = load(small_file({.skip_tensor = "blk.0.ffn_up.weight"}));
  BOOST_REQUIRE(!missing);
  BOOST_TEST(code_of(missing.error()) == errc::corrupt_file);
  BOOST_TEST(message_of(missing.error()).find("'blk.0.ffn_up.weight' is missing") != std::string::npos,
             message_of(missing.error()));
}

BOOST_AUTO_TEST_CASE(model_files_that_do_not_exist_give_an_error_value) {
  auto m = decoder_model::load("/nonexistent/model.gguf");
  BOOST_REQUIRE(!m);
  BOOST_TEST(code_of(m.error()) == errc::not_found);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kv_cache_unit)

BOOST_AUTO_TEST_CASE(layout_is_block_major_with_layers_then_k_and_v) {
  const kv_cache_shape s{3, 4, 2, 2, 8, kv_dtype::f16};
  BOOST_TEST(s.block_bytes() == 2u * 2 * 4 * 2 * 8 * 2);
  auto c = kv_cache::create(s);
  BOOST_REQUIRE(c);
  const auto v0 = (*c)->layer_view(0), v1 = (*c)->layer_view(1);
  const auto* base = (*c)->block(0).data();
  const size_t per_kv = 4 * 2 * 8 * 2; // bytes of K of one layer of one block
  BOOST_TEST(static_cast<std::byte*>(v0.k) - base == 0);
  BOOST_TEST(static_cast<std::byte*>(v0.v) - base == std::ptrdiff_t(per_kv));
  BOOST_TEST(static_cast<std::byte*>(v1.k) - base == std::ptrdiff_t(2 * per_kv));
  BOOST_TEST(v1.block_stride * 2 == s.block_bytes()); // elements of 2 bytes
  BOOST_TEST((*c)->block(2).data() - base == std::ptrdiff_t(2 * s.block_bytes()));
  BOOST_TEST(v1.offset(2, 3, 1) == 2 * v1.block_stride + (1 * 4 + 3) * 8); // head 1, slot 3
}

BOOST_AUTO_TEST_CASE(budget_gives_whole_blocks_and_zero_dimensions_are_rejected) {
  decoder_config c;
  c.n_layer = 30;
  c.n_kv_head = 3;
  c.head_dim = 64;
  const auto s = kv_shape_for_budget(c, 16, kv_dtype::f16, 100u << 20);
  BOOST_TEST(s.block_bytes() == 368640u); // 16 tokens x 23,040 B (engine.md 2.4)
  BOOST_TEST(s.num_blocks == (100u << 20) / 368640u);
  auto bad = kv_cache::create({0, 16, 30, 3, 64, kv_dtype::f16});
  BOOST_REQUIRE(!bad);
  BOOST_TEST(code_of(bad.error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
