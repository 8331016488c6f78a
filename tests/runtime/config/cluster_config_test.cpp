#include "runtime/config/cluster_config.hpp"
#include "tests/runtime/config/config_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>

using namespace dynamo;
using namespace dynamo::config;
using dynamo::config::test::error_of;

BOOST_AUTO_TEST_SUITE(cluster_config_suite)

BOOST_AUTO_TEST_CASE(full_config_parses) {
  auto c = parse_cluster_config(R"(
namespace: prod
plane_host: 127.0.0.1
discovery: {backend: file, root: /tmp/d, lease_ttl_ms: 800}
frontend: {host: 127.0.0.1, port: 8080}
admin: {enabled: true, port: 9100, forward_timeout_ms: 750}
router:
  mode: kv
  kv_overlap_score_weight: 2.0
  router_temperature: 0.5
  router_kv_capacity: true
  migration_limit: 2
  standalone: true
shutdown_grace_ms: 1500
pools:
  - name: prefill
    role: prefill
    engine: cpu
    model: smollm2
    model_path: /models/x.gguf
    replicas: 2
    engine_args: {block_size: 32, max_num_seqs: 8}
  - name: backend
    engine: mocker
    model: mock
    mocker: {speedup_ratio: 0}
)");
  if (!c)
    BOOST_FAIL(describe(c.error()));
  BOOST_TEST(c->namespace_name == "prod");
  BOOST_TEST(c->discovery.lease_ttl_ms == 800u);
  BOOST_TEST(c->frontend.port == 8080);
  BOOST_TEST(c->admin.enabled);
  BOOST_TEST(c->admin.forward_timeout_ms == 750u);
  BOOST_TEST(static_cast<int>(c->router.mode) == static_cast<int>(route::router_mode::kv));
  BOOST_TEST(c->router.kv.overlap_score_weight == 2.0);
  BOOST_TEST(c->router.kv.router_temperature == 0.5);
  BOOST_TEST(c->router.kv.router_kv_capacity);
  BOOST_TEST(c->router.migration_limit == 2u);
  BOOST_TEST(c->router.standalone);
  BOOST_TEST(c->shutdown_grace_ms == 1500u);
  BOOST_REQUIRE_EQUAL(c->pools.size(), 2u);
  BOOST_TEST(static_cast<int>(c->pools[0].role) == static_cast<int>(worker_role::prefill));
  BOOST_TEST(c->pools[0].engine_opts.block_size == 32u);
  BOOST_TEST(c->pools[0].replicas == 2u);
  BOOST_TEST(c->pools[1].mocker.speedup_ratio == 0.0);
  BOOST_TEST(c->find_pool("backend") != nullptr);
  BOOST_TEST(c->find_pool("nope") == nullptr);
}

BOOST_AUTO_TEST_CASE(the_router_cost_keys_parse_and_default_to_dynamo) {
  auto c = parse_cluster_config("router: {mode: kv, router_cost: timing, router_profile: /p/mocker.json}\n"
                                "pools: [{name: b, model: m}]");
  if (!c)
    BOOST_FAIL(describe(c.error()));
  BOOST_TEST((c->router.kv.router_cost == route::cost_model::timing));
  BOOST_TEST(c->router.kv.router_profile == "/p/mocker.json"); // read by the apps (plan::apply_router_cost)
  BOOST_TEST(c->router.kv.overlap_score_weight == 1.0);
  auto d = parse_cluster_config("pools: [{name: b, model: m}]");
  BOOST_REQUIRE(d);
  BOOST_TEST((d->router.kv.router_cost == route::cost_model::dynamo));
  BOOST_TEST(d->router.kv.router_profile.empty());
}

BOOST_AUTO_TEST_CASE(defaults_fill_in) {
  auto c = parse_cluster_config("pools: [{name: backend, model: m}]");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->namespace_name == "dynamo");
  BOOST_TEST(c->frontend.port == 8000);
  BOOST_TEST(!c->admin.enabled);
  BOOST_TEST(c->admin.forward_timeout_ms == 5000u);
  BOOST_TEST(static_cast<int>(c->pools[0].engine) == static_cast<int>(engine_kind::mocker));
}

