// dynamo-planner: scales the worker pools of a cluster config (research/dynamo.md
// 6). Watches the workers on the discovery plane, reads their load_metrics
// from the event plane, decides every planner.interval_ms, and publishes the
// targets as the <ns>/planner/decisions record that the launcher applies (or,
// with --connector kubernetes, also scales the pools' Deployments); one JSON
// line per decision on stdout. Wiring only.
#include "actors/core/system.hpp"
#include "apps/common/app_support.hpp"
#include "apps/dynamo-planner/kubernetes_connector.hpp"
#include "apps/dynamo-planner/planner_service.hpp"
#include "planes/event/zmq_event_plane.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/core/log.hpp"
#include "runtime/protocol/components.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

using namespace dynamo;

namespace {

struct planner_options {
  std::string config_path, log_level;
  bool dry_run = false;
  std::string connector = "virtual";
  std::string deployment_prefix = std::string{apps::default_deployment_prefix};
  planes::kubernetes_api_options kube;
};

int64_t wall_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

expected<bool> parse(int argc, char** argv, planner_options& o) {
  cli c("dynamo-planner", "scale the worker pools of a cluster from their load");
  c.option("config", &o.config_path, "cluster config file (YAML, docs/CLUSTER.md); required")
    .option("dry-run", &o.dry_run, "decide and print, but publish no decisions record")
    .option("connector", &o.connector, "virtual (the decisions record, applied by dynamo-launch; default) | "
                                       "kubernetes (also scale each pool's Deployment)")
    .option("kubernetes-api", &o.kube.url, "API server URL (default: in-cluster, https://$KUBERNETES_SERVICE_HOST:"
                                           "$KUBERNETES_SERVICE_PORT); http://... for kubectl proxy or tests")
    .option("kubernetes-namespace", &o.kube.namespace_name, "namespace of the worker Deployments (default: the "
                                                            "service account's)")
    .option("kubernetes-token-file", &o.kube.token_file, "bearer token file (default in-cluster: the service "
                                                         "account's token; none with --kubernetes-api)")
    .option("kubernetes-ca-file", &o.kube.ca_file, "CA bundle for https (default in-cluster: the service "
                                                   "account's ca.crt)")
    .option("deployment-prefix", &o.deployment_prefix, "pool P's Deployment is <prefix>P (default worker-)")
    .option("log-level", &o.log_level, "trace | debug | info | warn | error (default: $DYNAMO_LOG or info)");
  c.epilog("Reads the planner: section of the config (interval_ms, min/max_replicas, thresholds,\n"
           "predictor, max_gpu_budget, throughput_scaling) and its pools.\n"
           "Publishes <namespace>/planner/decisions with metadata replicas.<pool>=<n> and\n"
           "decision_id=<k>; prints one JSON line per decision on stdout.\n"
           "--connector kubernetes also sets each pool's Deployment replicas through the scale\n"
           "subresource (GET, then merge-PATCH); a failed call is logged and retried next interval.\n"
           "Examples:\n  dynamo-planner --config cluster.yaml --log-level debug\n"
           "  dynamo-planner --config /etc/dynamo/cluster.yaml --connector kubernetes   # in a pod");
  return c.parse(argc, argv);
}

// The frontend's /metrics, for the throughput lower bound; or, with
// planner.prometheus_url, every frontend's counters summed by Prometheus,
// rewritten as the same exposition text.
expected<std::function<expected<std::string>()>> metrics_fetcher(const config::cluster_config& cfg) {
  const bool prometheus = !cfg.planner.prometheus_url.empty();
  std::string url = prometheus ? cfg.planner.prometheus_url : cfg.planner.metrics_url;
  if (url.empty()) {
    std::string host = cfg.frontend.host == "0.0.0.0" ? "127.0.0.1" : cfg.frontend.host;
    url = (cfg.frontend.tls.cert_file.empty() ? "http://" : "https://") + host + ":" +
          std::to_string(cfg.frontend.port) + "/metrics";
  }
  auto u = prometheus ? parse_http_url(url, "planner.prometheus_url", 9090) : plan::parse_metrics_url(url);
  if (!u)
    return u.error();
  const std::string target =
      prometheus ? plan::prometheus_query_target(u->target, plan::prometheus_traffic_query()) : u->target;
  // A frontend over HTTPS: its certificate chains to frontend.tls.ca_file ("": the system's store).
  std::optional<http::client_tls> tls;
  if (u->tls)
    tls = http::client_tls{cfg.frontend.tls.ca_file};
  auto client = std::make_shared<http::http_client>(u->host, u->port, 1, std::move(tls));
  spdlog::info("throughput scaling reads {}{}", url, prometheus ? " (Prometheus query API)" : "");
  return std::function<expected<std::string>()>{[client, target, prometheus]() -> expected<std::string> {
    http::client_request req;
    req.method = "GET";
    req.target = target;
    auto res = client->request(req, std::chrono::seconds(5));
    if (!res)
      return res.error();
    if (res->status != 200)
      return make_error(errc::io_error, "GET " + target + ": HTTP " + std::to_string(res->status));
    if (prometheus)
      return plan::prometheus_vector_to_text(res->body);
    return std::move(res->body);
  }};
}

// --connector kubernetes: the connector that scales the pools' Deployments.
expected<std::function<expected<void>(const plan::planner_decisions&)>>
kubernetes_apply(const planner_options& o, const config::cluster_config& cfg) {
  auto client = planes::kubernetes_client::create(o.kube);
  if (!client)
    return client.error();
  spdlog::info("kubernetes connector: API {}, namespace {}", (*client)->url(), (*client)->namespace_name());
  std::vector<std::string> pools;
  for (const auto& p : cfg.pools)
    pools.push_back(p.name);
  auto c = apps::kubernetes_connector::create(std::move(*client), o.deployment_prefix, pools);
  if (!c)
    return c.error();
  // Unreachable or forbidden now is not fatal: the API server may come later; each decision retries.
  (void)(*c)->check();
  std::shared_ptr<apps::kubernetes_connector> shared = std::move(*c);
  return std::function<expected<void>(const plan::planner_decisions&)>{
      [shared](const plan::planner_decisions& d) { return shared->apply(d); }};
}

} // namespace

