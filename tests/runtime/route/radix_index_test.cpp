#include "runtime/route/radix_index.hpp"

#include "runtime/protocol/codec.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <numeric>

using namespace dynamo;
using namespace dynamo::route;
using namespace dynamo::route::test;
using protocol::kv_event_kind;

namespace {

const worker_key w0{0, 0};
const worker_key w1{1, 0};

uint32_t score(const radix_index& idx, const hashes& query, const worker_key& w) {
  return idx.find_matches(query).blocks_of(w);
}

void require_ok(radix_index& idx, const protocol::router_event& ev) {
  BOOST_REQUIRE_EQUAL(to_string(idx.apply(ev)), "ok");
}

} // namespace

BOOST_AUTO_TEST_SUITE(radix_index_semantics)

BOOST_AUTO_TEST_CASE(store_then_find_scores_every_block) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  auto s = idx.find_matches(hashes{1, 2, 3});
  BOOST_REQUIRE_EQUAL(s.scores.size(), 1u);
  BOOST_TEST(s.scores[0].worker == w0);
  BOOST_TEST(s.scores[0].blocks == 3u);
  BOOST_TEST(s.scores[0].tree_size == 3u);
  BOOST_TEST(idx.node_count() == 3u);
  BOOST_TEST(idx.entry_count() == 3u);
}

BOOST_AUTO_TEST_CASE(partial_match_stops_at_first_unknown_block) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  BOOST_TEST(score(idx, {1, 2, 999}, w0) == 2u);
  BOOST_TEST(score(idx, {999, 1, 2}, w0) == 0u);
  BOOST_TEST(idx.find_matches(hashes{}).scores.empty());
}

BOOST_AUTO_TEST_CASE(shared_prefix_scores_each_worker_separately) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2}));
  require_ok(idx, store(1, {}, {1, 3}));
  BOOST_TEST(score(idx, {1}, w0) == 1u);
  BOOST_TEST(score(idx, {1}, w1) == 1u);
  BOOST_TEST(score(idx, {1, 2}, w0) == 2u);
  BOOST_TEST(score(idx, {1, 2}, w1) == 1u);
  BOOST_TEST(idx.node_count() == 3u); // 1 shared, 2 and 3
  BOOST_TEST(idx.entry_count() == 4u);
}

BOOST_AUTO_TEST_CASE(continuation_store_extends_the_parent_chain) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, store(0, {1, 2, 3}, {4, 5}));
  BOOST_TEST(score(idx, {1, 2, 3, 4, 5}, w0) == 5u);
  BOOST_TEST(idx.tree_size(w0) == 5u);
}

BOOST_AUTO_TEST_CASE(removing_all_blocks_frees_every_node) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, remove(0, {}, {1, 2, 3}));
  BOOST_TEST(idx.find_matches(hashes{1, 2, 3}).scores.empty());
  BOOST_TEST(idx.node_count() == 0u);
  BOOST_TEST(idx.entry_count() == 0u);
  BOOST_TEST(idx.workers().empty());
}

BOOST_AUTO_TEST_CASE(removing_root_first_in_one_event_is_not_an_error) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  auto ev = remove(0, {}, {1, 2, 3});
  std::swap(ev.event.removed_hashes[1], ev.event.removed_hashes[2]); // root, leaf, middle
  require_ok(idx, ev);
  BOOST_TEST(idx.node_count() == 0u);
}

// Dynamo's test_mid_edge_remove_repairs_lookup_and_restores_explicitly.
BOOST_AUTO_TEST_CASE(remove_mid_chain_drops_descendants_and_stores_restore_them) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3, 4, 5}));
  require_ok(idx, remove(0, {1, 2}, {3}));
  BOOST_TEST(score(idx, {1, 2, 3, 4, 5}, w0) == 2u);
  BOOST_TEST(idx.tree_size(w0) == 2u);
  BOOST_TEST(idx.node_count() == 2u);
  require_ok(idx, store(0, {1, 2}, {3}));
  BOOST_TEST(score(idx, {1, 2, 3, 4, 5}, w0) == 3u);
  BOOST_TEST(idx.tree_size(w0) == 3u);
  require_ok(idx, store(0, {1, 2, 3}, {4, 5}));
  BOOST_TEST(score(idx, {1, 2, 3, 4, 5}, w0) == 5u);
  BOOST_TEST(idx.tree_size(w0) == 5u);
}

