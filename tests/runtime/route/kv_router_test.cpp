#include "runtime/route/kv_router.hpp"

#include "runtime/kv/block_hash.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>

using namespace dynamo;
using namespace dynamo::route;

namespace {

constexpr uint32_t bs = 4;
const std::vector<worker_key> two{{1, 0}, {2, 0}};

std::vector<uint32_t> prompt(uint32_t first, uint32_t n) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

/// The stored event an engine would publish after caching `tokens` (full blocks).
protocol::router_event cached(uint64_t worker, const std::vector<uint32_t>& tokens, uint64_t id) {
  auto local = kv::local_block_hashes(tokens, bs);
  auto seq = kv::sequence_hashes(local);
  protocol::router_event ev;
  ev.worker_id = worker;
  ev.event.event_id = id;
  ev.event.kind = protocol::kv_event_kind::stored;
  for (size_t i = 0; i < local.size(); ++i)
    ev.event.blocks.push_back({seq[i], local[i]});
  return ev;
}

route_request request(std::string id, const std::vector<uint32_t>& tokens,
                      std::span<const worker_key> candidates = two) {
  route_request r;
  r.request_id = std::move(id);
  r.tokens = tokens;
  r.candidates = candidates;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kv_router_decisions)

BOOST_AUTO_TEST_CASE(a_request_goes_to_the_worker_caching_its_prefix) {
  kv_router router(kv_router_config{}, bs, router_mode::kv, 1);
  auto system = prompt(1, 32);
  router.on_event(cached(2, system, 0));
  router.flush(); // event threads (Dynamo\'s default 4)
  auto p = prompt(1, 40); // the 32 cached tokens plus 8 more
  auto d = router.route(request("r1", p));
  BOOST_REQUIRE(d);
  BOOST_TEST(d->worker.worker_id == 2u);
  BOOST_TEST(d->overlap_blocks == 8u);
  BOOST_REQUIRE_EQUAL(d->costs.size(), 2u);
  // worker 1: prefill 40 tokens = 10 blocks + decode 10 blocks; worker 2: 2 + 10.
  BOOST_TEST(d->costs[0].logit == 20.0);
  BOOST_TEST(d->costs[1].logit == 12.0);
  BOOST_TEST(d->chosen.prefill_tokens == 8.0);
  BOOST_TEST(router.sequences().active_prefill_tokens(worker_key{2, 0}) == 8u);
}

BOOST_AUTO_TEST_CASE(booked_load_spreads_requests_without_cache) {
  kv_router router(kv_router_config{}, bs, router_mode::kv, 1);
  auto a = prompt(100, 16), b = prompt(200, 16);
  auto first = router.route(request("a", a));
  auto second = router.route(request("b", b));
  BOOST_REQUIRE(first && second);
  BOOST_TEST(first->worker != second->worker);
  // Prefill done and freed: the load is gone.
  BOOST_TEST(router.mark_prefill_completed("a"));
  BOOST_TEST(router.free("a"));
  BOOST_TEST(router.sequences().active_decode_blocks(first->worker) == 0u);
}

BOOST_AUTO_TEST_CASE(active_requests_sharing_a_prefix_add_only_their_new_blocks) {
  kv_router router(kv_router_config{}, bs, router_mode::kv, 1);
  std::vector<worker_key> one{{1, 0}};
  auto a = prompt(1, 16);
  auto b = prompt(1, 24); // a's 4 blocks + 2 new
  BOOST_REQUIRE(router.route(request("a", a, one)));
  auto d = router.route(request("b", b, one));
  BOOST_REQUIRE(d);
  BOOST_TEST(d->chosen.decode_blocks == 6.0); // 4 active + 2 fresh, not 4 + 6
  BOOST_TEST(router.sequences().active_decode_blocks(worker_key{1, 0}) == 6u);
}

BOOST_AUTO_TEST_CASE(overrides_and_pinning_change_the_decision) {
  kv_router router(kv_router_config{}, bs, router_mode::kv, 1);
  router.on_event(cached(2, prompt(1, 32), 0));
  router.flush(); // event threads (Dynamo\'s default 4)
  auto p = prompt(1, 32);
  auto r = request("r", p);
  r.pinned = worker_key{1, 0};
  auto d = router.route(r);
  BOOST_REQUIRE(d);
  BOOST_TEST(d->worker.worker_id == 1u);
  BOOST_TEST(router.sequences().active_requests(worker_key{1, 0}) == 1u);
  auto o = request("o", p);
  o.overrides.overlap_score_weight = 0.0;
  o.overrides.track_prefill_tokens = false;
  auto d2 = router.route(o);
  BOOST_REQUIRE(d2);
  BOOST_TEST(d2->costs[0].prefill_tokens == 0.0);
  BOOST_TEST(d2->costs[1].logit == 8.0); // decode blocks only
}

BOOST_AUTO_TEST_CASE(bad_requests_are_error_values) {
  kv_router router(kv_router_config{}, bs, router_mode::kv, 1);
  auto p = prompt(1, 8);
  auto none = router.route(request("x", p, {}));
  BOOST_REQUIRE(!none);
  BOOST_TEST(code_of(none.error()) == errc::no_workers);
  BOOST_REQUIRE(router.route(request("x", p)));
  auto dup = router.route(request("x", p));
  BOOST_REQUIRE(!dup);
  BOOST_TEST(code_of(dup.error()) == errc::invalid_argument);
  std::vector<uint32_t> empty;
  BOOST_TEST(!router.route(request("e", empty)));
  auto pinned = request("p", p);
  pinned.pinned = worker_key{9, 0};
  BOOST_TEST(!router.route(pinned));
}

BOOST_AUTO_TEST_CASE(round_robin_mode_ignores_the_cache) {
  kv_router router(kv_router_config{}, bs, router_mode::round_robin, 1);
  router.on_event(cached(2, prompt(1, 32), 0));
  router.flush(); // event threads (Dynamo\'s default 4)
  auto p = prompt(1, 32);
  auto a = router.route(request("a", p));
  auto b = router.route(request("b", p));
  BOOST_REQUIRE(a && b);
  BOOST_TEST(a->worker.worker_id == 1u);
  BOOST_TEST(a->overlap_blocks == 0u);
  BOOST_TEST(b->worker.worker_id == 2u);
  BOOST_TEST(b->overlap_blocks == 8u); // still reported, for hit rates
}

BOOST_AUTO_TEST_CASE(approximate_mode_learns_from_its_own_decisions) {
  kv_router_config c;
  c.use_kv_events = false;
  kv_router router(c, bs, router_mode::kv, 1);
  auto p = prompt(1, 64);
  auto a = router.route(request("a", p));
  BOOST_REQUIRE(a);
  BOOST_TEST(router.free("a"));
  auto b = router.route(request("b", p));
  BOOST_REQUIRE(b);
  BOOST_TEST(b->worker == a->worker);
  BOOST_TEST(b->overlap_blocks == 16u);
}

BOOST_AUTO_TEST_CASE(removing_a_worker_forgets_its_cache_and_load) {
  test::resync_inbox inbox;
  kv_router router(kv_router_config{}, bs, router_mode::kv, 1, inbox.sink());
  router.on_event(cached(2, prompt(1, 32), 0));
  router.flush(); // event threads (Dynamo\'s default 4)
  auto p = prompt(1, 32);
  BOOST_REQUIRE(router.route(request("a", p)));
  router.remove_worker(2);
  router.flush();
  BOOST_TEST(router.index().tree_size(worker_key{2, 0}) == 0u);
  BOOST_TEST(router.index().entry_count() == 0u);
  BOOST_TEST(router.sequences().active_requests(worker_key{2, 0}) == 0u);
  BOOST_TEST(!inbox.take());
  router.add_worker(worker_key{2, 0});
  router.flush();
  auto ask = inbox.take();
  BOOST_REQUIRE(ask);
  BOOST_TEST(ask->worker_id == 2u);
  BOOST_TEST(ask->from_id == 0u);
  BOOST_TEST(ask->to_id == UINT64_MAX);
}

BOOST_AUTO_TEST_CASE(a_worker_the_request_does_not_fit_loses_to_one_it_fits) {
  // Worker 2 caches 8 of the prompt's 10 blocks and runs a 4-block request:
  // logits 2 + (4 + 10) = 16 against worker 1's 10 + 10 = 20.
  auto route_with_capacity = [](std::optional<uint64_t> capacity) {
    kv_router_config c;
    c.router_kv_capacity = true;
    kv_router router(c, bs, router_mode::kv, 1);
    if (capacity)
      for (const worker_key& w : two)
        BOOST_REQUIRE(router.set_worker_capacity(w, *capacity));
    router.on_event(cached(2, prompt(1, 32), 0));
    router.flush();
    route_request busy = request("busy", prompt(500, 16));
    busy.pinned = worker_key{2, 0};
    BOOST_REQUIRE(router.route(busy));
    BOOST_REQUIRE(router.mark_prefill_completed("busy"));
    auto d = router.route(request("r", prompt(1, 40)));
    BOOST_REQUIRE(d);
    return *d;
  };
  const route_decision unknown = route_with_capacity(std::nullopt);
  BOOST_TEST(unknown.worker.worker_id == 2u);
  BOOST_TEST(unknown.costs[1].logit == 16.0);
  BOOST_TEST(unknown.costs[1].overflow_blocks == 0.0);
  const route_decision fits_one = route_with_capacity(12); // 14 blocks on worker 2, 10 on 1
  BOOST_TEST(fits_one.worker.worker_id == 1u);
  BOOST_TEST(fits_one.costs[0].overflow_blocks == 0.0);
  BOOST_TEST(fits_one.costs[1].overflow_blocks == 2.0);
  BOOST_TEST(fits_one.costs[1].logit == 16.0); // the logit is Dynamo's either way
  const route_decision fits_none = route_with_capacity(8); // both overflow: the logit decides
  BOOST_TEST(fits_none.worker.worker_id == 2u);
}

BOOST_AUTO_TEST_CASE(capacities_are_set_only_with_the_option_on) {
  kv_router off(kv_router_config{}, bs, router_mode::kv, 1);
  BOOST_TEST(!off.set_worker_capacity({1, 0}, 4));
  BOOST_TEST(!off.worker_capacity({1, 0}));
  BOOST_TEST(off.worker_capacities().empty());

  kv_router_config c;
  BOOST_REQUIRE(c.set("--router-kv-capacity", ""));
  BOOST_REQUIRE(c.validate());
  kv_router router(c, bs, router_mode::kv, 1);
  BOOST_TEST(router.set_worker_capacity({1, 0}, 4));
  BOOST_TEST(!router.set_worker_capacity({1, 0}, 4)); // unchanged
  BOOST_TEST(router.worker_capacity({1, 0}).value_or(0) == 4u);
  BOOST_TEST(!router.set_worker_capacity({1, 0}, 0)); // unknown: kept
  BOOST_TEST(router.worker_capacity({1, 0}).value_or(0) == 4u);
  BOOST_TEST(router.worker_capacities().size() == 1u);
  // 10 blocks overflow worker 1's 4; worker 2 (capacity unknown) takes them.
  for (int i = 0; i < 4; ++i) {
    auto d = router.route(request("big" + std::to_string(i), prompt(100 * i, 40)));
    BOOST_REQUIRE(d);
    BOOST_TEST(d->worker.worker_id == 2u);
  }
  router.remove_worker(1);
  BOOST_TEST(!router.worker_capacity({1, 0}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(kv_router_tiers)

protocol::router_event in_tier(protocol::router_event ev, protocol::storage_tier t) {
  ev.event.medium = t;
  return ev;
}

BOOST_AUTO_TEST_CASE(lower_tier_blocks_count_at_the_configured_weight) {
  for (uint32_t threads : {1u, 4u}) {
    kv_router_config c;
    c.router_event_threads = threads;
    kv_router router(c, bs, router_mode::kv, 1);
    auto p = prompt(1, 40);
    // Worker 1 holds 4 blocks on its device; worker 2 holds all 10 in host memory only.
    router.on_event(cached(1, prompt(1, 16), 0));
    router.on_event(in_tier(cached(2, p, 0), protocol::storage_tier::host_pinned));
    router.flush();
    auto d = router.route(request("r", p));
    BOOST_REQUIRE(d);
    BOOST_TEST(d->costs[0].overlap_blocks == 4u);
    BOOST_TEST(d->costs[1].overlap_blocks == 0u); // not a device hit
    // worker 1: 24 uncached tokens = 6 blocks + 10 decode; worker 2: 40 - 0.5 * 40 = 20 tokens.
    BOOST_TEST(d->costs[0].logit == 16.0);
    BOOST_TEST(d->costs[1].logit == 15.0);
    BOOST_TEST(d->worker.worker_id == 2u);
    // Booked as costed: 20 tokens to prefill, not the whole prompt.
    BOOST_TEST(d->chosen.cached_tokens == 20u);
    BOOST_TEST(router.sequences().active_prefill_tokens(worker_key{2, 0}) == 20u);
  }
}

BOOST_AUTO_TEST_CASE(tier_events_never_touch_the_device_index) {
  kv_router_config c;
  c.router_event_threads = 1;
  c.router_lower_tier_weight = 0.0; // lower tiers ignored: device hits only
  kv_router router(c, bs, router_mode::kv, 1);
  auto p = prompt(1, 40);
  router.on_event(cached(2, p, 0));
  // Host copies of the same blocks come and go: device hits stay.
  router.on_event(in_tier(cached(2, p, 1), protocol::storage_tier::host_pinned));
  protocol::router_event gone;
  gone.worker_id = 2;
  gone.event.event_id = 2;
  gone.event.kind = protocol::kv_event_kind::removed;
  gone.event.medium = protocol::storage_tier::disk;
  gone.event.removed_hashes = kv::sequence_hashes_of_tokens(p, bs);
  router.on_event(gone);
  router.flush();
  BOOST_TEST(router.index().tree_size(worker_key{2, 0}) == 10u);
  auto d = router.route(request("r", p));
  BOOST_REQUIRE(d);
  BOOST_TEST(d->overlap_blocks == 10u);
  BOOST_TEST(d->costs[0].logit == 20.0); // worker 1: nothing cached; weight 0 changes nothing
}

BOOST_AUTO_TEST_CASE(the_lower_tier_weight_is_a_validated_flag) {
  kv_router_config c;
  BOOST_TEST(c.router_lower_tier_weight == 0.5);
  BOOST_REQUIRE(c.set("--router-lower-tier-weight", "0.25"));
  BOOST_TEST(c.router_lower_tier_weight == 0.25);
  BOOST_REQUIRE(c.set("--router-lower-tier-weight", "1.5"));
  BOOST_TEST(!c.validate());
}

BOOST_AUTO_TEST_CASE(the_kv_capacity_option_is_off_by_default_and_needs_active_blocks) {
  kv_router_config c;
  BOOST_TEST(!c.router_kv_capacity);
  BOOST_REQUIRE(c.set("--router-kv-capacity", "true"));
  BOOST_TEST(c.router_kv_capacity);
  BOOST_REQUIRE(c.set("--no-router-track-active-blocks", ""));
  BOOST_TEST(!c.validate());
  BOOST_REQUIRE(c.set("--no-router-kv-capacity", ""));
  BOOST_TEST(bool(c.validate()));
}

BOOST_AUTO_TEST_CASE(the_timing_cost_needs_a_profile_and_dynamo_cost_none) {
  kv_router_config c;
  BOOST_TEST((c.router_cost == cost_model::dynamo));
  BOOST_TEST(!c.set("--router-cost", "cheapest"));
  BOOST_TEST(!c.set("--router-profile", "")); // a value flag, not a switch
  BOOST_REQUIRE(c.set("--router-cost", "timing"));
  auto no_profile = c.validate();
  BOOST_REQUIRE(!no_profile);
  BOOST_TEST(message_of(no_profile.error()) == "--router-cost: timing needs --router-profile (a dynamo-profile JSON)");
  BOOST_REQUIRE(c.set("--router-profile", "p.json"));
  BOOST_TEST(bool(c.validate()));
  BOOST_TEST(c.overlap_score_weight == 1.0); // derived later, from the file (plan::apply_router_cost)
  BOOST_REQUIRE(c.set("--router-cost", "dynamo"));
  BOOST_TEST(!c.validate()); // a profile nothing reads
}

BOOST_AUTO_TEST_SUITE_END()
