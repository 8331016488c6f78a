#include "runtime/mocker/mock_executor.hpp"
#include "tests/runtime/engine/test_util.hpp"
#include "tests/runtime/mocker/mocker_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <random>
#include <unordered_set>

using namespace dynamo;
using protocol::finish_reason;
using test::engine_of;
using test::iota_tokens;
using test::request;
using test::tiny;

namespace {

// The router's view of one worker's cache, rebuilt from its events; fails on
// an event that does not fit what came before.
struct router_view {
  std::unordered_set<uint64_t> blocks;
  uint64_t next_id = 0;
  void apply(const protocol::kv_event& e) {
    BOOST_REQUIRE_EQUAL(e.event_id, next_id);
    ++next_id;
    switch (e.kind) {
    case protocol::kv_event_kind::stored:
      if (e.parent_hash)
        BOOST_REQUIRE(blocks.count(*e.parent_hash) == 1u);
      for (const auto& b : e.blocks)
        BOOST_REQUIRE(blocks.insert(b.block_hash).second);
      break;
    case protocol::kv_event_kind::removed:
      for (uint64_t h : e.removed_hashes)
        BOOST_REQUIRE(blocks.erase(h) == 1u);
      break;
    case protocol::kv_event_kind::cleared:
      blocks.clear();
      break;
    }
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(mock_executor_suite)

BOOST_AUTO_TEST_CASE(samples_next_token_for_sampling_entries_only) {
  mocker::mock_executor ex(tiny());
  engine::batch b;
  engine::batch_entry decode;
  decode.seq_id = 1;
  decode.tokens = {70};
  decode.start_pos = 9;
  decode.block_table = {0, 1, 2};
  decode.sample = true;
  decode.sample_position = 10;
  engine::batch_entry chunk;
  chunk.seq_id = 2;
  chunk.tokens = {1, 2, 3};
  chunk.block_table = {3};
  b.entries = {decode, chunk};
  b.num_tokens = 4;
  auto r = ex.execute(b);
  BOOST_REQUIRE(r);
  BOOST_REQUIRE_EQUAL(r->sampled.size(), 2u);
  BOOST_TEST(r->sampled[0].value_or(0) == mocker::next_token(70, 10));
  BOOST_TEST(!r->sampled[1].has_value());
  BOOST_TEST(r->simulated.count() == 0); // speedup 0
}

BOOST_AUTO_TEST_CASE(rejects_a_batch_that_breaks_the_layout_contract) {
  mocker::mock_executor ex(tiny());
  engine::batch b;
  engine::batch_entry e;
  e.tokens = {1, 2, 3, 4, 5};
  e.block_table = {0}; // covers 4 positions, not 5
  b.entries = {e};
  b.num_tokens = 5;
  auto r = ex.execute(b);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::internal);
}

BOOST_AUTO_TEST_CASE(config_validation_names_the_field) {
  auto c = tiny();
  c.decode_speedup_ratio = 0;
  auto r = mocker::make_engine(c);
  BOOST_REQUIRE(!r);
  BOOST_TEST(message_of(r.error()).find("decode_speedup_ratio") != std::string::npos);
  c = tiny();
  c.speedup_ratio = -1;
  BOOST_TEST(!mocker::make_engine(c));
}

BOOST_AUTO_TEST_CASE(default_speedup_reports_simulated_time) {
  auto c = tiny();
  c.speedup_ratio = 1.0;
  auto core = engine_of(c);
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(10, 65), 2)));
  auto r = core->step();
  BOOST_REQUIRE(r);
  // 10 prefill tokens plus the decode term at 3/16 usage.
  const double ms = mocker::prefill_ms(10) + mocker::decode_ms(3.0 / 16);
  BOOST_TEST(r->duration.count() == std::llround(ms * 1000));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mock_engine)