BOOST_AUTO_TEST_CASE(remove_mid_chain_keeps_other_workers_descendants) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, store(1, {}, {1, 2, 3}));
  require_ok(idx, remove(0, {1}, {2}));
  BOOST_TEST(score(idx, {1, 2, 3}, w0) == 1u);
  BOOST_TEST(score(idx, {1, 2, 3}, w1) == 3u);
  BOOST_TEST(idx.node_count() == 3u);
  BOOST_TEST(idx.entry_count() == 4u);
}

BOOST_AUTO_TEST_CASE(remove_worker_keeps_the_other_workers) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, store(1, {}, {1, 2, 3}));
  BOOST_TEST(idx.remove_worker(uint64_t{0}) == 3u);
  auto s = idx.find_matches(hashes{1, 2, 3});
  BOOST_REQUIRE_EQUAL(s.scores.size(), 1u);
  BOOST_TEST(s.scores[0].worker == w1);
  BOOST_TEST(s.scores[0].blocks == 3u);
  BOOST_TEST(idx.remove_worker(uint64_t{1}) == 3u);
  BOOST_TEST(idx.node_count() == 0u);
}

BOOST_AUTO_TEST_CASE(remove_worker_by_id_covers_every_dp_rank_but_cleared_only_one) {
  radix_index idx;
  require_ok(idx, store(7, {}, {1, 2}, 0));
  require_ok(idx, store(7, {}, {1, 2}, 1));
  require_ok(idx, store(7, {}, {1, 2}, 2));
  require_ok(idx, cleared(7, 1));
  BOOST_TEST(score(idx, {1, 2}, worker_key{7, 0}) == 2u);
  BOOST_TEST(score(idx, {1, 2}, worker_key{7, 1}) == 0u);
  BOOST_TEST(score(idx, {1, 2}, worker_key{7, 2}) == 2u);
  BOOST_TEST(idx.remove_worker(uint64_t{7}) == 4u);
  BOOST_TEST(idx.node_count() == 0u);
}

BOOST_AUTO_TEST_CASE(replaying_a_store_changes_nothing) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  auto before = idx.dump_worker(w0, 0);
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, store(0, {}, {1, 2}));
  BOOST_TEST(idx.node_count() == 3u);
  BOOST_TEST(idx.entry_count() == 3u);
  BOOST_TEST(protocol::encode(idx.dump_worker(w0, 0)) == protocol::encode(before));
}

BOOST_AUTO_TEST_CASE(replaying_a_remove_reports_block_not_found_and_changes_nothing) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, remove(0, {1, 2}, {3}));
  BOOST_TEST(to_string(idx.apply(remove(0, {1, 2}, {3}))) == "block_not_found");
  BOOST_TEST(idx.tree_size(w0) == 2u);
  BOOST_TEST(idx.applied(kv_event_kind::removed, apply_status::ok) == 1u);
  BOOST_TEST(idx.applied(kv_event_kind::removed, apply_status::block_not_found) == 1u);
}

BOOST_AUTO_TEST_CASE(store_under_unknown_parent_is_parent_block_not_found) {
  radix_index idx;
  auto r = idx.apply_event(store(0, {1, 2}, {3}));
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::not_found);
  BOOST_TEST(message_of(r.error()).starts_with("parent_block_not_found"));
  BOOST_TEST(idx.node_count() == 0u);
  BOOST_TEST(idx.workers().empty());
  BOOST_TEST(idx.applied(kv_event_kind::stored, apply_status::parent_block_not_found) == 1u);
}

// Dynamo's test_shared_prefix_branch_rejects_invalid_suffix_parent.
BOOST_AUTO_TEST_CASE(store_under_a_parent_only_another_worker_holds_is_rejected) {
  radix_index idx;
  require_ok(idx, store(1, {}, {1, 2, 3}));
  require_ok(idx, store(2, {}, {1, 2, 3}));
  require_ok(idx, store(1, {1, 2, 3}, {4, 5, 6}));
  require_ok(idx, store(2, {1, 2, 3}, {7, 8}));
  BOOST_TEST(score(idx, {1, 2, 3, 7, 8}, worker_key{1, 0}) == 3u);
  BOOST_TEST(score(idx, {1, 2, 3, 7, 8}, worker_key{2, 0}) == 5u);
  BOOST_TEST(to_string(idx.apply(store(2, {1, 2, 3, 4, 5, 6}, {9, 10}))) ==
             "parent_block_not_found");
  BOOST_TEST(score(idx, {1, 2, 3, 4, 5, 6, 9, 10}, worker_key{1, 0}) == 6u);
  BOOST_TEST(score(idx, {1, 2, 3, 4, 5, 6, 9, 10}, worker_key{2, 0}) == 3u);
}

