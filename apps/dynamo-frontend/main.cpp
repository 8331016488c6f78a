// dynamo-frontend: the OpenAI HTTP frontend of a cluster config, with the
// router embedded (Dynamo's default) or in front of a standalone dynamo-router
// (router.standalone: true). Models appear as their workers register on the
// discovery plane. Drains on SIGTERM. Wiring only.
#include "actors/core/system.hpp"
#include "actors/frontend/frontend_service.hpp"
#include "apps/common/app_support.hpp"
#include "apps/common/router_cost.hpp"
#include "runtime/core/log.hpp"
#include "runtime/protocol/components.hpp"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

using namespace dynamo;

int main(int argc, char** argv) {
  apps::block_shutdown_signals();
  std::string config_path, log_level, host, tool_call_parser = "auto", reasoning_parser = "auto";
  int64_t port = -1;
  bool anthropic_api = false;
  cli c("dynamo-frontend", "serve the OpenAI API for the models of a cluster config");
  c.option("config", &config_path, "cluster config file (YAML)")
    .option("http-host", &host, "override frontend.host")
    .option("http-port", &port, "override frontend.port (0: pick a free one)")
    .option("tool-call-parser", &tool_call_parser,
            "auto (from the chat template) | hermes | llama3_json | mistral | none (docs/TOOLS.md)")
    .option("reasoning-parser", &reasoning_parser, "auto (on when the chat template mentions <think>) | think | none")
    .option("enable-anthropic-api", &anthropic_api, "also serve Anthropic's /v1/messages and /v1/messages/count_tokens")
    .option("log-level", &log_level, "trace | debug | info | warn | error");
  apps::router_flags router_flags;
  apps::add_router_flags(c, router_flags);
  c.epilog("The router flags replace the settings of the config's router: block (docs/CLUSTER.md).\n"
           "Example:\n  dynamo-frontend --config cluster.yaml --router-mode kv --router-kv-capacity");
  if (auto code = cli_exit_code("dynamo-frontend", c.parse(argc, argv)))
    return *code;
  if (config_path.empty())
    apps::die("dynamo-frontend", make_error(errc::invalid_argument, "--config is required"));
  init_logging("dynamo-frontend", log_level);
  auto cfg = config::load_cluster_config(config_path);
  if (!cfg)
    apps::die("dynamo-frontend", cfg.error());
  if (auto ok = router_flags.apply(cfg->router); !ok)
    apps::die("dynamo-frontend", ok.error());
  if (!cfg->router.standalone) { // else dynamo-router routes, and reads the profile
    if (auto ok = apps::prepare_router(cfg->router.kv, "dynamo-frontend"); !ok)
      apps::die("dynamo-frontend", ok.error());
  } else if (auto ignored = router_flags.worker_choice_flags(); !ignored.empty()) {
    spdlog::warn("dynamo-frontend: router.standalone is true, so this frontend only round-robins over the "
                 "dynamo-router replicas and ignores {}; give them to dynamo-router",
                 fmt::join(ignored, " "));
  }
  auto curve = apps::plane_keys(*cfg);
  if (!curve)
    apps::die("dynamo-frontend", curve.error());

  auto rt = actors::make_actor_system();
  auto discovery = apps::make_discovery(cfg->discovery);
  if (!discovery)
    apps::die("dynamo-frontend", discovery.error());
  frontend::frontend_options fo;
  fo.http.host = host.empty() ? cfg->frontend.host : host;
  fo.http.port = port >= 0 ? static_cast<uint16_t>(port) : cfg->frontend.port;
  fo.http.io_threads = cfg->frontend.io_threads;
  auto tls = apps::server_tls(cfg->frontend.tls, "frontend.tls.");
  if (!tls)
    apps::die("dynamo-frontend", tls.error());
  fo.http.tls = std::move(*tls);
  fo.tool_call_parser = tool_call_parser;
  fo.reasoning_parser = reasoning_parser;
  fo.anthropic_api = anthropic_api;
  // Dynamo's DYN_METRICS_PREFIX and DYN_METRICS_{REQUEST_DURATION,TTFT,ITL}_{MIN,MAX,COUNT}.
  auto metrics_cfg = metrics::frontend_metrics_config_from_env(std::getenv);
  if (!metrics_cfg)
    apps::die("dynamo-frontend", metrics_cfg.error());
  fo.metrics = std::move(*metrics_cfg);
  auto fe = frontend::frontend_service::start(*rt.system, fo);
  if (!fe)
    apps::die("dynamo-frontend", fe.error());
  actors::model_watcher_config mw;
  mw.namespace_name = cfg->namespace_name;
  mw.curve = *curve;
  mw.router.mode = cfg->router.mode;
  mw.router.kv = cfg->router.kv;
  mw.client.migration_limit = cfg->router.migration_limit;
  mw.client.migration_max_seq_len = cfg->router.migration_max_seq_len;
  mw.client.max_local_prefill_length = cfg->disagg.max_local_prefill_length;
  if (cfg->router.standalone) {
    mw.components = {std::string{protocol::router_component}};
    mw.router.mode = route::router_mode::round_robin; // across router replicas
  }
  mw = apps::connect_frontend(std::move(mw), **fe);
  auto routers = mw.router.metrics; // for the admin API's view of the workers
  auto watcher = actors::model_watcher::start(*rt.system, **discovery, std::move(mw), actors::load_model_assets);
  if (!watcher)
    apps::die("dynamo-frontend", watcher.error());
  auto admin = apps::start_admin(cfg->admin, "frontend", *rt.system, **discovery, cfg->namespace_name, {},
                                 [w = watcher->get()] { return w->supervisors(); }, routers);
  if (!admin)
    apps::die("dynamo-frontend", admin.error());
  // Hosts no worker: its own record makes it (and its admin URL) visible.
  auto record = apps::publish_process(**discovery, cfg->namespace_name, protocol::frontend_component,
                                      apps::published_admin_url(*cfg, admin->get()));
  if (!record)
    apps::die("dynamo-frontend", record.error());
  spdlog::info("dynamo-frontend: listening on {}://{}:{} (namespace {}, router {}{})",
               fo.http.tls ? "https" : "http", fo.http.host,
               (*fe)->port(), cfg->namespace_name,
               route::to_string(cfg->router.standalone ? route::router_mode::round_robin : cfg->router.mode),
               cfg->router.standalone ? ", standalone" : "");
  int sig = apps::wait_for_shutdown();
  spdlog::info("dynamo-frontend: signal {}; draining (grace {} ms)", sig, cfg->shutdown_grace_ms);
  auto left = (*fe)->drain_and_stop(std::chrono::milliseconds(cfg->shutdown_grace_ms));
  record->reset();
  admin->reset();
  watcher->reset();
  spdlog::info("dynamo-frontend: stopped ({} request(s) cut)", left);
  return 0;
}
