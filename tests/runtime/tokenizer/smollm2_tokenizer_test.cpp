// The SmolLM2 tokenizer loaded from the real GGUF reproduces the reference
// vectors (data/smollm2_vectors.tsv, made by make_vectors.py with HF
// `tokenizers`), round-trips random UTF-8, and loader errors are clear.
#include "runtime/gguf/writer.hpp"
#include "runtime/tokenizer/detokenizer.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "runtime/tokenizer/unicode.hpp"
#include "tests/runtime/gguf/test_model.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

struct vector_case {
  std::string pre;
  bool parse_special = false;
  std::string text;
  std::vector<uint32_t> ids;
  std::optional<std::vector<std::string>> pieces;
  int line = 0;
};

std::string unhex(std::string_view h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
  return out;
}

std::vector<std::string> fields(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, sep))
    out.push_back(cur);
  if (!line.empty() && line.back() == sep)
    out.emplace_back();
  return out;
}

std::vector<vector_case> load_vectors() {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is not set (run through ctest)");
  std::ifstream in(std::string(src) + "/tests/runtime/tokenizer/data/smollm2_vectors.tsv");
  BOOST_REQUIRE(in);
  std::vector<vector_case> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#')
      continue;
    auto f = fields(line, '\t');
    BOOST_REQUIRE_MESSAGE(f.size() == 5, "line " << n);
    vector_case c{f[0], f[1] == "1", unhex(f[2]), {}, std::nullopt, n};
    std::istringstream ids(f[3]);
    for (uint32_t id; ids >> id;)
      c.ids.push_back(id);
    if (f[4] != "-") {
      c.pieces.emplace();
      if (!f[4].empty())
        for (const auto& p : fields(f[4], ','))
          c.pieces->push_back(unhex(p));
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::shared_ptr<const gguf::file> open_model() {
  auto f = gguf::file::open(*dynamo::testing::smollm2_path());
  BOOST_REQUIRE_MESSAGE(f, error_text(f));
  return *f;
}

std::shared_ptr<bpe_tokenizer> smollm2(pre_tokenizer pre = pre_tokenizer::smollm) {
  static auto file = open_model();
  auto v = read_bpe_vocab(*file);
  BOOST_REQUIRE_MESSAGE(v, error_text(v));
  v->pre = pre;
  auto t = bpe_tokenizer::create(std::move(*v));
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  return *t;
}

bool has_byte_token(const bpe_tokenizer& tk, unsigned char b) {
  std::string s;
  append_utf8(s, byte_to_codepoint(b));
  return tk.token_id(s).has_value();
}

// Random valid UTF-8 mixing ASCII, 2-, 3- and 4-byte characters and
// whitespace, using only characters whose bytes all have tokens.
std::string random_utf8(std::mt19937& rng, size_t n_chars, const bpe_tokenizer& tk) {
  std::string s;
  while (n_chars > 0) {
    char32_t cp = 0;
    switch (rng() % 6) {
      case 0: cp = 0x20 + rng() % 0x5F; break;
      case 1: cp = U" \n\t\r"[rng() % 4]; break;
      case 2: cp = 0x80 + rng() % (0x800 - 0x80); break;
      case 3: cp = 0x800 + rng() % (0xD800 - 0x800); break;
      case 4: cp = 0xE000 + rng() % (0x10000 - 0xE000); break;
      default: cp = 0x10000 + rng() % (0x110000 - 0x10000); break;
    }
    std::string c;
    append_utf8(c, cp);
    if (std::all_of(c.begin(), c.end(), [&](char b) { return has_byte_token(tk, static_cast<unsigned char>(b)); })) {
      s += c;
      --n_chars;
    }
  }
  return s;
}

} // namespace

BOOST_AUTO_TEST_SUITE(smollm2_tokenizer, *boost::unit_test::precondition(&dynamo::testing::model_available))

BOOST_AUTO_TEST_CASE(loads_with_the_model_card_settings) {
  auto file = open_model();
  auto t = load_tokenizer(*file);
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  auto* bpe = dynamic_cast<const bpe_tokenizer*>(t->get());
  BOOST_REQUIRE(bpe);
  auto& tk = *bpe;
  BOOST_TEST(tk.vocab_size() == 49152u);
  BOOST_TEST((tk.pre() == pre_tokenizer::smollm));
  BOOST_TEST(*tk.bos_id() == 1u);
  BOOST_TEST(*tk.eos_id() == 2u);
  BOOST_TEST(!tk.add_bos());
  BOOST_TEST(tk.bos_token_id() == -1);
  BOOST_TEST(tk.stop_token_ids() == (std::vector<uint32_t>{0, 2, 4}), boost::test_tools::per_element());
  BOOST_TEST(tk.token_text(1) == "<|im_start|>");
  BOOST_TEST((tk.type_of(1) == token_type::control));
  BOOST_TEST(*tk.token_id("Ċ") == 198u);
  BOOST_TEST(tk.token_bytes(198, false) == "\n");
}

BOOST_AUTO_TEST_CASE(reproduces_the_reference_vectors_for_every_pre_tokenizer) {
  const auto cases = load_vectors();
  BOOST_REQUIRE(cases.size() >= 300u);
  std::map<std::string, std::shared_ptr<bpe_tokenizer>> tks = {
      {"smollm", smollm2(pre_tokenizer::smollm)}, {"gpt2", smollm2(pre_tokenizer::gpt2)},
      {"llama-bpe", smollm2(pre_tokenizer::llama3)}, {"qwen2", smollm2(pre_tokenizer::qwen2)}};
  for (const auto& c : cases) {
    auto& tk = *tks.at(c.pre);
    BOOST_TEST_CONTEXT("vectors line " << c.line) {
      const auto ids = tk.encode(c.text, c.parse_special);
      BOOST_TEST(ids == c.ids, boost::test_tools::per_element());
      if (c.pieces) {
        std::vector<std::string> got;
        for (auto p : pre_tokenize(tk.pre(), c.text))
          got.emplace_back(p);
        BOOST_TEST(got == *c.pieces, boost::test_tools::per_element());
      }
      const bool all_bytes_have_tokens = std::all_of(
          c.text.begin(), c.text.end(), [&](char b) { return has_byte_token(tk, static_cast<unsigned char>(b)); });
      if (all_bytes_have_tokens)
        BOOST_TEST(tk.decode(ids, true) == c.text);
    }
  }
}

BOOST_AUTO_TEST_CASE(random_utf8_round_trips) {
  auto tk = smollm2();
  auto llama = smollm2(pre_tokenizer::llama3);
  std::mt19937 rng(20240607);
  int four_byte = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string s = random_utf8(rng, 1 + rng() % 60, *tk);
    four_byte += static_cast<int>(std::count_if(s.begin(), s.end(), [](char b) { return (b & 0xF8) == 0xF0; }));
    BOOST_TEST(tk->decode(tk->encode(s, false)) == s);
    BOOST_TEST(llama->decode(llama->encode(s, true), true) == s);
  }
  BOOST_TEST(four_byte > 100);
}

