#include "runtime/engine/scheduler.hpp"
#include "runtime/kv/block_hash.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using engine::batch;
using engine::scheduler;
using ids = std::vector<uint32_t>;
using test::iota_tokens;
using test::request;
using protocol::finish_reason;

namespace {

// 16 blocks of 4 tokens, 8 tokens per step.
engine::scheduler_config tiny(uint32_t num_blocks = 16, uint32_t budget = 8) {
  engine::scheduler_config c;
  c.block_size = 4;
  c.num_blocks = num_blocks;
  c.max_model_len = num_blocks * 4;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = budget;
  return c;
}

// The fake model: the token sampled at position p is 1000 + p.
engine::batch_result sample_all(const batch& b) {
  engine::batch_result r;
  for (const auto& e : b.entries)
    r.sampled.push_back(e.sample ? std::optional<uint32_t>{1000 + e.sample_position} : std::nullopt);
  return r;
}

struct step_out {
  batch b;
  std::vector<engine::request_output> outputs;
};

step_out step(scheduler& s) {
  step_out o;
  o.b = s.schedule();
  o.outputs = s.update(o.b, sample_all(o.b));
  return o;
}

ids tokens_of(const engine::batch_entry& e) { return e.tokens; }
ids table_of(const engine::batch_entry& e) { return e.block_table; }

} // namespace

BOOST_AUTO_TEST_SUITE(scheduler_suite)