BOOST_AUTO_TEST_CASE(errors_name_the_field) {
  BOOST_TEST(error_of("pools: [{name: b, model: m, engine: gpu}]") ==
             "pools[0].engine: 'gpu' is not one of mocker|cpu|cuda");
  BOOST_TEST(error_of("pools: [{name: b, model: m, replica: 2}]") == "pools[0].replica: unknown key");
  BOOST_TEST(error_of("pools: [{name: b, model: m, replicas: -1}]") ==
             "pools[0].replicas: '-1' is not a valid non-negative integer");
  BOOST_TEST(error_of("pools: [{name: B, model: m}]") == "pools[0].name: 'B' must match [a-z0-9_-]+");
  BOOST_TEST(error_of("pools: [{name: b, model: m, engine: cpu}]") ==
             "pools[0].model_path: is required for engine cpu");
  BOOST_TEST(error_of("pools: [{name: b}]") == "pools[0].model: is required");
  BOOST_TEST(error_of("pools: [{name: b, model: m, engine_args: {gpu_memory_fraction: 1.5}}]") ==
             "pools[0].engine_args.gpu_memory_fraction: must be in (0, 1]");
  BOOST_TEST(error_of("pools: []") == "pools: expected a non-empty list of worker pools");
  BOOST_TEST(error_of("pools: [{name: b, model: m}, {name: b, model: m}]") ==
             "pools[1].name: 'b' is used twice");
  for (std::string taken : {"frontend", "router", "planner"})
    BOOST_TEST(error_of("pools: [{name: " + taken + ", model: m}]").find("pools[0].name: '" + taken +
                                                                         "' is reserved") == 0u, taken);
  BOOST_TEST(error_of("router: {mode: fastest}\npools: [{name: b, model: m}]").find("router.mode") == 0);
  BOOST_TEST(error_of("router: {router_temperature: hot}\npools: [{name: b, model: m}]").find("router.router_temperature") == 0);
  BOOST_TEST(error_of("router: {router_kv_capacity: true, router_track_active_blocks: false}\npools: [{name: b, model: m}]")
               .find("router: --router-kv-capacity") == 0);
  BOOST_TEST(error_of("router: {router_cost: timing}\npools: [{name: b, model: m}]") ==
             "router: --router-cost: timing needs --router-profile (a dynamo-profile JSON)");
  BOOST_TEST(error_of("router: {router_cost: fast, router_profile: p.json}\npools: [{name: b, model: m}]") ==
             "router.router_cost: --router-cost: 'fast': must be dynamo or timing");
  BOOST_TEST(error_of("router: {router_profile: p.json}\npools: [{name: b, model: m}]") ==
             "router: --router-profile: is read only with --router-cost timing");
  BOOST_TEST(error_of("admin: {enabled: true, host: 0.0.0.0}\npools: [{name: b, model: m}]") ==
             "admin.token: is required when the admin API listens on a public interface");
  // The same loopback test as the admin service's own (runtime/core/host): no token needed.
  for (std::string host : {"127.0.0.2", "'::ffff:127.0.0.1'", "LOCALHOST"})
    BOOST_TEST(parse_cluster_config("admin: {enabled: true, host: " + host +
                                    "}\npools: [{name: b, model: m}]").engaged(), host);
  for (std::string ms : {"0", "600001"})
    BOOST_TEST(error_of("admin: {forward_timeout_ms: " + ms + "}\npools: [{name: b, model: m}]") ==
               "admin.forward_timeout_ms: must be in [1, 600000] ms", ms);
  BOOST_TEST(error_of("frontend: {port: 99999}\npools: [{name: b, model: m}]") ==
             "frontend.port: '99999' is not a valid non-negative integer");
  BOOST_TEST(error_of("colour: blue\npools: [{name: b, model: m}]") == "colour: unknown key");
  BOOST_TEST(error_of("pools: [{name: b, model: m}\n").find("YAML syntax error at line") == 0);
  BOOST_TEST(error_of("- a\n- b") == "the cluster config must be a YAML mapping");
}

