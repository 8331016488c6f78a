// dynamo-router: the standalone KV-aware router of a cluster config. Serves
// the models of the worker pools on the request plane for frontends running
// with router.standalone: true. Wiring only.
#include "actors/core/system.hpp"
#include "actors/router/router_service.hpp"
#include "apps/common/app_support.hpp"
#include "apps/common/router_cost.hpp"
#include "runtime/route/router_metrics.hpp"
#include "runtime/core/log.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

using namespace dynamo;

int main(int argc, char** argv) {
  apps::block_shutdown_signals();
  std::string config_path, log_level;
  cli c("dynamo-router", "standalone KV-aware router for the pools of a cluster config");
  c.option("config", &config_path, "cluster config file (YAML)")
    .option("log-level", &log_level, "trace | debug | info | warn | error");
  apps::plane_host_flags hosts;
  apps::add_plane_host_flags(c, hosts);
  apps::router_flags router_flags;
  apps::add_router_flags(c, router_flags);
  c.epilog("The router flags replace the settings of the config's router: block (docs/CLUSTER.md).\n"
           "Example:\n  dynamo-router --config cluster.yaml --router-mode kv --router-kv-capacity");
  if (auto code = cli_exit_code("dynamo-router", c.parse(argc, argv)))
    return *code;
  if (config_path.empty())
    apps::die("dynamo-router", make_error(errc::invalid_argument, "--config is required"));
  init_logging("dynamo-router", log_level);
  auto cfg = apps::load_config(config_path, hosts);
  if (!cfg)
    apps::die("dynamo-router", cfg.error());
  if (auto ok = router_flags.apply(cfg->router); !ok)
    apps::die("dynamo-router", ok.error());
  if (auto ok = apps::prepare_router(cfg->router.kv, "dynamo-router"); !ok)
    apps::die("dynamo-router", ok.error());
  auto curve = apps::plane_keys(*cfg);
  if (!curve)
    apps::die("dynamo-router", curve.error());
  auto rt = actors::make_actor_system();
  auto discovery = apps::make_discovery(cfg->discovery);
  if (!discovery)
    apps::die("dynamo-router", discovery.error());
  actors::router_service_config rc;
  rc.namespace_name = cfg->namespace_name;
  rc.plane_host = cfg->plane_host;
  rc.advertise_host = config::advertised_host(*cfg);
  rc.watcher.router.mode = cfg->router.mode;
  rc.watcher.curve = *curve;
  rc.watcher.router.kv = cfg->router.kv;
  rc.watcher.client.migration_limit = cfg->router.migration_limit;
  rc.watcher.client.max_local_prefill_length = cfg->disagg.max_local_prefill_length;
  rc.watcher.client.migration_max_seq_len = cfg->router.migration_max_seq_len;
  // Its routers' dynamo_router_* families, on its own system server.
  auto registry = std::make_shared<metrics::registry>();
  auto routers = route::router_metrics::create(registry);
  if (!routers)
    apps::die("dynamo-router", routers.error());
  rc.watcher.router.metrics = *routers;
  auto system = apps::start_system_server(*cfg, registry, nullptr, [] { return std::string{}; });
  if (!system)
    apps::die("dynamo-router", system.error());
  rc.system_url = system->url;
  // The admin API first, so that the router's records publish its URL.
  std::atomic<actors::router_service*> served{nullptr};
  auto admin = apps::start_admin(cfg->admin, "router", *rt.system, **discovery, cfg->namespace_name, {},
                                 [&served] {
                                   auto* s = served.load();
                                   return s ? s->supervisors() : admin::supervisor_list{};
                                 },
                                 *routers);
  if (!admin)
    apps::die("dynamo-router", admin.error());
  rc.admin_url = apps::published_admin_url(*cfg, admin->get());
  auto svc = actors::router_service::start(*rt.system, **discovery, rc);
  if (!svc)
    apps::die("dynamo-router", svc.error());
  served = svc->get();
  spdlog::info("dynamo-router: serving at {} (router {})", (*svc)->address(),
               route::to_string(cfg->router.mode));
  if (!system->url.empty())
    spdlog::info("dynamo-router: metrics on {}/metrics", system->url);
  int sig = apps::wait_for_shutdown();
  spdlog::info("dynamo-router: signal {}; stopping", sig);
  admin->reset();
  served = nullptr;
  svc->reset();
  return 0;
}