BOOST_AUTO_TEST_CASE(validate_rejects_zero_budgets_and_a_context_beyond_the_cache) {
  BOOST_TEST(static_cast<bool>(engine::validate(tiny())));
  auto c = tiny();
  c.max_num_batched_tokens = 0;
  BOOST_TEST(!engine::validate(c));
  c = tiny();
  c.max_model_len = 65;
  auto r = engine::validate(c);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::config_error);
  BOOST_TEST(message_of(r.error()).find("max_model_len") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(chunked_prefill_splits_a_long_prompt_across_steps) {
  scheduler s(tiny());
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(10, 1), 4)));
  auto s1 = step(s);
  BOOST_REQUIRE_EQUAL(s1.b.entries.size(), 1u);
  BOOST_TEST(s1.b.num_tokens == 8u);
  BOOST_TEST(tokens_of(s1.b.entries[0]) == iota_tokens(8, 1), boost::test_tools::per_element());
  BOOST_TEST(s1.b.entries[0].start_pos == 0u);
  BOOST_TEST(table_of(s1.b.entries[0]) == (ids{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(!s1.b.entries[0].sample);
  BOOST_TEST(s1.outputs.empty());

  auto s2 = step(s);
  BOOST_REQUIRE_EQUAL(s2.b.entries.size(), 1u);
  BOOST_TEST(tokens_of(s2.b.entries[0]) == (ids{9, 10}), boost::test_tools::per_element());
  BOOST_TEST(s2.b.entries[0].start_pos == 8u);
  BOOST_TEST(table_of(s2.b.entries[0]) == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(s2.b.entries[0].sample);
  BOOST_TEST(s2.b.entries[0].sample_position == 10u);
  BOOST_REQUIRE_EQUAL(s2.outputs.size(), 1u);
  BOOST_TEST(s2.outputs[0].request_id == "a");
  BOOST_TEST(s2.outputs[0].output.token_ids == (ids{1010}), boost::test_tools::per_element());
  BOOST_TEST(s2.outputs[0].output.finish == finish_reason::none);

  auto s3 = step(s);
  BOOST_REQUIRE_EQUAL(s3.b.entries.size(), 1u);
  BOOST_TEST(tokens_of(s3.b.entries[0]) == (ids{1010}), boost::test_tools::per_element());
  BOOST_TEST(s3.b.entries[0].start_pos == 10u);
  BOOST_TEST(table_of(s3.b.entries[0]) == (ids{0, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(decodes_come_first_then_prefill_chunks_fill_the_budget) {
  scheduler s(tiny());
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(3, 1), 10)));
  (void)step(s); // a prefilled, sampled 1003
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(12, 101), 10)));
  auto s2 = step(s);
  BOOST_REQUIRE_EQUAL(s2.b.entries.size(), 2u);
  BOOST_TEST(tokens_of(s2.b.entries[0]) == (ids{1003}), boost::test_tools::per_element());
  BOOST_TEST(s2.b.entries[0].start_pos == 3u);
  BOOST_TEST(table_of(s2.b.entries[0]) == (ids{0}), boost::test_tools::per_element());
  BOOST_TEST(tokens_of(s2.b.entries[1]) == iota_tokens(7, 101), boost::test_tools::per_element());
  BOOST_TEST(table_of(s2.b.entries[1]) == (ids{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(!s2.b.entries[1].sample);
  BOOST_TEST(s2.b.num_tokens == 8u);
}

BOOST_AUTO_TEST_CASE(token_budget_goes_to_prefills_in_arrival_order) {
  scheduler s(tiny());
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(5, 1), 10)));
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(6, 101), 10)));
  auto s1 = step(s);
  BOOST_REQUIRE_EQUAL(s1.b.entries.size(), 2u);
  BOOST_TEST(s1.b.entries[0].tokens.size() == 5u);
  BOOST_TEST(s1.b.entries[0].sample);
  BOOST_TEST(table_of(s1.b.entries[0]) == (ids{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(tokens_of(s1.b.entries[1]) == (ids{101, 102, 103}), boost::test_tools::per_element());
  BOOST_TEST(table_of(s1.b.entries[1]) == (ids{2}), boost::test_tools::per_element());
  BOOST_TEST(!s1.b.entries[1].sample);
  // Next step: a decodes, b finishes its prompt.
  auto s2 = step(s);
  BOOST_REQUIRE_EQUAL(s2.b.entries.size(), 2u);
  BOOST_TEST(tokens_of(s2.b.entries[0]) == (ids{1005}), boost::test_tools::per_element());
  BOOST_TEST(tokens_of(s2.b.entries[1]) == (ids{104, 105, 106}), boost::test_tools::per_element());
  BOOST_TEST(s2.b.entries[1].start_pos == 3u);
  BOOST_TEST(s2.b.entries[1].sample);
}

BOOST_AUTO_TEST_CASE(one_partial_prefill_at_a_time_by_default) {
  scheduler s(tiny(16, 10));
  for (const char* id : {"a", "b", "c"})
    BOOST_REQUIRE(s.add_request(request(id, iota_tokens(20, 100 * (id[0] - 'a' + 1)), 4)));
  auto s1 = step(s);
  BOOST_REQUIRE_EQUAL(s1.b.entries.size(), 1u);
  BOOST_TEST(s1.b.entries[0].tokens.size() == 10u);
  BOOST_TEST(s.num_waiting() == 2u);
}

BOOST_AUTO_TEST_CASE(concurrent_partial_prefills_share_the_budget_up_to_the_limit) {
  auto cfg = tiny(16, 10);
  cfg.max_num_partial_prefills = 3; // each mid-prefill chunk takes at most 10 / 3 = 3 tokens
  scheduler s(cfg);
  for (const char* id : {"a", "b", "c", "d"})
    BOOST_REQUIRE(s.add_request(request(id, iota_tokens(20, 100 * (id[0] - 'a' + 1)), 4)));
  auto s1 = step(s);
  BOOST_REQUIRE_EQUAL(s1.b.entries.size(), 3u); // d would be a fourth partial prefill
  for (const auto& e : s1.b.entries)
    BOOST_TEST(e.tokens.size() == 3u);
  BOOST_TEST(s1.b.num_tokens == 9u);
  BOOST_TEST(s.num_waiting() == 1u);
}

BOOST_AUTO_TEST_CASE(a_short_prompt_behind_partial_prefills_still_runs) {
  auto cfg = tiny(16, 10);
  cfg.max_num_partial_prefills = 3;
  scheduler s(cfg);
  for (const char* id : {"a", "b", "c"})
    BOOST_REQUIRE(s.add_request(request(id, iota_tokens(20, 100 * (id[0] - 'a' + 1)), 4)));
  BOOST_REQUIRE(s.add_request(request("short", {7}, 4)));
  auto s1 = step(s);
  BOOST_REQUIRE_EQUAL(s1.b.entries.size(), 4u);
  BOOST_TEST(tokens_of(s1.b.entries[3]) == (ids{7}), boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(s1.outputs.size(), 1u);
  BOOST_TEST(s1.outputs[0].request_id == "short");
}

BOOST_AUTO_TEST_CASE(max_num_seqs_caps_running_requests) {
  auto cfg = tiny();
  cfg.max_num_seqs = 2;
  scheduler s(cfg);
  for (const char* id : {"a", "b", "c"})
    BOOST_REQUIRE(s.add_request(request(id, {1, 2}, 1)));
  auto s1 = step(s);
  BOOST_TEST(s1.b.entries.size() == 2u);
  BOOST_TEST(s1.outputs.size() == 2u); // both finish (max_tokens 1)...
  auto s2 = step(s);                   // ...so c runs next
  BOOST_REQUIRE_EQUAL(s2.outputs.size(), 1u);
  BOOST_TEST(s2.outputs[0].request_id == "c");
  BOOST_TEST(!s.has_requests());
}

BOOST_AUTO_TEST_CASE(admission_starts_after_the_cached_prefix_and_reports_it) {
  scheduler s(tiny(16, 16));
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(9, 1), 1)));
  auto s1 = step(s);
  BOOST_REQUIRE_EQUAL(s1.outputs.size(), 1u);
  BOOST_TEST(s1.outputs[0].output.finish == finish_reason::length);
  BOOST_TEST(s1.outputs[0].output.cached_tokens == 0u);
  BOOST_TEST(s.kv().pool().num_used_blocks() == 0u);

  auto prompt = iota_tokens(9, 1);
  prompt.insert(prompt.end(), {50, 51});
  BOOST_REQUIRE(s.add_request(request("b", prompt, 2)));
  auto s2 = step(s);
  BOOST_REQUIRE_EQUAL(s2.b.entries.size(), 1u);
  BOOST_TEST(s2.b.entries[0].start_pos == 8u);
  BOOST_TEST(tokens_of(s2.b.entries[0]) == (ids{9, 50, 51}), boost::test_tools::per_element());
  // Blocks 0 1 are the cached prefix; the freed partial block 2 is reused first.
  BOOST_TEST(table_of(s2.b.entries[0]) == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(s2.outputs.size(), 1u);
  BOOST_TEST(s2.outputs[0].output.cached_tokens == 8u);
  auto s3 = step(s);
  BOOST_REQUIRE_EQUAL(s3.outputs.size(), 1u);
  BOOST_TEST(s3.outputs[0].output.cached_tokens == 0u); // only on the first chunk
}

BOOST_AUTO_TEST_CASE(a_fully_cached_prompt_recomputes_its_last_block) {
  scheduler s(tiny(16, 16));
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(8, 1), 1)));
  (void)step(s);
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(8, 1), 1)));
  auto s2 = step(s);
  BOOST_REQUIRE_EQUAL(s2.b.entries.size(), 1u);
  BOOST_TEST(s2.b.entries[0].start_pos == 4u);
  BOOST_TEST(tokens_of(s2.b.entries[0]) == (ids{5, 6, 7, 8}), boost::test_tools::per_element());
  BOOST_TEST(s2.outputs[0].output.cached_tokens == 4u);
  BOOST_TEST(s2.outputs[0].output.token_ids == (ids{1008}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(stored_events_hash_the_prompt_as_the_router_does) {
  scheduler s(tiny(16, 16));
  const auto prompt = iota_tokens(10, 1);
  BOOST_REQUIRE(s.add_request(request("a", prompt, 1)));
  (void)step(s);
  auto ev = s.kv().drain_events();
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].kind == protocol::kv_event_kind::stored);
  BOOST_TEST(!ev[0].parent_hash.has_value());
  const auto want = kv::sequence_hashes_of_tokens(prompt, 4);
  const auto local = kv::local_block_hashes(prompt, 4);
  BOOST_REQUIRE_EQUAL(ev[0].blocks.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    BOOST_TEST(ev[0].blocks[i].block_hash == want[i]);
    BOOST_TEST(ev[0].blocks[i].tokens_hash == local[i]);
  }
}

