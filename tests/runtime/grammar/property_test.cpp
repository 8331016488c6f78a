// Property test on the real SmolLM2 vocabulary: >= 200 generated JSON Schemas,
// regexes and choice lists, each driven by random allowed tokens until the
// grammar ends; every output is then checked by an independent validator
// (validate_outputs.py: Python json + jsonschema, re.fullmatch). Also checks
// the cached mask against accepting every token one by one on a few states.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/matcher.hpp"
#include "runtime/grammar/regex.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "tests/runtime/gguf/test_model.hpp"
#include "tests/runtime/grammar/schema_gen.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace dynamo;
using namespace dynamo::gram;
using json = nlohmann::ordered_json;

namespace {

std::shared_ptr<const token_vocab> smollm2_vocab() {
  static const auto v = [] {
    auto f = gguf::file::open(*dynamo::testing::smollm2_path());
    BOOST_REQUIRE(f);
    auto t = tok::load_tokenizer(**f);
    BOOST_REQUIRE(t);
    auto v = token_vocab::from_tokenizer(**t);
    BOOST_REQUIRE(v);
    return *v;
  }();
  return v;
}

std::string python() {
  const char* p = std::getenv("DYNAMO_PYTHON");
  return p != nullptr && *p ? p : "python3";
}

boost::test_tools::assertion_result jsonschema_available(boost::unit_test::test_unit_id id) {
  auto model = dynamo::testing::model_available(id);
  if (!model) return model;
  const std::string cmd = python() + " -c 'import jsonschema' > /dev/null 2>&1";
  boost::test_tools::assertion_result r(std::system(cmd.c_str()) == 0);
  if (!r) r.message() << "python3 with the jsonschema package is not available (pip install jsonschema)";
  return r;
}

bool has_any(std::string_view s, std::string_view chars) { return s.find_first_of(chars) != std::string_view::npos; }

/// Random allowed tokens until EOS. After `budget` tokens it prefers tokens
/// that close things ('}' ']', then '"', then separators such as '@' '.'),
/// and EOS whenever allowed.
std::string random_output(const std::shared_ptr<const compiled_grammar>& g, std::mt19937& rng, uint32_t budget) {
  const token_vocab& v = g->vocab();
  matcher m(g);
  std::vector<uint64_t> mask(m.mask_words());
  std::string out;
  for (uint32_t step = 0; step < 600; ++step) {
    m.fill_next_token_bitmask(mask);
    std::vector<uint32_t> allowed, closing, quoting, punct;
    bool eos = false;
    for (size_t w = 0; w < mask.size(); ++w) {
      for (uint64_t bits = mask[w]; bits; bits &= bits - 1) {
        const auto id = static_cast<uint32_t>(w * 64 + size_t(__builtin_ctzll(bits)));
        if (v.is_eos(id)) {
          eos = true;
          continue;
        }
        allowed.push_back(id);
        if (step >= budget && has_any(v.bytes(id), "}]")) closing.push_back(id);
        if (step >= budget && has_any(v.bytes(id), "\"")) quoting.push_back(id);
        if (step >= budget && has_any(v.bytes(id), "@.:-#!$")) punct.push_back(id);
      }
    }
    if (eos && (allowed.empty() || step >= budget || rng() % 8 == 0)) {
      BOOST_REQUIRE(m.accept_token(v.eos()[0]));
      return out;
    }
    BOOST_REQUIRE_MESSAGE(!allowed.empty(), "dead end after " << out);
    const std::vector<uint32_t>& from = !closing.empty() && rng() % 4   ? closing
                                        : !quoting.empty() && rng() % 2 ? quoting
                                        : !punct.empty() && rng() % 2   ? punct
                                                                        : allowed;
    const uint32_t id = from[rng() % from.size()];
    auto ok = m.accept_token(id);
    BOOST_REQUIRE_MESSAGE(ok, "a token from the mask was refused: " << (ok ? "" : describe(ok.error())));
    out += v.bytes(id);
  }
  BOOST_FAIL("no end after 600 tokens: " << out);
  return out;
}

/// The mask equals "accept_token succeeds" for every token (on copies).
void check_mask_exact(const std::shared_ptr<const compiled_grammar>& g, std::mt19937& rng, int steps) {
  const token_vocab& v = g->vocab();
  matcher m(g);
  std::vector<uint64_t> mask(m.mask_words());
  for (int s = 0; s < steps; ++s) {
    m.fill_next_token_bitmask(mask);
    std::vector<uint32_t> allowed;
    for (uint32_t id = 0; id < v.size(); ++id) {
      matcher copy = m;
      const bool ok = static_cast<bool>(copy.accept_token(id));
      const bool bit = (mask[id >> 6] >> (id & 63)) & 1;
      BOOST_CHECK_MESSAGE(ok == bit, "token " << id << " '" << v.bytes(id) << "' mask " << bit << " accept " << ok);
      if (ok && !v.is_eos(id)) allowed.push_back(id);
    }
    if (allowed.empty()) return;
    BOOST_REQUIRE(m.accept_token(allowed[rng() % allowed.size()]));
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(grammar_property)

BOOST_AUTO_TEST_CASE(generated_schemas_regexes_and_choices_validate,
                     *boost::unit_test::precondition(&jsonschema_available)) {
  const auto vocab = smollm2_vocab();
  std::mt19937 rng(20240614);
  dynamo::gram::testing::schema_gen gen(7);
  const auto dir = std::filesystem::temp_directory_path() / ("dynamo_grammar_prop_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / "outputs.jsonl";
  std::ofstream out(path);
  int schemas = 0;
  for (int i = 0; i < 220; ++i) {
    const json schema = gen.make(i);
    const std::string text = schema.dump();
    auto g = json_schema_grammar(text);
    BOOST_REQUIRE_MESSAGE(g, "schema " << i << ": " << (g ? "" : describe(g.error())) << "\n" << text);
    auto c = compiled_grammar::compile(*g, vocab);
    BOOST_REQUIRE_MESSAGE(c, "schema " << i << ": " << (c ? "" : describe(c.error())));
    const std::string o = random_output(*c, rng, 24 + rng() % 40);
    out << json{{"kind", "schema"}, {"schema", schema}, {"output", o}}.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    ++schemas;
  }
  const std::vector<std::string> patterns = {"[a-z]{3,8}", "(yes|no|maybe)", "\\d{1,3}(\\.\\d{1,3}){3}",
                                             "[A-Z][a-z]+ [A-Z][a-z]+", "\\w+@\\w+\\.com", "#[0-9a-fA-F]{6}",
                                             "[^\\n]{0,12}!", "(ab|cd)*e?", "\xC3\xA9+\\s?[\xE2\x82\xAC$]"};
  for (int i = 0; i < 60; ++i) {
    const std::string& p = patterns[size_t(i) % patterns.size()];
    auto c = compiled_grammar::compile(*regex_grammar(p), vocab);
    BOOST_REQUIRE(c);
    out << json{{"kind", "regex"}, {"pattern", p}, {"output", random_output(*c, rng, 4 + rng() % 12)}}.dump() << "\n";
  }
  const std::vector<std::string> choices = {"positive", "negative", "neutral", "pos", "n/a \"quoted\""};
  for (int i = 0; i < 20; ++i) {
    auto c = compiled_grammar::compile(*choice_grammar(choices), vocab);
    BOOST_REQUIRE(c);
    out << json{{"kind", "choice"}, {"choices", choices}, {"output", random_output(*c, rng, 2)}}.dump() << "\n";
  }
  out.close();
  BOOST_TEST_MESSAGE(schemas << " schemas, 60 regexes, 20 choice lists generated into " << path.string());
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  const std::string cmd = python() + " " + (src ? std::string(src) : std::string(".")) +
                          "/tests/runtime/grammar/validate_outputs.py " + path.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::string report;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) report += buf;
  const int rc = pclose(p);
  BOOST_TEST_MESSAGE(report);
  BOOST_CHECK_MESSAGE(rc == 0, "validation failed:\n" << report);
  BOOST_CHECK(report.find("validated 300 outputs, 0 invalid") != std::string::npos);
  if (rc == 0 && std::getenv("DYNAMO_GRAMMAR_KEEP") == nullptr) std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(cached_mask_equals_token_by_token_acceptance,
                     *boost::unit_test::precondition(&dynamo::testing::model_available)) {
  const auto vocab = smollm2_vocab();
  std::mt19937 rng(99);
  const std::vector<std::string> schemas = {
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},"n":{"type":"integer","minimum":-5,"maximum":50},
          "tags":{"type":"array","items":{"enum":["a","b c"]}}},"required":["name"]})",
      R"({"$defs":{"t":{"type":"object","properties":{"k":{"anyOf":[{"$ref":"#/$defs/t"},{"type":"number"}]}}}},"$ref":"#/$defs/t"})"};
  for (const std::string& s : schemas) check_mask_exact(*compiled_grammar::compile(*json_schema_grammar(s), vocab), rng, 20);
  check_mask_exact(*compiled_grammar::compile(json_object_grammar(), vocab), rng, 20);
  dynamo::gram::testing::schema_gen gen(11);
  for (int i = 0; i < 10; ++i)
    check_mask_exact(*compiled_grammar::compile(*json_schema_grammar(gen.make(i).dump()), vocab), rng, 8);
}

BOOST_AUTO_TEST_SUITE_END()
