#include "runtime/route/event_sequencer.hpp"

#include "runtime/route/kv_router.hpp"
#include "runtime/route/worker_event_buffer.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <array>
#include <random>

using namespace dynamo;
using namespace dynamo::route;
using namespace dynamo::route::test;

namespace {

const worker_key w5{5, 0};

protocol::kv_replay range_replay(uint64_t worker, std::vector<protocol::router_event> evs) {
  protocol::kv_replay r;
  r.worker_id = worker;
  for (auto& e : evs)
    r.events.push_back(e.event);
  if (!r.events.empty())
    r.last_event_id = r.events.back().event_id;
  return r;
}

/// A dump as sorted (parent, block, tokens hash) triples: independent of the
/// order in which chains are listed.
std::vector<std::array<uint64_t, 3>> canonical(const std::vector<protocol::kv_event>& dump) {
  std::vector<std::array<uint64_t, 3>> out;
  for (const auto& ev : dump) {
    uint64_t parent = ev.parent_hash.value_or(0);
    for (const auto& b : ev.blocks) {
      out.push_back({parent, b.block_hash, b.tokens_hash});
      parent = b.block_hash;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

kv_router_config with_event_threads(uint32_t n) {
  kv_router_config c;
  c.router_event_threads = n;
  return c;
}

/// Answers every resync request the router has sent, from `worker`'s buffer,
/// until none is left (each answer may open another).
void answer_resyncs(kv_router& router, resync_inbox& inbox, const worker_event_buffer& worker) {
  router.flush();
  while (auto ask = inbox.take()) {
    router.on_replay(worker.query(*ask));
    router.flush();
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(event_sequencer_gaps)

BOOST_AUTO_TEST_CASE(consecutive_ids_apply_and_repeats_are_duplicates) {
  event_sequencer seq;
  BOOST_TEST((seq.on_event(with_id(store(5, {}, {1}), 0)).verdict == sequence_verdict::apply));
  BOOST_TEST((seq.on_event(with_id(store(5, {1}, {2}), 1)).verdict == sequence_verdict::apply));
  auto again = seq.on_event(with_id(store(5, {1}, {2}), 1));
  BOOST_TEST((again.verdict == sequence_verdict::duplicate));
  BOOST_TEST(!again.resync);
  BOOST_TEST(*seq.last_event_id(w5) == 1u);
}

BOOST_AUTO_TEST_CASE(a_gap_holds_later_events_and_requests_the_missing_range) {
  event_sequencer seq;
  (void)seq.on_event(with_id(store(5, {}, {1}), 0));
  auto step = seq.on_event(with_id(store(5, {}, {9}), 4));
  BOOST_TEST((step.verdict == sequence_verdict::held));
  BOOST_REQUIRE(step.resync);
  BOOST_TEST(step.resync->worker_id == 5u);
  BOOST_TEST(step.resync->from_id == 1u);
  BOOST_TEST(step.resync->to_id == 3u);
  auto next = seq.on_event(with_id(store(5, {}, {10}), 5));
  BOOST_TEST((next.verdict == sequence_verdict::held));
  BOOST_TEST(!next.resync); // one request per gap
  BOOST_TEST(seq.pending(w5) == 2u);

  auto rec = seq.on_replay(range_replay(5, {with_id(store(5, {1}, {2}), 1),
                                            with_id(store(5, {1, 2}, {3}), 2),
                                            with_id(store(5, {1, 2, 3}, {4}), 3)}));
  BOOST_TEST(!rec.replace);
  BOOST_TEST(!rec.resync);
  BOOST_REQUIRE_EQUAL(rec.ready.size(), 5u);
  for (uint64_t i = 0; i < 5; ++i)
    BOOST_TEST(rec.ready[i].event.event_id == i + 1);
  BOOST_TEST(!seq.awaiting(w5));
  BOOST_TEST(*seq.last_event_id(w5) == 5u);
}

BOOST_AUTO_TEST_CASE(a_worker_first_seen_mid_stream_is_asked_from_zero) {
  event_sequencer seq;
  auto step = seq.on_event(with_id(store(5, {}, {1}), 7));
  BOOST_REQUIRE(step.resync);
  BOOST_TEST(step.resync->from_id == 0u);
  BOOST_TEST(step.resync->to_id == 6u);
}

BOOST_AUTO_TEST_CASE(a_partial_replay_asks_again_for_what_is_still_missing) {
  event_sequencer seq;
  (void)seq.on_event(with_id(store(5, {}, {1}), 0));
  (void)seq.on_event(with_id(store(5, {}, {2}), 4));
  auto rec = seq.on_replay(range_replay(5, {with_id(store(5, {}, {3}), 1)}));
  BOOST_TEST(rec.ready.size() == 1u);
  BOOST_REQUIRE(rec.resync);
  BOOST_TEST(rec.resync->from_id == 2u);
  BOOST_TEST(rec.resync->to_id == 3u);
}

BOOST_AUTO_TEST_CASE(a_dump_replaces_state_then_releases_newer_held_events) {
  event_sequencer seq;
  (void)seq.on_event(with_id(store(5, {}, {1}), 0));
  (void)seq.on_event(with_id(store(5, {}, {2}), 2000));
  (void)seq.on_event(with_id(store(5, {}, {3}), 2001));
  protocol::kv_replay dump;
  dump.worker_id = 5;
  dump.is_dump = true;
  dump.last_event_id = 2000;
  dump.events.push_back(store(5, {}, {2}).event);
  auto rec = seq.on_replay(dump);
  BOOST_TEST(rec.replace);
  BOOST_TEST(rec.dump.size() == 1u);
  BOOST_REQUIRE_EQUAL(rec.ready.size(), 1u); // 2000 is inside the dump
  BOOST_TEST(rec.ready[0].event.event_id == 2001u);
  BOOST_TEST(!seq.awaiting(w5));
}

BOOST_AUTO_TEST_CASE(too_many_held_events_turn_into_a_full_dump_request) {
  event_sequencer seq(3);
  (void)seq.on_event(with_id(store(5, {}, {1}), 0));
  for (uint64_t id = 10; id < 13; ++id)
    (void)seq.on_event(with_id(store(5, {}, {id}), id));
  auto step = seq.on_event(with_id(store(5, {}, {13}), 13));
  BOOST_REQUIRE(step.resync);
  BOOST_TEST(step.resync->from_id == 0u);
  BOOST_TEST(step.resync->to_id == UINT64_MAX);
  BOOST_TEST(seq.pending(w5) == 1u);
}

BOOST_AUTO_TEST_CASE(a_replay_after_the_gap_closed_is_ignored) {
  event_sequencer seq;
  protocol::kv_replay dump;
  dump.worker_id = 5;
  dump.is_dump = true;
  auto rec = seq.on_replay(dump);
  BOOST_TEST(!rec.replace);
  BOOST_TEST(rec.ready.empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(worker_event_buffer_queries)

BOOST_AUTO_TEST_CASE(a_range_inside_the_ring_returns_exactly_those_events) {
  worker_event_buffer buf(w5, 4);
  hashes chain;
  for (uint64_t id = 0; id < 6; ++id) {
    BOOST_REQUIRE(buf.record(with_id(store(5, chain, {id + 1}), id).event));
    chain.push_back(id + 1);
  }
  BOOST_TEST(*buf.oldest_buffered_id() == 2u);
  auto r = buf.query(3, 4);
  BOOST_TEST(!r.is_dump);
  BOOST_REQUIRE_EQUAL(r.events.size(), 2u);
  BOOST_TEST(r.events[0].event_id == 3u);
  BOOST_TEST(r.events[1].event_id == 4u);
  BOOST_TEST(*r.last_event_id == 5u);
  BOOST_TEST(buf.query(4, UINT64_MAX).events.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_range_older_than_the_ring_returns_a_dump) {
  worker_event_buffer buf(w5, 4);
  hashes chain;
  for (uint64_t id = 0; id < 6; ++id) {
    BOOST_REQUIRE(buf.record(with_id(store(5, chain, {id + 1}), id).event));
    chain.push_back(id + 1);
  }
  BOOST_REQUIRE(buf.record(with_id(remove(5, {1, 2, 3, 4, 5}, {6}), 6).event));
  auto r = buf.query(1, 6);
  BOOST_TEST(r.is_dump);
  BOOST_TEST(*r.last_event_id == 6u);
  BOOST_REQUIRE_EQUAL(r.events.size(), 1u);
  BOOST_TEST(r.events[0].blocks.size() == 5u);
}

BOOST_AUTO_TEST_CASE(non_consecutive_ids_are_refused) {
  worker_event_buffer buf(w5);
  BOOST_REQUIRE(buf.record(with_id(store(5, {}, {1}), 10).event));
  auto r = buf.record(with_id(store(5, {}, {2}), 12).event);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  BOOST_TEST(buf.buffered() == 1u);
}

// The router misses events older than the worker's ring: it asks, receives a
// dump, and ends with exactly the worker's blocks.
BOOST_AUTO_TEST_CASE(a_router_that_missed_events_converges_to_the_worker_state) {
 for (uint32_t threads : {1u, 4u}) {
  BOOST_TEST_CONTEXT("event threads " << threads) {
  worker_event_buffer worker(w5, 4);
  resync_inbox inbox;
  kv_router router(with_event_threads(threads), 16, router_mode::kv, 1, inbox.sink());
  std::vector<protocol::router_event> published;
  hashes chain;
  for (uint64_t id = 0; id < 10; ++id) {
    auto ev = id == 7 ? with_id(remove(5, {1, 2, 3, 4}, {5}), id)
                      : with_id(store(5, chain, {id + 1}), id);
    if (id == 7)
      chain.resize(4);
    else
      chain.push_back(id + 1);
    BOOST_REQUIRE(worker.record(ev.event));
    published.push_back(ev);
  }
  router.on_event(published[0]);
  router.on_event(published[1]);
  router.flush();
  BOOST_TEST(!inbox.take());
  router.on_event(published[9]); // 2..8 lost
  router.flush();
  auto ask = inbox.take();
  BOOST_REQUIRE(ask);
  BOOST_TEST(ask->from_id == 2u);
  BOOST_TEST(ask->to_id == 8u);
  auto answer = worker.query(*ask);
  BOOST_TEST(answer.is_dump); // 2 fell out of the 4-event ring
  router.on_replay(answer);
  router.flush();
  BOOST_TEST(!inbox.take());
  const kv_indexer& idx = router.index();
  BOOST_TEST(idx.tree_size(w5) == worker.blocks().tree_size(w5));
  overlap_scores mine, theirs;
  for (const hashes& q : {hashes{1, 2, 3, 4, 5}, hashes{1, 2, 3, 4, 9, 10}}) {
    idx.find_matches(q, false, mine);
    worker.blocks().find_matches(q, false, theirs);
    BOOST_TEST(mine.blocks_of(w5) == theirs.blocks_of(w5));
  }
  idx.find_matches(hashes{1, 2, 3, 4, 5}, false, mine);
  BOOST_TEST(mine.blocks_of(w5) == 4u);
  idx.find_matches(hashes{1, 2, 3, 4, 9, 10}, false, mine);
  BOOST_TEST(mine.blocks_of(w5) == 6u);
  }
 }
}

// Random events, random losses (and late duplicates) on the way to the router,
// resyncs answered from a small ring: the router always ends with exactly the
// worker's blocks.
BOOST_AUTO_TEST_CASE(lossy_delivery_always_converges_to_the_worker_state) {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    worker_event_buffer worker(w5, 8);
    resync_inbox inbox;
    kv_router router(with_event_threads(seed % 2 == 0 ? 4 : 1), 16, router_mode::kv, seed,
                     inbox.sink());
    std::vector<hashes> held; // chains the worker stored, for parents and removals
    uint64_t next_local = 1;
    for (uint64_t id = 0; id < 400; ++id) {
      protocol::router_event ev;
      if (!held.empty() && rng() % 3 == 0) {
        hashes chain = held[rng() % held.size()];
        ev = remove(5, hashes(chain.begin(), chain.end() - 1), {chain.back()});
      } else {
        hashes parent = held.empty() || rng() % 4 == 0 ? hashes{} : held[rng() % held.size()];
        hashes added{next_local++};
        hashes chain = parent;
        chain.push_back(added[0]);
        held.push_back(chain);
        ev = store(5, parent, added);
      }
      ev.event.event_id = id;
      BOOST_REQUIRE(worker.record(ev.event));
      if (rng() % 5 == 0)
        continue; // lost on the event plane
      bool twice = rng() % 7 == 0;
      router.on_event(ev);
      if (twice)
        router.on_event(ev); // delivered twice
      answer_resyncs(router, inbox, worker);
    }
    // A final event closes any trailing gap.
    auto last = with_id(store(5, {}, {next_local}), 400);
    BOOST_REQUIRE(worker.record(last.event));
    router.on_event(last);
    answer_resyncs(router, inbox, worker);
    BOOST_TEST(router.index().tree_size(w5) == worker.blocks().tree_size(w5));
    auto mine = canonical(router.index().dump_worker(w5, 0));
    BOOST_TEST(mine.size() == worker.blocks().tree_size(w5));
    BOOST_TEST((mine == canonical(worker.blocks().dump_worker(w5, 0))));
  }
}

BOOST_AUTO_TEST_SUITE_END()