BOOST_AUTO_TEST_CASE(out_of_blocks_preempts_the_newest_request_lifo) {
  scheduler s(tiny(4, 16)); // 16 tokens of KV
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(4, 1), 8)));
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(4, 11), 8)));
  auto s1 = step(s);
  BOOST_TEST(table_of(s1.b.entries[0]) == (ids{0}), boost::test_tools::per_element());
  BOOST_TEST(table_of(s1.b.entries[1]) == (ids{1}), boost::test_tools::per_element());
  for (int i = 0; i < 4; ++i) // positions 4..7 fill blocks 2 (a) and 3 (b)
    BOOST_TEST(step(s).b.entries.size() == 2u);
  BOOST_TEST(s.kv().pool().num_free_blocks() == 0u);
  (void)s.kv().drain_events();

  // Position 8 needs a fourth block for each: b (newest) gives its blocks up.
  auto s6 = step(s);
  BOOST_TEST(s.num_preemptions() == 1u);
  BOOST_REQUIRE_EQUAL(s6.b.entries.size(), 1u);
  BOOST_TEST(tokens_of(s6.b.entries[0]) == (ids{1008}), boost::test_tools::per_element());
  // b's blocks were freed tail-first (3, then 1); a took the head, evicting b's suffix.
  BOOST_TEST(table_of(s6.b.entries[0]) == (ids{0, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(s.num_running() == 1u);
  BOOST_TEST(s.num_waiting() == 1u);
  auto ev = s.kv().drain_events();
  BOOST_REQUIRE_GE(ev.size(), 1u);
  BOOST_TEST(ev[0].kind == protocol::kv_event_kind::removed);
  const auto b_tokens = [] {
    auto t = iota_tokens(4, 11);
    for (uint32_t p = 4; p < 8; ++p)
      t.push_back(1000 + p);
    return t;
  }();
  BOOST_TEST(ev[0].removed_hashes == (std::vector<uint64_t>{kv::sequence_hashes_of_tokens(b_tokens, 4)[1]}),
             boost::test_tools::per_element());

  // a runs to completion (8 tokens), then b resumes from its cached prompt block
  // and produces exactly the tokens it would have produced without preemption.
  std::map<std::string, ids> out;
  std::map<std::string, finish_reason> fin;
  for (auto& o : s6.outputs)
    out[o.request_id].insert(out[o.request_id].end(), o.output.token_ids.begin(), o.output.token_ids.end());
  bool resumed_after_cached_prompt = false;
  for (int i = 0; i < 20 && s.has_requests(); ++i) {
    auto st = step(s);
    for (const auto& e : st.b.entries) // b's recompute starts after its cached prompt block
      resumed_after_cached_prompt |= e.start_pos == 4 && e.tokens == ids{1004, 1005, 1006, 1007, 1008};
    for (auto& o : st.outputs) {
      out[o.request_id].insert(out[o.request_id].end(), o.output.token_ids.begin(), o.output.token_ids.end());
      fin[o.request_id] = o.output.finish;
    }
  }
  BOOST_TEST(!s.has_requests());
  BOOST_TEST(resumed_after_cached_prompt);
  BOOST_TEST(out["b"] == (ids{1009, 1010, 1011}), boost::test_tools::per_element()); // 1004..1008 came before
  BOOST_TEST(fin["a"] == finish_reason::length);
  BOOST_TEST(fin["b"] == finish_reason::length);
  BOOST_TEST(s.kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(stop_token_finishes_and_frees_the_blocks) {
  scheduler s(tiny());
  auto r = request("a", iota_tokens(3, 1), 10);
  r.stop.stop_token_ids = {1005};
  BOOST_REQUIRE(s.add_request(r));
  ids got;
  finish_reason fin = finish_reason::none;
  for (int i = 0; i < 10 && s.has_requests(); ++i)
    for (auto& o : step(s).outputs) {
      got.insert(got.end(), o.output.token_ids.begin(), o.output.token_ids.end());
      fin = o.output.finish;
    }
  BOOST_TEST(got == (ids{1003, 1004, 1005}), boost::test_tools::per_element());
  BOOST_TEST(fin == finish_reason::stop);
  BOOST_TEST(s.kv().pool().num_used_blocks() == 0u);
}

BOOST_AUTO_TEST_CASE(context_length_finishes_with_length) {
  scheduler s(tiny(4, 16)); // max_model_len 16
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(14, 1), 100)));
  ids got;
  finish_reason fin = finish_reason::none;
  for (int i = 0; i < 10 && s.has_requests(); ++i)
    for (auto& o : step(s).outputs) {
      got.insert(got.end(), o.output.token_ids.begin(), o.output.token_ids.end());
      fin = o.output.finish;
    }
  BOOST_TEST(got == (ids{1014, 1015}), boost::test_tools::per_element());
  BOOST_TEST(fin == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(abort_frees_blocks_of_running_and_waiting_requests) {
  auto cfg = tiny();
  cfg.max_num_seqs = 1;
  scheduler s(cfg);
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(6, 1), 10)));
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(6, 11), 10)));
  (void)step(s);
  BOOST_TEST(s.kv().pool().num_used_blocks() == 2u);
  BOOST_TEST(s.abort("a"));
  BOOST_TEST(s.kv().pool().num_used_blocks() == 0u);
  BOOST_TEST(s.abort("b"));
  BOOST_TEST(!s.abort("b"));
  BOOST_TEST(!s.has_requests());
  BOOST_TEST(s.schedule().entries.empty());
}

BOOST_AUTO_TEST_CASE(update_skips_a_request_aborted_after_schedule) {
  scheduler s(tiny());
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(3, 1), 10)));
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(3, 11), 10)));
  auto b = s.schedule();
  BOOST_TEST(s.abort("a"));
  auto out = s.update(b, sample_all(b));
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0].request_id == "b");
}

BOOST_AUTO_TEST_CASE(a_missing_sample_ends_the_request_with_an_error) {
  scheduler s(tiny());
  BOOST_REQUIRE(s.add_request(request("a", iota_tokens(3, 1), 10)));
  auto b = s.schedule();
  engine::batch_result r;
  r.sampled.assign(b.entries.size(), std::nullopt);
  auto out = s.update(b, r);
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0].output.finish == finish_reason::error);
  BOOST_TEST(!out[0].output.error.empty());
  BOOST_TEST(!s.has_requests());
}

BOOST_AUTO_TEST_CASE(duplicate_request_ids_are_refused) {
  scheduler s(tiny());
  BOOST_TEST(s.add_request(request("a", {1}, 1)));
  BOOST_TEST(!s.add_request(request("a", {2}, 1)));
  BOOST_TEST(s.num_waiting() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