BOOST_AUTO_TEST_CASE(a_hash_repeated_in_one_store_is_invalid_block) {
  radix_index idx;
  auto ev = store(0, {}, {1, 2});
  ev.event.blocks[1].block_hash = ev.event.blocks[0].block_hash;
  auto r = idx.apply_event(ev);
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
  BOOST_TEST(idx.node_count() == 0u);
  require_ok(idx, store(0, {}, {1}));
  auto self_parent = store(0, {1}, {2});
  self_parent.event.blocks[0].block_hash = *self_parent.event.parent_hash;
  BOOST_TEST(to_string(idx.apply(self_parent)) == "invalid_block");
}

BOOST_AUTO_TEST_CASE(one_hash_at_two_places_is_invalid_block) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2}));
  auto ev = store(0, {}, {5});
  ev.event.blocks[0].block_hash = ext({1, 2}); // already names block [1,2]
  BOOST_TEST(to_string(idx.apply(ev)) == "invalid_block");
  BOOST_TEST(idx.node_count() == 2u);
  BOOST_TEST(score(idx, {1, 2}, w0) == 2u);
}

BOOST_AUTO_TEST_CASE(workers_naming_one_block_differently_stay_separate) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2}));
  auto other = store(1, {}, {1, 2});
  other.event.blocks[0].block_hash = 1001;
  other.event.blocks[1].block_hash = 1002;
  require_ok(idx, other);
  BOOST_TEST(idx.node_count() == 2u);
  BOOST_TEST(idx.holds(w1, 1002));
  BOOST_TEST(!idx.holds(w1, ext({1, 2})));
  auto rm = remove(1, {}, {});
  rm.event.removed_hashes = {1002};
  require_ok(idx, rm);
  BOOST_TEST(score(idx, {1, 2}, w1) == 1u);
  BOOST_TEST(score(idx, {1, 2}, w0) == 2u);
  auto dump = idx.dump_worker(w1, 9);
  BOOST_REQUIRE_EQUAL(dump.size(), 1u);
  BOOST_TEST(dump[0].blocks[0].block_hash == 1001u);
}

BOOST_AUTO_TEST_CASE(dp_ranks_of_one_worker_are_separate_workers) {
  radix_index idx;
  require_ok(idx, store(3, {}, {1, 2}, 0));
  require_ok(idx, store(3, {}, {1}, 1));
  BOOST_TEST(score(idx, {1, 2}, worker_key{3, 0}) == 2u);
  BOOST_TEST(score(idx, {1, 2}, worker_key{3, 1}) == 1u);
  BOOST_TEST(idx.workers().size() == 2u);
}

BOOST_AUTO_TEST_CASE(long_sequences_match_to_full_depth) {
  radix_index idx;
  hashes chain(5000);
  std::iota(chain.begin(), chain.end(), 100u);
  require_ok(idx, store(0, {}, chain));
  hashes half(chain.begin(), chain.begin() + 2500);
  require_ok(idx, store(1, {}, half));
  BOOST_TEST(score(idx, chain, w0) == 5000u);
  BOOST_TEST(score(idx, chain, w1) == 2500u);
  // Early exit stops once one worker is left, at the end of the segment the walk
  // is in (a lower bound in general). Here that segment, blocks 2501..5000 of
  // worker 0 alone, ends the chain, so the bound is exact.
  auto early = idx.find_matches(chain, true);
  BOOST_TEST(early.blocks_of(w1) == 2500u);
  BOOST_TEST(early.blocks_of(w0) == 5000u);
  auto branch = chain;
  branch[3000] = 1; // worker 0 holds 3,000 blocks of this one
  auto early_branch = idx.find_matches(branch, true);
  BOOST_TEST(early_branch.blocks_of(w0) == 3000u);
  BOOST_TEST(idx.remove_worker(uint64_t{0}) == 5000u);
  BOOST_TEST(idx.node_count() == 2500u);
}

BOOST_AUTO_TEST_CASE(more_than_sixty_four_workers_are_tracked_exactly) {
  radix_index idx;
  for (uint64_t w = 0; w < 70; ++w) {
    hashes chain{1, 2, 3};
    chain.resize(1 + w % 3); // worker w holds 1..3 blocks
    require_ok(idx, store(w, {}, chain));
  }
  auto s = idx.find_matches(hashes{1, 2, 3});
  BOOST_REQUIRE_EQUAL(s.scores.size(), 70u);
  for (uint64_t w = 0; w < 70; ++w)
    BOOST_TEST(s.blocks_of(worker_key{w, 0}) == 1 + w % 3);
  BOOST_TEST(idx.remove_worker(uint64_t{68}) == 3u);
  BOOST_TEST(score(idx, {1, 2, 3}, worker_key{68, 0}) == 0u);
  BOOST_TEST(score(idx, {1, 2, 3}, worker_key{69, 0}) == 1u);
  BOOST_TEST(score(idx, {1, 2, 3}, worker_key{67, 0}) == 2u);
}

