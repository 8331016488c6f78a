// dynamo-worker: the workers of one pool of the cluster config, in one
// process. Engines per the pool (mocker, CPU), registered on the discovery
// plane, serving the request plane, with a system server (/metrics, /health,
// /live); drains on SIGTERM. Wiring only.
#include "actors/core/system.hpp"
#include "runtime/core/units.hpp"
#include "actors/worker/engine_factory.hpp"
#include "actors/worker/worker_service.hpp"
#include "apps/common/app_support.hpp"
#include "runtime/core/log.hpp"

#include <spdlog/spdlog.h>

#include <atomic>

using namespace dynamo;

int main(int argc, char** argv) {
  apps::block_shutdown_signals();
  std::string config_path, pool_name, log_level;
  uint32_t workers = 0;
  double kv_cache_mib = 512;
  cli c("dynamo-worker", "run the workers of one pool of a cluster config");
  c.option("config", &config_path, "cluster config file (YAML)")
    .option("pool", &pool_name, "pool (component) name in the config")
    .option("workers", &workers, "engines in this process (default: the pool's workers_per_process)")
    .option("kv-cache-mib", &kv_cache_mib, "CPU engine KV cache budget per worker in MiB")
    .option("log-level", &log_level, "trace | debug | info | warn | error");
  apps::plane_host_flags hosts;
  apps::add_plane_host_flags(c, hosts);
  apps::kvbm_flags kvbm;
  apps::add_kvbm_flags(c, kvbm);
  std::optional<bool> cpu_repack;
  apps::add_cpu_repack_flag(c, cpu_repack);
  if (auto code = cli_exit_code("dynamo-worker", c.parse(argc, argv)))
    return *code;
  if (config_path.empty() || pool_name.empty())
    apps::die("dynamo-worker", make_error(errc::invalid_argument, "--config and --pool are required"));
  init_logging("dynamo-worker:" + pool_name, log_level);
  auto cfg = apps::load_config(config_path, hosts);
  if (!cfg)
    apps::die("dynamo-worker", cfg.error());
  auto curve = apps::plane_keys(*cfg);
  if (!curve)
    apps::die("dynamo-worker", curve.error());
  const auto* found = cfg->find_pool(pool_name);
  if (!found)
    apps::die("dynamo-worker", make_error(errc::config_error, "pools: no pool named '" + pool_name + "'"));
  config::pool_config pool_with_flags = *found;
  if (auto ok = kvbm.apply(pool_with_flags.kvbm); !ok)
    apps::die("dynamo-worker", ok.error());
  if (cpu_repack)
    pool_with_flags.engine_opts.cpu_repack = *cpu_repack;
  const auto* pool = &pool_with_flags;

  auto rt = actors::make_actor_system();
  auto discovery = apps::make_discovery(cfg->discovery);
  if (!discovery)
    apps::die("dynamo-worker", discovery.error());
  auto setup = actors::prepare_engines(*pool, mib_to_bytes(kv_cache_mib));
  if (!setup)
    apps::die("dynamo-worker", setup.error());
  auto registry = std::make_shared<metrics::registry>();
  auto created = metrics::component_metrics::create(*registry);
  if (!created)
    apps::die("dynamo-worker", created.error());
  std::shared_ptr<metrics::component_metrics> component = std::move(*created);
  std::atomic<actors::worker_service*> hosted{nullptr};
  auto system = apps::start_system_server(*cfg, registry, component, [&hosted]() -> std::string {
    auto* svc = hosted.load();
    if (svc == nullptr)
      return "starting";
    for (const auto& [id, h] : svc->health())
      if (h != planes::health_state::ready)
        return fmt::format("worker {:016x} is {}", id, planes::to_string(h));
    return {};
  });
  if (!system)
    apps::die("dynamo-worker", system.error());
  actors::worker_service_config wc;
  wc.namespace_name = cfg->namespace_name;
  wc.component = pool->name;
  wc.role = pool->role;
  wc.kv_transport = cfg->disagg.transfer;
  wc.card = setup->plan.card;
  wc.plane_host = cfg->plane_host;
  wc.advertise_host = config::advertised_host(*cfg);
  wc.num_workers = workers ? workers : pool->workers_per_process;
  wc.detached = setup->plan.detached;
  wc.metrics = component;
  wc.system_url = system->url;
  wc.curve = *curve;
  // The admin API first, so that the worker records publish its URL; it sees
  // the workers once they exist.
  auto admin = apps::start_admin(cfg->admin, "worker", *rt.system, **discovery, cfg->namespace_name,
                                 [&hosted]() -> std::vector<actors::worker_service*> {
                                   if (auto* s = hosted.load())
                                     return {s};
                                   return {};
                                 });
  if (!admin)
    apps::die("dynamo-worker", admin.error());
  wc.admin_url = apps::published_admin_url(*cfg, admin->get());
  auto svc = actors::worker_service::start(*rt.system, **discovery, wc, setup->make_factory);
  if (!svc)
    apps::die("dynamo-worker", svc.error());
  hosted = svc->get();
  if (!system->url.empty())
    spdlog::info("dynamo-worker: metrics and health on {}/metrics, {}/health", system->url, system->url);
  spdlog::info("dynamo-worker: pool {} ({} x {}, model {}) ready", pool->name, wc.num_workers,
               config::to_string(pool->engine), pool->model);
  int sig = apps::wait_for_shutdown();
  spdlog::info("dynamo-worker: signal {}; draining (grace {} ms)", sig, cfg->shutdown_grace_ms);
  auto left = (*svc)->shutdown(std::chrono::milliseconds(cfg->shutdown_grace_ms));
  admin->reset();
  hosted = nullptr;
  svc->reset();
  spdlog::info("dynamo-worker: stopped ({} request(s) cut)", left);
  return 0;
}
