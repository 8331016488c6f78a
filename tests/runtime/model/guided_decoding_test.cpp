// Guided decoding through the CPU engine: a random-weight model (whose
// unconstrained output is not JSON) decodes under a JSON Schema / regex /
// choice mask at temperature 1 with several seeds and n = 2, and every output
// parses and validates; the sampler's mask itself is checked exactly.
#include "runtime/engine/engine_core.hpp"
#include "runtime/grammar/guided.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/sampler.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <regex>

namespace dynamo::protocol {
inline std::ostream& boost_test_print_type(std::ostream& os, finish_reason r) { return os << to_string(r); }
} // namespace dynamo::protocol

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
using protocol::guided_kind;

namespace {

struct fixture {
  std::shared_ptr<const decoder_model> model;
  std::shared_ptr<tok::tokenizer> tokenizer;
  std::shared_ptr<gram::grammar_cache> grammars;
};

const fixture& shared() {
  static const fixture f = [] {
    auto file = make_random_model(test_model_options());
    BOOST_REQUIRE(file);
    auto tk = tok::load_tokenizer(**file);
    BOOST_REQUIRE_MESSAGE(tk, (tk ? "" : describe(tk.error())));
    auto vocab = gram::token_vocab::from_tokenizer(**tk);
    BOOST_REQUIRE(vocab);
    auto m = decoder_model::from_file(*file);
    BOOST_REQUIRE(m);
    return fixture{*m, *tk, std::make_shared<gram::grammar_cache>(*vocab)};
  }();
  return f;
}

/// Each choice's text (raw token bytes) and finish reason.
struct result {
  std::map<uint32_t, std::string> text;
  std::map<uint32_t, protocol::finish_reason> finish;
};

result generate(protocol::guided_decoding guided, uint64_t seed, uint32_t n, uint32_t max_tokens = 200) {
  const fixture& f = shared();
  cpu_executor_config cfg;
  cfg.block_size = 16;
  cfg.kv_cache_bytes = size_t(8) << 20;
  cfg.threads = 2;
  cfg.process_seed = 7;
  auto ex = cpu_executor::create(f.model, cfg);
  BOOST_REQUIRE(ex);
  engine::engine_config ec;
  ec.grammars = f.grammars;
  auto core = engine::engine_core::create(std::move(*ex), ec);
  BOOST_REQUIRE(core);
  protocol::preprocessed_request r;
  r.request_id = "r";
  r.token_ids = f.tokenizer->encode("Reply in JSON:", false);
  r.prompt_tokens = static_cast<uint32_t>(r.token_ids.size());
  r.stop.max_tokens = max_tokens;
  r.stop.stop_token_ids = f.tokenizer->stop_token_ids();
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.sampling.n = n;
  r.sampling.guided = std::move(guided);
  BOOST_REQUIRE((*core)->add_request(std::move(r)));
  result out;
  for (int step = 0; step < 1000 && (*core)->has_work(); ++step) {
    auto s = (*core)->step();
    BOOST_REQUIRE(s);
    for (const auto& o : s->outputs) {
      BOOST_REQUIRE_MESSAGE(o.output.finish != protocol::finish_reason::error, o.output.error);
      for (uint32_t t : o.output.token_ids) out.text[o.output.index] += f.tokenizer->token_bytes(t, false);
      if (o.output.choice_end() != protocol::finish_reason::none) out.finish[o.output.index] = o.output.choice_end();
    }
  }
  BOOST_REQUIRE(!(*core)->has_work());
  return out;
}

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

/// The schema below, checked by hand.
bool valid_person(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("name") || !j.contains("age")) return false;
  for (const auto& [k, v] : j.items()) {
    if (k == "name") {
      if (!v.is_string() || code_points(v.get<std::string>()) > 8) return false;
    } else if (k == "age") {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 150) return false;
    } else if (k == "tags") {
      if (!v.is_array() || v.size() > 3) return false;
      for (const auto& t : v)
        if (t != "a" && t != "b") return false;
    } else if (k == "ok") {
      if (!v.is_boolean()) return false;
    } else {
      return false;
    }
  }
  return true;
}