int main(int argc, char** argv) {
  apps::block_shutdown_signals();
  planner_options o;
  if (auto code = cli_exit_code("dynamo-planner", parse(argc, argv, o)))
    return *code;
  init_logging("dynamo-planner", o.log_level);
  if (o.config_path.empty())
    apps::die("dynamo-planner", make_error(errc::invalid_argument, "--config is required"));
  auto cfg = config::load_cluster_config(o.config_path);
  if (!cfg)
    apps::die("dynamo-planner", cfg.error());
  auto curve = apps::plane_keys(*cfg);
  if (!curve)
    apps::die("dynamo-planner", curve.error());
  if (cfg->discovery.backend == "memory")
    apps::die("dynamo-planner", make_error(errc::config_error,
                                           "discovery.backend: 'memory' is visible to one process only; "
                                           "use file or etcd"));
  if (!cfg->planner.enabled)
    spdlog::warn("planner.enabled is false in {}: planning anyway, as asked", o.config_path);

  auto discovery = apps::make_discovery(cfg->discovery);
  if (!discovery)
    apps::die("dynamo-planner", discovery.error());

  apps::planner_service_config sc;
  sc.namespace_name = cfg->namespace_name;
  sc.planner = cfg->planner;
  sc.pools = plan::pool_specs(*cfg);
  if (cfg->planner.mode == "sla") {
    auto profile = plan::load_profile(cfg->planner.profile);
    if (!profile)
      apps::die("dynamo-planner", profile.error());
    for (auto& p : sc.pools)
      p.profile = *profile;
    spdlog::info("sla mode: TTFT {} ms, ITL {} ms, profile {} ({} engine)", cfg->planner.ttft_ms,
                 cfg->planner.itl_ms, cfg->planner.profile, profile->engine);
  }
  sc.dry_run = o.dry_run;
  if (o.connector == "kubernetes") {
    auto apply = kubernetes_apply(o, *cfg);
    if (!apply)
      apps::die("dynamo-planner", apply.error());
    sc.apply = std::move(*apply);
  } else if (o.connector != "virtual") {
    apps::die("dynamo-planner", make_error(errc::invalid_argument, "--connector: '" + o.connector +
                                                                       "' is not one of virtual|kubernetes"));
  }
  sc.clock = wall_ms; // one clock for samples, ticks and the JSON lines' at_ms
  sc.on_decision = [](const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
  };
  if (cfg->planner.throughput_scaling || cfg->planner.mode == "sla") {
    auto fetch = metrics_fetcher(*cfg);
    if (!fetch)
      apps::die("dynamo-planner", fetch.error());
    sc.fetch_metrics = std::move(*fetch);
  }
  apps::subscriber_factory make_subscriber = [keys = *curve](planes::event_subscriber_callbacks cb) {
    planes::zmq_event_subscriber_options so;
    so.callbacks = std::move(cb);
    so.curve = keys;
    return planes::make_zmq_event_subscriber(std::move(so));
  };
  // dynamo_planner_* on the planner's own system server (config system:).
  auto registry = std::make_shared<metrics::registry>();
  auto pm = plan::planner_metrics::create(*registry);
  if (!pm)
    apps::die("dynamo-planner", pm.error());
  sc.metrics = std::move(*pm);
  auto system = apps::start_system_server(*cfg, registry, nullptr, [] { return std::string{}; });
  if (!system)
    apps::die("dynamo-planner", system.error());
  if (!system->url.empty())
    spdlog::info("dynamo-planner: metrics on {}/metrics", system->url);
  auto service = apps::planner_service::start(**discovery, make_subscriber, std::move(sc));
  if (!service)
    apps::die("dynamo-planner", service.error());
  // The admin API (health, instances, drains forwarded to the workers' hosts;
  // it supervises no actor) and the record that makes the planner visible.
  auto rt = actors::make_actor_system(1);
  auto admin = apps::start_admin(cfg->admin, "planner", *rt.system, **discovery, cfg->namespace_name, {});
  if (!admin)
    apps::die("dynamo-planner", admin.error());
  std::map<std::string, std::string> meta;
  if (!system->url.empty())
    meta["system"] = system->url;
  auto record = apps::publish_process(**discovery, cfg->namespace_name, protocol::planner_component,
                                      apps::published_admin_url(*cfg, admin->get()), std::move(meta));
  if (!record)
    apps::die("dynamo-planner", record.error());
  spdlog::info("planning {} pools of namespace {} every {} ms{}", cfg->pools.size(),
               cfg->namespace_name, cfg->planner.interval_ms, o.dry_run ? " (dry run)" : "");

  std::mutex m;
  std::condition_variable cv;
  bool stop = false;
  std::thread ticker([&] {
    auto interval = std::chrono::milliseconds(cfg->planner.interval_ms);
    auto next = std::chrono::steady_clock::now() + interval;
    std::unique_lock lk{m};
    while (!cv.wait_until(lk, next, [&] { return stop; })) {
      lk.unlock();
      (void) (*service)->tick(wall_ms());
      lk.lock();
      next += interval;
      if (next < std::chrono::steady_clock::now())
        next = std::chrono::steady_clock::now() + interval; // fell behind: do not burst
    }
  });

  int sig = apps::wait_for_shutdown();
  spdlog::info("signal {}: shutting down", sig);
  {
    std::lock_guard lk{m};
    stop = true;
  }
  cv.notify_all();
  ticker.join();
  record->reset();
  admin->reset();
  service->reset(); // stops the watch and the subscriber, removes the decisions record
  return 0;
}
