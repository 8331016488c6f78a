// llama.cpp's own tokenizer test vectors: the vocabulary-only GGUF files
// models/ggml-vocab-*.gguf with their .inp/.out cases (fetched by
// scripts/setup.sh into ~/.cache/dynamo/llama.cpp-vocab, or
// $DYNAMO_LLAMA_VOCAB_DIR). Every case must match exactly, encoded as
// llama.cpp's tests/test-tokenizer-0.cpp does: no BOS/EOS added, special
// token texts not parsed. Decoding round-trips where llama.cpp's
// test-tokenizer-1 checks it. Skipped with a message when the files are absent.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "runtime/tokenizer/unicode.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

namespace fs = std::filesystem;

std::optional<fs::path> vocab_dir() {
  std::vector<fs::path> candidates;
  if (const char* d = std::getenv("DYNAMO_LLAMA_VOCAB_DIR"); d && *d)
    candidates.emplace_back(d);
  if (const char* home = std::getenv("HOME"); home && *home)
    candidates.push_back(fs::path(home) / ".cache/dynamo/llama.cpp-vocab");
  for (const auto& c : candidates)
    if (fs::is_regular_file(c / "ggml-vocab-llama-spm.gguf.out"))
      return c;
  return std::nullopt;
}

boost::test_tools::assertion_result vocab_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(vocab_dir().has_value());
  if (!r)
    r.message() << "llama.cpp's ggml-vocab-*.gguf test files not found: run scripts/setup.sh (puts them in "
                   "~/.cache/dynamo/llama.cpp-vocab) or set DYNAMO_LLAMA_VOCAB_DIR";
  return r;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot open " << p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string strip(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n\r\v\f");
  if (b == std::string::npos)
    return {};
  return s.substr(b, s.find_last_not_of(" \t\n\r\v\f") + 1 - b);
}

// test-tokenizer-0's read_tests: inputs separated by "\n__ggml_vocab_test__\n",
// one line of space-separated ids per input; a repeated input keeps its last ids.
std::map<std::string, std::vector<uint32_t>> read_cases(const fs::path& gguf) {
  const std::string inp = read_file(gguf.string() + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      texts.push_back(inp.substr(pos));
      break;
    }
    texts.push_back(inp.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::istringstream out(read_file(gguf.string() + ".out"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(out, line);)
    lines.push_back(line);
  BOOST_REQUIRE_EQUAL(texts.size(), lines.size());
  std::map<std::string, std::vector<uint32_t>> cases;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<uint32_t> ids;
    std::istringstream s(strip(lines[i]));
    for (uint32_t id; s >> id;)
      ids.push_back(id);
    cases[texts[i]] = std::move(ids);
  }
  return cases;
}

struct loaded {
  std::shared_ptr<const gguf::file> file;
  std::shared_ptr<tokenizer> tk;
};

loaded load(const std::string& name) {
  const fs::path path = *vocab_dir() / ("ggml-vocab-" + name + ".gguf");
  auto f = gguf::file::open(path.string());
  BOOST_REQUIRE_MESSAGE(f, error_text(f));
  auto t = load_tokenizer(**f);
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  return {*f, *t};
}

void check_vectors(const std::string& name) {
  const auto v = load(name);
  const auto cases = read_cases(*vocab_dir() / ("ggml-vocab-" + name + ".gguf"));
  BOOST_REQUIRE_GE(cases.size(), 20u);
  size_t passed = 0;
  for (const auto& [text, want] : cases) {
    const auto got = v.tk->encode(text, /*parse_special=*/false);
    BOOST_TEST_CONTEXT(name << " input '" << text << "'") {
      BOOST_TEST(got == want, boost::test_tools::per_element());
    }
    passed += got == want;
  }
  BOOST_TEST_MESSAGE(name << ": " << passed << "/" << cases.size() << " vectors match");
}

// test-tokenizer-1-spm: every token decodes to text that encodes (special
// texts parsed) to tokens decoding to the same text; every code point
// (surrogates and U+40000..U+E0000 aside) round-trips, U+2581 excepted.
void check_round_trips(const std::string& name, char32_t stride) {
  const auto v = load(name);
  size_t failures = 0;
  for (uint32_t id = 0; id < v.tk->vocab_size() && failures < 10; ++id) {
    const uint32_t one[] = {id};
    const std::string s = v.tk->decode(one, true);
    const std::string back = v.tk->decode(v.tk->encode(s, true), true);
    if (back != s) {
      ++failures;
      BOOST_ERROR(name << ": token " << id << " decodes to '" << s << "' but re-encoding gives '" << back << "'");
    }
  }
  for (char32_t cp = 0; cp < 0x110000 && failures < 10; cp += stride) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || (cp >= 0x40000 && cp <= 0xE0000) || cp == 0x2581)
      continue;
    std::string s;
    append_utf8(s, cp);
    const std::string back = v.tk->decode(v.tk->encode(s, true), true);
    if (back != s) {
      ++failures;
      BOOST_ERROR(name << ": code point U+" << std::hex << static_cast<uint32_t>(cp) << std::dec
                       << " decodes back as '" << back << "'");
    }
  }
  BOOST_TEST(failures == 0u);
}

} // namespace