const char* person_schema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":8},
  "age":{"type":"integer","minimum":0,"maximum":150},
  "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3},
  "ok":{"type":"boolean"}},"required":["name","age"]})";

} // namespace

BOOST_AUTO_TEST_SUITE(guided_decoding_cpu)

BOOST_AUTO_TEST_CASE(unconstrained_output_is_not_json) {
  // What the mask fixes: the random model's own output does not parse.
  auto r = generate({}, 1, 1, 40);
  BOOST_TEST(nlohmann::json::parse(r.text[0], nullptr, false).is_discarded(), r.text[0]);
}

BOOST_AUTO_TEST_CASE(json_schema_outputs_parse_and_validate) {
  int outputs = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    auto r = generate({guided_kind::json_schema, person_schema}, seed, 2);
    BOOST_REQUIRE_EQUAL(r.text.size(), 2u);
    for (const auto& [choice, text] : r.text) {
      BOOST_TEST_CONTEXT("seed " << seed << " choice " << choice << ": " << text) {
        BOOST_TEST(r.finish[choice] == protocol::finish_reason::stop);
        const auto j = nlohmann::json::parse(text, nullptr, false);
        BOOST_TEST(!j.is_discarded());
        BOOST_TEST(valid_person(j));
        ++outputs;
      }
    }
  }
  BOOST_TEST(outputs == 12);
}

BOOST_AUTO_TEST_CASE(json_object_regex_and_choice_outputs_match) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    BOOST_TEST_CONTEXT("seed " << seed) {
      auto re = generate({guided_kind::regex, "[A-Z][a-z]{1,5}-[0-9]{2,3}"}, seed, 1);
      BOOST_TEST(std::regex_match(re.text[0], std::regex("[A-Z][a-z]{1,5}-[0-9]{2,3}")), re.text[0]);
      BOOST_TEST(re.finish[0] == protocol::finish_reason::stop);
      auto ch = generate({guided_kind::choice, R"(["alpha","beta","gamma delta"])"}, seed, 1);
      BOOST_TEST((ch.text[0] == "alpha" || ch.text[0] == "beta" || ch.text[0] == "gamma delta"), ch.text[0]);
      BOOST_TEST(ch.finish[0] == protocol::finish_reason::stop);
      auto obj = generate({guided_kind::json_object, ""}, seed, 1, 120);
      if (obj.finish[0] == protocol::finish_reason::stop) { // any object may be longer than max_tokens
        const auto j = nlohmann::json::parse(obj.text[0], nullptr, false);
        BOOST_TEST((!j.is_discarded() && j.is_object()), obj.text[0]);
      } else {
        BOOST_TEST(obj.text[0].front() == '{');
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(sampler_masks_exactly_the_cleared_bits) {
  sampler s(3);
  std::vector<float> logits(130, 0.0f);
  logits[5] = 10.0f; // the favourite, masked out
  logits[70] = 1.0f;
  std::vector<uint64_t> mask(2, 0); // covers ids 0..127; 128, 129 are past it
  mask[1] = uint64_t{1} << (70 - 64) | uint64_t{1} << (100 - 64);
  protocol::sampling_options o;
  o.temperature = 0.0f;
  o.logprobs = 3;
  auto r = s.sample(logits, o, {}, 1, 1, mask);
  BOOST_TEST(r.token == 70u);
  BOOST_REQUIRE(r.logprobs);
  BOOST_REQUIRE_EQUAL(r.logprobs->top.size(), 3u);
  BOOST_TEST(r.logprobs->top[0].token == 70u);
  BOOST_TEST(r.logprobs->top[1].token == 100u);
  BOOST_TEST(std::isinf(r.logprobs->top[2].logprob)); // everything else is -inf
  o.temperature = 1.5f;
  for (uint32_t pos = 0; pos < 50; ++pos) {
    const uint32_t t = s.sample(logits, o, {}, 1, pos, mask).token;
    BOOST_TEST((t == 70u || t == 100u));
  }
}

BOOST_AUTO_TEST_SUITE_END()
