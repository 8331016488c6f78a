// The random-weight model writer (dynamo-gguf-random, the model tests):
// presets of real shapes, a tiny file of every architecture and type that the
// GGUF reader, tokenizer, model loader and CPU executor all accept, sane
// weight statistics, and the streaming writer's size checks.
#include "runtime/model/random_model.hpp"

#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/quantize.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/writer.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/decoder_model.hpp"
#include "tests/runtime/model/model_test_util.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::model;

namespace {

struct temp_path {
  std::string path;
  explicit temp_path(const std::string& name)
      : path((std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".gguf")).string()) {}
  ~temp_path() { std::filesystem::remove(path); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(random_model_unit)

BOOST_AUTO_TEST_CASE(presets_have_the_published_shapes) {
  auto l = random_model_preset("llama-3.1-8b");
  BOOST_REQUIRE(l);
  BOOST_TEST(l->n_layer == 32u);
  BOOST_TEST(l->n_embd == 4096u);
  BOOST_TEST(l->n_head == 32u);
  BOOST_TEST(l->n_kv_head == 8u);
  BOOST_TEST(l->n_ff == 14336u);
  BOOST_TEST(l->n_vocab == 128256u);
  BOOST_TEST(l->rope_base == 500000.0f);
  BOOST_TEST(!l->tied_embeddings);
  BOOST_TEST(l->llama3_rope_freqs);
  // Llama-3.1-8B's 8.03 B, plus the 64 RoPE factors of rope_freqs.weight.
  BOOST_TEST(parameter_count(*l) == 8030261248ull + 64);
  auto s = random_model_preset("smollm2-135m");
  BOOST_REQUIRE(s);
  BOOST_TEST(parameter_count(*s) == 134515008ull); // research/engine.md 2.1
  BOOST_TEST(!random_model_preset("gpt-5"));
}

BOOST_AUTO_TEST_CASE(every_preset_has_its_published_parameter_count) {
  // The counts Hugging Face publishes for these checkpoints (safetensors
  // totals): the tensor plans of every architecture are complete and shaped right.
  const std::pair<const char*, uint64_t> published[] = {
      {"qwen3-0.6b", 596049920ull},       {"qwen3-8b", 8190735360ull},
      {"qwen3-30b-a3b", 30532122624ull},  {"qwen2.5-0.5b", 494032768ull},
      {"mistral-7b", 7248023552ull},      {"mixtral-8x7b", 46702792704ull},
      {"qwen1.5-moe-a2.7b", 14315784192ull}};
  for (const auto& [name, count] : published) {
    auto o = random_model_preset(name);
    BOOST_REQUIRE_MESSAGE(o, name);
    BOOST_TEST(parameter_count(*o) == count, name);
    BOOST_TEST(static_cast<bool>(validate(*o)), name);
  }
}

BOOST_AUTO_TEST_CASE(bad_shapes_are_rejected_with_the_reason) {
  auto o = *random_model_preset("tiny");
  o.n_kv_head = 3;
  BOOST_TEST(!validate(o));
  o = *random_model_preset("tiny");
  o.n_vocab = 100;
  BOOST_TEST(!validate(o));
  o = *random_model_preset("tiny");
  o.embd_type = gguf::tensor_type::q4_k; // taken as given: rows of 64 are not whole Q4_K blocks
  BOOST_TEST(!validate(o));
  o = *random_model_preset("tiny");
  o.type = gguf::tensor_type::q4_1;
  o.medium_mix = true; // only for q4_k and q5_k
  BOOST_TEST(!validate(o));
  o = *random_model_preset("tiny");
  o.type = gguf::tensor_type::q8_0;
  o.n_ff = 100; // ffn_down rows of 100 fit no 32-block type: F16, as llama-quantize does
  BOOST_TEST(static_cast<bool>(validate(o)));
  BOOST_TEST((matrix_type(o, "blk.0.ffn_down.weight", 100) == gguf::tensor_type::f16));
}

BOOST_AUTO_TEST_CASE(matrix_types_follow_llama_quantize) {
  using tt = gguf::tensor_type;
  // SmolLM2's shapes (576 wide, FFN 1536, 30 layers, tied) as Q4_K_M: what
  // llama-quantize wrote for the real model (src/llama-quant.cpp rules):
  // the tied LM head Q6_K -> Q8_0 (576 % 256), attn_v Q6_K in layers 0-2,
  // 5, 8, ..., 26-29 (-> Q8_0), else Q4_K -> Q5_0; ffn_down (1536 wide)
  // Q6_K in those layers, else Q4_K.
  auto o = *random_model_preset("smollm2-135m");
  o.type = tt::q4_k;
  o.medium_mix = true;
  BOOST_TEST((matrix_type(o, "token_embd.weight", 576) == tt::q8_0));
  BOOST_TEST((matrix_type(o, "blk.0.attn_q.weight", 576) == tt::q5_0));
  BOOST_TEST((matrix_type(o, "blk.0.attn_v.weight", 576) == tt::q8_0));
  BOOST_TEST((matrix_type(o, "blk.4.attn_v.weight", 576) == tt::q5_0));
  BOOST_TEST((matrix_type(o, "blk.5.attn_v.weight", 576) == tt::q8_0));
  BOOST_TEST((matrix_type(o, "blk.0.ffn_down.weight", 1536) == tt::q6_k));
  BOOST_TEST((matrix_type(o, "blk.4.ffn_down.weight", 1536) == tt::q4_k));
  BOOST_TEST((matrix_type(o, "blk.5.ffn_down.weight", 1536) == tt::q6_k));
  BOOST_TEST((matrix_type(o, "blk.25.ffn_down.weight", 1536) == tt::q4_k));
  BOOST_TEST((matrix_type(o, "blk.26.ffn_down.weight", 1536) == tt::q6_k));
  BOOST_TEST(*llama_file_type(o) == 15u);
  // Q5_K_M falls back to Q5_1; without the mix there are no Q6_K bumps.
  o.type = tt::q5_k;
  BOOST_TEST((matrix_type(o, "blk.7.ffn_gate.weight", 576) == tt::q5_1));
  BOOST_TEST((matrix_type(o, "blk.8.ffn_down.weight", 1536) == tt::q6_k));
  o.medium_mix = false;
  BOOST_TEST((matrix_type(o, "blk.8.ffn_down.weight", 1536) == tt::q5_k));
  BOOST_TEST(!llama_file_type(o));
  // Plain quantized types: the LM head goes to Q6_K when it fits, Q8_0 otherwise.
  o.type = tt::q4_1;
  BOOST_TEST((matrix_type(o, "token_embd.weight", 576) == tt::q8_0));
  BOOST_TEST((matrix_type(o, "token_embd.weight", 4096) == tt::q6_k));
  BOOST_TEST((matrix_type(o, "blk.3.attn_v.weight", 576) == tt::q4_1));
  o.type = tt::q8_0;
  BOOST_TEST((matrix_type(o, "token_embd.weight", 4096) == tt::q8_0));
  o.type = tt::iq4_xs;
  BOOST_TEST((matrix_type(o, "blk.3.attn_q.weight", 576) == tt::iq4_nl));
  // Untied: token_embd keeps the base type, output is the LM head.
  o.tied_embeddings = false;
  o.type = tt::q4_0;
  BOOST_TEST((matrix_type(o, "token_embd.weight", 4096) == tt::q4_0));
  BOOST_TEST((matrix_type(o, "output.weight", 4096) == tt::q6_k));
  // 8 experts (Mixtral): attn_k and attn_v in Q8_0.
  o.n_expert = 8;
  BOOST_TEST((matrix_type(o, "blk.3.attn_k.weight", 4096) == tt::q8_0));
  BOOST_TEST((matrix_type(o, "blk.3.attn_q.weight", 4096) == tt::q4_0));
  // Unquantized bases are used for everything; an explicit embd_type wins.
  o.type = tt::bf16;
  BOOST_TEST((matrix_type(o, "output.weight", 4096) == tt::bf16));
  o.embd_type = tt::q8_0;
  BOOST_TEST((matrix_type(o, "output.weight", 4096) == tt::q8_0));
}

BOOST_AUTO_TEST_CASE(vocab_is_byte_level_and_exactly_the_requested_size) {
  for (const uint32_t n : {259u, 300u, 20000u}) {
    const auto v = make_byte_vocab(n);
    BOOST_TEST(v.tokens.size() == n);
    BOOST_TEST(v.types.size() == n);
  }
}

BOOST_AUTO_TEST_CASE(tiny_files_of_every_type_load_tokenize_and_run_a_cpu_step) {
  std::vector<std::pair<gguf::tensor_type, bool>> types; // (base type, medium mix)
  for (uint32_t id = 0; id < 64; ++id) {
    if (kernels::ref::can_quantize(static_cast<gguf::tensor_type>(id))) types.emplace_back(gguf::tensor_type(id), false);
  }
  types.emplace_back(gguf::tensor_type::q4_k, true);
  types.emplace_back(gguf::tensor_type::q5_k, true);
  for (const auto& [type, mix] : types) {
    const std::string label = kernels::ref::type_name(type) + (mix ? "_M" : "");
    BOOST_TEST_CONTEXT("type " << label) {
      auto o = *random_model_preset("tiny");
      o.n_embd = 256; // rows of 256 and 512: the super-block types need no fallback
      o.n_ff = 512;
      o.type = type;
      o.medium_mix = mix;
      o.tied_embeddings = mix; // the mixes' Q6_K LM head is then token_embd, repacked
      o.threads = 2;
      temp_path tmp("gguf-random-" + label);
      auto bytes = write_random_model(o, tmp.path);
      BOOST_REQUIRE_MESSAGE(bytes, (bytes ? "" : describe(bytes.error())));
      BOOST_TEST(*bytes == std::filesystem::file_size(tmp.path));

      auto f = gguf::file::open(tmp.path);
      BOOST_REQUIRE_MESSAGE(f, (f ? "" : describe(f.error())));
      BOOST_TEST(((*f)->find_tensor("blk.1.attn_q.weight")->type == type));
      auto tk = tok::load_tokenizer(**f);
      BOOST_REQUIRE_MESSAGE(tk, (tk ? "" : describe(tk.error())));
      const std::string text = "Hello, random world! 123";
      const auto ids = (*tk)->encode(text, true);
      BOOST_TEST(!ids.empty());
      BOOST_TEST((*tk)->decode(ids) == text);

      auto m = model::decoder_model::load(tmp.path);
      BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
      BOOST_TEST((*m)->config().n_layer == o.n_layer);
      BOOST_TEST((*m)->config().n_vocab == o.n_vocab);
      // Weights: finite, zero-mean, the requested spread; norms are ones.
      const auto& wq = (*m)->weights().layers[1].wq;
      std::vector<float> row(wq.k);
      double sum = 0, sq = 0;
      for (uint32_t r = 0; r < wq.n; ++r) {
        kernels::ref::dequantize_row(wq.type, wq.row(r), row.data(), wq.k);
        for (float x : row) {
          BOOST_TEST_REQUIRE(std::isfinite(x));
          sum += x;
          sq += double(x) * x;
        }
      }
      const double n = double(wq.k) * wq.n, mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
      BOOST_TEST(std::fabs(mean) < 0.002);
      BOOST_TEST(sd == 0.02, boost::test_tools::tolerance(0.1));
      BOOST_TEST((*m)->weights().layers[0].attn_norm[5] == 1.0f);
      // A tied table is looked up in its lane copy, whose file pages load released.
      const auto& wt = (*m)->weights();
      BOOST_TEST(wt.tied_embeddings == mix);
      BOOST_TEST(wt.token_embd.lanes == (mix ? wt.output.lanes : nullptr));
      if (mix) BOOST_TEST(wt.output.lanes != nullptr);

      model::cpu_executor_config xc;
      xc.block_size = 16;
      xc.num_blocks = 8;
      xc.threads = 1;
      xc.process_seed = 1;
      auto ex = model::cpu_executor::create(*m, xc);
      BOOST_REQUIRE_MESSAGE(ex, (ex ? "" : describe(ex.error())));
      engine::batch b;
      engine::batch_entry e;
      e.seq_id = 1;
      e.tokens = ids;
      e.block_table = {0, 1};
      e.sample = true;
      e.sampling.temperature = 0.0f;
      e.sample_position = static_cast<uint32_t>(ids.size());
      b.entries.push_back(e);
      b.num_tokens = static_cast<uint32_t>(ids.size());
      auto r = (*ex)->execute(b);
      BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
      BOOST_TEST((r->sampled[0].value() < o.n_vocab));
    }
  }
}

BOOST_AUTO_TEST_CASE(same_seed_same_file_other_seed_other_weights) {
  auto o = *random_model_preset("tiny");
  o.threads = 2;
  temp_path a("gguf-random-a"), b("gguf-random-b"), c("gguf-random-c");
  BOOST_REQUIRE(write_random_model(o, a.path));
  o.threads = 1; // the thread count must not matter
  BOOST_REQUIRE(write_random_model(o, b.path));
  o.seed = 2;
  BOOST_REQUIRE(write_random_model(o, c.path));
  auto read = [](const std::string& p) {
    auto f = gguf::file::open(p);
    BOOST_REQUIRE(f);
    const auto* t = (*f)->find_tensor("blk.0.ffn_up.weight");
    BOOST_REQUIRE(t != nullptr);
    const auto bytes = (*f)->tensor_data(*t);
    return std::vector<std::byte>(bytes.begin(), bytes.end());
  };
  BOOST_TEST((read(a.path) == read(b.path)));
  BOOST_TEST((read(a.path) != read(c.path)));
}

BOOST_AUTO_TEST_CASE(streaming_writer_checks_the_bytes_each_tensor_gets) {
  temp_path tmp("gguf-stream");
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  BOOST_REQUIRE(w.declare_tensor("t", {32, 2}, gguf::tensor_type::q8_0));
  BOOST_TEST(!w.write(tmp.path)); // declared tensors need write_streaming
  const std::vector<std::byte> block(34, std::byte{1});
  auto short_source = [&](std::string_view, const gguf::writer::byte_sink& sink) -> expected<void> {
    (void)sink(block);
    return {};
  };
  auto r = w.write_streaming(tmp.path, short_source);
  BOOST_REQUIRE(!r);
  BOOST_TEST((code_of(r.error()) == errc::invalid_argument));
  auto full_source = [&](std::string_view, const gguf::writer::byte_sink& sink) -> expected<void> {
    BOOST_TEST(sink(block));
    BOOST_TEST(sink(block));
    BOOST_TEST(!sink(block)); // one block too many is refused
    return {};
  };
  BOOST_REQUIRE(w.write_streaming(tmp.path, full_source));
  auto f = gguf::file::open(tmp.path);
  BOOST_REQUIRE_MESSAGE(f, (f ? "" : describe(f.error())));
  const auto* t = (*f)->find_tensor("t");
  BOOST_REQUIRE(t != nullptr);
  BOOST_TEST((*f)->tensor_data(*t).size() == 68u);
}

BOOST_AUTO_TEST_SUITE_END()
