// The KVBM connector over a real kv_cache_manager and a fake G1 region (a
// byte vector): write-through offload, matching past the G1 prefix, onboarding
// (bytes land in the destination blocks), the disk tier behind the frequency
// filter, integrity misses, quarantine, and the tier events.
#include "runtime/kv/block_hash.hpp"
#include "runtime/kvbm/kvbm_connector.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace dynamo;
using namespace dynamo::kvbm;
namespace fs = std::filesystem;
using ids = std::vector<uint32_t>;

using dynamo::test::temp_dir;

namespace {

constexpr uint32_t bs = 4;         // tokens per block
constexpr uint64_t block_size = 8; // bytes per block

/// An engine's cache of 6 blocks, its KV bytes, and a connector over both.
struct fixture {
  kv::kv_cache_manager kv{6, bs};
  std::vector<std::byte> g1 = std::vector<std::byte>(6 * block_size);
  std::unique_ptr<kvbm_connector> c;
  uint64_t next_seq = 1;

  explicit fixture(kvbm_config cfg, bool bytes = true) {
    cfg.async_loads = false;
    std::optional<g1_view> view;
    if (bytes)
      view = g1_view{g1.data(), block_size, block_size, 6};
    auto made = kvbm_connector::create(kv, std::move(cfg), view, block_size);
    BOOST_REQUIRE_MESSAGE(made, (made ? "" : describe(made.error())));
    c = std::move(*made);
  }

  /// Computes `tokens` as a sequence: its blocks hold byte pattern `tag + i`
  /// (block i), are registered and offloaded; the sequence is then freed.
  void compute(const ids& tokens, uint8_t tag) {
    const uint64_t s = next_seq++;
    kv::token_blocks tb(bs, tokens);
    auto table = kv.allocate_slots(s, tb.size());
    BOOST_REQUIRE(table);
    const ids blocks(table->begin(), table->end());
    for (size_t i = 0; i < blocks.size(); ++i)
      std::fill_n(g1.begin() + blocks[i] * block_size, block_size, std::byte(tag + i));
    kv.cache_blocks(s, tb, tb.size());
    c->offload(kv.drain_registered());
    kv.free(s);
  }
  /// Takes every free block (evicting G1's prefix cache), then gives them back.
  void evict_g1() {
    auto all = kv.allocate_slots(999, 6 * bs);
    BOOST_REQUIRE(all);
    kv.free(999);
  }
  uint8_t byte_of(uint32_t block) const { return std::to_integer<uint8_t>(g1[block * block_size]); }
  void request(const std::string& id, const ids& prompt) {
    const auto local = kv::local_block_hashes(prompt, bs);
    c->on_request(id, kv::sequence_hashes(local), local);
  }
};

const ids prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}; // 3 full blocks + 1

std::vector<protocol::kv_event> tier_events(kv::kv_cache_manager& kv, protocol::storage_tier t) {
  std::vector<protocol::kv_event> out;
  for (auto& e : kv.drain_events())
    if (e.medium == t)
      out.push_back(std::move(e));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kvbm_connector_suite)

BOOST_AUTO_TEST_CASE(registered_blocks_are_written_through_to_host_with_cpu_events) {
  fixture f({.host_bytes = 10 * block_size});
  f.compute(prompt, 0x10);
  const auto hashes = kv::sequence_hashes_of_tokens(prompt, bs);
  BOOST_TEST(f.c->host().size() == 3u);
  for (size_t i = 0; i < 3; ++i) {
    BOOST_REQUIRE(f.c->host().contains(hashes[i]));
    BOOST_TEST(std::to_integer<int>(f.c->host().bytes(hashes[i])->at(0)) == 0x10 + int(i));
  }
  BOOST_TEST(f.c->counters().offload_blocks_d2h == 3u);
  auto ev = tier_events(f.kv, protocol::storage_tier::host_pinned);
  BOOST_REQUIRE_EQUAL(ev.size(), 1u); // one run
  BOOST_TEST((ev[0].kind == protocol::kv_event_kind::stored));
  BOOST_TEST(!ev[0].parent_hash.has_value());
  BOOST_REQUIRE_EQUAL(ev[0].blocks.size(), 3u);
  BOOST_TEST(ev[0].blocks[2].block_hash == hashes[2]);
  // Registered again (recomputed): no second copy.
  f.evict_g1();
  f.compute(prompt, 0x10);
  BOOST_TEST(f.c->counters().offload_blocks_d2h == 3u);
}

