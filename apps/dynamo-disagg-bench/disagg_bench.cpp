#include "apps/dynamo-disagg-bench/disagg_bench.hpp"

#include "apps/dynamo-launch/child_server.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/metrics/exposition.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <sstream>
#include <unistd.h>

namespace dynamo::disagg_bench {

namespace {

using json = nlohmann::json;

constexpr auto stop_grace = std::chrono::seconds(10);

struct disagg_counts {
  uint64_t remote = 0, local_fallback = 0;
};

std::vector<std::string> server_argv(const bench_config& c, bool disagg, uint16_t port) {
  std::vector<std::string> a{c.dynamo_run, "in=http", "out=mocker",
                             "--http-host", "127.0.0.1", "--http-port", std::to_string(port),
                             "--speedup-ratio", fmt::format("{}", c.speedup_ratio),
                             "--max-num-batched-tokens", std::to_string(c.max_num_batched_tokens),
                             "--max-num-seqs", std::to_string(c.max_num_seqs),
                             "--router-mode", c.router_mode, "--shutdown-grace-ms", "1000"};
  if (!c.log_level.empty())
    a.insert(a.end(), {"--log-level", c.log_level});
  if (disagg)
    a.insert(a.end(), {"--disagg", "--prefill-workers", std::to_string(c.prefill_workers),
                       "--decode-workers", std::to_string(c.decode_workers),
                       "--max-local-prefill-length", std::to_string(c.max_local_prefill_length),
                       "--kv-transfer", c.kv_transfer});
  else
    a.insert(a.end(), {"--num-workers", std::to_string(c.prefill_workers + c.decode_workers)});
  return a;
}

// Sums dynamo_frontend_disagg_requests_total{...,prefill="remote"|"local_fallback"}.
disagg_counts parse_disagg_counts(const std::string& text) {
  disagg_counts c;
  auto page = metrics::parse_exposition(text);
  if (!page)
    return c;
  constexpr std::string_view name = "dynamo_frontend_disagg_requests_total";
  c.remote = static_cast<uint64_t>(metrics::sum_samples(*page, name, {{"prefill", "remote"}}).value_or(0));
  c.local_fallback =
      static_cast<uint64_t>(metrics::sum_samples(*page, name, {{"prefill", "local_fallback"}}).value_or(0));
  return c;
}

struct mode_result {
  json report;
  disagg_counts counts;
};

// One server from start to stop: start, wait for /health, run the load,
// scrape /metrics. `ps` stops the child (also on error, in its owner).
expected<mode_result> run_mode(const bench_config& c, bool disagg, apps::process_set& ps) {
  const std::string name = disagg ? "dynamo-run (disaggregated)" : "dynamo-run (aggregated)";
  auto port = apps::free_loopback_port();
  if (!port)
    return port.error();
  apps::process_spec spec{name, name, server_argv(c, disagg, *port)};
  spec.restart = false;
  spec.die_with_parent = true;
  spec.stdout_to_stderr = true;
  ps.add(std::move(spec));
  http::http_client client("127.0.0.1", *port, 1);
  if (auto ok = apps::wait_healthy(ps, name, client, std::chrono::seconds(c.startup_timeout_s)); !ok)
    return ok.error();
  spdlog::info("disagg-bench: {} ready on port {}; running the load", name, *port);

  bench::load_config load = c.load;
  load.host = "127.0.0.1";
  load.port = *port;
  load.label = disagg ? "disaggregated" : "aggregated";
  auto report = bench::run_load(load);
  if (!report)
    return report.error();
  if (auto alive = apps::still_running(ps, name); !alive)
    return alive.error();
  mode_result r{json::parse(*report, nullptr, false), {}};
  if (r.report.is_discarded())
    return make_error(errc::internal, "the load generator's report is not JSON");
  auto metrics = client.request({"GET", "/metrics", "", ""}, std::chrono::seconds(5));
  if (!metrics || metrics->status != 200)
    return make_error(errc::io_error, name + ": GET /metrics failed");
  r.counts = parse_disagg_counts(metrics->body);
  ps.stop_all({}, stop_grace);
  return r;
}

json pick(const json& summary, std::initializer_list<const char*> keys) {
  json out = json::object();
  for (const char* k : keys)
    out[k] = summary.value(k, 0.0);
  return out;
}

// agg / dis, null when the denominator is 0.
json ratio(double agg, double dis) { return dis > 0 ? json(agg / dis) : json(nullptr); }

json summarize(const json& agg, const json& dis, const disagg_counts& counts) {
  auto short_itl = [](const json& r) { return r["classes"]["short"]["itl_ms"]; };
  json s;
  s["short_itl_ms"] = {{"aggregated", pick(short_itl(agg), {"p50", "p99"})},
                       {"disaggregated", pick(short_itl(dis), {"p50", "p99"})}};
  s["itl_p99_ratio"] = ratio(short_itl(agg).value("p99", 0.0), short_itl(dis).value("p99", 0.0));
  s["mix_itl_ms"] = {{"aggregated", pick(agg["itl_ms"], {"p50", "p99"})},
                     {"disaggregated", pick(dis["itl_ms"], {"p50", "p99"})}};
  s["mix_itl_p99_ratio"] = ratio(agg["itl_ms"].value("p99", 0.0), dis["itl_ms"].value("p99", 0.0));
  for (const char* cls : {"short", "long"})
    s["ttft_ms"][cls] = {{"aggregated", pick(agg["classes"][cls]["ttft_ms"], {"p50", "p99"})},
                         {"disaggregated", pick(dis["classes"][cls]["ttft_ms"], {"p50", "p99"})}};
  s["output_tokens_per_s"] = {{"aggregated", agg.value("output_tokens_per_s", 0.0)},
                              {"disaggregated", dis.value("output_tokens_per_s", 0.0)}};
  s["disagg_requests"] = {{"remote", counts.remote}, {"local_fallback", counts.local_fallback}};
  return s;
}

json config_json(const bench_config& c) {
  const auto& l = c.load;
  return {{"prefill_workers", c.prefill_workers}, {"decode_workers", c.decode_workers},
          {"aggregated_workers", c.prefill_workers + c.decode_workers},
          {"max_local_prefill_length", c.max_local_prefill_length},
          {"speedup_ratio", c.speedup_ratio}, {"max_num_batched_tokens", c.max_num_batched_tokens},
          {"max_num_seqs", c.max_num_seqs}, {"router_mode", c.router_mode},
          {"kv_transfer", c.kv_transfer}, {"concurrency", l.concurrency},
          {"request_rate", l.request_rate}, {"num_requests", l.num_requests},
          {"warmup_requests", l.warmup_requests}, {"isl", l.isl}, {"osl", l.osl},
          {"long_fraction", l.long_fraction}, {"long_isl", l.long_isl}, {"long_osl", l.long_osl},
          {"seed", l.seed}};
}

} // namespace

expected<void> validate(const bench_config& cfg) {
  auto bad = [](const std::string& why) { return make_error(errc::config_error, why); };
  if (cfg.dynamo_run.empty() || ::access(cfg.dynamo_run.c_str(), X_OK) != 0)
    return bad("--dynamo-run " + cfg.dynamo_run + ": not an executable");
  if (cfg.prefill_workers == 0 || cfg.decode_workers == 0)
    return bad("--prefill-workers and --decode-workers must be >= 1");
  if (cfg.max_num_batched_tokens == 0 || cfg.max_num_seqs == 0)
    return bad("--max-num-batched-tokens and --max-num-seqs must be >= 1");
  if (!(cfg.speedup_ratio >= 0))
    return bad("--speedup-ratio must be >= 0");
  return bench::validate(cfg.load);
}

expected<std::string> run(const bench_config& cfg) {
  if (auto ok = validate(cfg); !ok)
    return ok.error();
  // One process_set per server; each stops its child on every path out.
  struct children {
    apps::process_set set;
    ~children() { set.stop_all({}, stop_grace); }
  };
  std::array<mode_result, 2> results; // aggregated, disaggregated
  for (bool disagg : {false, true}) {
    children ch;
    auto r = run_mode(cfg, disagg, ch.set);
    if (!r)
      return r.error();
    results[disagg ? 1 : 0] = std::move(*r);
  }
  json out;
  out["config"] = config_json(cfg);
  out["aggregated"] = results[0].report;
  out["disaggregated"] = results[1].report;
  out["summary"] = summarize(results[0].report, results[1].report, results[1].counts);
  return out.dump(2);
}

std::vector<std::string> check(const bench_config& cfg, const std::string& report) {
  std::vector<std::string> bad;
  auto j = json::parse(report, nullptr, false);
  if (j.is_discarded())
    return {"the report is not JSON"};
  for (const char* mode : {"aggregated", "disaggregated"}) {
    const auto& r = j.value(mode, json::object());
    if (r.value("completed", uint64_t{0}) != cfg.load.num_requests || r.value("failed", uint64_t{1}) != 0)
      bad.push_back(fmt::format("{}: {} of {} requests completed, {} failed", mode,
                                r.value("completed", uint64_t{0}), cfg.load.num_requests,
                                r.value("failed", uint64_t{0})));
    if (!r.contains("classes") || !r["classes"].contains("short") || !r["classes"].contains("long"))
      bad.push_back(fmt::format("{}: no per-class report", mode));
  }
  const auto& d = j.value("summary", json::object()).value("disagg_requests", json::object());
  const auto long_done = j.value("disaggregated", json::object())
                           .value("classes", json::object())
                           .value("long", json::object())
                           .value("completed", uint64_t{0});
  bool expects_remote = long_done > 0 && cfg.load.long_isl >= cfg.max_local_prefill_length;
  if (expects_remote && d.value("remote", uint64_t{0}) == 0)
    bad.push_back("disaggregated: no request was prefilled remotely");
  return bad;
}

} // namespace dynamo::disagg_bench
