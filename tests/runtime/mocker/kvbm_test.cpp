// The mocker with KVBM tiers: hashes only (no bytes), onboarding that finishes
// at once, and Dynamo-style simulated time per onboarded block and tier.
#include "runtime/mocker/mock_executor.hpp"
#include "tests/runtime/mocker/mocker_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>

using namespace dynamo;
using namespace std::chrono_literals;

namespace {

struct first_chunk {
  uint32_t cached_tokens = 0;
  std::chrono::microseconds time{0}; ///< simulated, from add to first token
};

first_chunk run(engine::engine_core& core, const std::string& id, uint32_t first_token,
               std::vector<uint32_t>* reply = nullptr, std::vector<uint32_t> prompt = {}) {
  protocol::preprocessed_request r;
  r.request_id = id;
  r.token_ids = std::move(prompt);
  if (r.token_ids.empty()) {
    r.token_ids.resize(21);
    std::iota(r.token_ids.begin(), r.token_ids.end(), first_token);
  }
  r.stop.max_tokens = 4;
  r.stop.ignore_eos = true;
  BOOST_REQUIRE(core.add_request(std::move(r)));
  first_chunk out;
  bool seen = false;
  for (int i = 0; i < 100 && core.has_work(); ++i) {
    auto s = core.step();
    BOOST_REQUIRE(s);
    if (!seen)
      out.time += s->duration;
    for (const auto& o : s->outputs) {
      if (reply && o.request_id == id)
        reply->insert(reply->end(), o.output.token_ids.begin(), o.output.token_ids.end());
      if (!seen && !o.output.token_ids.empty()) {
        out.cached_tokens = o.output.cached_tokens;
        seen = true;
      }
    }
  }
  BOOST_REQUIRE(seen);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mocker_kvbm)

BOOST_AUTO_TEST_CASE(onboard_time_is_per_block_and_tier) {
  mocker::mocker_config c; // 368,640-byte blocks (16 tokens of SmolLM2-135M's KV)
  // host: 2 x (2 us + 368640 B / 25 GB/s); disk: 20 us + 368640 B / 6 GB/s.
  BOOST_TEST(mocker::onboard_time(2, 1, c).count() == 115);
  BOOST_TEST(mocker::onboard_time(0, 0, c).count() == 0);
  c.speedup_ratio = 2;
  BOOST_TEST(mocker::onboard_time(2, 1, c).count() == 57);
  c.speedup_ratio = 0;
  BOOST_TEST(mocker::onboard_time(2, 1, c).count() == 0);
}

BOOST_AUTO_TEST_CASE(an_evicted_prompt_is_onboarded_and_charged_for) {
  mocker::mocker_config c = test::tiny(8); // 8 blocks: a 21-token request and its outputs take 7
  c.speedup_ratio = 1;
  engine::engine_config base;
  base.kvbm.host_bytes = 1 << 30;
  auto core = test::engine_of(c, base);
  BOOST_REQUIRE(core->kvbm() != nullptr);
  const first_chunk cold = run(*core, "a", 1);
  (void)run(*core, "b", 100); // evicts a's last 3 full blocks from G1 (freed tail-first)
  const first_chunk warm = run(*core, "a2", 1);
  BOOST_TEST(cold.cached_tokens == 0u);
  BOOST_TEST(warm.cached_tokens == 20u); // 2 blocks still in G1, 3 onboarded
  const auto k = core->load_metrics().kvbm;
  BOOST_REQUIRE(k.has_value());
  BOOST_TEST(k->kvbm_onboard_blocks_h2d == 3u);
  BOOST_TEST(k->kvbm_matched_tokens == 12u);
  // Prefill of 1 token plus onboarding of 3 blocks is cheaper than 21 tokens of prefill,
  // and costs at least the onboarding.
  BOOST_TEST(warm.time >= mocker::onboard_time(3, 0, c));
  BOOST_TEST(warm.time < cold.time);

  auto plain = test::engine_of(c);
  (void)run(*plain, "a", 1);
  (void)run(*plain, "b", 100);
  BOOST_TEST(run(*plain, "a2", 1).cached_tokens == 8u); // the rest was evicted indeed
  BOOST_TEST(!plain->load_metrics().kvbm.has_value());
}

BOOST_AUTO_TEST_CASE(a_replys_blocks_are_offloaded_and_serve_the_next_turn) {
  mocker::mocker_config c = test::tiny(8); // blocks of 4 tokens
  engine::engine_config base;
  base.kvbm.host_bytes = 1 << 30;
  auto core = test::engine_of(c, base);
  std::vector<uint32_t> reply;
  (void)run(*core, "turn1", 1, &reply); // 21 prompt tokens, 4 generated
  BOOST_REQUIRE_EQUAL(reply.size(), 4u);
  (void)run(*core, "other", 100); // evicts most of turn1 from G1
  // The next turn: the prompt, the reply it got, then new tokens (28 tokens).
  std::vector<uint32_t> next(21);
  std::iota(next.begin(), next.end(), 1u);
  next.insert(next.end(), reply.begin(), reply.end());
  next.insert(next.end(), {200, 201, 202});
  // Tokens 0-23 were computed (the last reply token never is): 6 full blocks,
  // the sixth holding 3 reply tokens, all registered and written to G2.
  BOOST_TEST(run(*core, "turn2", 0, nullptr, next).cached_tokens == 24u);
}

BOOST_AUTO_TEST_SUITE_END()
