// kv_indexer against one radix_index fed the same events: with 1 to 4 event
// threads, with readers running meanwhile, through the batch entry point, and
// across a worker's removal and return. Equality is checked after flush().
#include "runtime/route/kv_indexer.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <tuple>

using namespace dynamo;
using namespace dynamo::route;
using namespace dynamo::route::test;

namespace {

/// Sequenced random events of a small fleet: stores extend a held chain over a
/// tiny alphabet (shared prefixes across workers), removals drop a chain's
/// tail, and now and then a worker clears everything.
class fleet {
public:
  explicit fleet(uint64_t seed, uint32_t workers) : rng_(seed) {
    for (uint64_t w = 0; w < workers; ++w)
      keys_.push_back({100 + w, static_cast<uint32_t>(w % 3 == 0 ? 1 : 0)});
  }

  protocol::router_event next() {
    const worker_key& w = keys_[rng_() % keys_.size()];
    auto& chains = held_[w];
    protocol::router_event ev;
    uint64_t roll = rng_() % 100;
    if (roll < 3) {
      ev.worker_id = w.worker_id;
      ev.event.dp_rank = w.dp_rank;
      ev.event.kind = protocol::kv_event_kind::cleared;
      chains.clear();
    } else if (roll < 30 && !chains.empty()) {
      size_t i = rng_() % chains.size();
      hashes chain = chains[i];
      ev = remove(w.worker_id, hashes(chain.begin(), chain.end() - 1), {chain.back()}, w.dp_rank);
      std::erase_if(chains, [&](const hashes& c) {
        return c.size() >= chain.size() && std::equal(chain.begin(), chain.end(), c.begin());
      });
    } else {
      hashes parent = chains.empty() || rng_() % 4 == 0 ? hashes{} : chains[rng_() % chains.size()];
      hashes added;
      for (uint64_t n = 1 + rng_() % 3; n > 0; --n)
        added.push_back(1 + rng_() % 3);
      ev = store(w.worker_id, parent, added, w.dp_rank);
      hashes chain = parent;
      for (uint64_t h : added) {
        chain.push_back(h);
        if (std::find(chains.begin(), chains.end(), chain) == chains.end())
          chains.push_back(chain);
      }
    }
    ev.event.event_id = next_id_[w]++;
    return ev;
  }

  hashes query() {
    hashes q;
    for (int i = 0; i < 6; ++i)
      q.push_back(1 + rng_() % 3);
    return q;
  }

