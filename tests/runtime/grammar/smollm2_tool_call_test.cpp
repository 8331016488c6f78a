// Issue 14, part 1: with the tool-call grammar's mask applied to its logits
// (greedy), the 135M default model writes a call that parses and matches the
// function's parameter schema. The mask is applied here by hand (argmax over
// allowed ids) because wiring it into the sampler is the API layer's job.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/matcher.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/decoder_forward.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"
#include "tests/runtime/gguf/test_model.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <limits>

using namespace dynamo;

namespace {

struct lm {
  std::shared_ptr<const model::decoder_model> m;
  std::unique_ptr<model::cpu_executor> ex;
  std::shared_ptr<tok::tokenizer> t;
};

lm load() {
  lm out;
  const std::string path = *dynamo::testing::smollm2_path();
  auto m = model::decoder_model::load(path);
  BOOST_REQUIRE(m);
  out.m = *m;
  model::cpu_executor_config cfg;
  cfg.num_blocks = 32;
  auto ex = model::cpu_executor::create(out.m, cfg);
  BOOST_REQUIRE(ex);
  out.ex = std::move(*ex);
  auto f = gguf::file::open(path);
  BOOST_REQUIRE(f);
  auto t = tok::load_tokenizer(**f);
  BOOST_REQUIRE(t);
  out.t = *t;
  return out;
}

/// Greedy decoding of `prompt`; with `g`, only tokens its mask allows.
std::string generate(lm& l, const std::string& prompt, const std::shared_ptr<const gram::compiled_grammar>& g,
                     uint32_t max_tokens) {
  kernels::ref::thread_pool pool(2);
  model::decoder_forward fwd(l.m, pool);
  std::vector<uint32_t> ids = l.t->encode_prompt(prompt, true);
  std::unique_ptr<gram::matcher> m;
  std::vector<uint64_t> mask;
  if (g) m = std::make_unique<gram::matcher>(g), mask.resize(m->mask_words());
  const auto stops = l.t->stop_token_ids();
  std::string out;
  uint32_t pos = 0;
  std::vector<uint32_t> feed = ids;
  for (uint32_t step = 0; step < max_tokens; ++step) {
    engine::batch b;
    engine::batch_entry e;
    e.tokens = feed;
    e.start_pos = pos;
    for (uint32_t i = 0; i < 32; ++i) e.block_table.push_back(i);
    e.sample = true;
    b.entries = {e};
    b.num_tokens = static_cast<uint32_t>(feed.size());
    auto r = fwd.run(b, l.ex->cache());
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
    const auto logits = r->row(0);
    if (m) m->fill_next_token_bitmask(mask);
    uint32_t best = 0;
    float best_v = -std::numeric_limits<float>::infinity();
    for (uint32_t id = 0; id < logits.size(); ++id) {
      if (m && (id >= l.t->vocab_size() || !((mask[id >> 6] >> (id & 63)) & 1))) continue;
      if (logits[id] > best_v) best_v = logits[id], best = id;
    }
    pos += static_cast<uint32_t>(feed.size());
    if (m) BOOST_REQUIRE(m->accept_token(best));
    if (std::find(stops.begin(), stops.end(), best) != stops.end()) break;
    out += l.t->token_bytes(best, false);
    feed = {best};
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(smollm2_emits_a_valid_tool_call_under_the_mask,
                     *boost::unit_test::precondition(&dynamo::testing::model_available)) {
  lm l = load();
  const std::vector<gram::tool_function> fns = {
      {"get_weather", R"({"type":"object","properties":{"city":{"type":"string","maxLength":40},
                         "unit":{"enum":["celsius","fahrenheit"]}},"required":["city","unit"]})"},
      {"get_time", R"({"type":"object","properties":{"timezone":{"type":"string","maxLength":40}},"required":["timezone"]})"}};
  const std::string prompt =
      "<|im_start|>system\nYou can call these functions: get_weather(city, unit), get_time(timezone). Answer with a "
      "JSON function call.<|im_end|>\n<|im_start|>user\nWhat is the weather like in Paris today?<|im_end|>\n"
      "<|im_start|>assistant\n";
  auto g = gram::tool_call_grammar(fns, false);
  BOOST_REQUIRE(g);
  auto vocab = gram::token_vocab::from_tokenizer(*l.t);
  BOOST_REQUIRE(vocab);
  auto cg = gram::compiled_grammar::compile(*g, *vocab);
  BOOST_REQUIRE(cg);
  const std::string free = generate(l, prompt, nullptr, 40);
  BOOST_TEST_MESSAGE("unconstrained: " << free);
  const std::string call = generate(l, prompt, *cg, 120);
  BOOST_TEST_MESSAGE("constrained:   " << call);
  const auto j = nlohmann::json::parse(call, nullptr, false);
  BOOST_REQUIRE_MESSAGE(!j.is_discarded(), "not JSON: " << call);
  BOOST_REQUIRE(j.is_object() && j.size() == 2 && j.contains("name") && j.contains("arguments"));
  const auto& args = j["arguments"];
  if (j["name"] == "get_weather") {
    BOOST_CHECK(args.size() == 2 && args["city"].is_string() && args["city"].get<std::string>().size() <= 40 * 4);
    BOOST_CHECK(args["unit"] == "celsius" || args["unit"] == "fahrenheit");
  } else {
    BOOST_CHECK_EQUAL(j["name"], "get_time");
    BOOST_CHECK(args.size() == 1 && args["timezone"].is_string());
  }
}
