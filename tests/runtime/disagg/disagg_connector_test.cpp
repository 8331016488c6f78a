// runtime/disagg/disagg_connector: the hand-off policy at the connector seam,
// driven the way the scheduler and the worker drive it, over a real KV cache.
#include "runtime/disagg/disagg_connector.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <vector>

using namespace dynamo;
using namespace std::chrono_literals;
using ids = std::vector<uint32_t>;

namespace {

protocol::kv_prefill_result source(uint32_t num_tokens, ids blocks) {
  protocol::kv_prefill_result r;
  r.hold_id = "p";
  r.block_ids = std::move(blocks);
  r.num_tokens = num_tokens;
  r.first_token = 77;
  r.layout = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16);
  return r;
}

struct fixture {
  kv::kv_cache_manager kv{16, 4};
  std::chrono::steady_clock::time_point now{};
  disagg::disagg_connector c{kv, [this] { return now; }};

  // A request's table of `tokens` positions, as the scheduler allocates it.
  std::vector<uint32_t> allocate(uint64_t seq, uint32_t tokens) {
    auto t = kv.allocate_slots(seq, tokens);
    BOOST_REQUIRE(t);
    return {t->begin(), t->end()};
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(disagg_connector)

BOOST_FIXTURE_TEST_CASE(a_load_covers_the_blocks_after_the_local_hit, fixture) {
  BOOST_TEST(c.get_num_new_matched_tokens("d", 10, 0) == 0u); // nothing expected yet
  c.expect_load("d", source(10, {5, 6, 7}));
  BOOST_TEST(c.get_num_new_matched_tokens("d", 10, 4) == 6u);
  BOOST_TEST(c.get_num_new_matched_tokens("d", 10, 4) == 6u); // asking has no effect
  const ids table = allocate(1, 10);
  c.update_state_after_alloc("d", table, 1); // block 0 was a local hit
  BOOST_TEST(c.get_num_new_matched_tokens("d", 10, 4) == 0u); // admitted: nothing more to match
  auto loads = c.take_loads();
  BOOST_REQUIRE_EQUAL(loads.size(), 1u);
  BOOST_TEST(loads[0].request_id == "d");
  BOOST_TEST(loads[0].source_block_ids == (ids{6, 7}), boost::test_tools::per_element());
  BOOST_TEST(loads[0].destination_block_ids == (ids{table[1], table[2]}), boost::test_tools::per_element());
  BOOST_TEST(c.take_loads().empty()); // each load is handed out once
  BOOST_TEST(c.get_finished().empty());
  BOOST_TEST(c.finish_load("d", true));
  BOOST_TEST(!c.finish_load("d", true)); // already ended
  auto done = c.get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(done[0].request_id == "d");
  BOOST_TEST(done[0].ok);
  BOOST_REQUIRE(done[0].next_token.has_value());
  BOOST_TEST(*done[0].next_token == 77u);
  BOOST_TEST(c.get_finished().empty());
}

BOOST_FIXTURE_TEST_CASE(a_failed_load_has_no_next_token_and_an_unadmitted_one_cannot_finish, fixture) {
  c.expect_load("d", source(8, {1, 2}));
  BOOST_TEST(!c.finish_load("d", false)); // not admitted yet
  c.update_state_after_alloc("d", allocate(1, 8), 0);
  BOOST_TEST(c.finish_load("d", false)); // before it was even taken
  BOOST_TEST(c.take_loads().empty());
  auto done = c.get_finished();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(!done[0].ok);
  BOOST_TEST(!done[0].next_token.has_value());
}

BOOST_FIXTURE_TEST_CASE(a_request_gone_before_its_load_started_refuses_the_source, fixture) {
  c.expect_load("waiting", source(8, {1, 2}));
  c.expect_load("admitted", source(8, {3, 4}));
  c.update_state_after_alloc("admitted", allocate(1, 8), 0);
  BOOST_CHECK(c.on_release("waiting", false) == kv::release_action::free);
  BOOST_CHECK(c.on_release("admitted", false) == kv::release_action::free);
  BOOST_TEST(c.take_loads().empty()); // the admitted one's load is withdrawn
  auto refused = c.take_refused();
  BOOST_REQUIRE_EQUAL(refused.size(), 2u);
  BOOST_TEST(refused[0].block_ids == (ids{1, 2}), boost::test_tools::per_element());
  BOOST_TEST(refused[1].block_ids == (ids{3, 4}), boost::test_tools::per_element());
  BOOST_TEST(c.take_refused().empty());
}

BOOST_FIXTURE_TEST_CASE(a_request_gone_during_its_load_quarantines_its_blocks_until_it_ends, fixture) {
  c.expect_load("d", source(8, {1, 2}));
  c.update_state_after_alloc("d", allocate(1, 8), 0);
  BOOST_REQUIRE_EQUAL(c.take_loads().size(), 1u);
  BOOST_CHECK(c.on_release("d", false) == kv::release_action::quarantine);
  c.adopt("d", kv.detach(1));
  BOOST_TEST(kv.pool().num_used_blocks() == 2u); // a late byte may still land in them
  BOOST_TEST(c.take_refused().empty());          // its prefill worker is being read
  BOOST_TEST(!c.finish_load("d", true));         // nobody to complete
  BOOST_TEST(c.get_finished().empty());
  BOOST_TEST(kv.pool().num_used_blocks() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_completed_prefill_is_saved_until_released_or_expired, fixture) {
  BOOST_TEST(!c.expect_save("p"));
  BOOST_CHECK(c.on_release("other", true) == kv::release_action::free); // not a prefill
  BOOST_CHECK(c.on_release("p", true) == kv::release_action::save);
  const ids blocks = allocate(1, 6);
  auto r = c.save("p", kv.detach(1), 6, 42);
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->hold_id == "p");
  BOOST_TEST(r->block_ids == blocks, boost::test_tools::per_element());
  BOOST_TEST(r->num_tokens == 6u);
  BOOST_TEST(r->first_token == 42u);
  BOOST_TEST(c.num_saved() == 1u);
  BOOST_TEST(*c.saved_blocks("p") == blocks, boost::test_tools::per_element());
  BOOST_TEST(c.release_expired(now + 29s, 30s) == 0u);
  BOOST_TEST(c.release_expired(now + 30s, 30s) == 1u);
  BOOST_TEST(!c.saved_blocks("p").has_value());
  BOOST_TEST(kv.pool().num_used_blocks() == 0u);
}

BOOST_FIXTURE_TEST_CASE(a_prefill_again_releases_the_old_save_and_an_aborted_one_saves_nothing, fixture) {
  BOOST_TEST(!c.expect_save("p"));
  BOOST_CHECK(c.on_release("p", true) == kv::release_action::save);
  (void) c.save("p", [&] { (void) allocate(1, 4); return kv.detach(1); }(), 4, 1);
  BOOST_TEST(c.expect_save("p")); // the old save goes
  BOOST_TEST(c.num_saved() == 0u);
  BOOST_CHECK(c.on_release("p", false) == kv::release_action::free); // aborted
  BOOST_CHECK(c.on_release("p", true) == kv::release_action::free);  // no longer expected
  BOOST_TEST(kv.pool().num_used_blocks() == 0u);
}

BOOST_FIXTURE_TEST_CASE(clear_requests_forgets_loads_but_keeps_saves, fixture) {
  BOOST_TEST(!c.expect_save("p"));
  BOOST_CHECK(c.on_release("p", true) == kv::release_action::save);
  (void) c.save("p", [&] { (void) allocate(1, 4); return kv.detach(1); }(), 4, 1);
  c.expect_load("d", source(8, {1, 2}));
  c.clear_requests();
  BOOST_TEST(c.get_num_new_matched_tokens("d", 8, 0) == 0u);
  BOOST_TEST(c.num_saved() == 1u);
  BOOST_TEST(c.release_all() == 1u);
  BOOST_TEST(kv.pool().num_used_blocks() == 0u);
}

BOOST_AUTO_TEST_CASE(load_refusal_names_the_mismatch) {
  const auto local = protocol::make_block_major_layout(2, 4, 2, 8, protocol::kv_dtype::f16);
  const auto ok = source(10, {1, 2, 3});
  BOOST_TEST(disagg::load_refusal(ok, 10, 4, local, "cpu") == "");
  BOOST_TEST(disagg::load_refusal(ok, 10, 4, std::nullopt, "fake") == "the fake executor exposes no KV layout");
  BOOST_TEST(disagg::load_refusal(ok, 10, 8, local, "cpu") == "block size 4 != local 8");
  BOOST_TEST(disagg::load_refusal(ok, 11, 4, local, "cpu") == "prefill covers 10 tokens, the prompt has 11");
  BOOST_TEST(disagg::load_refusal(source(10, {1, 2}), 10, 4, local, "cpu") ==
             "2 prefill blocks for 10 tokens of block size 4");
}

BOOST_AUTO_TEST_SUITE_END()