BOOST_AUTO_TEST_CASE(bytes_with_tokens_round_trip_and_the_21_without_are_dropped) {
  auto tk = smollm2();
  std::string all, kept;
  int missing = 0;
  for (int b = 0; b < 256; ++b) {
    all += static_cast<char>(b);
    if (has_byte_token(*tk, static_cast<unsigned char>(b)))
      kept += static_cast<char>(b);
    else
      ++missing;
  }
  BOOST_TEST(missing == 21); // e.g. 0x04, 0xC0, 0xF1 (checked against gguf-py in make_vectors.py)
  BOOST_TEST(!has_byte_token(*tk, 0xF1));
  BOOST_TEST(tk->decode(tk->encode(all + all, false)) == kept + kept);
}

BOOST_AUTO_TEST_CASE(streaming_detokenization_never_splits_a_character) {
  auto tk = smollm2();
  const std::string text = "Crab 🦀, café, 你好!";
  const auto ids = tk->encode(text, false);
  incremental_detokenizer dt(*tk);
  std::string joined;
  int empty_pieces = 0;
  for (auto id : ids) {
    std::string piece = dt.push(id);
    std::string check = piece;
    BOOST_TEST(utf8_complete_prefix(check) == piece.size()); // every piece is whole UTF-8
    empty_pieces += piece.empty();
    joined += piece;
  }
  joined += dt.flush();
  BOOST_TEST(joined == text);
  BOOST_TEST(empty_pieces > 0); // some tokens carry only part of a character
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(tokenizer_loader)

BOOST_AUTO_TEST_CASE(unsupported_models_are_named_with_the_supported_ones) {
  gguf::writer w;
  w.set_string("tokenizer.ggml.model", "bert");
  auto f = gguf::file::from_bytes(w.bytes());
  BOOST_REQUIRE(f);
  auto t = load_tokenizer(**f);
  BOOST_REQUIRE(!t);
  BOOST_TEST(code_of(t.error()) == errc::unsupported);
  BOOST_TEST(message_of(t.error()) ==
             "tokenizer model 'bert' is not supported (have gpt2 (byte-level BPE), llama (SentencePiece))");
}

BOOST_AUTO_TEST_CASE(unknown_pre_tokenizers_and_missing_keys_are_errors) {
  gguf::writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "no-such-pre");
  auto f = gguf::file::from_bytes(w.bytes());
  auto t = load_tokenizer(**f);
  BOOST_REQUIRE(!t);
  BOOST_TEST(code_of(t.error()) == errc::unsupported);
  BOOST_TEST(message_of(t.error()).find("pre-tokenizer 'no-such-pre' (tokenizer.ggml.pre) is not supported (have "
                                        "default, llama3, ") == 0);
  w.set_string("tokenizer.ggml.pre", "smollm");
  f = gguf::file::from_bytes(w.bytes());
  t = load_tokenizer(**f);
  BOOST_REQUIRE(!t);
  BOOST_TEST(code_of(t.error()) == errc::not_found);
  BOOST_TEST(message_of(t.error()).find("tokenizer.ggml.tokens") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_small_gguf_vocabulary_loads) {
  gguf::writer w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "llama-bpe");
  std::vector<std::string> toks = {"<|begin_of_text|>", "<|eot_id|>", "h", "i", "hi"};
  w.set_string_array("tokenizer.ggml.tokens", toks);
  const int32_t types[] = {3, 3, 1, 1, 1};
  w.set_i32_array("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", {"h i"});
  w.set_u32("tokenizer.ggml.bos_token_id", 0);
  w.set_i32("tokenizer.ggml.eos_token_id", -1); // "none"
  w.set_bool("tokenizer.ggml.add_bos_token", true);
  auto f = gguf::file::from_bytes(w.bytes());
  auto t = load_tokenizer(**f);
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  BOOST_TEST((*t)->bos_token_id() == 0);
  BOOST_TEST((*t)->appended_eos_id() == -1);
  BOOST_TEST((*t)->stop_token_ids() == (std::vector<uint32_t>{1}), boost::test_tools::per_element());
  BOOST_TEST((*t)->encode("<|begin_of_text|>hi", true) == (std::vector<uint32_t>{0, 4}),
             boost::test_tools::per_element());
  w.set_u32("tokenizer.ggml.eos_token_id", 77);
  f = gguf::file::from_bytes(w.bytes());
  t = load_tokenizer(**f);
  BOOST_REQUIRE(!t);
  BOOST_TEST(code_of(t.error()) == errc::corrupt_file);
}

BOOST_AUTO_TEST_SUITE_END()
