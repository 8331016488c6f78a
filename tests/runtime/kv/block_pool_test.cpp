#include "runtime/kv/block_hash.hpp"
#include "runtime/kv/block_pool.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>
#include <ostream>

namespace dynamo::protocol {
inline std::ostream& boost_test_print_type(std::ostream& os, kv_event_kind k) {
  return os << to_string(k);
}
} // namespace dynamo::protocol

using namespace dynamo;
using kv::block_pool;
using ids = std::vector<uint32_t>;

namespace {

// Registers `blocks` as the chain h[0..n) with local hashes 100+h; returns
// the table after duplicates were merged.
ids cache_chain(block_pool& pool, ids blocks, std::vector<uint64_t> hashes,
                std::optional<uint64_t> parent = std::nullopt) {
  std::vector<uint64_t> local(hashes.size());
  std::transform(hashes.begin(), hashes.end(), local.begin(), [](uint64_t h) { return h + 100; });
  pool.cache_full_blocks(blocks, hashes, local, parent);
  return blocks;
}

} // namespace

BOOST_AUTO_TEST_SUITE(block_pool_suite)

BOOST_AUTO_TEST_CASE(fresh_pool_allocates_lowest_ids_first) {
  block_pool pool(8);
  BOOST_TEST(pool.num_free_blocks() == 8u);
  auto a = pool.allocate(3);
  BOOST_REQUIRE(a);
  BOOST_TEST(*a == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(pool.info(1).ref_count == 1u);
  BOOST_TEST(pool.num_used_blocks() == 3u);
  BOOST_TEST(pool.free_queue() == (ids{3, 4, 5, 6, 7}), boost::test_tools::per_element());
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(allocate_returns_nullopt_when_pool_exhausted_and_changes_nothing) {
  block_pool pool(4);
  BOOST_REQUIRE(pool.allocate(3));
  BOOST_TEST(!pool.allocate(2).has_value());
  BOOST_TEST(pool.num_free_blocks() == 1u);
  BOOST_TEST(pool.free_queue() == (ids{3}), boost::test_tools::per_element());
  BOOST_TEST(pool.allocate(1).has_value());
  BOOST_TEST(!pool.allocate(1).has_value());
}

BOOST_AUTO_TEST_CASE(freed_uncached_blocks_are_reused_first) {
  block_pool pool(6);
  auto a = pool.allocate(2); // 0 1
  auto b = pool.allocate(2); // 2 3
  (void)cache_chain(pool, *b, {7, 8});
  pool.free(*b);
  pool.free(*a);
  // Uncached 0 1 at the head, then the untouched 4 5, then cached 3 2 (tail-first).
  BOOST_TEST(pool.free_queue() == (ids{0, 1, 4, 5, 3, 2}), boost::test_tools::per_element());
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(free_is_tail_first_so_suffixes_evict_before_shared_prefixes) {
  block_pool pool(10);
  auto a = pool.allocate(4); // 0 1 2 3: prefix 10 11, suffix 12 13
  (void)cache_chain(pool, *a, {10, 11, 12, 13});
  // A second sequence shares blocks 0 1 and adds 4 5.
  pool.acquire(ids{0, 1});
  auto b = pool.allocate(2);
  BOOST_TEST(*b == (ids{4, 5}), boost::test_tools::per_element());
  (void)cache_chain(pool, *b, {21, 22}, 11);
  BOOST_TEST(pool.info(0).ref_count == 2u);

  pool.free(*a); // 3 2 freed; 1 0 still used by b
  BOOST_TEST(pool.free_queue() == (ids{6, 7, 8, 9, 3, 2}), boost::test_tools::per_element());
  pool.free(ids{0, 1, 4, 5}); // b's table, tail-first: 5 4 1 0
  BOOST_TEST(pool.free_queue() == (ids{6, 7, 8, 9, 3, 2, 5, 4, 1, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(allocation_evicts_least_recently_freed_cached_blocks) {
  block_pool pool(4);
  auto a = pool.allocate(4);
  (void)cache_chain(pool, *a, {1, 2, 3, 4});
  (void)pool.drain_events();
  pool.free(*a); // queue: 3 2 1 0
  auto b = pool.allocate(2);
  BOOST_TEST(*b == (ids{3, 2}), boost::test_tools::per_element());
  BOOST_TEST(!pool.info(3).cached);
  BOOST_TEST(pool.info(1).cached);
  BOOST_TEST(pool.num_cached_blocks() == 2u);
  BOOST_TEST(pool.lookup_prefix(std::vector<uint64_t>{1, 2, 3}) == (ids{0, 1}),
             boost::test_tools::per_element());
  auto ev = pool.drain_events();
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].kind == protocol::kv_event_kind::removed);
  BOOST_TEST(ev[0].removed_hashes == (std::vector<uint64_t>{4, 3}), boost::test_tools::per_element());
  BOOST_TEST(ev[0].event_id == 1u); // the stored event was 0
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(lookup_prefix_stops_at_first_miss_and_changes_nothing) {
  block_pool pool(8);
  auto a = pool.allocate(3);
  (void)cache_chain(pool, *a, {5, 6, 7});
  pool.free(*a);
  const auto before = pool.free_queue();
  BOOST_TEST(pool.lookup_prefix(std::vector<uint64_t>{5, 6, 9, 7}) == (ids{0, 1}),
             boost::test_tools::per_element());
  BOOST_TEST(pool.lookup_prefix(std::vector<uint64_t>{9, 5}).empty());
  BOOST_TEST(pool.free_queue() == before, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(acquire_takes_free_cached_blocks_out_of_the_queue_keeping_content) {
  block_pool pool(4);
  auto a = pool.allocate(2);
  (void)cache_chain(pool, *a, {5, 6});
  pool.free(*a);
  const ids hit = pool.lookup_prefix(std::vector<uint64_t>{5, 6});
  BOOST_TEST(pool.count_free(hit) == 2u);
  pool.acquire(hit);
  BOOST_TEST(pool.info(0).ref_count == 1u);
  BOOST_TEST(pool.info(0).cached);
  BOOST_TEST(pool.info(0).sequence_hash == 5u);
  BOOST_TEST(pool.info(1).tokens_hash == 106u);
  BOOST_TEST((pool.info(1).parent_hash == std::optional<uint64_t>{5}));
  BOOST_TEST(pool.free_queue() == (ids{2, 3}), boost::test_tools::per_element());
  BOOST_TEST(pool.count_free(hit) == 0u);
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(stored_events_carry_parent_hash_and_block_hashes_in_order) {
  block_pool pool(8);
  auto a = pool.allocate(3);
  (void)cache_chain(pool, ids{(*a)[0]}, {10});
  (void)cache_chain(pool, ids{(*a)[1], (*a)[2]}, {11, 12}, 10);
  auto ev = pool.drain_events();
  BOOST_REQUIRE_EQUAL(ev.size(), 2u);
  BOOST_TEST(ev[0].event_id == 0u);
  BOOST_TEST(ev[0].kind == protocol::kv_event_kind::stored);
  BOOST_TEST(!ev[0].parent_hash.has_value());
  BOOST_REQUIRE_EQUAL(ev[0].blocks.size(), 1u);
  BOOST_TEST(ev[0].blocks[0].block_hash == 10u);
  BOOST_TEST(ev[0].blocks[0].tokens_hash == 110u);
  BOOST_TEST(ev[1].event_id == 1u);
  BOOST_TEST((ev[1].parent_hash == std::optional<uint64_t>{10}));
  BOOST_REQUIRE_EQUAL(ev[1].blocks.size(), 2u);
  BOOST_TEST(ev[1].blocks[1].block_hash == 12u);
  BOOST_TEST(pool.drain_events().empty());
}

BOOST_AUTO_TEST_CASE(a_duplicate_is_merged_into_the_cached_block_and_splits_the_stored_run) {
  block_pool pool(8);
  auto a = pool.allocate(2); // 0 1
  (void)cache_chain(pool, *a, {1, 2});
  (void)pool.drain_events();
  // Another sequence computed the same first block into block 2 (not shared).
  auto b = pool.allocate(3); // 2 3 4
  const ids merged = cache_chain(pool, *b, {1, 3, 4});
  BOOST_TEST(merged == (ids{0, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(pool.info(0).ref_count == 2u);
  BOOST_TEST(pool.info(2).ref_count == 0u);
  BOOST_TEST(!pool.info(2).cached);
  BOOST_TEST(pool.free_queue() == (ids{2, 5, 6, 7}), boost::test_tools::per_element());
  auto ev = pool.drain_events();
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST((ev[0].parent_hash == std::optional<uint64_t>{1}));
  BOOST_REQUIRE_EQUAL(ev[0].blocks.size(), 2u);
  BOOST_TEST(ev[0].blocks[0].block_hash == 3u);
  BOOST_TEST(ev[0].blocks[1].block_hash == 4u);
  pool.free(merged);
  pool.free(*a);
  BOOST_TEST(pool.num_used_blocks() == 0u);
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(reset_is_refused_while_blocks_are_in_use_then_clears) {
  block_pool pool(4);
  auto a = pool.allocate(2);
  (void)cache_chain(pool, *a, {1, 2});
  (void)pool.drain_events();
  BOOST_TEST(!pool.reset_prefix_cache());
  BOOST_TEST(pool.drain_events().empty());
  pool.free(*a);
  BOOST_TEST(pool.reset_prefix_cache());
  BOOST_TEST(pool.num_cached_blocks() == 0u);
  BOOST_TEST(pool.lookup_prefix(std::vector<uint64_t>{1}).empty());
  auto ev = pool.drain_events();
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].kind == protocol::kv_event_kind::cleared);
  BOOST_TEST(ev[0].event_id == 1u); // after the one stored event
  // Nothing was cached any more, so reusing the blocks evicts nothing.
  BOOST_REQUIRE(pool.allocate(4));
  BOOST_TEST(pool.drain_events().empty());
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(events_can_be_switched_off) {
  block_pool pool(4, false);
  auto a = pool.allocate(2);
  (void)cache_chain(pool, *a, {1, 2});
  pool.free(*a);
  BOOST_REQUIRE(pool.allocate(4));
  BOOST_TEST(pool.num_pending_events() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
