// dynamo-configure: searches deployments (aggregated or disaggregated, P:D,
// replicas, max_num_seqs, max_num_batched_tokens, prefill-first threshold,
// router mode) for a profile, an SLA, traffic and a GPU budget by simulation,
// prints the Pareto front and writes the winner's cluster YAML. Wiring only:
// runtime/configure.
#include "runtime/configure/deployment_config.hpp"
#include "runtime/configure/search.hpp"
#include "runtime/core/cli.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

using namespace dynamo;
using namespace dynamo::configure;

namespace {

constexpr std::string_view program = "dynamo-configure";

int fail(const caf::error& e) {
  fmt::print(stderr, "{}: {}\n", program, message_of(e));
  return 2;
}

std::vector<std::string_view> split(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto comma = text.find(',');
    out.push_back(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return out;
}

expected<void> parse_modes(std::string_view text, search_space& s) {
  s.aggregated = s.disaggregated = false;
  for (auto m : split(text)) {
    if (m == "agg" || m == "aggregated")
      s.aggregated = true;
    else if (m == "disagg" || m == "disaggregated")
      s.disaggregated = true;
    else
      return make_error(errc::invalid_argument, fmt::format("--modes: '{}' is not agg or disagg", m));
  }
  if (!s.aggregated && !s.disaggregated)
    return make_error(errc::invalid_argument, "--modes: empty");
  return {};
}

expected<void> parse_routers(std::string_view text, search_space& s) {
  s.routers.clear();
  for (auto r : split(text)) {
    auto mode = route::parse_router_mode(r);
    if (!mode)
      return make_error(errc::invalid_argument, fmt::format("--routers: '{}' is not kv, round-robin or random", r));
    s.routers.push_back(*mode);
  }
  if (s.routers.empty())
    return make_error(errc::invalid_argument, "--routers: empty");
  return {};
}

nlohmann::json to_json(const evaluated& e) {
  return {{"deployment", describe(e.d)},
          {"mode", to_string(e.d.mode)},
          {"prefill_replicas", e.d.prefill_replicas},
          {"decode_replicas", e.d.decode_replicas},
          {"max_num_seqs", e.d.max_num_seqs},
          {"max_num_batched_tokens", e.d.max_num_batched_tokens},
          {"max_local_prefill_length", e.d.max_local_prefill_length},
          {"router", route::to_string(e.d.router)},
          {"gpus", e.r.gpus},
          {"ttft_ms", e.r.ttft_ms},
          {"itl_ms", e.r.itl_ms},
          {"mean_ttft_ms", e.r.mean_ttft_ms},
          {"mean_itl_ms", e.r.mean_itl_ms},
          {"output_tokens_per_s", e.r.output_tokens_per_s},
          {"tokens_per_s_per_gpu", e.r.tokens_per_s_per_gpu},
          {"hit_rate", e.r.hit_rate},
          {"remote_prefills", e.r.remote_prefills},
          {"kv_overflow", e.r.kv_overflow},
          {"meets_sla", e.meets_sla}};
}

void print_row(const evaluated& e) {
  fmt::print("{:>9.1f} {:>6} {:>10.1f} {:>9.2f} {:>6.3f} {:>4}  {}{}\n", e.r.tokens_per_s_per_gpu, e.r.gpus,
             e.r.ttft_ms, e.r.itl_ms, e.r.hit_rate, e.meets_sla ? "yes" : "no", describe(e.d),
             e.r.kv_overflow ? " (KV overflow: would preempt)" : "");
}

struct options {
  std::string profile_path, isl = "fixed:512", osl = "fixed:128", trace_path, write_trace, out_path, json_path;
  std::string modes = "agg,disagg", seqs = "16,32,64,128,256", tokens = "1024,2048,4096,8192",
              thresholds = "0,256,512,1024,2048", routers = "kv,round-robin";
  std::string ns = "dynamo", discovery_root, model, model_path;
  double ttft = 0, itl = 0, percentile = 90, rate = 10, trace_rate = 0, prefix_share = 0, transfer_ms = -1;
  uint32_t requests = 400, prefix_groups = 0, budget = 8, gpus_per_worker = 1, trace_block_size = 512,
           front_rows = 25, port = 8000, seed = 1;
  bool ignore_step_overhead = false;
};

cli make_cli(options& o) {
  cli c(std::string{program},
        "search deployments for an SLA by simulation: aggregated or disaggregated, P:D, replicas, "
        "max_num_seqs, max_num_batched_tokens, prefill-first threshold and router mode; prints the Pareto "
        "front (output tokens/s per GPU vs TTFT and ITL at the percentile) and writes the winner's cluster "
        "YAML for dynamo-launch");
  c.option("profile", &o.profile_path, "engine profile JSON written by dynamo-profile (required)")
    .option("ttft-ms", &o.ttft, "TTFT target at the percentile (required)")
    .option("itl-ms", &o.itl, "ITL target at the percentile (required)")
    .option("percentile", &o.percentile, "of TTFT and ITL, nearest rank, (0, 100]")
    .option("isl", &o.isl, "prompt lengths: fixed:N | normal:MEAN,SD | uniform:LO,HI")
    .option("osl", &o.osl, "output lengths, same forms")
    .option("rate", &o.rate, "requests per second (Poisson arrivals)")
    .option("requests", &o.requests, "simulated requests per candidate")
    .option("prefix-groups", &o.prefix_groups, "shared system prompts (0: every prompt unique)")
    .option("prefix-share", &o.prefix_share, "share of each prompt that is its group's, [0, 1]")
    .option("seed", &o.seed, "traffic seed")
    .option("trace", &o.trace_path, "Mooncake-style JSONL trace instead of --isl/--osl (dynamo-route-workload writes one)")
    .option("trace-block-size", &o.trace_block_size, "tokens per trace hash id")
    .option("trace-rate", &o.trace_rate, "rescale the trace's timestamps to this many requests per second (0: as recorded)")
    .option("write-trace", &o.write_trace, "write the simulated requests here as a JSONL trace, which `dynamo-bench --trace "
                                           "FILE --trace-block-size <its block size, printed>` sends as simulated")
    .option("gpu-budget", &o.budget, "GPUs of all workers together")
    .option("gpus-per-worker", &o.gpus_per_worker, "GPUs one worker (the profiled engine) uses")
    .option("modes", &o.modes, "agg, disagg or both")
    .option("max-num-seqs", &o.seqs, "values to try, comma-separated")
    .option("max-num-batched-tokens", &o.tokens, "values to try, comma-separated")
    .option("thresholds", &o.thresholds, "disagg max_local_prefill_length values to try")
    .option("routers", &o.routers, "router modes to try: kv, round-robin, random")
    .option("transfer-ms", &o.transfer_ms,
            "prefill -> decode hand-off time per request (default: the profile's measured hand-off, "
            "dynamo-profile --handoff; 0 without one)")
    .option("ignore-step-overhead", &o.ignore_step_overhead,
            "time steps by the profile alone, without its measured step_overhead (dynamo-profile --handoff)")
    .option("out", &o.out_path, "write the winner's cluster YAML here")
    .option("json", &o.json_path, "write every result, the front and the winner as JSON here")
    .option("front", &o.front_rows, "Pareto front rows printed (all are in --json)")
    .option("namespace", &o.ns, "the YAML's namespace")
    .option("frontend-port", &o.port, "the YAML's frontend port")
    .option("discovery-root", &o.discovery_root, "the YAML's file discovery root")
    .option("model", &o.model, "served model name (default: the profile's)")
    .option("model-path", &o.model_path, "GGUF path for cpu/cuda profiles")
    .epilog("Example:\n  dynamo-profile --config examples/configs/mocker-cluster.yaml --out prof.json\n"
            "  dynamo-configure --profile prof.json --ttft-ms 300 --itl-ms 25 --isl normal:1024,256 \\\n"
            "      --osl normal:128,32 --rate 40 --gpu-budget 8 --out winner.yaml\n"
            "  dynamo-launch --config winner.yaml\n"
            "Exit status: 0 with a winner, 1 when no candidate meets the SLA, 2 on bad input.");
  return c;
}

expected<void> check(const options& o) {
  if (o.profile_path.empty())
    return make_error(errc::invalid_argument, "--profile is required (dynamo-profile writes one)");
  if (o.ttft <= 0 || o.itl <= 0)
    return make_error(errc::invalid_argument, "--ttft-ms and --itl-ms are required and positive");
  if (o.percentile <= 0 || o.percentile > 100)
    return make_error(errc::invalid_argument, "--percentile: in (0, 100]");
  if (o.gpus_per_worker == 0 || o.budget < o.gpus_per_worker)
    return make_error(errc::invalid_argument, "--gpu-budget: not even one worker of --gpus-per-worker fits");
  if (o.port == 0 || o.port > 65535)
    return make_error(errc::invalid_argument, "--frontend-port: 1..65535");
  if (o.prefix_share < 0 || o.prefix_share > 1)
    return make_error(errc::invalid_argument, "--prefix-share: in [0, 1]");
  return {};
}

expected<search_space> make_space(const options& o) {
  search_space space;
  space.gpu_budget = o.budget;
  space.gpus_per_worker = o.gpus_per_worker;
  auto s = parse_number_list<uint32_t>("max-num-seqs", o.seqs);
  auto t = parse_number_list<uint32_t>("max-num-batched-tokens", o.tokens);
  auto th = parse_number_list<uint32_t>("thresholds", o.thresholds);
  for (const auto* list : {&s, &t, &th})
    if (!*list)
      return list->error();
  space.max_num_seqs = *s;
  space.max_num_batched_tokens = *t;
  space.thresholds = *th;
  if (auto ok = parse_modes(o.modes, space); !ok)
    return ok.error();
  if (auto ok = parse_routers(o.routers, space); !ok)
    return ok.error();
  return space;
}

expected<request_set> make_traffic(const options& o) {
  request_set reqs;
  if (!o.trace_path.empty()) {
    std::ifstream in(o.trace_path);
    if (!in)
      return make_error(errc::io_error, "cannot read trace " + o.trace_path);
    auto recs = route::read_jsonl(in);
    if (!recs)
      return recs.error();
    reqs = requests_from_trace(*recs, o.trace_block_size, o.trace_rate, o.requests);
  } else {
    auto i = parse_length_dist(o.isl);
    auto l = parse_length_dist(o.osl);
    if (!i)
      return make_error(errc::invalid_argument, "--isl: " + message_of(i.error()));
    if (!l)
      return make_error(errc::invalid_argument, "--osl: " + message_of(l.error()));
    if (o.rate <= 0)
      return make_error(errc::invalid_argument, "--rate: requests per second, positive");
    reqs = make_requests({*i, *l, o.rate, o.requests, o.prefix_groups, o.prefix_share, o.seed});
  }
  if (reqs.requests.empty())
    return make_error(errc::invalid_argument, "no requests to simulate");
  if (!o.write_trace.empty()) {
    // Simulate what the file says (whole-ms timestamps), so that a replay of
    // it is exactly the simulated traffic.
    const auto records = to_trace(reqs);
    std::ofstream out(o.write_trace);
    route::write_jsonl(out, records);
    if (!out.flush())
      return make_error(errc::io_error, "cannot write trace " + o.write_trace);
    const uint32_t block = reqs.block_tokens;
    reqs = requests_from_trace(records, block, 0, 0);
    fmt::print(stderr, "{}: wrote {} requests to {} (dynamo-bench --trace {} --trace-block-size {})\n", program,
               records.size(), o.write_trace, o.write_trace, block);
  }
  return reqs;
}

void print_front(const options& o, const std::vector<evaluated>& results, const std::vector<size_t>& front) {
  fmt::print("Pareto front: {} of {} candidates (output tok/s per GPU vs TTFT p{:g} and ITL p{:g}; SLA {} / {} ms)\n",
             front.size(), results.size(), o.percentile, o.percentile, o.ttft, o.itl);
  fmt::print("{:>9} {:>6} {:>10} {:>9} {:>6} {:>4}  {}\n", "tok/s/GPU", "GPUs", "TTFT ms", "ITL ms", "hit", "SLA",
             "deployment");
  for (size_t k = 0; k < front.size() && k < o.front_rows; ++k)
    print_row(results[front[k]]);
  if (front.size() > o.front_rows)
    fmt::print("... {} more (--front, --json)\n", front.size() - o.front_rows);
}

expected<void> write_winner(const options& o, const plan::engine_profile& profile, const evaluated& win) {
  cluster_options co{o.ns, o.discovery_root, static_cast<uint16_t>(o.port), o.model, o.model_path};
  auto cfg = to_cluster_config(win.d, profile, co);
  if (!cfg)
    return cfg.error();
  std::ofstream out(o.out_path);
  out << "# dynamo-configure: " << describe(win.d) << "\n"
      << fmt::format("# predicted: TTFT p{:g} {:.1f} ms, ITL p{:g} {:.2f} ms, {:.1f} output tok/s ({:.1f} per GPU)\n",
                     o.percentile, win.r.ttft_ms, o.percentile, win.r.itl_ms, win.r.output_tokens_per_s,
                     win.r.tokens_per_s_per_gpu)
      << to_yaml(*cfg);
  if (!out)
    return make_error(errc::io_error, "cannot write " + o.out_path);
  fmt::print("wrote {}\n", o.out_path);
  return {};
}

expected<void> write_json(const std::string& path, nlohmann::json report, const std::vector<evaluated>& results,
                          const std::vector<size_t>& front) {
  report["front"] = nlohmann::json::array();
  for (size_t k : front)
    report["front"].push_back(to_json(results[k]));
  report["results"] = nlohmann::json::array();
  for (const auto& e : results)
    report["results"].push_back(to_json(e));
  std::ofstream out(path);
  out << report.dump(1) << "\n";
  if (!out)
    return make_error(errc::io_error, "cannot write " + path);
  return {};
}

// Simulates every candidate with a progress line on stderr every tenth.
std::vector<evaluated> search(simulator& sim, const std::vector<deployment>& candidates, const request_set& reqs,
                              const plan::sla_targets& sla, double& seconds) {
  fmt::print(stderr, "{}: {} candidates, {} requests each (mean ISL {:.0f}, OSL {:.0f}, {:.1f} s of traffic)\n",
             program, candidates.size(), reqs.requests.size(), reqs.mean_isl(), reqs.mean_osl(), reqs.duration_s());
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  size_t next_report = candidates.size() / 10;
  auto results = evaluate(sim, candidates, reqs, sla, [&](size_t done, size_t total) {
    if (done >= next_report && done < total) {
      fmt::print(stderr, "{}: {}/{} simulated ({:.1f} s)\n", program, done, total, elapsed());
      next_report += std::max<size_t>(1, total / 10);
    }
  });
  seconds = elapsed();
  return results;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  cli c = make_cli(o);
  if (auto code = cli_exit_code(program, c.parse(argc, argv)))
    return *code;
  if (auto ok = check(o); !ok)
    return fail(ok.error());
  auto profile = plan::load_profile(o.profile_path);
  if (!profile)
    return fail(profile.error());
  auto space = make_space(o);
  if (!space)
    return fail(space.error());
  auto reqs = make_traffic(o);
  if (!reqs)
    return fail(reqs.error());
  sim_options so;
  so.percentile = o.percentile;
  so.gpus_per_worker = o.gpus_per_worker;
  if (o.transfer_ms >= 0)
    so.transfer_ms = o.transfer_ms;
  so.step_overhead = !o.ignore_step_overhead;
  simulator sim(*profile, so);
  if (!sim.usable())
    return fail(make_error(errc::invalid_argument,
                           o.profile_path + ": the profile needs prefill (prefix_hit 0) and decode points"));
  fmt::print(stderr, "{}: hand-off charge {} (1024-token prompt: {:.2f} ms)\n", program,
             o.transfer_ms >= 0 ? "--transfer-ms"
             : profile->handoff ? "as dynamo-profile --handoff measured"
                                : "none (the profile has no --handoff measurement)",
             sim.handoff_ms(1024));
  uint32_t profiled = 0; // the longest cold prompt the profile timed
  for (const auto& x : profile->prefill)
    profiled = x.prefix_hit == 0 ? std::max(profiled, x.isl) : profiled;
  if (const auto& t = space->max_num_batched_tokens; !t.empty() && *std::max_element(t.begin(), t.end()) > profiled)
    fmt::print(stderr, "{}: note: steps past {} prompt tokens are extrapolated from the profile's last two prefill "
                       "points (dynamo-profile --isl up to {} measures them)\n",
               program, profiled, *std::max_element(t.begin(), t.end()));
  fmt::print(stderr, "{}: step overhead {:.3f} ms + {:.4f} ms per sequence{}\n", program, sim.step_overhead_ms(0),
             sim.step_overhead_ms(1) - sim.step_overhead_ms(0),
             profile->step_overhead ? (o.ignore_step_overhead ? " (--ignore-step-overhead)" : " (measured)")
                               : " (the profile has none)");

  double seconds = 0;
  const auto results = search(sim, enumerate(*space), *reqs, {o.ttft, o.itl}, seconds);
  const auto front = pareto_front(results);
  const auto win = pick_winner(results);
  size_t meeting = 0;
  for (const auto& e : results)
    meeting += e.meets_sla ? 1 : 0;
  fmt::print(stderr, "{}: {} candidates in {:.2f} s ({:.0f} per minute); {} meet the SLA\n", program,
             results.size(), seconds, seconds > 0 ? static_cast<double>(results.size()) * 60 / seconds : 0.0,
             meeting);
  print_front(o, results, front);

  nlohmann::json report{{"candidates", results.size()}, {"meeting_sla", meeting}, {"seconds", seconds}};
  if (win) {
    fmt::print("\nwinner: ");
    print_row(results[*win]);
    report["winner"] = to_json(results[*win]);
    if (!o.out_path.empty())
      if (auto ok = write_winner(o, *profile, results[*win]); !ok)
        return fail(ok.error());
  } else {
    fmt::print("\nno candidate meets TTFT {} ms and ITL {} ms at p{:g} within {} GPUs\n", o.ttft, o.itl,
               o.percentile, o.budget);
  }
  if (!o.json_path.empty())
    if (auto ok = write_json(o.json_path, std::move(report), results, front); !ok)
      return fail(ok.error());
  return win ? 0 : 1;
}
