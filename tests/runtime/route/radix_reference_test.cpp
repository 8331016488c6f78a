// Differential test: radix_index against a naive model that stores, per worker,
// every held prefix (as its list of tokens hashes) under its external hash.
// Seeded random events over a tiny alphabet, so branches, shared prefixes,
// renames, conflicts and mid-chain removals all happen.
#include "runtime/route/radix_index.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>

using namespace dynamo;
using namespace dynamo::route;

namespace {

using prefix = std::vector<uint64_t>;

/// The model: worker -> (external hash -> held prefix).
struct reference {
  std::map<worker_key, std::map<uint64_t, prefix>> held;

  static bool starts_with(const prefix& p, const prefix& head) {
    return p.size() >= head.size() && std::equal(head.begin(), head.end(), p.begin());
  }

  apply_status store(const worker_key& w, const protocol::kv_event& ev) {
    std::vector<uint64_t> all;
    for (const auto& b : ev.blocks)
      all.push_back(b.block_hash);
    if (ev.parent_hash)
      all.push_back(*ev.parent_hash);
    std::sort(all.begin(), all.end());
    if (std::adjacent_find(all.begin(), all.end()) != all.end())
      return apply_status::invalid_block;
    auto& mine = held[w];
    prefix p;
    if (ev.parent_hash) {
      auto it = mine.find(*ev.parent_hash);
      if (it == mine.end())
        return apply_status::parent_block_not_found;
      p = it->second;
    }
    for (const auto& b : ev.blocks) {
      p.push_back(b.tokens_hash);
      auto it = mine.find(b.block_hash);
      if (it != mine.end() && it->second != p)
        return apply_status::invalid_block;
      std::erase_if(mine, [&](const auto& kv) { return kv.second == p; }); // rename
      mine[b.block_hash] = p;
    }
    return apply_status::ok;
  }

  apply_status remove(const worker_key& w, const protocol::kv_event& ev) {
    auto& mine = held[w];
    apply_status status = apply_status::ok;
    std::vector<prefix> doomed;
    for (uint64_t h : ev.removed_hashes) {
      auto it = mine.find(h);
      if (it == mine.end())
        status = apply_status::block_not_found;
      else
        doomed.push_back(it->second);
    }
    std::sort(doomed.begin(), doomed.end(),
              [](const prefix& a, const prefix& b) { return a.size() > b.size(); });
    for (const prefix& d : doomed) {
      bool present = false;
      for (const auto& kv : mine)
        present = present || kv.second == d;
      if (!present) {
        status = apply_status::block_not_found; // listed twice
        continue;
      }
      std::erase_if(mine, [&](const auto& kv) { return starts_with(kv.second, d); });
    }
    return status;
  }

  uint32_t score(const worker_key& w, const prefix& q) const {
    auto it = held.find(w);
    if (it == held.end())
      return 0;
    std::set<prefix> prefixes;
    for (const auto& kv : it->second)
      prefixes.insert(kv.second);
    uint32_t n = 0;
    while (n < q.size() && prefixes.contains(prefix(q.begin(), q.begin() + n + 1)))
      ++n;
    return n;
  }

