// dynamo-profile: measures one worker's engine (a pool of a cluster config:
// mocker, CPU or CUDA) and writes the profile the SLA planner and
// dynamo-configure size deployments from; with --handoff also what a
// disaggregated hand-off costs on a launched cluster. Wiring only:
// runtime/plan/profiler, apps/dynamo-profile/handoff_probe.
#include "actors/worker/engine_factory.hpp"
#include "apps/dynamo-launch/child_server.hpp"
#include "apps/dynamo-profile/handoff_probe.hpp"
#include "apps/common/app_support.hpp"
#include "runtime/core/cli.hpp"
#include "runtime/core/log.hpp"
#include "runtime/core/units.hpp"
#include "runtime/plan/profiler.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

using namespace dynamo;

namespace {

// The --handoff probe's sizes as asked, scaled to the profiled engine (plan::fit_probe).
void size_probe(profile_app::handoff_probe_config& probe, const plan::engine_profile& p,
                const std::string& handoff_isl, const std::string& overhead_batch, double budget_s) {
  auto hi = parse_number_list<uint32_t>("handoff-isl", handoff_isl);
  if (!hi)
    apps::die("dynamo-profile", hi.error());
  auto ob = parse_number_list<uint32_t>("overhead-batch", overhead_batch);
  if (!ob)
    apps::die("dynamo-profile", ob.error());
  const plan::probe_sizes want{*hi, probe.requests, probe.warmup, *ob, probe.batch_isl, probe.batch_osl};
  const auto sized = plan::fit_probe(p, want, budget_s);
  spdlog::info("hand-off probe: prompts {} x {} pairs, batches {} of {}/{} tokens: ~{:.0f} s of engine time "
               "(as asked: ~{:.0f} s)", fmt::join(sized.isl, ","), sized.requests, fmt::join(sized.batch, ","),
               sized.batch_isl, sized.batch_osl, plan::probe_seconds(p, sized), plan::probe_seconds(p, want));
  probe.isl = sized.isl;
  probe.requests = sized.requests;
  probe.batch = sized.batch;
  probe.batch_isl = sized.batch_isl;
  probe.batch_osl = sized.batch_osl;
}

} // namespace