BOOST_AUTO_TEST_CASE(etcd_discovery_parses) {
  auto c = parse_cluster_config("discovery: {backend: etcd, endpoints: [http://10.0.0.1:2379, 'http://etcd-1'],\n"
                                "            key_prefix: /prod, lease_ttl_ms: 2000}\n"
                                "pools: [{name: b, model: m}]");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->discovery.backend == "etcd");
  BOOST_TEST(c->discovery.endpoints == (std::vector<std::string>{"http://10.0.0.1:2379", "http://etcd-1"}),
             boost::test_tools::per_element());
  BOOST_TEST(c->discovery.key_prefix == "/prod");
  BOOST_TEST(c->discovery.lease_ttl_ms == 2000u);
  auto d = parse_cluster_config("discovery: {backend: etcd}\npools: [{name: b, model: m}]");
  BOOST_REQUIRE(d);
  BOOST_TEST(d->discovery.endpoints.empty()); // $ETCD_ENDPOINTS or http://127.0.0.1:2379, at startup
  BOOST_TEST(d->discovery.key_prefix == "/dynamo");
}

BOOST_AUTO_TEST_CASE(etcd_discovery_errors_name_the_field) {
  auto with = [](std::string discovery) { return error_of("discovery: " + discovery + "\npools: [{name: b, model: m}]"); };
  BOOST_TEST(with("{backend: zookeeper}") == "discovery.backend: 'zookeeper' is not one of file|etcd|memory");
  BOOST_TEST(with("{backend: etcd, endpoints: http://h:2379}") ==
             "discovery.endpoints: expected a non-empty list of http://host:port");
  BOOST_TEST(with("{backend: etcd, endpoints: []}") ==
             "discovery.endpoints: expected a non-empty list of http://host:port");
  BOOST_TEST(with("{backend: etcd, endpoints: [http://a:2379, ftp://b:2379]}") ==
             "discovery.endpoints[1]: etcd endpoint 'ftp://b:2379': expected http://host[:port][/path]");
  BOOST_TEST(with("{backend: etcd, endpoints: ['http://a:99999']}") ==
             "discovery.endpoints[0]: etcd endpoint 'http://a:99999': bad port");
  BOOST_TEST(with("{backend: etcd, endpoints: ['http://a:2379/v3']}") ==
             "discovery.endpoints[0]: 'http://a:2379/v3' must not have a path");
  BOOST_TEST(with("{backend: etcd, endpoints: [[a]]}") == "discovery.endpoints[0]: expected http://host:port");
  BOOST_TEST(with("{backend: etcd, endpoints: ['a:2379']}") ==
             "discovery.endpoints[0]: etcd endpoint 'a:2379': expected http://host[:port][/path]");
  BOOST_TEST(with("{backend: file, endpoints: ['http://a:2379']}") == "discovery.endpoints: only for backend etcd");
  BOOST_TEST(with("{backend: etcd, root: /tmp/x}") == "discovery.root: only for backend file");
  BOOST_TEST(with("{backend: etcd, key_prefix: dynamo}") == "discovery.key_prefix: 'dynamo' must look like /dynamo");
  BOOST_TEST(with("{backend: etcd, endpoint: ['http://a:2379']}") == "discovery.endpoint: unknown key");
}

BOOST_AUTO_TEST_CASE(every_example_config_parses) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator{std::filesystem::path{src} / "examples" / "configs"}) {
    if (e.path().extension() != ".yaml")
      continue;
    auto c = load_cluster_config(e.path().string());
    BOOST_TEST(static_cast<bool>(c), e.path().filename().string() << ": " << (c ? "" : describe(c.error())));
    ++n;
  }
  BOOST_TEST(n >= 3u);
}