BOOST_AUTO_TEST_CASE(generates_the_continuation_stream) {
  auto core = engine_of(tiny());
  auto prompt = iota_tokens(10, 65);
  BOOST_REQUIRE(core->add_request(request("a", prompt, 5)));
  auto out = test::run(*core);
  BOOST_TEST(out["a"].tokens == mocker::continuation(prompt, 5), boost::test_tools::per_element());
  BOOST_TEST(out["a"].finish == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(a_scripted_prompt_gets_its_reply_then_eos) {
  auto cfg = tiny();
  cfg.max_num_batched_tokens = 64; // the script must be in the chunk that samples
  auto core = engine_of(cfg);
  const std::string prompt = "user: x <mock_reply>{\"a\": 1}</mock_reply>\n";
  auto req = request("a", std::vector<uint32_t>(prompt.begin(), prompt.end()), 20);
  req.stop.stop_token_ids = {256};
  BOOST_REQUIRE(core->add_request(req));
  auto out = test::run(*core);
  const std::vector<uint32_t> want = {'{', '"', 'a', '"', ':', ' ', '1', '}', 256};
  BOOST_TEST(out["a"].tokens == want, boost::test_tools::per_element());
  BOOST_TEST(out["a"].finish == finish_reason::stop);
}

BOOST_AUTO_TEST_CASE(preempted_requests_resume_with_identical_tokens) {
  auto core = engine_of(tiny(8)); // 32 tokens of KV for 4 requests of 18 tokens each
  std::map<std::string, std::vector<uint32_t>> prompts;
  for (uint32_t i = 0; i < 4; ++i) {
    const std::string id = "r" + std::to_string(i);
    prompts[id] = iota_tokens(6, 40 + 10 * i);
    BOOST_REQUIRE(core->add_request(request(id, prompts[id], 12)));
  }
  auto out = test::run(*core);
  BOOST_TEST(core->sched().num_preemptions() > 0u);
  for (const auto& [id, prompt] : prompts) {
    BOOST_TEST_CONTEXT(id) {
      BOOST_TEST(out[id].tokens == mocker::continuation(prompt, 12), boost::test_tools::per_element());
      BOOST_TEST(out[id].finish == finish_reason::length);
    }
  }
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == 0u);
}

BOOST_AUTO_TEST_CASE(a_migrated_request_continues_the_same_stream_on_another_worker) {
  const auto prompt = iota_tokens(7, 80);
  auto first = engine_of(tiny());
  BOOST_REQUIRE(first->add_request(request("m", prompt, 20)));
  std::vector<uint32_t> so_far;
  while (so_far.size() < 5) {
    auto r = first->step();
    BOOST_REQUIRE(r);
    for (const auto& o : r->outputs)
      so_far.insert(so_far.end(), o.output.token_ids.begin(), o.output.token_ids.end());
  }
  // The worker "dies"; the request moves with prompt + output so far.
  auto moved = prompt;
  moved.insert(moved.end(), so_far.begin(), so_far.end());
  auto req = request("m", moved, 20 - static_cast<uint32_t>(so_far.size()));
  req.prompt_tokens = static_cast<uint32_t>(prompt.size());
  auto second = engine_of(tiny());
  BOOST_REQUIRE(second->add_request(req));
  auto rest = test::run(*second);
  so_far.insert(so_far.end(), rest["m"].tokens.begin(), rest["m"].tokens.end());
  BOOST_TEST(so_far == mocker::continuation(prompt, 20), boost::test_tools::per_element());
}

// Two equal prompts admitted in one step compute the same blocks twice; the
// second copy is merged into the first, so when the first request finishes and
// its blocks come under eviction pressure, the second request's later stored
// events still name a parent the router knows.
BOOST_AUTO_TEST_CASE(equal_prompts_in_one_step_keep_stored_parents_known_to_the_router) {
  auto c = tiny(6);
  c.context_length = 24;
  auto core = engine_of(c);
  const auto prompt = iota_tokens(9, 50);
  BOOST_REQUIRE(core->add_request(request("a", prompt, 1)));
  BOOST_REQUIRE(core->add_request(request("b", prompt, 10)));
  router_view view;
  auto first = core->step();
  BOOST_REQUIRE(first);
  BOOST_TEST(first->num_seqs == 2u);
  for (const auto& e : first->kv_events)
    view.apply(e);
  BOOST_REQUIRE(core->add_request(request("c", iota_tokens(12, 100), 2)));
  std::vector<protocol::kv_event> events;
  auto out = test::run(*core, &events);
  for (const auto& e : events)
    view.apply(e);
  BOOST_TEST(out["b"].tokens.size() == 9u); // 1 token came with the first step
  BOOST_TEST(out["c"].finish == finish_reason::length);
  BOOST_TEST(view.blocks.size() == core->sched().kv().pool().num_cached_blocks());
}

// Random arrivals (sharing prefixes), aborts and lengths over a tiny cache:
// the pool's invariants hold after every step, the events replay into exactly
// the cached blocks, every completed stream is the mocker's continuation, and
// nothing leaks at the end.
BOOST_AUTO_TEST_CASE(random_load_keeps_invariants_events_and_streams_exact) {
  std::mt19937 rng(7);
  auto pick = [&](uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); };
  auto c = tiny(12);
  c.max_num_batched_tokens = 12;
  c.max_num_seqs = 5;
  c.max_num_partial_prefills = 2;
  auto core = engine_of(c);
  router_view view;
  std::map<std::string, std::vector<uint32_t>> prompts;
  std::map<std::string, uint32_t> max_tokens;
  std::map<std::string, test::stream> streams;
  std::set<std::string> aborted;
  uint32_t next = 0;
  for (int s = 0; s < 3000; ++s) {
    if (pick(4) == 0 && next < 400) {
      const std::string id = "q" + std::to_string(next++);
      auto prompt = iota_tokens(4 * pick(4), 33 + pick(3)); // one of three shared stems
      for (uint32_t i = 0, n = 1 + pick(10); i < n; ++i)
        prompt.push_back(33 + pick(90));
      prompts[id] = prompt;
      max_tokens[id] = 1 + pick(20);
      BOOST_REQUIRE(core->add_request(request(id, prompt, max_tokens[id])));
    }
    if (pick(40) == 0 && next > 0) {
      const std::string id = "q" + std::to_string(pick(next));
      if (core->abort(id))
        aborted.insert(id);
    }
    auto r = core->step();
    BOOST_REQUIRE(r);
    for (const auto& e : r->kv_events)
      view.apply(e);
    for (const auto& o : r->outputs) {
      auto& st = streams[o.request_id];
      BOOST_REQUIRE(st.finish == finish_reason::none);
      st.tokens.insert(st.tokens.end(), o.output.token_ids.begin(), o.output.token_ids.end());
      st.finish = o.output.finish;
    }
    BOOST_REQUIRE_EQUAL(core->sched().kv().pool().invariant_violation(), "");
    BOOST_REQUIRE_EQUAL(view.blocks.size(), core->sched().kv().pool().num_cached_blocks());
  }
  auto tail = test::run(*core);
  for (auto& [id, st] : tail) {
    auto& s = streams[id];
    s.tokens.insert(s.tokens.end(), st.tokens.begin(), st.tokens.end());
    s.finish = st.finish;
  }
  BOOST_TEST(core->sched().num_preemptions() > 0u);
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == 0u);
  uint32_t completed = 0;
  for (const auto& [id, prompt] : prompts) {
    const auto& s = streams[id];
    BOOST_TEST_CONTEXT(id) {
      if (aborted.count(id)) {
        BOOST_TEST(s.finish == finish_reason::cancelled);
        continue;
      }
      ++completed;
      BOOST_TEST(s.finish == finish_reason::length);
      BOOST_TEST(s.tokens == mocker::continuation(prompt, max_tokens.at(id)), boost::test_tools::per_element());
    }
  }
  BOOST_TEST(completed > 300u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(mock_prompt_logprobs)

BOOST_AUTO_TEST_CASE(a_chunked_prompt_gets_the_mockers_logprob_of_every_token_after_the_first) {
  auto c = tiny();
  c.max_num_batched_tokens = 4; // three chunks
  auto core = engine_of(c);
  const auto prompt = iota_tokens(10, 40);
  auto req = request("a", prompt, 3);
  req.sampling.prompt_logprobs = 1;
  BOOST_REQUIRE(core->add_request(req));
  BOOST_REQUIRE(core->add_request(request("plain", prompt, 3)));
  std::map<std::string, std::vector<protocol::engine_output>> out;
  for (int i = 0; i < 100 && core->has_work(); ++i) {
    auto r = core->step();
    BOOST_REQUIRE(r);
    for (auto& o : r->outputs) out[o.request_id].push_back(o.output);
  }
  const auto& lps = out.at("a").at(0).prompt_logprobs;
  BOOST_REQUIRE_EQUAL(lps.size(), 9u);
  for (uint32_t p = 1; p < 10; ++p) {
    BOOST_TEST(lps[p - 1].logprob == mocker::prompt_logprob(prompt[p], p, 1).logprob);
    BOOST_TEST(lps[p - 1].logprob <= -0.1f);
    BOOST_TEST(lps[p - 1].logprob >= -5.0f);
    BOOST_REQUIRE_EQUAL(lps[p - 1].top.size(), 1u);
    BOOST_TEST(lps[p - 1].top[0].token == prompt[p]);
  }
  BOOST_TEST(out.at("plain").at(0).prompt_logprobs.empty());
  for (size_t i = 0; i < 3; ++i) // scoring the prompt does not change the output
    BOOST_TEST(out.at("a").at(i).token_ids == out.at("plain").at(i).token_ids, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