BOOST_AUTO_TEST_SUITE(llama_vocab, *boost::unit_test::precondition(&vocab_available))

BOOST_AUTO_TEST_CASE(llama_spm) { check_vectors("llama-spm"); }
BOOST_AUTO_TEST_CASE(phi_3) { check_vectors("phi-3"); }
BOOST_AUTO_TEST_CASE(llama_bpe) { check_vectors("llama-bpe"); }
BOOST_AUTO_TEST_CASE(qwen2) { check_vectors("qwen2"); }
BOOST_AUTO_TEST_CASE(qwen35) { check_vectors("qwen35"); }
BOOST_AUTO_TEST_CASE(gpt_2) { check_vectors("gpt-2"); }
BOOST_AUTO_TEST_CASE(starcoder) { check_vectors("starcoder"); }
BOOST_AUTO_TEST_CASE(refact) { check_vectors("refact"); }
BOOST_AUTO_TEST_CASE(deepseek_llm) { check_vectors("deepseek-llm"); }
BOOST_AUTO_TEST_CASE(deepseek_coder) { check_vectors("deepseek-coder"); }
BOOST_AUTO_TEST_CASE(falcon) { check_vectors("falcon"); }
BOOST_AUTO_TEST_CASE(mpt) { check_vectors("mpt"); }
BOOST_AUTO_TEST_CASE(command_r) { check_vectors("command-r"); }

// What llama.cpp's loader derives for each family: the end-of-generation set
// (EOS, end-of-turn texts, FIM pad) and whether prompts get a BOS.
BOOST_AUTO_TEST_CASE(stop_tokens_and_bos_per_family) {
  struct expect {
    std::string name;
    std::vector<uint32_t> stops;
    int64_t bos;
  };
  const expect cases[] = {
      {"llama-spm", {2}, 1},                    // </s>; SentencePiece adds <s>
      {"phi-3", {2, 32000, 32007}, 1},          // </s>, <|endoftext|>, <|end|>
      {"llama-bpe", {128001, 128009}, 128000},  // <|end_of_text|>, <|eot_id|>; llama-bpe adds BOS
      {"qwen2", {128247, 151643, 151645}, -1},  // a normal "</s>" too (llama.cpp's list), <|endoftext|>, <|im_end|>
      {"gpt-2", {50256}, -1},                   // <|endoftext|>
      {"starcoder", {0, 4}, -1},                // <|endoftext|>, <fim_pad>
      {"command-r", {0, 255001}, 5},            // <PAD> (a FIM pad text), <|END_OF_TURN_TOKEN|>; add_bos_token
      {"deepseek-coder", {32014}, 32013},       // <｜end▁of▁sentence｜>; add_bos_token = true
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      const auto v = load(c.name);
      BOOST_TEST(v.tk->stop_token_ids() == c.stops, boost::test_tools::per_element());
      BOOST_TEST(v.tk->bos_token_id() == c.bos);
      BOOST_TEST(v.tk->appended_eos_id() == -1);
    }
  }
}

BOOST_AUTO_TEST_CASE(unsupported_models_are_refused_by_name) {
  for (const std::string name : {"bert-bge", "gemma-4"}) {
    auto f = gguf::file::open((*vocab_dir() / ("ggml-vocab-" + name + ".gguf")).string());
    BOOST_REQUIRE_MESSAGE(f, error_text(f));
    auto t = load_tokenizer(**f);
    BOOST_REQUIRE(!t);
    BOOST_TEST(code_of(t.error()) == errc::unsupported);
    BOOST_TEST(message_of(t.error()).find("(have gpt2 (byte-level BPE), llama (SentencePiece))") !=
               std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(sentencepiece_round_trips) {
  check_round_trips("llama-spm", 1);
  check_round_trips("phi-3", 1);
}

BOOST_AUTO_TEST_SUITE_END()