// deploy/k8s/examples/*/cluster.yaml: the ConfigMap every pod reads. They bind
// 0.0.0.0, so a pod starts only with $DYNAMO_ADVERTISE_HOST (its IP) set.
BOOST_AUTO_TEST_CASE(every_kubernetes_example_config_parses_and_needs_the_pod_ip) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator{std::filesystem::path{src} / "deploy" / "k8s" / "examples"}) {
    auto path = (e.path() / "cluster.yaml").string();
    auto c = load_cluster_config(path);
    BOOST_TEST_REQUIRE(static_cast<bool>(c), path << ": " << (c ? "" : describe(c.error())));
    BOOST_TEST(c->discovery.backend == "etcd", path);
    auto without = *c;
    ::unsetenv("DYNAMO_ADVERTISE_HOST"); // as in a pod spec without it
    BOOST_TEST(!apply_plane_hosts(without, "", ""), path); // wildcard, nothing to advertise
    BOOST_TEST(static_cast<bool>(apply_plane_hosts(*c, "", "10.244.1.7")), path);
    BOOST_TEST(advertised_host(*c) == "10.244.1.7");
    ++n;
  }
  BOOST_TEST(n >= 2u);
}

BOOST_AUTO_TEST_CASE(planner_fields_parse) {
  auto c = parse_cluster_config(R"(
planner:
  enabled: true
  interval_ms: 1000
  min_replicas: 1
  max_replicas: 4
  scale_up_num_waiting: 3
  scale_down_num_waiting: 0.5
  scale_up_prefill_load: 2.0
  scale_down_prefill_load: 0.2
  predictor: kalman
  predictor_window: 4
  kalman_q_level: 2.0
  kalman_q_trend: 0.2
  kalman_r: 5.0
  kalman_min_points: 3
  pending_timeout_ms: 9000
  max_gpu_budget: 6
  gpus_per_worker: 2
  throughput_scaling: true
  metrics_url: http://127.0.0.1:9000/metrics
  prefill_tokens_per_s: 1000
  decode_tokens_per_s: 50
pools: [{name: b, model: m}]
)");
  if (!c)
    BOOST_FAIL(describe(c.error()));
  const auto& p = c->planner;
  BOOST_TEST(p.enabled);
  BOOST_TEST(p.scale_up_num_waiting == 3.0);
  BOOST_TEST(p.scale_down_num_waiting == 0.5);
  BOOST_TEST(p.scale_up_prefill_load == 2.0);
  BOOST_TEST(p.scale_down_prefill_load == 0.2);
  BOOST_TEST(p.predictor == "kalman");
  BOOST_TEST(p.predictor_window == 4u);
  BOOST_TEST(p.kalman_q_level == 2.0);
  BOOST_TEST(p.kalman_q_trend == 0.2);
  BOOST_TEST(p.kalman_r == 5.0);
  BOOST_TEST(p.kalman_min_points == 3u);
  BOOST_TEST(p.pending_timeout_ms == 9000u);
  BOOST_TEST(p.max_gpu_budget == 6);
  BOOST_TEST(p.gpus_per_worker == 2u);
  BOOST_TEST(p.throughput_scaling);
  BOOST_TEST(p.metrics_url == "http://127.0.0.1:9000/metrics");
  BOOST_TEST(p.prefill_tokens_per_s == 1000.0);
  BOOST_TEST(p.decode_tokens_per_s == 50.0);
}

BOOST_AUTO_TEST_CASE(planner_defaults) {
  auto c = parse_cluster_config("pools: [{name: backend, model: m}]");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->planner.predictor == "moving_average");
  BOOST_TEST(c->planner.max_gpu_budget == -1);
  BOOST_TEST(!c->planner.throughput_scaling);
}

