#include "apps/dynamo-profile/handoff_probe.hpp"

#include "apps/dynamo-bench/load_generator.hpp"
#include "apps/dynamo-launch/child_server.hpp"
#include "runtime/bench/stats.hpp"
#include "runtime/configure/deployment_config.hpp"
#include "runtime/metrics/exposition.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

namespace dynamo::profile_app {

namespace {

using json = nlohmann::json;

constexpr auto stop_grace = std::chrono::seconds(10);

struct cluster {
  std::string name;
  uint16_t port = 0;
  std::unique_ptr<http::http_client> client;
};

// The deployment dynamo-configure would write for one worker aggregated, or
// 1 prefill + 1 decode that hands off every prompt (threshold 0).
configure::deployment probe_deployment(const plan::engine_profile& p, bool disagg) {
  configure::deployment d;
  d.max_num_seqs = std::max(1u, p.max_num_seqs);
  d.max_num_batched_tokens = std::max(1u, p.max_num_batched_tokens);
  if (disagg) {
    d.mode = configure::deployment_mode::disaggregated;
    d.prefill_replicas = 1;
    d.max_local_prefill_length = 0;
  }
  return d;
}

expected<cluster> start(apps::process_set& ps, const config::pool_config& pool, const plan::engine_profile& p,
                        const handoff_probe_config& cfg, bool disagg) {
  const std::string mode = disagg ? "disaggregated" : "aggregated";
  auto port = apps::free_loopback_port();
  if (!port)
    return port.error();
  configure::cluster_options o;
  o.namespace_name = "handoff-probe-" + mode;
  o.discovery_root = cfg.work_dir + "/" + mode + "-discovery";
  o.frontend_port = *port;
  o.model = pool.model;
  o.model_path = pool.model_path;
  auto c = configure::to_cluster_config(probe_deployment(p, disagg), p, o);
  if (!c)
    return c.error();
  const std::string yaml = cfg.work_dir + "/" + mode + ".yaml";
  std::error_code ec;
  std::filesystem::create_directories(cfg.work_dir, ec);
  if (std::ofstream f(yaml); !(f << configure::to_yaml(*c)))
    return make_error(errc::io_error, "cannot write " + yaml);
  cluster out{"dynamo-launch (" + mode + ")", *port, nullptr};
  apps::process_spec spec{out.name, out.name, {cfg.launcher, "--config", yaml, "--log-level", cfg.log_level}};
  spec.restart = false;
  spec.die_with_parent = true;
  spec.stdout_to_stderr = true;
  ps.add(std::move(spec));
  out.client = std::make_unique<http::http_client>("127.0.0.1", *port, 1);
  if (auto ok = apps::wait_healthy(ps, out.name, *out.client, std::chrono::seconds(cfg.startup_timeout_s)); !ok)
    return ok.error();
  return out;
}

struct load {
  uint32_t isl = 0;
  uint32_t osl = 2; // a hand-off needs a token after the prefill's
  uint32_t n = 1;
  uint32_t concurrency = 1;
  uint32_t warmup = 0;
  uint64_t seed = 1;
};

// The load generator's report for `x.n` prompts, `x.concurrency` at a time.
expected<json> send(const cluster& c, const load& x) {
  const uint32_t isl = x.isl, n = x.n;
  bench::load_config l;
  l.port = c.port;
  l.concurrency = x.concurrency;
  l.num_requests = n;
  l.warmup_requests = x.warmup;
  l.isl = isl;
  l.osl = x.osl;
  l.seed = x.seed;
  l.label = c.name;
  auto report = bench::run_load(l);
  if (!report)
    return report.error();
  auto j = json::parse(*report, nullptr, false);
  if (j.is_discarded() || j.value("completed", uint64_t{0}) != n || j.value("failed", uint64_t{1}) != 0)
    return make_error(errc::internal, fmt::format("{}: {} of {} requests of {} tokens completed", c.name,
                                                  j.is_discarded() ? 0 : j.value("completed", uint64_t{0}), n, isl));
  return j;
}

// dynamo_frontend_disagg_requests_total{prefill="remote"}.
expected<double> remote_prefills(const cluster& c) {
  auto m = c.client->request({"GET", "/metrics", "", ""}, std::chrono::seconds(5));
  if (!m || m->status != 200)
    return make_error(errc::io_error, c.name + ": GET /metrics failed");
  auto page = metrics::parse_exposition(m->body);
  if (!page)
    return page.error();
  return metrics::sum_samples(*page, "dynamo_frontend_disagg_requests_total", {{"prefill", "remote"}}).value_or(0);
}

// Until the frontend knows the prefill worker (it serves as soon as the decode
// worker registers), prompts prefill locally: send single requests until one
// is handed off.
expected<void> wait_for_prefill_worker(apps::process_set& ps, const cluster& c, std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto alive = apps::still_running(ps, c.name); !alive)
      return alive.error();
    if (auto r = send(c, {.isl = 64, .seed = 7}); !r)
      return r.error();
    auto remote = remote_prefills(c);
    if (!remote)
      return remote.error();
    if (*remote > 0)
      return {};
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return make_error(errc::timeout, c.name + ": no prompt was handed off to a prefill worker");
}

// The median TTFT of prompts of `isl` tokens prefilled locally and handed off,
// sent in pairs, one request at a time (each a new prompt), so that both see
// the same machine however its load drifts; the first cfg.warmup pairs are
// not counted.
expected<plan::cost_point> handoff_point(const cluster& local, const cluster& remote, uint32_t isl,
                                         const handoff_probe_config& cfg, uint64_t& seed) {
  bench::sample_set a, d;
  for (uint32_t i = 0; i < cfg.warmup + cfg.requests; ++i) {
    auto x = send(local, {.isl = isl, .seed = ++seed});
    if (!x)
      return x.error();
    auto y = send(remote, {.isl = isl, .seed = ++seed});
    if (!y)
      return y.error();
    if (i >= cfg.warmup) {
      a.add((*x)["ttft_ms"].value("p50", 0.0));
      d.add((*y)["ttft_ms"].value("p50", 0.0));
    }
  }
  return plan::cost_point{isl, a.percentile(50), d.percentile(50)};
}

// Batches of exactly b requests sent together on the aggregated worker: their
// median inter-token gap is its decode step at batch b, as launched.
expected<plan::linear_cost> measure_overhead(const cluster& local, const plan::step_times& times,
                                               const plan::engine_profile& profile, const handoff_probe_config& cfg,
                                               const std::function<void(const std::string&)>& log) {
  std::vector<plan::cost_point> points;
  uint64_t seed = 2000;
  for (uint32_t b : cfg.batch) {
    if (b == 0 || (profile.max_num_seqs > 0 && b > profile.max_num_seqs))
      continue;
    auto r = send(local, {.isl = cfg.batch_isl, .osl = cfg.batch_osl, .n = b, .concurrency = b, .seed = ++seed});
    if (!r)
      return r.error();
    const double ctx = cfg.batch_isl + cfg.batch_osl / 2.0;
    plan::cost_point pt{b, times.decode_step_ms(b, ctx), (*r)["itl_ms"].value("p50", 0.0)};
    log(fmt::format("step overhead: batch {}: inter-token gap p50 {:.2f} ms, profile step {:.2f} ms (+{:.2f})", b,
                    pt.measured_ms, pt.base_ms, pt.measured_ms - pt.base_ms));
    points.push_back(pt);
  }
  auto o = plan::fit_cost(std::move(points), [](uint32_t seqs) { return static_cast<double>(seqs); });
  log(fmt::format("step overhead: {:.3f} ms + {:.4f} ms per sequence", o.fixed_ms, o.per_unit_ms));
  return o;
}

} // namespace

