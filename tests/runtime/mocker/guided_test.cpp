// Guided decoding through the engine with the mocker: every choice (n > 1
// forks copy the grammar state) follows the grammar and ends with `stop` when
// the grammar is complete; output carried by a migrated request is replayed
// into the grammar; an engine without a grammar cache refuses guided requests.
#include "runtime/mocker/mock_executor.hpp"
#include "tests/runtime/engine/test_util.hpp"
#include "tests/runtime/mocker/mocker_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <regex>

using namespace dynamo;
using protocol::finish_reason;
using protocol::guided_kind;
using test::engine_of;
using test::iota_tokens;
using test::request;

namespace {

mocker::mocker_config roomy() {
  auto c = test::tiny(64);
  c.context_length = 256;
  return c;
}

/// Every choice's text (token ids < 256 are bytes) and how it ended.
std::map<uint32_t, std::pair<std::string, finish_reason>> run_text(engine::engine_core& core, std::string* error = nullptr) {
  std::map<uint32_t, std::pair<std::string, finish_reason>> out;
  while (core.has_work()) {
    auto r = core.step();
    BOOST_REQUIRE(r);
    for (const auto& o : r->outputs) {
      auto& [text, end] = out[o.output.index];
      BOOST_REQUIRE(end == finish_reason::none);
      for (uint32_t t : o.output.token_ids)
        if (t < 256) text += static_cast<char>(t);
      end = o.output.choice_end();
      if (error && !o.output.error.empty()) *error = o.output.error;
    }
  }
  return out;
}

protocol::preprocessed_request guided(std::string id, protocol::guided_decoding g, uint32_t n = 1) {
  auto r = request(std::move(id), iota_tokens(5, 40), 200);
  r.stop.stop_token_ids = {256};
  r.sampling.n = n;
  r.sampling.seed = 3;
  r.sampling.guided = std::move(g);
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mocker_guided)

BOOST_AUTO_TEST_CASE(every_choice_follows_the_schema) {
  auto core = engine_of(roomy());
  const char* schema = R"({"type":"object","properties":{"id":{"type":"integer"},"tag":{"enum":["x","y"]}},
                           "required":["id","tag"]})";
  BOOST_REQUIRE(core->add_request(guided("s", {guided_kind::json_schema, schema}, 3)));
  auto out = run_text(*core);
  BOOST_REQUIRE_EQUAL(out.size(), 3u);
  for (const auto& [choice, r] : out) {
    BOOST_TEST_CONTEXT("choice " << choice << ": " << r.first) {
      BOOST_TEST(r.second == finish_reason::stop);
      const auto j = nlohmann::json::parse(r.first, nullptr, false);
      BOOST_REQUIRE(!j.is_discarded());
      BOOST_TEST(j.size() == 2u);
      BOOST_TEST(j["id"].is_number_integer());
      BOOST_TEST((j["tag"] == "x" || j["tag"] == "y"));
    }
  }
}

BOOST_AUTO_TEST_CASE(regex_and_choice) {
  auto re_core = engine_of(roomy());
  BOOST_REQUIRE(re_core->add_request(guided("re", {guided_kind::regex, "[a-f]{3}-\\d{2}"})));
  auto re = run_text(*re_core);
  BOOST_TEST(std::regex_match(re[0].first, std::regex("[a-f]{3}-[0-9]{2}")), re[0].first);
  BOOST_TEST(re[0].second == finish_reason::stop);
  auto ch_core = engine_of(roomy());
  BOOST_REQUIRE(ch_core->add_request(guided("ch", {guided_kind::choice, R"(["north","south"])"})));
  auto ch = run_text(*ch_core);
  BOOST_TEST((ch[0].first == "north" || ch[0].first == "south"), ch[0].first);
  BOOST_TEST(ch[0].second == finish_reason::stop);
}

BOOST_AUTO_TEST_CASE(migrated_output_is_replayed_into_the_grammar) {
  auto core = engine_of(roomy());
  auto r = guided("m", {guided_kind::choice, R"(["north","south"])"});
  r.token_ids.push_back('s'); // generated before the migration
  r.token_ids.push_back('o');
  BOOST_REQUIRE(core->add_request(std::move(r)));
  auto out = run_text(*core);
  BOOST_TEST(out[0].first == "uth"); // only "south" can follow "so"
  BOOST_TEST(out[0].second == finish_reason::stop);

  auto bad = guided("b", {guided_kind::choice, R"(["north","south"])"});
  bad.token_ids.push_back('x');
  BOOST_REQUIRE(core->add_request(std::move(bad)));
  std::string error;
  auto failed = run_text(*core, &error);
  BOOST_TEST(failed[0].second == finish_reason::error);
  BOOST_TEST(error.find("does not follow the grammar") != std::string::npos, error);
}

BOOST_AUTO_TEST_CASE(invalid_grammar_or_no_cache_is_an_error_chunk) {
  auto core = engine_of(roomy());
  BOOST_REQUIRE(core->add_request(guided("bad", {guided_kind::regex, "(a"})));
  std::string error;
  auto out = run_text(*core, &error);
  BOOST_TEST(out[0].second == finish_reason::error);
  BOOST_TEST(error.find("regex") != std::string::npos, error);

  auto bare = engine::engine_core::create(std::make_unique<mocker::mock_executor>(roomy()));
  BOOST_REQUIRE(bare);
  BOOST_REQUIRE((*bare)->add_request(guided("g", {guided_kind::json_object, ""})));
  error.clear();
  out = run_text(**bare, &error);
  BOOST_TEST(out[0].second == finish_reason::error);
  BOOST_TEST(error.find("not available") != std::string::npos, error);
}

BOOST_AUTO_TEST_SUITE_END()