BOOST_AUTO_TEST_CASE(planner_errors_name_the_field) {
  auto bad = [](std::string planner) { return error_of("planner: {" + planner + "}\npools: [{name: b, model: m}]"); };
  BOOST_TEST(bad("predictor: arima") == "planner.predictor: 'arima' is not one of constant|moving_average|kalman");
  BOOST_TEST(bad("predictor_window: 0") == "planner.predictor_window: must be > 0");
  BOOST_TEST(bad("kalman_r: 0") == "planner.kalman_r: must be > 0");
  BOOST_TEST(bad("kalman_q_trend: -1") == "planner.kalman_q_trend: must be > 0");
  BOOST_TEST(bad("scale_down_num_waiting: 5") ==
             "planner.scale_down_num_waiting: must be >= 0 and below scale_up_num_waiting");
  BOOST_TEST(bad("scale_up_prefill_load: 0.05") ==
             "planner.scale_down_prefill_load: must be >= 0 and below scale_up_prefill_load");
  BOOST_TEST(bad("pending_timeout_ms: 0") == "planner.pending_timeout_ms: must be > 0");
  BOOST_TEST(bad("gpus_per_worker: 0") == "planner.gpus_per_worker: must be > 0");
  BOOST_TEST(bad("max_gpu_budget: lots") == "planner.max_gpu_budget: 'lots' is not a valid integer");
  BOOST_TEST(bad("throughput_scaling: true") ==
             "planner.throughput_scaling: needs prefill_tokens_per_s or decode_tokens_per_s");
  BOOST_TEST(bad("decode_tokens_per_s: -3") == "planner.decode_tokens_per_s: must be >= 0");
  BOOST_TEST(bad("scale_up: 1") == "planner.scale_up: unknown key");
  BOOST_TEST(bad("mode: magic") == "planner.mode: 'magic' is not one of load|sla");
  BOOST_TEST(bad("mode: sla, itl_ms: 20, profile: p.json") == "planner.ttft_ms: must be > 0 in sla mode");
  BOOST_TEST(bad("mode: sla, ttft_ms: 500, itl_ms: 20") ==
             "planner.profile: sla mode needs a dynamo-profile JSON file");
  auto ok = parse_cluster_config("planner: {mode: sla, ttft_ms: 500, itl_ms: 20, profile: p.json}\n"
                                 "pools: [{name: b, model: m}]");
  BOOST_REQUIRE(ok);
  BOOST_TEST(ok->planner.mode == "sla");
  BOOST_TEST(ok->planner.itl_ms == 20.0);
}

BOOST_AUTO_TEST_CASE(the_step_token_budget_defaults_per_engine_and_can_be_overridden) {
  // A CPU step is kept short (128 tokens per compute thread, 128..2048); GPUs and the mocker take 8192.
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::cpu, 1) == 128u);
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::cpu, 2) == 256u);
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::cpu, 16) == 2048u);
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::cpu, 4096) == 2048u);
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::cpu, 0) >= 128u); // the hardware threads
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::cuda, 2) == 8192u);
  BOOST_TEST(default_max_num_batched_tokens(engine_kind::mocker, 0) == 8192u);
  auto c = parse_cluster_config(R"(
pools:
  - {name: a, engine: cpu, model: m, model_path: /m.gguf, engine_args: {threads: 3}}
  - {name: b, engine: cpu, model: m, model_path: /m.gguf, engine_args: {threads: 3, max_num_batched_tokens: 8192}}
)");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->pools[0].engine_opts.max_num_batched_tokens == 0u);
  BOOST_TEST(max_num_batched_tokens(c->pools[0].engine, c->pools[0].engine_opts) == 384u);
  BOOST_TEST(max_num_batched_tokens(c->pools[1].engine, c->pools[1].engine_opts) == 8192u);
}

