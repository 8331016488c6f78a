#include "runtime/kvbm/block_lru.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::kvbm;
using hashes = std::vector<uint64_t>;

namespace {
block_bytes slab(uint8_t fill) { return std::make_shared<const std::vector<std::byte>>(4, std::byte{fill}); }
hashes evicted_hashes(const std::vector<block_lru::evicted>& e) {
  hashes out;
  for (const auto& x : e)
    out.push_back(x.sequence_hash);
  return out;
}
} // namespace

BOOST_AUTO_TEST_SUITE(block_lru_suite)

BOOST_AUTO_TEST_CASE(evicts_the_least_recently_used_when_full) {
  block_lru p(3);
  BOOST_TEST(p.insert(10, slab(1)).empty());
  BOOST_TEST(p.insert(11, slab(2)).empty());
  BOOST_TEST(p.insert(12, slab(3)).empty());
  BOOST_TEST(p.touch(10)); // 11 is now the oldest
  auto out = p.insert(13, slab(4));
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0].sequence_hash == 11u);
  BOOST_TEST(std::to_integer<int>(out[0].bytes->at(0)) == 2); // the bytes go to the caller
  BOOST_TEST(!p.contains(11));
  BOOST_TEST(p.eviction_order() == (hashes{12, 10, 13}), boost::test_tools::per_element());
  BOOST_TEST(p.size() == 3u);
}

BOOST_AUTO_TEST_CASE(lower_priority_goes_first_whatever_its_age) {
  block_lru p(3);
  (void)p.insert(1, slab(1), 5);
  (void)p.insert(2, slab(2), 0);
  (void)p.insert(3, slab(3), 5);
  BOOST_TEST(evicted_hashes(p.insert(4, slab(4), 5)) == (hashes{2}), boost::test_tools::per_element());
  BOOST_TEST(evicted_hashes(p.insert(5, slab(5), 5)) == (hashes{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(reinserting_keeps_the_bytes_and_refreshes) {
  block_lru p(2);
  (void)p.insert(1, slab(7));
  (void)p.insert(2, slab(8));
  BOOST_TEST(p.insert(1, slab(9)).empty());
  BOOST_TEST(std::to_integer<int>(p.bytes(1)->at(0)) == 7);
  BOOST_TEST(evicted_hashes(p.insert(3, slab(1))) == (hashes{2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_chain_loses_its_tail_first) {
  block_lru p(3);
  (void)p.insert(1, slab(1));
  (void)p.insert(2, slab(2), 0, 1);
  (void)p.insert(3, slab(3), 0, 2); // 1 <- 2 <- 3: only 3 is a leaf
  BOOST_TEST(p.eviction_order() == (hashes{3}), boost::test_tools::per_element());
  BOOST_TEST(evicted_hashes(p.insert(4, slab(4))) == (hashes{3}), boost::test_tools::per_element());
  // 2 is a leaf again, at its own (older) last use: it goes before 4.
  BOOST_TEST(p.eviction_order() == (hashes{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(evicted_hashes(p.insert(5, slab(5), 0, 4)) == (hashes{2}), boost::test_tools::per_element());
  BOOST_TEST(p.contains(1));
  // A parent that is absent here makes a root; erasing a parent orphans its child.
  block_lru q(2);
  (void)q.insert(7, slab(7), 0, 99);
  (void)q.insert(8, slab(8), 0, 7);
  BOOST_TEST(q.eviction_order() == (hashes{8}), boost::test_tools::per_element());
  BOOST_TEST(q.erase(7));
  BOOST_TEST(q.eviction_order() == (hashes{8}), boost::test_tools::per_element());
  BOOST_TEST(q.insert(9, slab(9)).empty());
  BOOST_TEST(evicted_hashes(q.insert(10, slab(10))) == (hashes{8}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(policy_only_entries_and_zero_capacity) {
  block_lru p(1);
  BOOST_TEST(p.insert(1, nullptr).empty());
  BOOST_TEST(p.contains(1));
  BOOST_TEST(p.bytes(1) == nullptr);
  BOOST_TEST(p.erase(1));
  BOOST_TEST(!p.erase(1));
  BOOST_TEST(!p.touch(1));
  block_lru none(0);
  BOOST_TEST(evicted_hashes(none.insert(5, slab(1))) == (hashes{5}), boost::test_tools::per_element());
  BOOST_TEST(none.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_block_the_tier_below_holds_goes_before_one_only_this_tier_holds) {
  // A session's history 1 <- 2 (on disk too) and its newest turn 3 (only here):
  // making room for its next block loses the oldest copy, not the only one.
  block_lru p(3);
  (void)p.insert(1, slab(1));
  (void)p.insert(2, slab(2), 0, 1);
  (void)p.insert(3, slab(3), 0, 2);
  BOOST_TEST(p.set_backed(1, true));
  BOOST_TEST(p.set_backed(2, true));
  BOOST_TEST(!p.set_backed(99, true));
  BOOST_TEST(p.eviction_order() == (hashes{1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(evicted_hashes(p.insert(4, slab(4), 0, 3)) == (hashes{1}), boost::test_tools::per_element());
  BOOST_TEST(p.contains(3));
  // 2 (backed, now a root) before the leaf 4; 3 has a child and no copy below.
  BOOST_TEST(p.eviction_order() == (hashes{2, 4}), boost::test_tools::per_element());
  BOOST_TEST(p.touch(2)); // recency orders backed blocks among themselves only
  BOOST_TEST(evicted_hashes(p.insert(5, slab(5), 0, 4)) == (hashes{2}), boost::test_tools::per_element());
  // With nothing backed left, the chain 3 <- 4 <- 5 loses its tail as before.
  BOOST_TEST(p.eviction_order() == (hashes{5}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(backing_lost_again_and_an_evicted_parent_reinserted) {
  block_lru p(4);
  (void)p.insert(1, slab(1));
  (void)p.insert(2, slab(2), 0, 1);
  (void)p.insert(3, slab(3), 0, 2);
  (void)p.set_backed(2, true);
  BOOST_TEST(p.backed(2));
  BOOST_TEST(p.eviction_order() == (hashes{2, 3}), boost::test_tools::per_element());
  BOOST_TEST(p.set_backed(2, false)); // the lower tier dropped it: an interior block again
  BOOST_TEST(p.eviction_order() == (hashes{3}), boost::test_tools::per_element());
  (void)p.set_backed(2, true);
  BOOST_TEST(p.erase(2)); // 1 is a leaf again, 3 a root
  BOOST_TEST(p.eviction_order() == (hashes{1, 3}), boost::test_tools::per_element());
  (void)p.insert(2, slab(2), 0, 1); // back under 1; 3 stays a root
  BOOST_TEST(!p.backed(2));
  BOOST_TEST(p.eviction_order() == (hashes{3, 2}), boost::test_tools::per_element());
  BOOST_TEST(p.erase(3));
  BOOST_TEST(p.erase(2));
  BOOST_TEST(p.eviction_order() == (hashes{1}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
