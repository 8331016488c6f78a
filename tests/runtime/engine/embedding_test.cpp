// Embed requests (preprocessed_request::embed) through engine_core: scheduled
// like any prompt, answered by one chunk with the executor's hidden state of
// the last prompt token, refused where they cannot run.
#include "runtime/engine/engine_core.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using engine::engine_core;
using protocol::finish_reason;
using test::iota_tokens;
using test::drain;
using test::request;

namespace {

// Samples 1000 + position; an embed entry's "hidden state" is {last token,
// its position, entries in the batch}, or nothing when `answer` is false.
class embedding_executor final : public engine::executor {
public:
  explicit embedding_executor(bool computes = true, bool answer = true) : computes_(computes), answer_(answer) {}
  expected<engine::batch_result> execute(const engine::batch& b) override {
    engine::batch_result r;
    for (size_t i = 0; i < b.entries.size(); ++i) {
      const auto& e = b.entries[i];
      r.sampled.push_back(e.sample ? std::optional<uint32_t>{1000 + e.sample_position} : std::nullopt);
      embeds.push_back(e.embed);
      if (e.embed && answer_) {
        r.embeddings.resize(b.entries.size());
        r.embeddings[i] = {float(e.tokens.back()), float(e.start_pos + e.tokens.size() - 1),
                           float(b.entries.size())};
      }
    }
    return r;
  }
  engine::kv_geometry geometry() const noexcept override { return {4, 32}; }
  uint32_t context_length() const noexcept override { return 64; }
  std::string name() const override { return "fake"; }
  bool computes_embeddings() const noexcept override { return computes_; }

  std::vector<bool> embeds; ///< every entry's embed flag, in execution order

private:
  bool computes_, answer_;
};

protocol::preprocessed_request embed_request(std::string id, std::vector<uint32_t> prompt) {
  auto r = request(std::move(id), std::move(prompt), 0); // max_tokens is ignored
  r.embed = true;
  return r;
}

std::unique_ptr<engine_core> make_core(std::unique_ptr<embedding_executor> ex) {
  return test::chunking_core(std::move(ex), 16); // a 40-token prompt takes three chunks
}

} // namespace

BOOST_AUTO_TEST_SUITE(embedding_suite)

BOOST_AUTO_TEST_CASE(an_embed_request_answers_one_chunk_with_its_last_tokens_hidden_state) {
  auto ex = std::make_unique<embedding_executor>();
  auto* seen = ex.get();
  auto core = make_core(std::move(ex));
  BOOST_REQUIRE(core->add_request(embed_request("e", iota_tokens(40, 1))));
  auto out = drain(*core);
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  const auto& o = out[0].output;
  BOOST_TEST(o.finish == finish_reason::stop);
  BOOST_TEST(o.token_ids.empty());
  BOOST_TEST(o.embedding == (std::vector<float>{40.0f, 39.0f, 1.0f}), boost::test_tools::per_element());
  BOOST_TEST(o.cached_tokens == 0u);
  // Three chunks; only the one that computes the last token embeds.
  BOOST_TEST(seen->embeds == (std::vector<bool>{false, false, true}), boost::test_tools::per_element());
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == 0u);
}

BOOST_AUTO_TEST_CASE(a_cached_prompt_recomputes_its_last_token_and_reports_the_hit) {
  auto core = make_core(std::make_unique<embedding_executor>());
  BOOST_REQUIRE(core->add_request(embed_request("a", iota_tokens(20, 1))));
  (void)drain(*core);
  BOOST_REQUIRE(core->add_request(embed_request("b", iota_tokens(20, 1))));
  auto out = drain(*core);
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0].output.cached_tokens == 16u); // 4 full blocks; the last block is recomputed
  BOOST_TEST(out[0].output.embedding == (std::vector<float>{20.0f, 19.0f, 1.0f}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(embed_and_generation_requests_share_a_batch) {
  auto core = make_core(std::make_unique<embedding_executor>());
  BOOST_REQUIRE(core->add_request(request("g", iota_tokens(3, 100), 2)));
  BOOST_REQUIRE(core->add_request(embed_request("e", iota_tokens(5, 1))));
  std::map<std::string, std::vector<engine::request_output>> by_id;
  for (auto& o : drain(*core))
    by_id[o.request_id].push_back(std::move(o));
  BOOST_REQUIRE_EQUAL(by_id["e"].size(), 1u);
  BOOST_TEST(by_id["e"][0].output.embedding == (std::vector<float>{5.0f, 4.0f, 2.0f}), boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(by_id["g"].size(), 2u);
  BOOST_TEST(by_id["g"][1].output.finish == finish_reason::length);
  BOOST_TEST(by_id["g"][0].output.embedding.empty());
}

BOOST_AUTO_TEST_CASE(embed_requests_are_refused_where_they_cannot_run) {
  auto expect_error = [](std::unique_ptr<embedding_executor> ex, protocol::preprocessed_request r,
                         const std::string& words) {
    auto core = make_core(std::move(ex));
    BOOST_REQUIRE(core->add_request(std::move(r)));
    auto out = drain(*core);
    BOOST_REQUIRE_EQUAL(out.size(), 1u);
    BOOST_TEST(out[0].output.finish == finish_reason::error);
    BOOST_TEST(out[0].output.error.find(words) != std::string::npos, out[0].output.error);
  };
  expect_error(std::make_unique<embedding_executor>(false), embed_request("x", {1, 2}),
               "fake executor does not compute embeddings");
  auto two = embed_request("x", {1, 2});
  two.sampling.n = 2;
  expect_error(std::make_unique<embedding_executor>(), two, "one choice");
  auto guided = embed_request("x", {1, 2});
  guided.sampling.guided.kind = protocol::guided_kind::json_object;
  expect_error(std::make_unique<embedding_executor>(), guided, "no grammar");
  expect_error(std::make_unique<embedding_executor>(true, false), embed_request("x", {1, 2}), "no embedding");
}

BOOST_AUTO_TEST_SUITE_END()