BOOST_AUTO_TEST_CASE(the_cpu_repack_is_on_unless_a_pool_turns_it_off) {
  auto c = parse_cluster_config(R"(
pools:
  - {name: a, engine: cpu, model: m, model_path: /m.gguf}
  - {name: b, engine: cpu, model: m, model_path: /m.gguf, engine_args: {cpu_repack: false}}
)");
  BOOST_REQUIRE(c);
  BOOST_TEST(c->pools[0].engine_opts.cpu_repack);
  BOOST_TEST(!c->pools[1].engine_opts.cpu_repack);
  BOOST_TEST(error_of("pools: [{name: b, model: m, engine_args: {cpu_repack: sometimes}}]").find(
                 "pools[0].engine_args.cpu_repack") == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(plane_hosts_suite)

const char* const one_pool = "pools: [{name: w, model: m, engine: mocker}]\n";

BOOST_AUTO_TEST_CASE(a_wildcard_bind_needs_a_host_to_advertise) {
  ::unsetenv("DYNAMO_ADVERTISE_HOST");
  auto c = parse_cluster_config(std::string{"plane_host: 0.0.0.0\n"} + one_pool);
  BOOST_REQUIRE(c); // another process may pass --advertise-host
  auto bare = *c;
  auto err = apply_plane_hosts(bare, "", "");
  BOOST_REQUIRE(!err);
  BOOST_TEST(message_of(err.error()).find("advertise_host") != std::string::npos);
  auto flagged = *c;
  BOOST_REQUIRE(apply_plane_hosts(flagged, "", "10.0.0.5"));
  BOOST_TEST(flagged.plane_host == "0.0.0.0");
  BOOST_TEST(advertised_host(flagged) == "10.0.0.5");
  ::setenv("DYNAMO_ADVERTISE_HOST", "10.0.0.6", 1);
  auto from_env = *c;
  BOOST_REQUIRE(apply_plane_hosts(from_env, "", ""));
  BOOST_TEST(advertised_host(from_env) == "10.0.0.6");
  auto flag_wins = *c;
  BOOST_REQUIRE(apply_plane_hosts(flag_wins, "", "10.0.0.5"));
  BOOST_TEST(advertised_host(flag_wins) == "10.0.0.5");
  ::unsetenv("DYNAMO_ADVERTISE_HOST");
}

BOOST_AUTO_TEST_CASE(the_config_names_both_hosts) {
  auto c = parse_cluster_config(std::string{"plane_host: 0.0.0.0\nadvertise_host: node-1.lan\n"} + one_pool);
  BOOST_REQUIRE(c);
  BOOST_TEST(advertised_host(*c) == "node-1.lan");
  BOOST_REQUIRE(apply_plane_hosts(*c, "192.168.1.7", ""));
  BOOST_TEST(c->plane_host == "192.168.1.7");
  BOOST_TEST(advertised_host(*c) == "node-1.lan");
  auto plain = parse_cluster_config(one_pool);
  BOOST_REQUIRE(plain);
  BOOST_TEST(advertised_host(*plain) == "127.0.0.1"); // the default binds and advertises loopback
  BOOST_TEST(error_of(std::string{"advertise_host: 0.0.0.0\n"} + one_pool).find("advertise_host") !=
             std::string::npos);
  BOOST_TEST(error_of(std::string{"plane_host: ''\n"} + one_pool).find("plane_host") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(cluster_config_kvbm_suite)

BOOST_AUTO_TEST_CASE(kvbm_tiers_parse_and_default_off) {
  auto c = parse_cluster_config(R"(
pools:
  - name: agg
    engine: cpu
    model: m
    model_path: /m.gguf
    kvbm: {host_gb: 2.5, disk_gb: 8, disk_path: /var/kvbm}
  - name: plain
    model: mocker
)");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : describe(c.error())));
  const pool_config& p = c->pools[0];
  BOOST_TEST(p.kvbm.host_gb == 2.5);
  BOOST_TEST(p.kvbm.disk_gb == 8.0);
  BOOST_TEST(p.kvbm.disk_path == "/var/kvbm");
  BOOST_TEST(p.kvbm.enabled());
  BOOST_TEST(!c->pools[1].kvbm.enabled());
}

BOOST_AUTO_TEST_CASE(kvbm_errors_name_the_field) {
  BOOST_TEST(error_of("pools: [{name: a, model: m, kvbm: {host_gb: -1}}]").find("pools[0].kvbm.host_gb") !=
             std::string::npos);
  BOOST_TEST(error_of("pools: [{name: a, model: m, kvbm: {ssd_gb: 1}}]").find("ssd_gb") != std::string::npos);
  BOOST_TEST(error_of("pools: [{name: a, engine: cpu, model: m, model_path: /m, kvbm: {disk_gb: 1}}]")
                 .find("disk_path") != std::string::npos);
  // The mocker keeps an index only: no directory needed.
  BOOST_TEST(error_of("pools: [{name: a, model: m, kvbm: {disk_gb: 1}}]").empty());
}

BOOST_AUTO_TEST_CASE(kvbm_disk_tuning_parses_and_unset_keeps_the_defaults) {
  auto c = parse_cluster_config(R"(
pools:
  - name: a
    model: m
    kvbm: {disk_gb: 1, disk_readers: 4, disk_read_mb: 0.5, disk_segment_mb: 16, disk_min_free_gb: 0,
           disk_min_frequency: 1}
  - name: b
    model: m
    kvbm: {disk_gb: 1}
)");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : describe(c.error())));
  const kvbm_options& k = c->pools[0].kvbm;
  BOOST_TEST(*k.disk_readers == 4u);
  BOOST_TEST(*k.disk_read_mb == 0.5);
  BOOST_TEST(*k.disk_segment_mb == 16.0);
  BOOST_TEST(*k.disk_min_free_gb == 0.0);
  BOOST_TEST(*k.disk_min_frequency == 1u);
  const kvbm_options& d = c->pools[1].kvbm;
  BOOST_TEST((!d.disk_readers && !d.disk_read_mb && !d.disk_segment_mb && !d.disk_min_free_gb &&
              !d.disk_min_frequency));
}

BOOST_AUTO_TEST_CASE(kvbm_disk_tuning_errors_name_the_field) {
  auto bad = [](std::string kvbm) { return error_of("pools: [{name: a, model: m, kvbm: {" + kvbm + "}}]"); };
  BOOST_TEST(bad("disk_readers: 0") == "pools[0].kvbm.disk_readers: must be in [1, 256]");
  BOOST_TEST(bad("disk_readers: 257") == "pools[0].kvbm.disk_readers: must be in [1, 256]");
  BOOST_TEST(bad("disk_readers: -1").find("pools[0].kvbm.disk_readers: '-1' is not a valid") == 0);
  BOOST_TEST(bad("disk_read_mb: 0").find("pools[0].kvbm.disk_read_mb: must be a size in MiB") == 0);
  BOOST_TEST(bad("disk_read_mb: 0.001").find("pools[0].kvbm.disk_read_mb: must be a size in MiB") == 0);
  BOOST_TEST(bad("disk_read_mb: 2048").find("pools[0].kvbm.disk_read_mb") == 0);
  BOOST_TEST(bad("disk_read_mb: 0.00390625").empty()); // 4 KiB
  BOOST_TEST(bad("disk_segment_mb: 0.5") == "pools[0].kvbm.disk_segment_mb: must be a size in MiB in [1, 1048576]");
  BOOST_TEST(bad("disk_segment_mb: 1").empty());
  BOOST_TEST(bad("disk_min_free_gb: -1").find("pools[0].kvbm.disk_min_free_gb") == 0);
  BOOST_TEST(bad("disk_min_frequency: 0") == "pools[0].kvbm.disk_min_frequency: must be in [1, 1048576]");
  BOOST_TEST(bad("disk_read_mb: fast").find("pools[0].kvbm.disk_read_mb: 'fast' is not a valid number") == 0);
}

BOOST_AUTO_TEST_CASE(kvbm_option_check_names_the_key) {
  kvbm_options k;
  BOOST_TEST(!check_kvbm_options(k));
  k.disk_segment_mb = 0;
  auto bad = check_kvbm_options(k);
  BOOST_REQUIRE(bad);
  BOOST_TEST(bad->key == "disk_segment_mb");
  k.disk_segment_mb = 64;
  k.host_gb = -1;
  BOOST_TEST(check_kvbm_options(k)->key == "host_gb");
}

BOOST_AUTO_TEST_SUITE_END()
