// Prompt logprobs (sampling.prompt_logprobs) through engine_core: the
// scheduler asks for the next prompt token of every prompt position (across
// chunks), bypasses the prefix cache for such requests, gathers what the
// executor returns and sends it with the first chunk; refused where it
// cannot run.
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

/// The fake's logprob of `target` at prompt position `pos` (>= 1).
float fake_logprob(uint32_t target, uint32_t pos) { return -float(pos) - float(target) / 1000.0f; }

// Samples 1000 + position; answers each prompt target with fake_logprob
// (unless `answer` is false), one alternative per requested k.
class scoring_executor final : public engine::executor {
public:
  explicit scoring_executor(bool computes = true, bool answer = true) : computes_(computes), answer_(answer) {}
  expected<engine::batch_result> execute(const engine::batch& b) override {
    engine::batch_result r;
    r.prompt_logprobs.resize(b.entries.size());
    for (size_t i = 0; i < b.entries.size(); ++i) {
      const auto& e = b.entries[i];
      r.sampled.push_back(e.sample ? std::optional<uint32_t>{1000 + e.sample_position} : std::nullopt);
      targets.push_back(e.prompt_targets);
      for (size_t j = 0; answer_ && j < e.prompt_targets.size(); ++j) {
        protocol::token_logprob lp{fake_logprob(e.prompt_targets[j], e.start_pos + uint32_t(j) + 1), {}};
        for (uint32_t k = 0; k < e.sampling.prompt_logprobs.value_or(0); ++k) lp.top.push_back({k, -0.5f});
        r.prompt_logprobs[i].push_back(lp);
      }
    }
    return r;
  }
  engine::kv_geometry geometry() const noexcept override { return {4, 32}; }
  uint32_t context_length() const noexcept override { return 64; }
  std::string name() const override { return "fake"; }
  bool computes_prompt_logprobs() const noexcept override { return computes_; }

  std::vector<std::vector<uint32_t>> targets; ///< every entry's prompt targets, in execution order

private:
  bool computes_, answer_;
};

protocol::preprocessed_request scored(std::string id, std::vector<uint32_t> prompt, uint32_t k = 1) {
  auto r = request(std::move(id), std::move(prompt), 2);
  r.sampling.prompt_logprobs = k;
  return r;
}

/// 4 tokens a step: a 10-token prompt takes three chunks.
std::unique_ptr<engine_core> make_core(std::unique_ptr<scoring_executor> ex) { return test::chunking_core(std::move(ex), 4); }

} // namespace

BOOST_AUTO_TEST_SUITE(prompt_logprobs_suite)