int main(int argc, char** argv) {
  std::string config_path, pool_name, out_path, log_level;
  std::string isl = "128,256,512,1024,2048,4096,6144,8192", hits = "0,0.5,0.9", batches = "1,2,4,8,16,32,64",
              contexts = "128,512,1024,2048";
  uint32_t steps = 8, repeats = 1;
  std::string mixed;
  plan::profile_sweep sw;
  sw.budget_s = 600;
  double kv_cache_mib = 512;
  bool handoff = false;
  double handoff_budget_s = 120;
  std::string handoff_isl = "256,1024,2048,4096", overhead_batch = "1,16,64";
  profile_app::handoff_probe_config probe;
  probe.launcher = apps::sibling_binary("dynamo-launch");
  const std::string temp_dir = "/tmp/dynamo-profile-handoff-" + std::to_string(::getpid());
  probe.work_dir = temp_dir;
  cli c("dynamo-profile", "measure a worker's engine (prefill vs ISL and prefix hits, decode step vs batch "
                          "and context, KV capacity) and write the profile as JSON");
  c.option("config", &config_path, "cluster config file (YAML)")
    .option("pool", &pool_name, "the pool to profile (default: the first)")
    .option("out", &out_path, "write the profile here (default: stdout)")
    .option("isl", &isl, "prompt lengths for prefill, comma-separated")
    .option("prefix-hit", &hits, "shares of the prompt already in the prefix cache, comma-separated")
    .option("batch", &batches, "decode batch sizes, comma-separated")
    .option("context", &contexts, "decode context lengths, comma-separated")
    .option("steps", &steps, "measured decode steps per point")
    .option("repeats", &repeats, "measurements per prefill point (the fastest is kept)")
    .option("mixed", &mixed, "also time steps that prefill a chunk of these many prompt tokens beside each "
                             "decode point, comma-separated (default: none)")
    .option("thread-cpu-clock", &sw.thread_cpu_clock,
            "time steps by this thread's CPU time, not wall time (a 1-thread CPU engine on shared cores)")
    .option("budget-s", &sw.budget_s,
            "wall seconds the sweep may take (a slow CPU engine): prefill gets a quarter, decode the rest "
            "(mixed points the last quarter); points predicted to overrun are skipped and listed, and the "
            "planner extrapolates; 0: the whole grid")
    .option("kv-cache-mib", &kv_cache_mib, "CPU engine KV cache budget in MiB (as dynamo-worker)")
    .option("handoff", &handoff,
            "also measure the prefill -> decode hand-off: launch the pool as 1 aggregated worker and as 1 "
            "prefill + 1 decode (dynamo-launch), send prompts to both in turn, one at a time, and fit the "
            "extra TTFT as fixed + per KV block; and batches of concurrent requests on the aggregated "
            "worker, fitting their inter-token gap beyond the profile's step as fixed + per sequence")
    .option("handoff-isl", &handoff_isl, "--handoff: prompt lengths, comma-separated")
    .option("handoff-requests", &probe.requests, "--handoff: measured pairs (local, handed off) per prompt length")
    .option("handoff-budget-s", &handoff_budget_s,
            "--handoff: scale the probes' prompts, pairs and batches down until the profile says they take "
            "about this many seconds of engine time (a slow CPU engine); 0: as given")
    .option("overhead-batch", &overhead_batch, "--handoff: concurrent-request batches for the step overhead")
    .option("launcher", &probe.launcher, "--handoff: the dynamo-launch binary (default: next to this one)")
    .option("handoff-dir", &probe.work_dir, "--handoff: keep the clusters' YAML and discovery here (default: a "
                                           "temporary directory, removed)")
    .option("log-level", &log_level, "trace | debug | info | warn | error");
  if (auto code = cli_exit_code("dynamo-profile", c.parse(argc, argv)))
    return *code;
  init_logging("dynamo-profile", log_level);
  if (config_path.empty())
    apps::die("dynamo-profile", make_error(errc::invalid_argument, "--config is required"));
  auto cfg = config::load_cluster_config(config_path);
  if (!cfg)
    apps::die("dynamo-profile", cfg.error());
  if (cfg->pools.empty())
    apps::die("dynamo-profile", make_error(errc::config_error, "pools: none to profile"));
  const auto* pool = pool_name.empty() ? &cfg->pools.front() : cfg->find_pool(pool_name);
  if (!pool)
    apps::die("dynamo-profile", make_error(errc::config_error, "pools: no pool named '" + pool_name + "'"));

  auto i = parse_number_list<uint32_t>("isl", isl);
  auto h = parse_number_list<double>("prefix-hit", hits);
  auto b = parse_number_list<uint32_t>("batch", batches);
  auto x = parse_number_list<uint32_t>("context", contexts);
  if (!i) apps::die("dynamo-profile", i.error());
  if (!h) apps::die("dynamo-profile", h.error());
  if (!b) apps::die("dynamo-profile", b.error());
  if (!x) apps::die("dynamo-profile", x.error());
  if (!mixed.empty()) {
    auto m = parse_number_list<uint32_t>("mixed", mixed);
    if (!m)
      apps::die("dynamo-profile", m.error());
    sw.mixed_chunk = *m;
  }
  sw.isl = *i;
  sw.prefix_hit = *h;
  sw.batch = *b;
  sw.context = *x;
  sw.decode_steps = std::max(1u, steps);
  sw.repeats = std::max(1u, repeats);

  auto setup = actors::prepare_engines(*pool, mib_to_bytes(kv_cache_mib));
  if (!setup)
    apps::die("dynamo-profile", setup.error());
  auto factory = setup->make_factory(0);
  spdlog::info("profiling pool {} ({}, model {})", pool->name, config::to_string(pool->engine), pool->model);
  auto p = plan::run_profile([&] { return factory(); }, sw, [](const std::string& line) { spdlog::info("{}", line); });
  if (!p)
    apps::die("dynamo-profile", p.error());
  if (auto over = std::count_if(p->skipped.begin(), p->skipped.end(),
                                [](const std::string& s) { return s.find("over the time budget") != s.npos; }))
    spdlog::warn("{} points skipped to keep the sweep within --budget-s {} (listed under \"skipped\"; "
                 "--budget-s 0 measures them all)", over, sw.budget_s);
  p->engine = std::string{config::to_string(pool->engine)};
  p->model = pool->model;
  p->threads = pool->engine_opts.threads;
  if (handoff) {
    size_probe(probe, *p, handoff_isl, overhead_batch, handoff_budget_s);
    auto costs = profile_app::measure_cluster(*pool, *p, probe, [](const std::string& line) { spdlog::info("{}", line); });
    if (probe.work_dir == temp_dir) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir, ec);
    }
    if (!costs)
      apps::die("dynamo-profile", costs.error());
    p->handoff = std::move(costs->handoff);
    p->step_overhead = std::move(costs->step_overhead);
  }
  auto text = plan::to_json(*p).dump(2) + "\n";
  if (out_path.empty()) {
    std::cout << text;
  } else {
    std::ofstream f(out_path);
    if (!(f << text))
      apps::die("dynamo-profile", make_error(errc::io_error, "cannot write " + out_path));
    spdlog::info("wrote {}", out_path);
  }
  return 0;
}