expected<cluster_costs> measure_cluster(const config::pool_config& pool, const plan::engine_profile& profile,
                                        const handoff_probe_config& cfg,
                                        const std::function<void(const std::string&)>& log) {
  if (cfg.isl.empty() || cfg.requests == 0)
    return make_error(errc::invalid_argument, "handoff probe: no ISL or no requests");
  const plan::step_times times(profile);
  if (!times.has_decode())
    return make_error(errc::invalid_argument, "handoff probe: the profile has no decode points");
  struct children { // stops both clusters on every path out
    apps::process_set set;
    ~children() { set.stop_all({}, stop_grace); }
  } ch;
  auto local = start(ch.set, pool, profile, cfg, false);
  if (!local)
    return local.error();
  auto remote = start(ch.set, pool, profile, cfg, true);
  if (!remote)
    return remote.error();
  if (auto ok = wait_for_prefill_worker(ch.set, *remote, std::chrono::seconds(cfg.startup_timeout_s)); !ok)
    return ok.error();
  auto before = remote_prefills(*remote);
  if (!before)
    return before.error();
  std::vector<plan::cost_point> points;
  uint64_t seed = 1000;
  for (uint32_t isl : cfg.isl) {
    auto pt = handoff_point(*local, *remote, isl, cfg, seed);
    if (!pt)
      return pt.error();
    log(fmt::format("hand-off: ISL {}: TTFT p50 {:.2f} ms local, {:.2f} ms handed off (+{:.2f})", isl, pt->base_ms,
                    pt->measured_ms, pt->measured_ms - pt->base_ms));
    points.push_back(*pt);
  }
  auto after = remote_prefills(*remote);
  if (!after)
    return after.error();
  const double sent = static_cast<double>(cfg.isl.size()) * (cfg.requests + cfg.warmup);
  if (*after - *before < sent)
    return make_error(errc::internal, fmt::format("{}: {} of {} prompts were handed off", remote->name,
                                                  *after - *before, sent));
  cluster_costs out;
  const uint32_t block = profile.block_size;
  out.handoff = plan::fit_cost(std::move(points), [block](uint32_t isl) { return plan::kv_blocks(isl, block); });
  log(fmt::format("hand-off: {:.3f} ms + {:.4f} ms per {}-token block", out.handoff.fixed_ms,
                  out.handoff.per_unit_ms, block));
  auto overhead = measure_overhead(*local, times, profile, cfg, log);
  if (!overhead)
    return overhead.error();
  out.step_overhead = std::move(*overhead);
  return out;
}

} // namespace dynamo::profile_app