BOOST_AUTO_TEST_CASE(dump_and_restore_rebuild_the_same_index) {
  radix_index idx;
  require_ok(idx, store(0, {}, {1, 2, 3}));
  require_ok(idx, store(0, {1}, {4, 5}));
  require_ok(idx, store(0, {1, 4}, {6}));
  require_ok(idx, store(0, {}, {9}));
  require_ok(idx, store(1, {}, {1, 2}));
  auto dump = idx.dump_worker(w0, 42);
  BOOST_TEST(dump.size() == 4u); // chains: 1-2-3, 4-5 (or 4-6), the other, 9
  for (const auto& ev : dump)
    BOOST_TEST(ev.event_id == 42u);
  radix_index restored;
  require_ok(restored, store(0, {}, {77})); // stale state that the dump replaces
  BOOST_TEST(to_string(restored.replace_worker(w0, dump)) == "ok");
  BOOST_TEST(restored.tree_size(w0) == 7u);
  BOOST_TEST(!restored.holds(w0, ext({77})));
  for (const hashes& q : {hashes{1, 2, 3}, hashes{1, 4, 5}, hashes{1, 4, 6}, hashes{9}})
    BOOST_TEST(score(restored, q, w0) == score(idx, q, w0));
}

BOOST_AUTO_TEST_CASE(churn_leaves_no_zombie_nodes) {
  radix_index idx;
  for (uint64_t round = 0; round < 50; ++round) {
    uint64_t w = round % 4;
    hashes a{1, 2, 3 + round % 5, 10 + round};
    require_ok(idx, store(w, {}, a));
    if (round % 3 == 0)
      (void)idx.apply(remove(w, {1, 2}, {3 + round % 5}));
  }
  for (uint64_t w = 0; w < 4; ++w)
    (void)idx.remove_worker(w);
  BOOST_TEST(idx.node_count() == 0u);
  BOOST_TEST(idx.entry_count() == 0u);
  BOOST_TEST(idx.workers().empty());
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(radix_index_memory_bound)

BOOST_AUTO_TEST_CASE(past_the_bound_the_oldest_leaves_go_first_deepest_first) {
  radix_index idx(radix_index_options{.max_blocks = 10, .prune_target_ratio = 0.5});
  require_ok(idx, store(0, {}, {1, 2, 3, 4}));    // oldest
  require_ok(idx, store(1, {}, {11, 12, 13, 14}));
  BOOST_TEST(idx.pruned_entries() == 0u);
  require_ok(idx, store(2, {}, {21, 22, 23, 24})); // 12 entries > 10: prune to 5
  BOOST_TEST(idx.entry_count() == 5u);
  BOOST_TEST(idx.pruned_entries() == 7u);
  BOOST_TEST(score(idx, {1, 2, 3, 4}, worker_key{0, 0}) == 0u);
  BOOST_TEST(score(idx, {11, 12, 13, 14}, worker_key{1, 0}) == 1u);
  BOOST_TEST(score(idx, {21, 22, 23, 24}, worker_key{2, 0}) == 4u);
  BOOST_TEST(idx.node_count() == 5u);
  BOOST_TEST(idx.workers().size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_shared_prefix_outlives_its_pruned_branches) {
  radix_index idx(radix_index_options{.max_blocks = 6, .prune_target_ratio = 0.5});
  require_ok(idx, store(0, {}, {1, 2}));
  require_ok(idx, store(0, {1, 2}, {3}));
  require_ok(idx, store(0, {1, 2}, {4}));
  require_ok(idx, store(0, {1, 2}, {5}));
  require_ok(idx, store(0, {1, 2}, {6}));
  require_ok(idx, store(0, {1, 2}, {7})); // 7 entries > 6: prune to 3
  BOOST_TEST(idx.entry_count() == 3u);
  BOOST_TEST(score(idx, {1, 2, 7}, w0) == 3u);
  BOOST_TEST(score(idx, {1, 2, 3}, w0) == 2u);
}

BOOST_AUTO_TEST_CASE(an_unbounded_index_never_prunes) {
  radix_index idx(radix_index_options{.max_blocks = 0});
  hashes chain(3000);
  std::iota(chain.begin(), chain.end(), 1u);
  require_ok(idx, store(0, {}, chain));
  BOOST_TEST(idx.entry_count() == 3000u);
  BOOST_TEST(idx.pruned_entries() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