  size_t nodes() const {
    std::set<prefix> all;
    for (const auto& [w, mine] : held)
      for (const auto& kv : mine)
        all.insert(kv.second);
    return all.size();
  }
};

/// A random event of worker `w`, built against what the model says it holds.
protocol::router_event random_event(std::mt19937_64& rng, const worker_key& w,
                                    const reference& ref) {
  protocol::router_event ev;
  ev.worker_id = w.worker_id;
  ev.event.dp_rank = w.dp_rank;
  auto it = ref.held.find(w);
  std::vector<std::pair<uint64_t, prefix>> mine;
  if (it != ref.held.end())
    mine.assign(it->second.begin(), it->second.end());
  uint64_t roll = rng() % 100;
  if (roll < 4) {
    ev.event.kind = protocol::kv_event_kind::cleared;
  } else if (roll < 30 && !mine.empty()) {
    ev.event.kind = protocol::kv_event_kind::removed;
    for (uint64_t n = 1 + rng() % 3; n > 0; --n)
      ev.event.removed_hashes.push_back(rng() % 8 == 0 ? rng() : mine[rng() % mine.size()].first);
  } else {
    ev.event.kind = protocol::kv_event_kind::stored;
    prefix p;
    if (!mine.empty() && rng() % 3 != 0) {
      const auto& [ext, pre] = mine[rng() % mine.size()];
      ev.event.parent_hash = rng() % 16 == 0 ? rng() % 1000 : ext; // sometimes unknown
      p = pre;
    }
    for (uint64_t n = 1 + rng() % 3; n > 0; --n) {
      p.push_back(1 + rng() % 3); // tiny alphabet: many shared prefixes
      uint64_t ext = kv::sequence_hashes(p).back();
      if (rng() % 10 == 0)
        ext = 1000 + rng() % 50; // a non-deterministic engine: renames and conflicts
      ev.event.blocks.push_back({ext, p.back()});
    }
  }
  return ev;
}

/// Runs `steps` random events of `workers` per seed through the index and the
/// model; after each one, the statuses, sizes and scores must agree and the
/// index's structure must be consistent.
void run_against_reference(const std::vector<worker_key>& workers, uint64_t seeds, int steps) {
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    std::mt19937_64 rng(seed);
    radix_index idx(radix_index_options{.max_blocks = 0});
    reference ref;
    for (int step = 0; step < steps; ++step) {
      const worker_key& w = workers[rng() % workers.size()];
      protocol::router_event ev = random_event(rng, w, ref);
      apply_status want = apply_status::ok;
      if (ev.event.kind == protocol::kv_event_kind::stored)
        want = ref.store(w, ev.event);
      else if (ev.event.kind == protocol::kv_event_kind::removed)
        want = ref.remove(w, ev.event);
      else
        ref.held.erase(w);
      apply_status got = idx.apply(ev);
      BOOST_REQUIRE_MESSAGE(got == want, "seed " << seed << " step " << step << ": got "
                                                 << to_string(got) << ", want " << to_string(want));
      const std::string broken = idx.check_invariants();
      BOOST_REQUIRE_MESSAGE(broken.empty(), "seed " << seed << " step " << step << ": " << broken);
      BOOST_REQUIRE_EQUAL(idx.node_count(), ref.nodes());
      for (const worker_key& x : workers) {
        auto it = ref.held.find(x);
        BOOST_REQUIRE_EQUAL(idx.tree_size(x), it == ref.held.end() ? 0u : it->second.size());
      }
      for (bool early : {false, true}) {
        prefix q;
        for (int i = 0; i < 6; ++i)
          q.push_back(1 + rng() % 3);
        auto scores = idx.find_matches(q, early);
        size_t short_scores = 0; // early exit: the last worker left may stop short
        for (const worker_key& x : workers) {
          const uint32_t want_score = ref.score(x, q);
          BOOST_REQUIRE_LE(scores.blocks_of(x), want_score);
          short_scores += scores.blocks_of(x) != want_score;
        }
        BOOST_REQUIRE_LE(short_scores, early ? 1u : 0u);
      }
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(radix_index_against_a_reference_model)

BOOST_AUTO_TEST_CASE(random_event_streams_match_the_naive_model_exactly) {
  run_against_reference({{1, 0}, {2, 0}, {2, 1}, {3, 0}}, 40, 300);
}

BOOST_AUTO_TEST_CASE(workers_past_the_sixty_four_bit_mask_match_the_model) {
  std::vector<worker_key> workers;
  for (uint64_t w = 0; w < 70; ++w)
    workers.push_back({w, 0});
  run_against_reference(workers, 4, 1500);
}

BOOST_AUTO_TEST_CASE(pruning_keeps_the_structure_consistent) {
  // The model does not prune, so only the model's events are used here (some
  // then name pruned parents); the index must stay bounded and consistent.
  const std::vector<worker_key> workers{{1, 0}, {2, 0}, {3, 0}};
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    radix_index idx(radix_index_options{.max_blocks = 24, .prune_target_ratio = 0.5});
    reference ref;
    for (int step = 0; step < 300; ++step) {
      const worker_key& w = workers[rng() % workers.size()];
      protocol::router_event ev = random_event(rng, w, ref);
      if (ev.event.kind == protocol::kv_event_kind::stored)
        (void)ref.store(w, ev.event);
      else if (ev.event.kind == protocol::kv_event_kind::removed)
        (void)ref.remove(w, ev.event);
      else
        ref.held.erase(w);
      (void)idx.apply(ev);
      const std::string broken = idx.check_invariants();
      BOOST_REQUIRE_MESSAGE(broken.empty(), "seed " << seed << " step " << step << ": " << broken);
      BOOST_REQUIRE_LE(idx.entry_count(), 24u);
    }
    BOOST_TEST(idx.pruned_entries() > 0u);
  }
}

BOOST_AUTO_TEST_SUITE_END()
