// Disaggregated prefill/decode on mocker engines: held prefill blocks, decode
// requests waiting for KV, their transfers, fallbacks, and token streams that
// equal the aggregated ones (mocker::continuation).
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "tests/runtime/engine/test_util.hpp"
#include "tests/runtime/mocker/mocker_test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace std::chrono_literals;
using ids = std::vector<uint32_t>;
using protocol::finish_reason;
using test::engine_of;
using test::iota_tokens;
using test::request;
using test::tiny;

namespace {

protocol::preprocessed_request prefill_request(std::string id, ids prompt, uint32_t max_tokens = 1) {
  auto r = request(std::move(id), std::move(prompt), max_tokens);
  r.disagg = protocol::encode(protocol::disagg_params{protocol::disagg_role::prefill, std::nullopt});
  return r;
}

protocol::preprocessed_request decode_request(std::string id, ids prompt, uint32_t max_tokens,
                                              const protocol::kv_prefill_result& from) {
  auto r = request(std::move(id), std::move(prompt), max_tokens);
  r.disagg = protocol::encode(protocol::disagg_params{protocol::disagg_role::decode, from});
  return r;
}

/// Runs a prefill request to its end on `core`; returns its final chunk.
engine::request_output prefill(engine::engine_core& core, const std::string& id, const ids& prompt,
                               std::vector<protocol::kv_event>* events = nullptr) {
  BOOST_REQUIRE(core.add_request(prefill_request(id, prompt)));
  std::optional<engine::request_output> last;
  for (int i = 0; i < 100 && core.has_work(); ++i) {
    auto r = core.step();
    BOOST_REQUIRE(r);
    for (auto& o : r->outputs)
      if (o.request_id == id && o.output.finish != finish_reason::none)
        last = o;
    if (events)
      events->insert(events->end(), r->kv_events.begin(), r->kv_events.end());
  }
  BOOST_REQUIRE(last.has_value());
  return *last;
}

protocol::kv_prefill_result result_of(const engine::request_output& o) {
  auto r = protocol::decode<protocol::kv_prefill_result>(o.output.disagg);
  BOOST_REQUIRE_MESSAGE(r, "prefill result: " << (r ? "" : describe(r.error())));
  return *r;
}

ids held(const engine::engine_core& core, std::string_view hold_id) {
  auto h = core.held_blocks(hold_id);
  BOOST_REQUIRE(h.has_value());
  return *h;
}

uint32_t used_blocks(const engine::engine_core& core) {
  return core.sched().kv().pool().num_used_blocks();
}

} // namespace

BOOST_AUTO_TEST_SUITE(disagg_prefill_side)

