// dynamo-launch: starts a whole cluster of processes on one machine from a
// cluster config (frontend, standalone router, planner, and each pool's worker
// processes), restarts any that dies, applies the planner's replica decisions
// (published on the discovery plane, Dynamo's VirtualConnector pattern), and
// on SIGTERM stops the frontend first, then the rest, each draining. Wiring only.
// --gen-curve-keys prints a fresh cluster keypair for security.curve and exits.
#include "apps/common/app_support.hpp"
#include "apps/dynamo-launch/process_set.hpp"
#include "planes/codec/zmq_curve.hpp"
#include "runtime/plan/decisions.hpp"
#include "runtime/core/log.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <filesystem>

using namespace dynamo;

namespace {

std::string self_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string{"."} : p.parent_path().string();
}

std::string worker_group(const std::string& pool) { return "worker:" + pool; }

void start_worker(apps::process_set& ps, const std::string& bin, const std::string& config,
                  const std::string& pool, const std::string& log_level) {
  static uint32_t serial = 0;
  std::vector<std::string> argv{bin + "/dynamo-worker", "--config", config, "--pool", pool};
  if (!log_level.empty())
    argv.insert(argv.end(), {"--log-level", log_level});
  apps::process_spec spec{"worker:" + pool + ":" + std::to_string(++serial), worker_group(pool), argv};
  spec.die_with_parent = true; // a SIGKILLed launcher leaves no workers behind
  ps.add(std::move(spec));
}

// Applies the planner's latest targets (its decisions record). Without a
// record (no planner yet, or it exited) the last targets simply stay.
void apply_planner(apps::process_set& ps, planes::discovery_plane& d, const config::cluster_config& cfg,
                   const std::string& bin, const std::string& config, const std::string& log_level) {
  auto recs = d.list(cfg.namespace_name + "/" + std::string{plan::decisions_component} + "/" +
                     std::string{plan::decisions_endpoint});
  if (!recs || recs->empty())
    return;
  auto decisions = plan::from_metadata(recs->front().metadata);
  if (!decisions) {
    spdlog::warn("launch: unreadable planner decisions: {}", describe(decisions.error()));
    return;
  }
  if (decisions->decision_id == 0)
    return; // the config's replicas: nothing decided yet
  for (const auto& pool : cfg.pools) {
    auto it = decisions->replicas.find(pool.name);
    if (it == decisions->replicas.end())
      continue;
    size_t want = it->second;
    size_t have = ps.count(worker_group(pool.name));
    for (; have < want; ++have) {
      spdlog::info("launch: planner asks {} replicas of {}: starting one", want, pool.name);
      start_worker(ps, bin, config, pool.name, log_level);
    }
    for (; have > want && have > 0; --have) {
      spdlog::info("launch: planner asks {} replicas of {}: stopping one", want, pool.name);
      (void) ps.stop_one(worker_group(pool.name));
    }
  }
}

/// Prints a fresh keypair: the config lines and the variable for the secret.
int print_curve_keys() {
  auto keys = planes::generate_curve_keypair();
  if (!keys)
    apps::die("dynamo-launch", keys.error());
  std::printf("# ZeroMQ CURVE keys for the cluster config (docs/CLUSTER.md, \"Security\").\n"
              "# Give every process of the cluster the secret, e.g. in its environment:\n"
              "DYNAMO_CURVE_SECRET_KEY='%s'\n"
              "# and in the cluster config:\n"
              "security:\n"
              "  curve:\n"
              "    public_key: '%s'\n"
              "    secret_key: env:DYNAMO_CURVE_SECRET_KEY\n",
              keys->secret_key.c_str(), keys->public_key.c_str());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  apps::block_shutdown_signals();
  std::string config_path, bin_dir = self_dir(), log_level;
  bool gen_curve_keys = false;
  cli c("dynamo-launch", "start a whole cluster of dynamo processes on this machine from a cluster config");
  c.option("config", &config_path, "cluster config file (YAML)")
    .option("bin-dir", &bin_dir, "directory holding dynamo-frontend, dynamo-worker, ... (default: this binary's)")
    .option("log-level", &log_level, "passed to every process")
    .option("gen-curve-keys", &gen_curve_keys,
            "print a new ZeroMQ CURVE keypair for security.curve (docs/CLUSTER.md) and exit");
  if (auto code = cli_exit_code("dynamo-launch", c.parse(argc, argv)))
    return *code;
  if (gen_curve_keys)
    return print_curve_keys();
  if (config_path.empty())
    apps::die("dynamo-launch", make_error(errc::invalid_argument, "--config is required"));
  init_logging("dynamo-launch", log_level);
  auto cfg = config::load_cluster_config(config_path);
  if (!cfg)
    apps::die("dynamo-launch", cfg.error());
  // The children read the same keys: a bad one fails here, once, not in a restart loop.
  if (auto curve = apps::plane_keys(*cfg); !curve)
    apps::die("dynamo-launch", curve.error());
  if (cfg->discovery.backend == "memory")
    apps::die("dynamo-launch", make_error(errc::config_error,
                                          "discovery.backend: 'memory' cannot span processes; use file or etcd"));
  auto config = std::filesystem::absolute(config_path).string();
  auto discovery = apps::make_discovery(cfg->discovery);
  if (!discovery)
    apps::die("dynamo-launch", discovery.error());

  apps::process_set ps;
  auto with_log = [&](std::vector<std::string> a) {
    if (!log_level.empty())
      a.insert(a.end(), {"--log-level", log_level});
    return a;
  };
  // Every child dies with the launcher (a SIGKILLed launcher would otherwise
  // leave a cluster holding its ports, and a relaunch would meet them).
  auto child = [&](std::string name, std::vector<std::string> argv) {
    apps::process_spec spec{name, name, with_log(std::move(argv))};
    spec.die_with_parent = true;
    ps.add(std::move(spec));
  };
  for (const auto& pool : cfg->pools)
    for (uint32_t i = 0; i < pool.replicas; ++i)
      start_worker(ps, bin_dir, config, pool.name, log_level);
  if (cfg->router.standalone)
    child("router", {bin_dir + "/dynamo-router", "--config", config});
  if (cfg->planner.enabled)
    child("planner", {bin_dir + "/dynamo-planner", "--config", config});
  child("frontend", {bin_dir + "/dynamo-frontend", "--config", config});
  spdlog::info("dynamo-launch: {} process(es) for namespace {}; frontend on port {}", ps.entries().size(),
               cfg->namespace_name, cfg->frontend.port);

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  timespec tick{0, 100'000'000};
  int sig = -1;
  uint32_t n = 0;
  while ((sig = sigtimedwait(&stop, nullptr, &tick)) < 0) {
    ps.poll();
    if (const auto& failed = ps.failed_start()) {
      spdlog::error("dynamo-launch: {} cannot start (its error is logged above); stopping the cluster",
                    *failed);
      ps.stop_all({"frontend", "router", "planner", "worker"}, std::chrono::milliseconds(cfg->shutdown_grace_ms + 2000));
      return 1;
    }
    if (cfg->planner.enabled && ++n % 5 == 0)
      apply_planner(ps, **discovery, *cfg, bin_dir, config, log_level);
  }
  spdlog::info("dynamo-launch: signal {}; stopping the frontend, then the rest", sig);
  auto grace = std::chrono::milliseconds(cfg->shutdown_grace_ms + 2000);
  ps.stop_all({"frontend", "router", "planner", "worker"}, grace);
  spdlog::info("dynamo-launch: all processes stopped");
  return 0;
}