BOOST_AUTO_TEST_CASE(every_prompt_token_after_the_first_is_scored_across_chunks_and_sent_first) {
  auto ex = std::make_unique<scoring_executor>();
  auto* seen = ex.get();
  auto core = make_core(std::move(ex));
  const auto prompt = iota_tokens(10, 50);
  BOOST_REQUIRE(core->add_request(scored("a", prompt, 2)));
  const auto out = drain(*core);
  BOOST_REQUIRE_EQUAL(out.size(), 2u); // max_tokens 2
  // Chunks [0,4) [4,8) [8,10): token i predicts prompt token i + 1.
  BOOST_REQUIRE_GE(seen->targets.size(), 3u);
  BOOST_TEST(seen->targets[0] == (std::vector<uint32_t>{51, 52, 53, 54}), boost::test_tools::per_element());
  BOOST_TEST(seen->targets[1] == (std::vector<uint32_t>{55, 56, 57, 58}), boost::test_tools::per_element());
  BOOST_TEST(seen->targets[2] == (std::vector<uint32_t>{59}), boost::test_tools::per_element());
  BOOST_TEST(seen->targets.back().empty()); // the decode step
  const auto& lps = out[0].output.prompt_logprobs;
  BOOST_REQUIRE_EQUAL(lps.size(), 9u);
  for (uint32_t p = 1; p < 10; ++p) {
    BOOST_TEST(lps[p - 1].logprob == fake_logprob(prompt[p], p));
    BOOST_TEST(lps[p - 1].top.size() == 2u);
  }
  BOOST_TEST(out[1].output.prompt_logprobs.empty());
  BOOST_TEST(out[0].output.token_ids == (std::vector<uint32_t>{1010}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_scored_prompt_is_computed_whole_despite_a_prefix_cache_hit) {
  auto core = make_core(std::make_unique<scoring_executor>());
  const auto prompt = iota_tokens(10, 50);
  BOOST_REQUIRE(core->add_request(request("warm", prompt, 1)));
  (void)drain(*core);
  BOOST_REQUIRE(core->add_request(request("plain", prompt, 1)));
  BOOST_TEST(drain(*core).at(0).output.cached_tokens == 8u); // two full blocks
  BOOST_REQUIRE(core->add_request(scored("scored", prompt)));
  const auto out = drain(*core);
  BOOST_TEST(out.at(0).output.cached_tokens == 0u);
  BOOST_TEST(out.at(0).output.prompt_logprobs.size() == 9u);
}

BOOST_AUTO_TEST_CASE(a_scored_prompt_preempted_midway_gathers_each_position_once) {
  engine::engine_config cfg;
  cfg.max_num_batched_tokens = 4;
  cfg.num_blocks = 5; // 20 tokens: "a" decoding needs the blocks "b" is prefilling into
  auto ex = std::make_unique<scoring_executor>();
  auto* seen = ex.get();
  auto made = engine_core::create(std::move(ex), cfg);
  BOOST_REQUIRE(made);
  engine_core& core = **made;
  BOOST_REQUIRE(core.add_request(request("a", iota_tokens(7, 1), 12)));
  const auto prompt = iota_tokens(10, 50);
  BOOST_REQUIRE(core.add_request(scored("b", prompt)));
  std::vector<protocol::engine_output> b;
  for (const auto& o : drain(core))
    if (o.request_id == "b") b.push_back(o.output);
  BOOST_TEST(core.sched().num_preemptions() >= 1u);
  size_t asked_51 = 0; // b's prompt was recomputed: its first target was asked for again
  for (const auto& t : seen->targets)
    asked_51 += std::count(t.begin(), t.end(), 51u);
  BOOST_TEST(asked_51 >= 2u);
  BOOST_REQUIRE(!b.empty());
  BOOST_TEST(b[0].error.empty(), b[0].error);
  BOOST_REQUIRE_EQUAL(b[0].prompt_logprobs.size(), 9u);
  for (uint32_t p = 1; p < 10; ++p)
    BOOST_TEST(b[0].prompt_logprobs[p - 1].logprob == fake_logprob(prompt[p], p));
}

BOOST_AUTO_TEST_CASE(a_one_token_prompt_has_no_prompt_logprobs) {
  auto core = make_core(std::make_unique<scoring_executor>());
  BOOST_REQUIRE(core->add_request(scored("a", {7})));
  const auto out = drain(*core);
  BOOST_TEST(out.at(0).output.error.empty());
  BOOST_TEST(out.at(0).output.prompt_logprobs.empty());
}

BOOST_AUTO_TEST_CASE(refused_where_it_cannot_run) {
  struct refusal {
    const char* what;
    bool computes;
    protocol::preprocessed_request req;
  };
  auto with = [](auto edit) {
    auto r = scored("r", iota_tokens(6, 1));
    edit(r);
    return r;
  };
  const std::vector<refusal> cases = {
    {"does not compute prompt logprobs", false, scored("r", iota_tokens(6, 1))},
    {"at most 20", true, with([](auto& r) { r.sampling.prompt_logprobs = 21; })},
    {"n = 1", true, with([](auto& r) { r.sampling.n = 2; })},
    {"migration", true, with([](auto& r) { r.prompt_tokens = 4; })},
  };
  for (const refusal& c : cases) {
    BOOST_TEST_CONTEXT(c.what) {
      auto core = make_core(std::make_unique<scoring_executor>(c.computes));
      BOOST_REQUIRE(core->add_request(c.req));
      const auto out = drain(*core);
      BOOST_REQUIRE_EQUAL(out.size(), 1u);
      BOOST_TEST(out[0].output.finish == finish_reason::error);
      BOOST_TEST(out[0].output.error.find(c.what) != std::string::npos, out[0].output.error);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_executor_that_leaves_them_out_fails_the_request) {
  auto core = make_core(std::make_unique<scoring_executor>(true, /*answer=*/false));
  BOOST_REQUIRE(core->add_request(scored("a", iota_tokens(6, 1))));
  const auto out = drain(*core);
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0].output.finish == finish_reason::error);
  BOOST_TEST(out[0].output.error == "executor returned no logprobs for some prompt tokens");
}

BOOST_AUTO_TEST_SUITE_END()