BOOST_AUTO_TEST_CASE(blocks_past_the_g1_prefix_are_onboarded_and_cached) {
  fixture f({.host_bytes = 10 * block_size});
  f.compute(prompt, 0x20);
  f.evict_g1();
  f.request("r", prompt);
  // The last token is computed here: 3 blocks of 13 tokens can come from G2.
  BOOST_TEST(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  ids twelve(prompt.begin(), prompt.begin() + 12);
  f.request("s", twelve);
  BOOST_TEST(f.c->get_num_new_matched_tokens("s", 12, 0) == 8u); // block 2 holds the last token
  BOOST_TEST(f.c->get_num_new_matched_tokens("x", 13, 0) == 0u); // unknown request

  // What the scheduler does: allocate, tell, then start the load.
  auto table = f.kv.allocate_slots(50, 12);
  BOOST_REQUIRE(table);
  const ids blocks(table->begin(), table->end());
  for (uint32_t b : blocks)
    std::fill_n(f.g1.begin() + b * block_size, block_size, std::byte{0});
  f.c->update_state_after_alloc("r", blocks, 0);
  BOOST_TEST(f.c->loads_in_flight() == 1u);
  BOOST_TEST(f.c->get_num_new_matched_tokens("r", 13, 0) == 0u); // loading: asked no more
  f.c->start_loads();
  auto done = f.c->get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(done[0].request_id == "r");
  BOOST_TEST(done[0].ok);
  BOOST_TEST(done[0].cached);
  BOOST_TEST(!done[0].next_token.has_value());
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(f.byte_of(blocks[i]) == 0x20 + i);
  BOOST_TEST(f.c->loads_in_flight() == 0u);
  BOOST_TEST(f.c->counters().onboard_blocks_h2d == 3u);
  BOOST_TEST(f.c->counters().matched_tokens == 12u);
  BOOST_TEST((f.c->on_release("r", true) == kv::release_action::free));
  BOOST_TEST(f.c->counters().host_hit_rate() == 1.0);
}

BOOST_AUTO_TEST_CASE(the_g1_prefix_is_not_loaded_again) {
  fixture f({.host_bytes = 10 * block_size});
  f.compute(prompt, 0x30);
  f.evict_g1();
  f.compute({1, 2, 3, 4, 99}, 0x40); // block 0 back in G1 (its hash is already in G2)
  f.request("r", prompt);
  BOOST_TEST(f.c->get_num_new_matched_tokens("r", 13, 4) == 8u);
  BOOST_TEST(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u); // the cheap ask skips G1's too
  BOOST_TEST((f.c->on_release("r", false) == kv::release_action::free));
  BOOST_TEST(f.c->counters().lookup_blocks == 2u); // blocks 1 and 2, never loaded
  BOOST_TEST(f.c->counters().host_hit_blocks == 0u);
}

BOOST_AUTO_TEST_CASE(blocks_reach_disk_the_second_time_and_come_back_verified) {
  temp_dir d("kvbm-conn");
  fixture f({.host_bytes = 2 * block_size, .disk_bytes = 10 * block_size, .disk_path = d.path.string(),
             .disk_min_free_bytes = 0});
  const auto hashes = kv::sequence_hashes_of_tokens(prompt, bs);
  f.compute(prompt, 0x50);
  BOOST_TEST(f.c->disk()->size() == 0u); // seen once: not yet
  f.evict_g1();
  f.compute(prompt, 0x50); // seen twice
  BOOST_TEST(f.c->disk()->size() == 3u);
  BOOST_TEST(f.c->counters().offload_blocks_h2d == 3u);
  // First pass: the leaf 1 made room for 2. Second: block 0, on disk by then,
  // made room for 1 again (a block the disk holds goes before a leaf).
  BOOST_TEST(f.c->host().size() == 2u);
  BOOST_TEST(!f.c->host().contains(hashes[0]));
  BOOST_TEST(f.c->host().contains(hashes[1]));
  BOOST_TEST(f.c->host().backed(hashes[1]));
  std::vector<protocol::kv_event> disk_events;
  std::vector<uint64_t> host_removed;
  for (auto& e : f.kv.drain_events()) {
    if (e.medium == protocol::storage_tier::disk)
      disk_events.push_back(std::move(e));
    else if (e.medium == protocol::storage_tier::host_pinned && e.kind == protocol::kv_event_kind::removed)
      host_removed.insert(host_removed.end(), e.removed_hashes.begin(), e.removed_hashes.end());
  }
  BOOST_REQUIRE_EQUAL(disk_events.size(), 1u);
  BOOST_TEST(disk_events[0].blocks.size() == 3u);
  // The leaf 1 (first pass, on no disk) is announced gone; block 0, evicted
  // once the disk held it, stays announced: a router's CPU prefix tree, where a
  // removal takes the subtree, keeps block 1 that the host holds again.
  BOOST_TEST(host_removed == (std::vector<uint64_t>{hashes[1]}), boost::test_tools::per_element());

  f.evict_g1();
  f.request("r", prompt);
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  auto table = f.kv.allocate_slots(50, 12);
  BOOST_REQUIRE(table);
  const ids blocks(table->begin(), table->end());
  for (uint32_t b : blocks)
    std::fill_n(f.g1.begin() + b * block_size, block_size, std::byte{0});
  f.c->update_state_after_alloc("r", blocks, 0);
  f.c->start_loads();
  auto done = f.c->get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(done[0].ok);
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(f.byte_of(blocks[i]) == 0x50 + i);
  BOOST_TEST(f.c->counters().onboard_blocks_d2d == 1u); // block 0 from disk
  BOOST_TEST(f.c->counters().onboard_blocks_h2d == 2u);
  (void)f.c->on_release("r", true);
  BOOST_TEST(f.c->counters().disk_hit_rate() == 1.0 / 3.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(a_hit_in_g1_is_an_offer_to_disk) {
  temp_dir d("kvbm-conn");
  fixture f({.host_bytes = 0, .disk_bytes = 10 * block_size, .disk_path = d.path.string(),
             .disk_min_free_bytes = 0});
  const auto hashes = kv::sequence_hashes_of_tokens(prompt, bs);
  f.compute(prompt, 0x80); // registered: offered once
  BOOST_TEST(f.c->disk()->size() == 0u);
  f.request("r", prompt); // its 3 full blocks hit in G1 (never left it): offered again
  BOOST_TEST(f.c->disk()->size() == 3u);
  f.evict_g1();
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  auto table = f.kv.allocate_slots(50, 12);
  BOOST_REQUIRE(table);
  const ids blocks(table->begin(), table->end());
  f.c->update_state_after_alloc("r", blocks, 0);
  f.c->start_loads();
  auto done = f.c->get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(done[0].ok);
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(f.byte_of(blocks[i]) == 0x80 + i); // the bytes G1 held, via the file
  BOOST_TEST(f.c->counters().onboard_blocks_d2d == 3u);
}

BOOST_AUTO_TEST_CASE(a_corrupt_disk_block_is_a_counted_miss_and_the_load_fails) {
  temp_dir d("kvbm-conn");
  fixture f({.host_bytes = 0, .disk_bytes = 10 * block_size, .disk_path = d.path.string(),
             .disk_min_free_bytes = 0, .disk_filter = {.min_frequency = 1}});
  const auto hashes = kv::sequence_hashes_of_tokens(prompt, bs);
  f.compute(prompt, 0x60);
  BOOST_REQUIRE(f.c->disk()->size() == 3u);
  { // one flipped payload byte in block 1's record
    const auto at = f.c->disk()->locate(hashes[1]);
    BOOST_REQUIRE(at);
    std::fstream file(at->file->path(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(at->offset + sizeof(record_header) + 3));
    file.put('\x7f');
  }
  f.evict_g1();
  (void)f.kv.drain_events();
  f.request("r", prompt);
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  auto table = f.kv.allocate_slots(50, 12);
  BOOST_REQUIRE(table);
  f.c->update_state_after_alloc("r", ids(table->begin(), table->end()), 0);
  f.c->start_loads();
  auto done = f.c->get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(!done[0].ok);
  BOOST_TEST(f.c->counters().disk_read_corrupt == 1u);
  BOOST_TEST(f.c->counters().loads_failed == 1u);
  BOOST_TEST(!f.c->disk()->contains(hashes[1])); // forgotten
  BOOST_TEST(!f.c->disk()->locate(hashes[1]));
  auto removed = tier_events(f.kv, protocol::storage_tier::disk);
  BOOST_REQUIRE_EQUAL(removed.size(), 1u);
  BOOST_TEST(removed[0].removed_hashes == std::vector<uint64_t>{hashes[1]}, boost::test_tools::per_element());
  // Asked again, only block 0 matches now.
  f.request("r2", prompt);
  BOOST_TEST(f.c->get_num_new_matched_tokens("r2", 13, 0) == 4u);
}

BOOST_AUTO_TEST_CASE(disk_blocks_survive_a_restart_and_are_announced) {
  temp_dir d("kvbm-conn");
  const kvbm_config cfg{.host_bytes = 0, .disk_bytes = 10 * block_size, .disk_path = d.path.string(),
                        .disk_min_free_bytes = 0, .disk_filter = {.min_frequency = 1}, .disk_tag = "model-a"};
  const auto local = kv::local_block_hashes(prompt, bs);
  const auto hashes = kv::sequence_hashes(local);
  {
    fixture f(cfg);
    f.compute(prompt, 0x70);
    BOOST_REQUIRE(f.c->disk()->size() == 3u);
  }
  fixture f(cfg); // a new process: empty G1, the same disk
  BOOST_TEST(f.c->disk()->size() == 3u);
  auto stored = tier_events(f.kv, protocol::storage_tier::disk);
  BOOST_REQUIRE_EQUAL(stored.size(), 1u); // one chain, root first, as when they were written
  BOOST_TEST((stored[0].kind == protocol::kv_event_kind::stored));
  BOOST_TEST(!stored[0].parent_hash.has_value());
  BOOST_REQUIRE_EQUAL(stored[0].blocks.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    BOOST_TEST(stored[0].blocks[i].block_hash == hashes[i]);
    BOOST_TEST(stored[0].blocks[i].tokens_hash == local[i]);
  }
  f.request("r", prompt);
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  auto table = f.kv.allocate_slots(50, 12);
  BOOST_REQUIRE(table);
  const ids blocks(table->begin(), table->end());
  f.c->update_state_after_alloc("r", blocks, 0);
  f.c->start_loads();
  auto done = f.c->get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(done[0].ok);
  for (size_t i = 0; i < 3; ++i)
    BOOST_TEST(f.byte_of(blocks[i]) == 0x70 + i); // the bytes of the earlier run
  BOOST_TEST(f.c->counters().onboard_blocks_d2d == 3u);

  kvbm_config other = cfg;
  other.disk_tag = "model-b"; // KV of another model is never restored
  f.c.reset();
  fixture g(other);
  BOOST_TEST(g.c->disk()->size() == 0u);
  BOOST_TEST(tier_events(g.kv, protocol::storage_tier::disk).empty());
}

BOOST_AUTO_TEST_CASE(a_full_disk_skips_offload_and_counts_it) {
  temp_dir d("kvbm-conn");
  fixture f({.host_bytes = 10 * block_size, .disk_bytes = 10 * block_size, .disk_path = d.path.string(),
             .disk_min_free_bytes = UINT64_MAX / 2, .disk_filter = {.min_frequency = 1}});
  f.compute(prompt, 0x70);
  BOOST_TEST(f.c->disk()->size() == 0u);
  BOOST_TEST(f.c->counters().offload_skipped_disk_full == 3u);
  BOOST_TEST(f.c->host().size() == 3u); // the host tier is unaffected
}

BOOST_AUTO_TEST_CASE(a_request_leaving_during_its_load_is_quarantined) {
  fixture f({.host_bytes = 10 * block_size});
  f.compute(prompt, 0x10);
  f.evict_g1();
  f.request("r", prompt);
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  auto table = f.kv.allocate_slots(50, 12);
  BOOST_REQUIRE(table);
  const ids blocks(table->begin(), table->end());
  f.c->update_state_after_alloc("r", blocks, 0);
  f.c->start_loads(); // runs (inline); its end not yet seen by get_finished()
  BOOST_TEST((f.c->on_release("r", false) == kv::release_action::quarantine));
  const uint32_t free_before = f.kv.pool().num_free_blocks();
  f.c->adopt("r", f.kv.detach(50));
  BOOST_TEST(f.kv.pool().num_free_blocks() == free_before);
  BOOST_TEST(f.c->get_finished().empty()); // nobody to tell
  BOOST_TEST(f.kv.pool().num_free_blocks() == free_before + 3);

  // Leaving before the load started: nothing writes there, plain free.
  f.request("s", prompt);
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("s", 13, 0) == 12u);
  auto t2 = f.kv.allocate_slots(51, 12);
  BOOST_REQUIRE(t2);
  f.c->update_state_after_alloc("s", ids(t2->begin(), t2->end()), 0);
  BOOST_TEST((f.c->on_release("s", false) == kv::release_action::free));
  f.c->start_loads();
  BOOST_TEST(f.c->loads_in_flight() == 0u);
}

BOOST_AUTO_TEST_CASE(policy_only_tiers_hold_hashes_and_loads_move_nothing) {
  fixture f({.host_bytes = 10 * block_size, .disk_bytes = 10 * block_size, .disk_path = "/nonexistent/never"}, false);
  f.compute(prompt, 0x10);
  BOOST_TEST(f.c->host().size() == 3u);
  BOOST_TEST(f.c->host().bytes(kv::sequence_hashes_of_tokens(prompt, bs)[0]) == nullptr);
  BOOST_TEST(!f.c->disk()->has_files());
  f.evict_g1();
  f.request("r", prompt);
  BOOST_REQUIRE(f.c->get_num_new_matched_tokens("r", 13, 0) == 12u);
  auto table = f.kv.allocate_slots(50, 12);
  f.c->update_state_after_alloc("r", ids(table->begin(), table->end()), 0);
  f.c->start_loads();
  auto done = f.c->get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(done[0].ok);
  auto tally = f.c->take_onboarded();
  BOOST_TEST(tally.host_blocks == 3u);
  BOOST_TEST(tally.disk_blocks == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