BOOST_AUTO_TEST_CASE(a_prefill_holds_its_prompt_blocks_and_reports_them_in_the_final_chunk) {
  auto a = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65); // blocks 0 1 full, 2 partial
  // max_tokens 5 is clamped: a prefill worker answers with the first token only.
  BOOST_REQUIRE(a->add_request(prefill_request("p", prompt, 5)));
  auto step = a->step();
  BOOST_REQUIRE(step);
  BOOST_REQUIRE_EQUAL(step->outputs.size(), 1u);
  const engine::request_output& o = step->outputs[0];
  BOOST_TEST(o.output.finish == finish_reason::length);
  const ids first = mocker::continuation(prompt, 1);
  BOOST_TEST(o.output.token_ids == first, boost::test_tools::per_element());
  const protocol::kv_prefill_result r = result_of(o);
  BOOST_TEST(r.hold_id == "p");
  BOOST_TEST(r.block_ids == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(r.num_tokens == 10u);
  BOOST_TEST(r.first_token == first[0]);
  BOOST_TEST((r.layout == mocker::transfer_layout(tiny())));
  BOOST_TEST(r.layout.name == "block-major");
  BOOST_TEST(r.prefill_worker_id == 0u);
  BOOST_TEST(r.transfer_address.empty());
  BOOST_REQUIRE(o.prefill_result.has_value());
  BOOST_TEST(o.prefill_result->block_ids == r.block_ids, boost::test_tools::per_element());
  // The full blocks were stored as for any request; the hold keeps all three in use.
  BOOST_REQUIRE_EQUAL(step->kv_events.size(), 1u);
  BOOST_TEST(step->kv_events[0].blocks.size() == 2u);
  BOOST_TEST(held(*a, "p") == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(a->num_holds() == 1u);
  BOOST_TEST(used_blocks(*a) == 3u);
  BOOST_TEST(a->load_metrics().active_decode_blocks == 3u);
  BOOST_TEST(!a->has_work());
  BOOST_TEST(!a->held_blocks("q").has_value());
  BOOST_TEST(!a->abort("p")); // finished: nothing to abort, the hold stays
  BOOST_TEST(a->num_holds() == 1u);
}

BOOST_AUTO_TEST_CASE(held_blocks_are_never_evicted_and_release_frees_them_tail_first) {
  auto a = engine_of(tiny(4)); // 4 blocks, max_model_len 16
  const ids prompt = iota_tokens(10, 65);
  (void)prefill(*a, "p", prompt);
  BOOST_TEST(held(*a, "p") == (ids{0, 1, 2}), boost::test_tools::per_element());
  // A request needing 3 blocks cannot run while 3 of 4 are held.
  BOOST_REQUIRE(a->add_request(request("x", iota_tokens(9, 100), 1)));
  auto r = a->step();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->outputs.empty());
  BOOST_TEST(a->load_metrics().num_waiting == 1u);
  BOOST_TEST(a->release_hold("p"));
  BOOST_TEST(!a->release_hold("p"));
  // Tail-first: uncached block 2 to the head, cached 1 then 0 to the tail.
  BOOST_TEST(a->sched().kv().pool().free_queue() == (ids{2, 3, 1, 0}), boost::test_tools::per_element());
  auto out = test::run(*a);
  BOOST_TEST(out["x"].finish == finish_reason::length);
  // "x" took 2, 3 and then evicted 1, the deeper cached block; the released
  // prompt's root block 0 is still a prefix hit.
  BOOST_REQUIRE(a->add_request(request("again", prompt, 1)));
  out = test::run(*a);
  BOOST_TEST(out["again"].cached_tokens == 4u);
  BOOST_TEST(a->sched().kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(holds_expire_after_the_ttl_counted_from_the_step_that_made_them) {
  auto t = std::chrono::steady_clock::time_point{} + 1000s;
  engine::engine_config base;
  base.hold_ttl = 30s;
  base.clock = [&t] { return t; };
  auto a = engine_of(tiny(), base);
  const auto t0 = t;
  (void)prefill(*a, "a", iota_tokens(5, 65)); // blocks 0 1
  t = t0 + 10s;
  (void)prefill(*a, "b", iota_tokens(6, 80)); // blocks 2 3
  BOOST_TEST(used_blocks(*a) == 4u);
  BOOST_TEST(a->hold_ttl() == 30000ms);
  BOOST_TEST(a->release_expired_holds(t0 + 30s - 1ms) == 0u);
  BOOST_TEST(a->release_expired_holds(t0 + 30s) == 1u);
  BOOST_TEST(!a->held_blocks("a").has_value());
  BOOST_TEST(held(*a, "b") == (ids{2, 3}), boost::test_tools::per_element());
  BOOST_TEST(used_blocks(*a) == 2u);
  BOOST_TEST(a->release_expired_holds(t0 + 39s, 30s) == 0u);
  BOOST_TEST(a->release_expired_holds(t0 + 40s) == 1u); // engine_config::hold_ttl
  BOOST_TEST(used_blocks(*a) == 0u);
  BOOST_TEST(a->num_holds() == 0u);
  BOOST_TEST(a->sched().kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(a_second_prefill_of_the_same_id_replaces_the_old_hold) {
  auto a = engine_of(tiny());
  (void)prefill(*a, "p", iota_tokens(5, 65));
  BOOST_TEST(held(*a, "p") == (ids{0, 1}), boost::test_tools::per_element());
  (void)prefill(*a, "p", iota_tokens(9, 100));
  BOOST_TEST(a->num_holds() == 1u);
  BOOST_TEST(held(*a, "p").size() == 3u);
  BOOST_TEST(used_blocks(*a) == 3u);
}

BOOST_AUTO_TEST_CASE(malformed_disagg_bytes_are_an_error_chunk) {
  auto a = engine_of(tiny());
  auto req = request("bad", iota_tokens(5, 65), 3);
  req.disagg = {0xc1};
  BOOST_REQUIRE(a->add_request(req));
  auto out = test::run(*a);
  BOOST_TEST(out["bad"].finish == finish_reason::error);
  BOOST_TEST(out["bad"].error.find("disaggregation parameters") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(mocker_transfer_time_follows_dynamos_formula) {
  auto c = tiny();
  c.speedup_ratio = 1.0;
  BOOST_TEST(mocker::kv_bytes_per_token(c) == 30u * 2 * 3 * 64 * 2); // 23,040
  // 4096 tokens x 23,040 B / 64e9 B/s = 1474.56 us.
  BOOST_TEST(mocker::transfer_time(4096, c).count() == 1475);
  c.kv_bytes_per_token = 1000;
  c.kv_transfer_bandwidth = 1.0; // 1e9 B/s: 1 us per token
  BOOST_TEST(mocker::transfer_time(250, c).count() == 250);
  c.speedup_ratio = 10.0;
  BOOST_TEST(mocker::transfer_time(250, c).count() == 25);
  c.speedup_ratio = 0;
  BOOST_TEST(mocker::transfer_time(250, c).count() == 0);
  c = tiny();
  c.kv_transfer_bandwidth = 0;
  BOOST_TEST(!mocker::validate(c));
  c = tiny();
  c.kv_head_dim = 0;
  BOOST_TEST(!mocker::validate(c));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(disagg_decode_side)

BOOST_AUTO_TEST_CASE(prefill_on_a_and_decode_on_b_stream_exactly_the_aggregated_tokens) {
  auto a = engine_of(tiny());
  auto b = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65);
  std::vector<protocol::kv_event> a_events;
  (void)prefill(*a, "x", iota_tokens(5, 200)); // shifts A's ids: "p" gets 2 3 4
  const auto r = result_of(prefill(*a, "p", prompt, &a_events));
  BOOST_TEST(r.block_ids == (ids{2, 3, 4}), boost::test_tools::per_element());

  BOOST_REQUIRE(b->add_request(decode_request("p", prompt, 6, r)));
  // Admitted at once (nothing queued before it): blocks for the whole prompt.
  BOOST_TEST(b->sched().num_waiting_for_kv() == 1u);
  BOOST_TEST(used_blocks(*b) == 3u);
  BOOST_TEST(!b->has_work()); // only complete_transfer() advances it
  BOOST_TEST(b->load_metrics().num_waiting == 1u);
  BOOST_TEST(b->load_metrics().active_prefill_tokens == 0u);
  auto pulls = b->pending_transfers();
  BOOST_REQUIRE_EQUAL(pulls.size(), 1u);
  BOOST_TEST(pulls[0].request_id == "p");
  BOOST_TEST(pulls[0].source_block_ids == (ids{2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(pulls[0].destination_block_ids == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(pulls[0].source.hold_id == "p");
  BOOST_TEST(b->pending_transfers().empty()); // each pull is handed out once

  // Stepping meanwhile does nothing for it.
  auto idle = b->step();
  BOOST_REQUIRE(idle);
  BOOST_TEST(idle->outputs.empty());
  BOOST_TEST(idle->num_seqs == 0u);

  BOOST_TEST(b->complete_transfer("p", true));
  BOOST_TEST(!b->complete_transfer("p", true)); // already done
  BOOST_TEST(a->release_hold("p"));             // what the prefill worker does after the push
  BOOST_TEST(b->has_work());
  // The next step delivers first_token alone as the first chunk, and the stored
  // events of the transferred prompt: the same hashes A stored.
  auto first = b->step();
  BOOST_REQUIRE(first);
  BOOST_REQUIRE(!first->outputs.empty());
  BOOST_TEST(first->outputs[0].request_id == "p");
  BOOST_TEST(first->outputs[0].output.token_ids == (ids{r.first_token}), boost::test_tools::per_element());
  BOOST_TEST(first->outputs[0].output.cached_tokens == 0u);
  BOOST_REQUIRE(!first->kv_events.empty());
  BOOST_TEST(first->kv_events[0].kind == protocol::kv_event_kind::stored);
  BOOST_REQUIRE_EQUAL(a_events.size(), 1u);
  BOOST_REQUIRE_EQUAL(first->kv_events[0].blocks.size(), 2u);
  for (size_t i = 0; i < 2; ++i)
    BOOST_TEST(first->kv_events[0].blocks[i].block_hash == a_events[0].blocks[i].block_hash);
  BOOST_TEST(!first->kv_events[0].parent_hash.has_value());

  ids tokens;
  for (auto& o : first->outputs)
    tokens.insert(tokens.end(), o.output.token_ids.begin(), o.output.token_ids.end());
  auto rest = test::run(*b);
  tokens.insert(tokens.end(), rest["p"].tokens.begin(), rest["p"].tokens.end());
  BOOST_TEST(rest["p"].finish == finish_reason::length);

  auto agg = engine_of(tiny());
  BOOST_REQUIRE(agg->add_request(request("p", prompt, 6)));
  auto ref = test::run(*agg);
  BOOST_TEST(tokens == ref["p"].tokens, boost::test_tools::per_element());
  BOOST_TEST(tokens == mocker::continuation(prompt, 6), boost::test_tools::per_element());
  BOOST_TEST(used_blocks(*b) == 0u);
  BOOST_TEST(b->sched().kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(a_local_prefix_hit_is_not_transferred) {
  auto a = engine_of(tiny());
  auto b = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65);
  (void)prefill(*a, "x", iota_tokens(5, 200));
  const auto r = result_of(prefill(*a, "p", prompt)); // 2 3 4
  // B already computed the prompt's first 8 tokens (blocks 0 1), then freed them.
  ids shared(prompt.begin(), prompt.begin() + 8);
  shared.push_back(7);
  BOOST_REQUIRE(b->add_request(request("warm", shared, 1)));
  (void)test::run(*b);
  BOOST_TEST(b->sched().kv().pool().free_queue().front() == 2u);

  BOOST_REQUIRE(b->add_request(decode_request("p", prompt, 4, r)));
  auto pulls = b->pending_transfers();
  BOOST_REQUIRE_EQUAL(pulls.size(), 1u);
  BOOST_TEST(pulls[0].source_block_ids == (ids{4}), boost::test_tools::per_element());
  BOOST_TEST(pulls[0].destination_block_ids == (ids{2}), boost::test_tools::per_element());
  BOOST_TEST(used_blocks(*b) == 3u);
  BOOST_TEST(b->complete_transfer("p", true));
  auto out = test::run(*b);
  BOOST_TEST(out["p"].cached_tokens == 8u);
  BOOST_TEST(out["p"].tokens == mocker::continuation(prompt, 4), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_failed_transfer_falls_back_to_local_prefill_with_the_same_tokens) {
  auto a = engine_of(tiny());
  auto b = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65);
  const auto r = result_of(prefill(*a, "p", prompt));
  BOOST_REQUIRE(b->add_request(decode_request("p", prompt, 5, r)));
  BOOST_REQUIRE_EQUAL(b->pending_transfers().size(), 1u);
  BOOST_TEST(b->load_metrics().active_prefill_tokens == 0u);
  BOOST_TEST(b->complete_transfer("p", false));
  BOOST_TEST(!b->complete_transfer("p", true)); // no longer waiting for KV
  BOOST_TEST(b->has_work());
  BOOST_TEST(b->load_metrics().active_prefill_tokens == 10u);
  BOOST_TEST(b->load_metrics().num_running == 1u);
  // It keeps its blocks: the local prefill writes into the same three.
  BOOST_TEST(used_blocks(*b) == 3u);
  auto first = b->step();
  BOOST_REQUIRE(first);
  BOOST_REQUIRE_EQUAL(first->outputs.size(), 1u);
  BOOST_TEST(first->num_tokens == 10u); // the whole prompt, computed here
  BOOST_TEST(first->outputs[0].output.token_ids == (ids{r.first_token}), boost::test_tools::per_element());
  auto rest = test::run(*b);
  ids tokens = first->outputs[0].output.token_ids;
  tokens.insert(tokens.end(), rest["p"].tokens.begin(), rest["p"].tokens.end());
  BOOST_TEST(tokens == mocker::continuation(prompt, 5), boost::test_tools::per_element());
  BOOST_TEST(rest["p"].finish == finish_reason::length);
  BOOST_TEST(used_blocks(*b) == 0u);
}

BOOST_AUTO_TEST_CASE(an_abort_while_waiting_for_kv_drops_the_pull_or_keeps_blocks_until_it_ends) {
  auto a = engine_of(tiny());
  auto b = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65);
  const auto r = result_of(prefill(*a, "p", prompt));
  // Aborted before its pull was taken: the pull is gone too.
  BOOST_REQUIRE(b->add_request(decode_request("early", prompt, 5, r)));
  BOOST_TEST(b->abort("early"));
  BOOST_TEST(b->pending_transfers().empty());
  BOOST_TEST(used_blocks(*b) == 0u);
  // Aborted while its transfer runs: the blocks stay in use (a push may still
  // write into them) until the transfer ends, whose completion is refused.
  BOOST_REQUIRE(b->add_request(decode_request("late", prompt, 5, r)));
  BOOST_REQUIRE_EQUAL(b->pending_transfers().size(), 1u);
  BOOST_TEST(used_blocks(*b) == 3u);
  BOOST_TEST(b->abort("late"));
  BOOST_TEST(used_blocks(*b) == 3u);
  BOOST_TEST(!b->complete_transfer("late", true));
  BOOST_TEST(used_blocks(*b) == 0u);
  BOOST_TEST(!b->complete_transfer("never-seen", false));
  auto out = test::run(*b);
  BOOST_TEST(out["early"].finish == finish_reason::cancelled);
  BOOST_TEST(out["late"].finish == finish_reason::cancelled);
  BOOST_TEST(out["late"].tokens.empty());
  BOOST_TEST(b->sched().kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(a_decode_request_waits_for_blocks_like_any_request) {
  auto b = engine_of(tiny(4)); // 4 blocks
  auto a = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65);
  const auto r = result_of(prefill(*a, "p", prompt));
  BOOST_REQUIRE(b->add_request(request("busy", iota_tokens(9, 100), 2))); // 3 blocks: 0 1 2
  auto s1 = b->step();
  BOOST_REQUIRE(s1);
  BOOST_REQUIRE(b->add_request(decode_request("p", prompt, 3, r))); // needs 3; 1 is free
  BOOST_TEST(b->pending_transfers().empty());
  BOOST_TEST(b->sched().num_waiting() == 1u);
  auto out = test::run(*b); // "busy" finishes; the next step admits "p"
  BOOST_TEST(out["busy"].finish == finish_reason::length);
  BOOST_TEST(b->sched().num_waiting_for_kv() == 1u);
  auto pulls = b->pending_transfers();
  BOOST_REQUIRE_EQUAL(pulls.size(), 1u);
  // Free queue was [2 3 1 0] (busy's uncached tail first, cached 1 0 last).
  BOOST_TEST(pulls[0].destination_block_ids == (ids{2, 3, 1}), boost::test_tools::per_element());
  BOOST_TEST(pulls[0].source_block_ids == r.block_ids, boost::test_tools::per_element());
  BOOST_TEST(b->complete_transfer("p", true));
  out = test::run(*b);
  BOOST_TEST(out["p"].tokens == mocker::continuation(prompt, 3), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(max_tokens_counts_the_first_token) {
  auto a = engine_of(tiny());
  auto b = engine_of(tiny());
  const ids prompt = iota_tokens(7, 65);
  const auto r = result_of(prefill(*a, "p", prompt));
  BOOST_REQUIRE(b->add_request(decode_request("p", prompt, 1, r)));
  BOOST_REQUIRE_EQUAL(b->pending_transfers().size(), 1u);
  BOOST_TEST(b->complete_transfer("p", true));
  // Finished at once: blocks freed, the full one kept in the prefix cache.
  BOOST_TEST(used_blocks(*b) == 0u);
  BOOST_TEST(b->sched().kv().pool().num_cached_blocks() == 1u);
  auto out = test::run(*b);
  BOOST_TEST(out["p"].chunks == 1u);
  BOOST_TEST(out["p"].tokens == (ids{r.first_token}), boost::test_tools::per_element());
  BOOST_TEST(out["p"].finish == finish_reason::length);
  BOOST_TEST(used_blocks(*b) == 0u);
}

BOOST_AUTO_TEST_CASE(a_layout_or_block_size_mismatch_prefills_locally) {
  auto a = engine_of(tiny());
  const ids prompt = iota_tokens(10, 65);
  const auto r = result_of(prefill(*a, "p", prompt));
  auto other_heads = tiny();
  other_heads.kv_num_heads = 4;
  auto other_block = tiny();
  other_block.block_size = 8;
  for (const auto& cfg : {other_heads, other_block}) {
    auto b = engine_of(cfg);
    BOOST_REQUIRE(b->add_request(decode_request("p", prompt, 4, r)));
    BOOST_TEST(b->pending_transfers().empty());
    BOOST_TEST(b->sched().num_waiting_for_kv() == 0u);
    auto out = test::run(*b);
    BOOST_TEST(out["p"].tokens == mocker::continuation(prompt, 4), boost::test_tools::per_element());
    BOOST_TEST(out["p"].finish == finish_reason::length);
  }
  // A result that does not cover the prompt is refused the same way.
  auto b = engine_of(tiny());
  auto wrong = r;
  wrong.block_ids.pop_back();
  BOOST_REQUIRE(b->add_request(decode_request("short", prompt, 2, wrong)));
  ids longer = prompt;
  longer.push_back(1);
  BOOST_REQUIRE(b->add_request(decode_request("longer", longer, 2, r)));
  auto no_result = request("none", prompt, 2);
  no_result.disagg = protocol::encode(protocol::disagg_params{protocol::disagg_role::decode, std::nullopt});
  BOOST_REQUIRE(b->add_request(no_result));
  BOOST_TEST(b->pending_transfers().empty());
  auto out = test::run(*b);
  BOOST_TEST(out["short"].tokens == mocker::continuation(prompt, 2), boost::test_tools::per_element());
  BOOST_TEST(out["longer"].tokens == mocker::continuation(longer, 2), boost::test_tools::per_element());
  BOOST_TEST(out["none"].tokens == mocker::continuation(prompt, 2), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
