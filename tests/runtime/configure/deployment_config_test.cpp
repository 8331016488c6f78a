#include "runtime/configure/deployment_config.hpp"
#include "sim_fixtures.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::configure;

BOOST_AUTO_TEST_SUITE(deployment_config_tests)

// The YAML parses back with the real parser into the same deployment.
BOOST_AUTO_TEST_CASE(disaggregated_round_trip) {
  deployment d{.mode = deployment_mode::disaggregated, .prefill_replicas = 2, .decode_replicas = 3,
               .max_num_seqs = 48, .max_num_batched_tokens = 1024, .max_local_prefill_length = 768,
               .router = route::router_mode::round_robin};
  auto p = test::constant_profile(10, 2, 32768);
  cluster_options o;
  o.frontend_port = 18321;
  o.discovery_root = "/tmp/configure-test";
  auto c = to_cluster_config(d, p, o);
  BOOST_TEST_REQUIRE(static_cast<bool>(c));
  const std::string yaml = to_yaml(*c);
  auto back = config::parse_cluster_config(yaml);
  BOOST_TEST_REQUIRE(static_cast<bool>(back), (back ? std::string{} : message_of(back.error())) << "\n" << yaml);
  BOOST_TEST((back->router.mode == route::router_mode::round_robin));
  BOOST_TEST(back->disagg.max_local_prefill_length == 768u);
  BOOST_TEST(back->frontend.port == 18321);
  BOOST_TEST(back->discovery.root == "/tmp/configure-test");
  BOOST_TEST_REQUIRE(back->pools.size() == 2u);
  const auto& pre = back->pools[0];
  const auto& dec = back->pools[1];
  BOOST_TEST((pre.role == config::worker_role::prefill && pre.replicas == 2u));
  BOOST_TEST((dec.role == config::worker_role::decode && dec.replicas == 3u));
  for (const auto* pool : {&pre, &dec}) {
    BOOST_TEST((pool->engine == config::engine_kind::mocker));
    BOOST_TEST(pool->model == "mocker");
    BOOST_TEST(pool->engine_opts.max_num_seqs == 48u);
    BOOST_TEST(pool->engine_opts.max_num_batched_tokens == 1024u);
    BOOST_TEST(pool->mocker.num_blocks == 32768u / 16);
    BOOST_TEST(pool->engine_opts.context_length == 8192u);
  }
}

BOOST_AUTO_TEST_CASE(aggregated_cpu_round_trip) {
  deployment d{.decode_replicas = 4, .max_num_seqs = 8, .max_num_batched_tokens = 256};
  auto p = test::constant_profile(10, 2, 4096);
  p.engine = "cpu";
  p.block_size = 32;
  p.threads = 3;
  cluster_options o;
  o.model_path = "/models/smollm2.gguf";
  o.model = "smollm2";
  auto c = to_cluster_config(d, p, o);
  BOOST_TEST_REQUIRE(static_cast<bool>(c));
  auto back = config::parse_cluster_config(to_yaml(*c));
  BOOST_TEST_REQUIRE(static_cast<bool>(back));
  BOOST_TEST((back->router.mode == route::router_mode::kv));
  BOOST_TEST_REQUIRE(back->pools.size() == 1u);
  const auto& pool = back->pools[0];
  BOOST_TEST((pool.role == config::worker_role::aggregated && pool.engine == config::engine_kind::cpu));
  BOOST_TEST(pool.replicas == 4u);
  BOOST_TEST(pool.model == "smollm2");
  BOOST_TEST(pool.model_path == "/models/smollm2.gguf");
  BOOST_TEST(pool.engine_opts.block_size == 32u);
  BOOST_TEST(pool.engine_opts.kv_blocks == 4096u / 32);
  BOOST_TEST(pool.engine_opts.threads == 3u);
}

BOOST_AUTO_TEST_CASE(unknown_engine_is_an_error) {
  auto p = test::constant_profile(10, 2);
  p.engine = "tpu";
  auto c = to_cluster_config(deployment{}, p, cluster_options{});
  BOOST_TEST(!c);
}

BOOST_AUTO_TEST_SUITE_END()
