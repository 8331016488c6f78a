// apps::router_flags: the router flags dynamo-run, dynamo-frontend and
// dynamo-router share, parsed once and laid over a cluster config's router: block.
#include "apps/common/app_support.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

using namespace dynamo;

namespace {

// Parses `args` as a binary with only the router flags would.
expected<bool> parse(apps::router_flags& f, std::vector<std::string> args) {
  cli c("test", "router flags");
  apps::add_router_flags(c, f);
  std::vector<const char*> argv{"test"};
  for (const auto& a : args)
    argv.push_back(a.c_str());
  return c.parse(static_cast<int>(argv.size()), argv.data());
}

} // namespace

BOOST_AUTO_TEST_SUITE(router_flags)

BOOST_AUTO_TEST_CASE(given_flags_replace_the_config_and_the_rest_is_kept) {
  config::router_config r; // as a cluster config's router: block set it
  r.mode = route::router_mode::random;
  r.migration_limit = 5;
  r.kv.router_temperature = 0.5;
  r.kv.overlap_score_weight = 2.0;
  apps::router_flags f;
  BOOST_REQUIRE(parse(f, {"--router-mode", "kv", "--router-kv-capacity", "--kv-overlap-score-weight=0.25",
                          "--migration-limit", "1"}));
  BOOST_REQUIRE(f.apply(r));
  BOOST_TEST((r.mode == route::router_mode::kv));
  BOOST_TEST(r.kv.router_kv_capacity);
  BOOST_TEST(r.kv.overlap_score_weight == 0.25);
  BOOST_TEST(r.migration_limit == 1u);
  BOOST_TEST(r.kv.router_temperature == 0.5); // not given: the config's
}

BOOST_AUTO_TEST_CASE(nothing_given_leaves_the_config_as_it_is) {
  config::router_config r;
  r.mode = route::router_mode::kv;
  r.kv.router_kv_capacity = true;
  apps::router_flags f;
  BOOST_REQUIRE(parse(f, {}));
  BOOST_REQUIRE(f.apply(r));
  BOOST_TEST((r.mode == route::router_mode::kv));
  BOOST_TEST(r.kv.router_kv_capacity);
  BOOST_TEST(r.migration_limit == 3u);
}

BOOST_AUTO_TEST_CASE(a_switch_can_turn_a_config_setting_off) {
  config::router_config r;
  r.kv.router_kv_capacity = true;
  apps::router_flags f;
  BOOST_REQUIRE(parse(f, {"--no-router-kv-capacity"}));
  BOOST_REQUIRE(f.apply(r));
  BOOST_TEST(!r.kv.router_kv_capacity);
}

BOOST_AUTO_TEST_CASE(bad_values_fail_the_parse_and_bad_combinations_the_apply) {
  apps::router_flags f;
  auto mode = parse(f, {"--router-mode", "fastest"});
  BOOST_REQUIRE(!mode);
  BOOST_TEST(describe(mode.error()).find("--router-mode") != std::string::npos);
  BOOST_TEST(!parse(f, {"--router-temperature", "warm"}));
  BOOST_TEST(!parse(f, {"--migration-limit", "-1"}));
  // Each flag is fine alone; with the config's blocks tracking off it is not.
  config::router_config r;
  r.kv.router_track_active_blocks = false;
  apps::router_flags cap;
  BOOST_REQUIRE(parse(cap, {"--router-kv-capacity"}));
  auto applied = cap.apply(r);
  BOOST_REQUIRE(!applied);
  BOOST_TEST(describe(applied.error()).find("--router-kv-capacity") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(help_lists_every_router_flag) {
  apps::router_flags f;
  cli c("test", "router flags");
  apps::add_router_flags(c, f);
  const std::string help = c.help();
  BOOST_TEST(help.find("--router-mode") != std::string::npos);
  BOOST_TEST(help.find("--migration-limit") != std::string::npos);
  for (const auto& flag : route::kv_router_flags())
    BOOST_TEST(help.find(std::string{flag.name}) != std::string::npos, flag.name);
}

BOOST_AUTO_TEST_CASE(the_flags_that_choose_a_worker_are_named_for_a_standalone_frontends_warning) {
  apps::router_flags f;
  BOOST_REQUIRE(parse(f, {"--migration-limit", "1", "--kv-overlap-score-weight=0.25", "--router-mode", "kv",
                          "--router-kv-capacity", "--kv-overlap-score-weight=0.5"}));
  BOOST_TEST(f.worker_choice_flags() ==
                 (std::vector<std::string>{"--router-mode", "--kv-overlap-score-weight", "--router-kv-capacity"}),
             boost::test_tools::per_element());
  apps::router_flags only_migration; // steers the frontend's own re-routes: no warning
  BOOST_REQUIRE(parse(only_migration, {"--migration-limit", "2"}));
  BOOST_TEST(only_migration.worker_choice_flags().empty());
}

BOOST_AUTO_TEST_SUITE_END()
