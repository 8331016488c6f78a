#include "runtime/plan/router_cost.hpp"

#include "runtime/kv/block_hash.hpp"
#include "runtime/route/kv_router.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::plan;

namespace {

/// Block size 16. Cold prefill: 10 ms + 1/64 ms a token (0.25 ms a block); the
/// half-cached point is off that line and must not count. Decode: batch 1 adds
/// 1/32 ms per resident block, batch 2 1/16 ms (pooled: 9/160), batch 4 has
/// one context only (no slope).
engine_profile small_profile() {
  engine_profile p;
  p.block_size = 16;
  p.prefill = {{128, 0.0, 0, 12.0}, {256, 0.0, 0, 14.0}, {512, 0.0, 0, 18.0}, {512, 0.5, 256, 3.0}};
  p.decode = {{1, 128, 4.0}, {1, 256, 4.25}, {2, 128, 6.0}, {2, 256, 7.0}, {4, 128, 50.0}};
  return p;
}

/// A profile file under the temp directory, removed at scope end.
struct profile_file {
  std::string path;
  explicit profile_file(const engine_profile& p, std::string_view name)
      : path((std::filesystem::temp_directory_path() /
              ("router_cost_test_" + std::to_string(::getpid()) + "_" + std::string{name} + ".json"))
               .string()) {
    std::ofstream(path) << to_json(p).dump();
  }
  ~profile_file() { std::filesystem::remove(path); }
};

route::kv_router_config timing_config(const std::string& path) {
  route::kv_router_config c;
  c.router_cost = route::cost_model::timing;
  c.router_profile = path;
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(router_cost_suite)

BOOST_AUTO_TEST_CASE(per_block_times_are_the_slopes_of_the_profile) {
  auto t = router_timing_from_profile(small_profile());
  BOOST_REQUIRE(t);
  BOOST_TEST(t->prefill_ms_per_block == 0.25, boost::test_tools::tolerance(1e-12));
  // batch 1: deviations +-4 blocks, +-0.125 ms; batch 2: +-8, +-0.5 -> (1 + 8) / (32 + 128).
  BOOST_TEST(t->step_ms_per_block == 9.0 / 160.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(t->onboard_ms_per_block == 0.0);
}

BOOST_AUTO_TEST_CASE(a_profile_without_a_fit_is_an_error) {
  auto one_length = small_profile();
  one_length.prefill.erase(one_length.prefill.begin(), one_length.prefill.begin() + 2);
  auto e = router_timing_from_profile(one_length);
  BOOST_REQUIRE(!e);
  BOOST_TEST(message_of(e.error()).find("no prefill fit") != std::string::npos);

  auto one_context = small_profile();
  one_context.decode = {{1, 128, 4.0}, {2, 256, 7.0}};
  e = router_timing_from_profile(one_context);
  BOOST_REQUIRE(!e);
  BOOST_TEST(message_of(e.error()).find("no decode fit") != std::string::npos);

  auto flat = small_profile();
  flat.decode = {{1, 128, 4.0}, {1, 256, 4.0}};
  e = router_timing_from_profile(flat);
  BOOST_REQUIRE(!e);
  BOOST_TEST(message_of(e.error()).find("does not grow with the context") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(timing_cost_sets_the_overlap_weight_from_the_file) {
  profile_file f(small_profile(), "ok");
  auto c = timing_config(f.path);
  c.router_lower_tier_weight = 0.25;
  auto a = apply_router_cost(c);
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(a->has_value());
  BOOST_TEST(c.overlap_score_weight == 0.25 / (9.0 / 160.0), boost::test_tools::tolerance(1e-12));
  BOOST_TEST((*a)->overlap_score_weight == c.overlap_score_weight);
  BOOST_TEST(c.router_lower_tier_weight == 0.25); // not derived: the profile has no onboarding

  route::kv_router_config dynamo_cost; // Dynamo's: untouched
  auto none = apply_router_cost(dynamo_cost);
  BOOST_REQUIRE(none);
  BOOST_TEST(!none->has_value());
  BOOST_TEST(dynamo_cost.overlap_score_weight == 1.0);
}

BOOST_AUTO_TEST_CASE(bad_profiles_and_conflicts_name_the_file) {
  auto no_profile = timing_config(""); // validate()'s error, the same words as the config checks
  auto none = apply_router_cost(no_profile);
  BOOST_REQUIRE(!none);
  BOOST_TEST(message_of(none.error()) == "--router-cost: timing needs --router-profile (a dynamo-profile JSON)");

  auto missing = timing_config("/nonexistent/profile.json");
  auto e = apply_router_cost(missing);
  BOOST_REQUIRE(!e);
  BOOST_TEST(message_of(e.error()).find("--router-profile /nonexistent/profile.json: cannot read") !=
             std::string::npos);

  auto no_decode = small_profile();
  no_decode.decode.clear();
  profile_file f(no_decode, "no_decode");
  auto c = timing_config(f.path);
  e = apply_router_cost(c);
  BOOST_REQUIRE(!e);
  BOOST_TEST(message_of(e.error()).find("no decode fit") != std::string::npos);
  BOOST_TEST(c.overlap_score_weight == 1.0);

  profile_file ok(small_profile(), "conflict");
  auto both = timing_config(ok.path);
  both.overlap_score_weight = 2.0;
  e = apply_router_cost(both);
  BOOST_REQUIRE(!e);
  BOOST_TEST(message_of(e.error()).find("give one of them") != std::string::npos);
}

// A router built from a timing config: a request whose prefix worker 2 caches
// (8 of its 10 blocks, router block size 4) while worker 2 has 10 blocks booked.
// Dynamo's weight 1 prices the 8 blocks below the load and picks idle worker 1;
// the profile's 4.44 prices them above it and picks worker 2.
BOOST_AUTO_TEST_CASE(a_router_from_the_timing_config_prefers_the_cached_worker) {
  profile_file f(small_profile(), "router");
  auto decide = [](const route::kv_router_config& c) {
    constexpr uint32_t bs = 4;
    route::kv_router router(c, bs, route::router_mode::kv, 1);
    std::vector<uint32_t> p(40);
    std::iota(p.begin(), p.end(), 1u);
    auto local = kv::local_block_hashes(std::span<const uint32_t>(p).first(32), bs);
    auto seq = kv::sequence_hashes(local);
    protocol::router_event ev;
    ev.worker_id = 2;
    ev.event.kind = protocol::kv_event_kind::stored;
    for (size_t i = 0; i < local.size(); ++i)
      ev.event.blocks.push_back({seq[i], local[i]});
    router.on_event(ev);
    router.flush();
    const std::vector<route::worker_key> two{{1, 0}, {2, 0}};
    std::vector<uint32_t> other(40);
    std::iota(other.begin(), other.end(), 1000u);
    route::route_request busy{.request_id = "busy", .tokens = other, .candidates = two};
    busy.pinned = route::worker_key{2, 0};
    BOOST_REQUIRE(router.route(busy));
    BOOST_REQUIRE(router.mark_prefill_completed("busy"));
    auto d = router.route(route::route_request{.request_id = "r", .tokens = p, .candidates = two});
    BOOST_REQUIRE(d);
    return *d;
  };
  auto dynamo_d = decide(route::kv_router_config{});
  BOOST_TEST(dynamo_d.worker.worker_id == 1u);
  BOOST_TEST(dynamo_d.costs[0].logit == 1.0 * 10 + 10); // prefill 10 blocks + decode 10
  BOOST_TEST(dynamo_d.costs[1].logit == 1.0 * 2 + 20);  // prefill 2 + decode 10 booked + 10

  auto c = timing_config(f.path);
  BOOST_REQUIRE(apply_router_cost(c));
  auto timing_d = decide(c);
  BOOST_TEST(timing_d.worker.worker_id == 2u);
  BOOST_TEST(timing_d.costs[1].logit == c.overlap_score_weight * 2 + 20, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_SUITE_END()
