#include "runtime/kv/block_hash.hpp"
#include "runtime/kv/kv_cache_manager.hpp"
#include "runtime/kv/token_blocks.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <numeric>
#include <random>

using namespace dynamo;
using kv::kv_cache_manager;
using kv::token_blocks;
using ids = std::vector<uint32_t>;

namespace {

std::vector<uint32_t> iota_tokens(uint32_t n, uint32_t first) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

std::vector<uint32_t> table(const kv_cache_manager& m, uint64_t seq) {
  auto t = m.block_table(seq);
  return {t.begin(), t.end()};
}

} // namespace

BOOST_AUTO_TEST_SUITE(token_blocks_suite)

BOOST_AUTO_TEST_CASE(incremental_hashes_equal_hashing_the_whole_sequence) {
  token_blocks tb(4, iota_tokens(6, 1));
  BOOST_TEST(tb.num_full_blocks() == 1u);
  for (uint32_t t = 7; t <= 13; ++t)
    tb.append(t);
  const auto all = iota_tokens(13, 1);
  const auto seq = kv::sequence_hashes_of_tokens(all, 4);
  const auto local = kv::local_block_hashes(all, 4);
  BOOST_TEST(std::vector<uint64_t>(tb.sequence_hashes().begin(), tb.sequence_hashes().end()) == seq,
             boost::test_tools::per_element());
  BOOST_TEST(std::vector<uint64_t>(tb.local_hashes().begin(), tb.local_hashes().end()) == local,
             boost::test_tools::per_element());
  BOOST_TEST(tb.size() == 13u);
  BOOST_TEST(tb.back() == 13u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kv_cache_manager_suite)

BOOST_AUTO_TEST_CASE(allocate_slots_grows_the_table_one_block_at_a_time) {
  kv_cache_manager m(8, 4);
  BOOST_TEST(*m.allocate_slots(1, 3) == (ids{0}), boost::test_tools::per_element());
  BOOST_TEST(m.allocate_slots(1, 4)->size() == 1u); // still fits block 0
  BOOST_TEST(*m.allocate_slots(1, 5) == (ids{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(*m.allocate_slots(2, 9) == (ids{2, 3, 4}), boost::test_tools::per_element());
  BOOST_TEST(m.pool().num_free_blocks() == 3u);
}

BOOST_AUTO_TEST_CASE(allocate_slots_returns_nullopt_and_changes_nothing_when_full) {
  kv_cache_manager m(4, 4);
  BOOST_REQUIRE(m.allocate_slots(1, 12));
  BOOST_TEST(m.blocks_missing(2, 8) == 1u);
  BOOST_TEST(!m.allocate_slots(2, 8).has_value());
  BOOST_TEST(m.block_table(2).empty());
  BOOST_TEST(m.pool().num_free_blocks() == 1u);
  BOOST_TEST(!m.allocate_slots(1, 17).has_value());
  BOOST_TEST(table(m, 1) == (ids{0, 1, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(stored_events_hash_exactly_as_the_router_does) {
  kv_cache_manager m(8, 4);
  token_blocks seq(4, iota_tokens(10, 1)); // two full blocks and [9, 10]
  BOOST_REQUIRE(m.allocate_slots(1, seq.size()));
  m.cache_blocks(1, seq, 6); // only block 0 is full within 6 computed tokens
  m.cache_blocks(1, seq, 10);
  auto ev = m.drain_events();
  const auto tokens = iota_tokens(10, 1);
  const auto want = kv::sequence_hashes_of_tokens(tokens, 4);
  const auto local = kv::local_block_hashes(tokens, 4);
  BOOST_REQUIRE_EQUAL(ev.size(), 2u);
  BOOST_TEST(!ev[0].parent_hash.has_value());
  BOOST_REQUIRE_EQUAL(ev[0].blocks.size(), 1u);
  BOOST_TEST(ev[0].blocks[0].block_hash == want[0]);
  BOOST_TEST(ev[0].blocks[0].block_hash == 14643705804678351452ull); // Dynamo's vector
  BOOST_TEST(ev[0].blocks[0].tokens_hash == local[0]);
  BOOST_TEST((ev[1].parent_hash == std::optional<uint64_t>{want[0]}));
  BOOST_REQUIRE_EQUAL(ev[1].blocks.size(), 1u);
  BOOST_TEST(ev[1].blocks[0].block_hash == 4945711292740353085ull);
  BOOST_TEST(ev[1].blocks[0].tokens_hash == local[1]);
  BOOST_TEST(ev[0].event_id + 1 == ev[1].event_id);
}

BOOST_AUTO_TEST_CASE(prefix_hit_leaves_the_last_token_to_compute) {
  kv_cache_manager m(8, 4);
  token_blocks a(4, iota_tokens(8, 1)); // exactly two blocks
  BOOST_REQUIRE(m.allocate_slots(1, 8));
  m.cache_blocks(1, a, 8);
  // The same 8 tokens again: block 1 would cover the last token, so only block 0 is a hit.
  auto hit = m.find_computed_blocks(a);
  BOOST_TEST(hit.block_ids == (ids{0}), boost::test_tools::per_element());
  BOOST_TEST(hit.num_tokens == 4u);
  // With a ninth token both blocks are usable.
  token_blocks b(4, iota_tokens(9, 1));
  BOOST_TEST(m.find_computed_blocks(b).block_ids == (ids{0, 1}), boost::test_tools::per_element());
  token_blocks other(4, iota_tokens(9, 2));
  BOOST_TEST(m.find_computed_blocks(other).block_ids.empty());
}

BOOST_AUTO_TEST_CASE(prefix_blocks_are_shared_with_a_reference_each) {
  kv_cache_manager m(8, 4);
  token_blocks a(4, iota_tokens(9, 1));
  BOOST_REQUIRE(m.allocate_slots(1, 9)); // 0 1 2
  m.cache_blocks(1, a, 9);
  token_blocks b(4, iota_tokens(11, 1));
  auto hit = m.find_computed_blocks(b);
  BOOST_REQUIRE_EQUAL(hit.num_tokens, 8u);
  BOOST_TEST(*m.allocate_slots(2, 11, hit) == (ids{0, 1, 3}), boost::test_tools::per_element());
  BOOST_TEST(m.pool().info(0).ref_count == 2u);
  BOOST_TEST(m.pool().info(3).ref_count == 1u);
  (void)m.drain_events();
  m.cache_blocks(2, b, 11); // blocks 0 1 are registered already; nothing new is full
  BOOST_TEST(m.drain_events().empty());
  m.free(1);
  BOOST_TEST(m.pool().info(0).ref_count == 1u);
  BOOST_TEST(m.pool().free_queue() == (ids{2, 4, 5, 6, 7}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(blocks_missing_counts_free_prefix_blocks_as_taken) {
  kv_cache_manager m(4, 4);
  token_blocks a(4, iota_tokens(9, 1));
  BOOST_REQUIRE(m.allocate_slots(1, 9)); // 0 1 2
  m.cache_blocks(1, a, 8);
  m.free(1); // 0 1 cached and free; 2 and 3 free
  auto hit = m.find_computed_blocks(a);
  BOOST_REQUIRE_EQUAL(hit.block_ids.size(), 2u);
  // 16 tokens need 4 blocks: 2 hits + 2 fresh of the 2 non-hit free blocks.
  BOOST_TEST(m.blocks_missing(2, 16, hit) == 0u);
  // 20 tokens would need a fifth block.
  BOOST_TEST(m.blocks_missing(2, 20, hit) == 1u);
  BOOST_TEST(*m.allocate_slots(2, 16, hit) == (ids{0, 1, 2, 3}), boost::test_tools::per_element());
  BOOST_TEST(m.pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(detached_blocks_stay_in_use_until_freed_tail_first) {
  kv_cache_manager m(6, 4);
  token_blocks a(4, iota_tokens(10, 1));
  BOOST_REQUIRE(m.allocate_slots(1, 10)); // 0 1 2; 0 and 1 full
  m.cache_blocks(1, a, 10);
  const ids held = m.detach(1);
  BOOST_TEST(held == (ids{0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(m.block_table(1).empty());
  BOOST_TEST(m.num_sequences() == 0u);
  BOOST_TEST(m.pool().num_used_blocks() == 3u);
  // Held blocks are never handed out, even when every free block is taken.
  BOOST_TEST(*m.allocate_slots(2, 12) == (ids{3, 4, 5}), boost::test_tools::per_element());
  BOOST_TEST(!m.allocate_slots(3, 1));
  m.free(2);
  // Still a prefix hit for the same prompt while held.
  BOOST_TEST(m.find_computed_blocks(a).block_ids == (ids{0, 1}), boost::test_tools::per_element());
  m.free_detached(held);
  // Tail-first: the uncached partial block 2 goes to the head, then the cached
  // blocks 1 before 0 at the tail, so the deeper suffix is evicted first.
  BOOST_TEST(m.pool().free_queue() == (ids{2, 3, 4, 5, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST(m.find_computed_blocks(a).block_ids == (ids{0, 1}), boost::test_tools::per_element());
  BOOST_TEST(m.detach(9).empty());
  BOOST_TEST(m.pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(prefix_caching_off_finds_nothing_and_emits_nothing) {
  kv_cache_manager m(8, 4, false);
  token_blocks a(4, iota_tokens(9, 1));
  BOOST_REQUIRE(m.allocate_slots(1, 9));
  m.cache_blocks(1, a, 9);
  m.free(1);
  BOOST_TEST(m.find_computed_blocks(a).block_ids.empty());
  BOOST_TEST(m.drain_events().empty());
  BOOST_TEST(m.pool().num_cached_blocks() == 0u);
}

BOOST_AUTO_TEST_CASE(a_duplicate_block_is_replaced_by_the_cached_one_so_parents_stay_cached) {
  kv_cache_manager m(6, 4);
  token_blocks a(4, iota_tokens(9, 1));
  token_blocks b(4, iota_tokens(9, 1));
  // Both computed the same two blocks in the same step, before either was registered.
  BOOST_REQUIRE(m.allocate_slots(1, 9)); // 0 1 2
  BOOST_REQUIRE(m.allocate_slots(2, 9)); // 3 4 5
  m.cache_blocks(1, a, 8);
  m.cache_blocks(2, b, 8);
  BOOST_TEST(table(m, 2) == (ids{0, 1, 5}), boost::test_tools::per_element());
  BOOST_TEST(m.pool().info(0).ref_count == 2u);
  BOOST_TEST(m.pool().free_queue() == (ids{4, 3}), boost::test_tools::per_element());
  (void)m.drain_events();
  // a finishes and its blocks are reused: b's prefix must survive.
  m.free(1);
  BOOST_REQUIRE(m.allocate_slots(3, 12));
  for (uint32_t t = 10; t <= 12; ++t)
    b.append(t);
  BOOST_REQUIRE(m.allocate_slots(2, 12));
  m.cache_blocks(2, b, 12);
  auto ev = m.drain_events();
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST((ev[0].kind == protocol::kv_event_kind::stored));
  BOOST_REQUIRE(ev[0].parent_hash.has_value());
  BOOST_TEST(m.pool().lookup_prefix(b.sequence_hashes()).size() == 3u);
  BOOST_TEST(m.pool().invariant_violation() == "");
}

// Random allocate / register / free / prefix-hit sequences over a tiny pool:
// after every operation the pool's own invariants hold and every block's
// ref_count equals the number of live block tables that hold it.
BOOST_AUTO_TEST_CASE(random_operations_never_break_refcount_or_free_queue_invariants) {
  std::mt19937 rng(20240611);
  constexpr uint32_t block_size = 4, num_blocks = 16;
  kv_cache_manager m(num_blocks, block_size);
  std::map<uint64_t, token_blocks> live;
  std::map<uint64_t, uint32_t> computed;
  uint64_t next = 1;
  size_t events = 0, hits = 0;
  auto pick = [&](uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); };
  for (int op = 0; op < 20000; ++op) {
    const uint32_t kind = pick(10);
    if (kind < 3 || live.empty()) { // admit: prompts from 3 shared stems
      const uint32_t stem = pick(3);
      std::vector<uint32_t> toks = iota_tokens(1 + pick(20), stem * 1000);
      if (pick(2))
        toks.back() += 1 + pick(5);
      token_blocks seq(block_size, toks);
      auto hit = m.find_computed_blocks(seq);
      hits += hit.block_ids.empty() ? 0 : 1;
      const uint32_t first = std::min<uint32_t>(seq.size(), hit.num_tokens + 1 + pick(8));
      if (m.allocate_slots(next, first, hit)) {
        computed[next] = first;
        live.emplace(next, std::move(seq));
        m.cache_blocks(next, live.at(next), first);
      }
      ++next;
    } else if (kind < 7) { // grow a live sequence by a few tokens
      auto it = std::next(live.begin(), pick(static_cast<uint32_t>(live.size())));
      const uint32_t n = 1 + pick(6);
      if (computed[it->first] + n <= 64 && m.allocate_slots(it->first, computed[it->first] + n)) {
        for (uint32_t i = 0; i < n; ++i)
          if (computed[it->first] + i >= it->second.size())
            it->second.append(pick(50));
        computed[it->first] += n;
        m.cache_blocks(it->first, it->second, computed[it->first]);
      }
    } else { // finish
      auto it = std::next(live.begin(), pick(static_cast<uint32_t>(live.size())));
      m.free(it->first);
      computed.erase(it->first);
      live.erase(it);
    }
    events += m.drain_events().size();
    BOOST_REQUIRE_EQUAL(m.pool().invariant_violation(), "");
    std::vector<uint32_t> refs(num_blocks, 0);
    for (const auto& [id, seq] : live)
      for (uint32_t b : m.block_table(id))
        ++refs[b];
    for (uint32_t b = 0; b < num_blocks; ++b)
      BOOST_REQUIRE_EQUAL(m.pool().info(b).ref_count, refs[b]);
  }
  BOOST_TEST(hits > 100u);   // the workload exercised prefix hits...
  BOOST_TEST(events > 100u); // ...and produced events
}

BOOST_AUTO_TEST_SUITE_END()