  [[nodiscard]] const std::vector<worker_key>& keys() const { return keys_; }

private:
  std::mt19937_64 rng_;
  std::vector<worker_key> keys_;
  std::map<worker_key, std::vector<hashes>> held_;
  std::map<worker_key, uint64_t> next_id_;
};

using score_row = std::tuple<uint64_t, uint32_t, uint32_t, uint64_t>;

std::vector<score_row> sorted(const overlap_scores& s) {
  std::vector<score_row> out;
  for (const auto& e : s.scores)
    out.emplace_back(e.worker.worker_id, e.worker.dp_rank, e.blocks, e.tree_size);
  std::sort(out.begin(), out.end());
  return out;
}

/// After a flush, `idx` must answer exactly as `ref`, which saw the same events.
void require_same(const kv_indexer& idx, const radix_index& ref, fleet& f) {
  BOOST_REQUIRE_EQUAL(idx.check_invariants(), "");
  BOOST_REQUIRE_EQUAL(idx.entry_count(), ref.entry_count());
  BOOST_REQUIRE((idx.workers() == ref.workers()));
  for (const worker_key& w : f.keys())
    BOOST_REQUIRE_EQUAL(idx.tree_size(w), ref.tree_size(w));
  for (auto kind : {protocol::kv_event_kind::stored, protocol::kv_event_kind::removed})
    for (auto status : {apply_status::ok, apply_status::parent_block_not_found,
                        apply_status::block_not_found, apply_status::invalid_block})
      BOOST_REQUIRE_EQUAL(idx.applied(kind, status), ref.applied(kind, status));
  overlap_scores mine, theirs;
  for (int i = 0; i < 20; ++i) {
    hashes q = f.query();
    idx.find_matches(q, false, mine);
    ref.find_matches(q, false, theirs);
    BOOST_REQUIRE((sorted(mine) == sorted(theirs)));
  }
}

void run_differential(uint32_t threads, uint64_t seed, bool batched) {
  fleet f(seed, 12);
  radix_index ref(radix_index_options{.max_blocks = 0});
  kv_indexer idx(kv_indexer_options{.index = {.max_blocks = 0}, .event_threads = threads});
  BOOST_REQUIRE_EQUAL(idx.shard_count(), threads);
  std::vector<protocol::router_event> batch;
  for (int step = 1; step <= 1500; ++step) {
    protocol::router_event ev = f.next();
    (void)ref.apply(ev);
    if (batched) {
      batch.push_back(std::move(ev));
      if (batch.size() == 7) {
        idx.on_events(batch);
        batch.clear();
      }
    } else {
      idx.on_event(std::move(ev));
    }
    if (step % 250 == 0) {
      idx.on_events(batch);
      batch.clear();
      idx.flush();
      BOOST_TEST_CONTEXT("threads " << threads << " seed " << seed << " step " << step)
      require_same(idx, ref, f);
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_indexer_against_one_index)

BOOST_AUTO_TEST_CASE(sharded_application_matches_one_index) {
  for (uint32_t threads : {1u, 2u, 3u, 4u})
    for (uint64_t seed = 1; seed <= 4; ++seed)
      run_differential(threads, seed, false);
}

BOOST_AUTO_TEST_CASE(batched_submission_matches_one_index) {
  for (uint32_t threads : {1u, 4u})
    for (uint64_t seed = 5; seed <= 7; ++seed)
      run_differential(threads, seed, true);
}

// Readers run while the event threads apply: every answer must come from a
// consistent shard (no crash, invariants), and the end state is exact.
BOOST_AUTO_TEST_CASE(readers_run_alongside_the_event_threads) {
  fleet f(11, 16);
  fleet queries(12, 16);
  radix_index ref(radix_index_options{.max_blocks = 0});
  kv_indexer idx(kv_indexer_options{.index = {.max_blocks = 0}, .event_threads = 4});
  std::atomic<bool> done{false};
  std::atomic<uint64_t> reads{0};
  std::thread reader([&] {
    overlap_scores s;
    std::mt19937_64 rng(3);
    while (!done.load()) {
      hashes q;
      for (int i = 0; i < 6; ++i)
        q.push_back(1 + rng() % 3);
      idx.find_matches(q, rng() % 2 == 0, s);
      for (const auto& e : s.scores)
        if (e.blocks > q.size())
          std::abort();
      (void)idx.tree_size(worker_key{100 + rng() % 16, 0});
      reads.fetch_add(1);
    }
  });
  for (int step = 0; step < 20000; ++step) {
    protocol::router_event ev = f.next();
    (void)ref.apply(ev);
    idx.on_event(std::move(ev));
  }
  idx.flush();
  done = true;
  reader.join();
  BOOST_TEST(reads.load() > 0u);
  require_same(idx, ref, queries);
}

// A removed worker leaves its shard; when it comes back (a fresh event stream
// from id 0) it may land in another shard, and no state of its old life is left.
BOOST_AUTO_TEST_CASE(a_worker_that_leaves_and_returns_starts_afresh) {
  for (uint32_t threads : {1u, 4u}) {
    kv_indexer idx(kv_indexer_options{.index = {.max_blocks = 0}, .event_threads = threads});
    for (uint64_t w = 1; w <= 5; ++w)
      idx.on_event(store(w, {}, {1, 2, 3}));
    idx.remove_worker(3);
    // Other workers join meanwhile: the least loaded shard is no longer 3's.
    idx.on_event(store(6, {}, {1}));
    idx.on_event(store(3, {}, {4, 5}));
    idx.flush();
    BOOST_TEST_CONTEXT("threads " << threads) {
      BOOST_TEST(idx.check_invariants() == "");
      BOOST_TEST(idx.tree_size(worker_key{3, 0}) == 2u);
      BOOST_TEST(!idx.holds(worker_key{3, 0}, ext({1, 2, 3})));
      BOOST_TEST(idx.holds(worker_key{3, 0}, ext({4, 5})));
      BOOST_TEST(idx.entry_count() == 4 * 3 + 1 + 2u);
      BOOST_TEST(idx.last_event_id(worker_key{3, 0}).value_or(99) == 0u);
    }
  }
}

// A gap on an event thread reaches the sink; events after it wait for the replay.
BOOST_AUTO_TEST_CASE(gaps_are_reported_from_the_event_threads) {
  resync_inbox inbox;
  kv_indexer idx(kv_indexer_options{.event_threads = 3}, inbox.sink());
  idx.on_event(store(7, {}, {1}, 0, 0));
  idx.on_event(store(7, {1}, {2}, 0, 3)); // 1 and 2 lost
  idx.add_worker(worker_key{8, 0});
  idx.flush();
  std::vector<protocol::kv_resync_request> asks;
  while (auto a = inbox.take())
    asks.push_back(*a);
  std::sort(asks.begin(), asks.end(),
            [](const auto& a, const auto& b) { return a.worker_id < b.worker_id; });
  BOOST_REQUIRE_EQUAL(asks.size(), 2u);
  BOOST_TEST(asks[0].worker_id == 7u);
  BOOST_TEST(asks[0].from_id == 1u);
  BOOST_TEST(asks[0].to_id == 2u);
  BOOST_TEST(asks[1].worker_id == 8u); // a new worker's full dump
  BOOST_TEST(asks[1].to_id == UINT64_MAX);
  BOOST_TEST(idx.tree_size(worker_key{7, 0}) == 1u); // the held event waits
  protocol::kv_replay replay;
  replay.worker_id = 7;
  replay.events = {store(7, {1}, {5}, 0, 1).event, store(7, {1, 5}, {6}, 0, 2).event};
  replay.last_event_id = 2;
  idx.on_replay(replay);
  idx.flush();
  BOOST_TEST(!inbox.take());
  BOOST_TEST(idx.tree_size(worker_key{7, 0}) == 4u);
  BOOST_TEST(idx.last_event_id(worker_key{7, 0}).value_or(99) == 3u);
}

// max_blocks is shared out across the shards: the whole stays under it.
BOOST_AUTO_TEST_CASE(the_memory_bound_holds_across_shards) {
  kv_indexer idx(kv_indexer_options{.index = {.max_blocks = 400, .prune_target_ratio = 0.5},
                                    .event_threads = 4});
  for (uint64_t w = 1; w <= 8; ++w) {
    hashes chain;
    for (uint64_t i = 0; i < 60; ++i) {
      idx.on_event(store(w, chain, {w * 1000 + i}, 0, i));
      chain.push_back(w * 1000 + i);
    }
  }
  idx.flush();
  BOOST_TEST(idx.entry_count() <= 400u);
  BOOST_TEST(idx.pruned_entries() > 0u);
  BOOST_TEST(idx.entry_count() + idx.pruned_entries() == 8 * 60u);
  BOOST_TEST(idx.check_invariants() == "");
}

BOOST_AUTO_TEST_SUITE_END()
