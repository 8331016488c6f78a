// The real SmolLM2-135M-Instruct Q4_1 file parses with the expected shape.
// Skipped (with a message) when the model file is not present.
#include "runtime/gguf/gguf_file.hpp"
#include "tests/runtime/gguf/test_model.hpp"

#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace dynamo;
using namespace dynamo::gguf;

namespace {

std::shared_ptr<const file> open_model() {
  auto f = file::open(*dynamo::testing::smollm2_path());
  BOOST_REQUIRE_MESSAGE(f, error_text(f));
  return *f;
}

} // namespace

BOOST_AUTO_TEST_SUITE(smollm2_file, *boost::unit_test::precondition(&dynamo::testing::model_available))

BOOST_AUTO_TEST_CASE(header_and_hyperparameters_match_the_model_card) {
  auto f = open_model();
  BOOST_TEST(f->version() == 3u);
  BOOST_TEST(f->alignment() == 32u);
  BOOST_TEST(*f->get_string("general.architecture") == "llama");
  BOOST_TEST(*f->get_u32("llama.block_count") == 30u);
  BOOST_TEST(*f->get_u32("llama.context_length") == 8192u);
  BOOST_TEST(*f->get_u32("llama.embedding_length") == 576u);
  BOOST_TEST(*f->get_u32("llama.feed_forward_length") == 1536u);
  BOOST_TEST(*f->get_u32("llama.attention.head_count") == 9u);
  BOOST_TEST(*f->get_u32("llama.attention.head_count_kv") == 3u);
  BOOST_TEST(*f->get_f32("llama.rope.freq_base") == 100000.0f);
  BOOST_TEST(std::fabs(*f->get_f32("llama.attention.layer_norm_rms_epsilon") - 1e-5f) < 1e-9f);
  BOOST_TEST(*f->get_string("tokenizer.ggml.model") == "gpt2");
  BOOST_TEST(*f->get_string("tokenizer.ggml.pre") == "smollm");
  BOOST_TEST(f->get_string_array("tokenizer.ggml.tokens")->size() == 49152u);
  BOOST_TEST(f->get_string_array("tokenizer.ggml.merges")->size() == 48900u);
}

BOOST_AUTO_TEST_CASE(tensor_table_has_272_tensors_of_the_expected_types) {
  auto f = open_model();
  BOOST_TEST(f->tensors().size() == 272u);
  const auto* emb = f->find_tensor("token_embd.weight");
  BOOST_REQUIRE(emb);
  BOOST_TEST(emb->type == tensor_type::q8_0);
  BOOST_TEST(emb->n_dims == 2u);
  BOOST_TEST(emb->ne[0] == 576u);
  BOOST_TEST(emb->ne[1] == 49152u);
  BOOST_TEST(emb->n_bytes == 49152u * 18u * 34u);
  BOOST_TEST(!f->find_tensor("output.weight")); // tied embeddings
  for (int b = 0; b < 30; ++b) {
    const std::string p = "blk." + std::to_string(b) + ".";
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      const auto* t = f->find_tensor(p + w + ".weight");
      BOOST_REQUIRE_MESSAGE(t, p + w);
      BOOST_TEST(t->type == tensor_type::q4_1, p + w);
    }
    BOOST_TEST(f->find_tensor(p + "attn_norm.weight")->type == tensor_type::f32);
  }
  const auto* k = f->find_tensor("blk.7.attn_k.weight");
  BOOST_TEST(k->ne[0] == 576u);
  BOOST_TEST(k->ne[1] == 192u);
  const auto* down = f->find_tensor("blk.29.ffn_down.weight");
  BOOST_TEST(down->ne[0] == 1536u);
  BOOST_TEST(down->ne[1] == 576u);
}

BOOST_AUTO_TEST_CASE(weights_dequantize_to_plausible_values) {
  auto f = open_model();
  std::vector<float> row(576);
  BOOST_REQUIRE(f->dequantize_row(*f->find_tensor("token_embd.weight"), 49151, row));
  double sum_sq = 0;
  for (float v : row) {
    BOOST_TEST(std::isfinite(v));
    sum_sq += v * v;
  }
  BOOST_TEST(sum_sq > 0.0);
  auto norm = f->dequantize(*f->find_tensor("output_norm.weight"));
  BOOST_REQUIRE(norm);
  BOOST_TEST(norm->size() == 576u);
}

BOOST_AUTO_TEST_SUITE_END()
