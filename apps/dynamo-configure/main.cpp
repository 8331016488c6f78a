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
      return make_error(errc::invalid_argument, "--routers: " + message_of(mode.error()));
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

} // namespace

int main(int argc, char** argv) {
  std::string profile_path, isl = "fixed:512", osl = "fixed:128", trace_path, out_path, json_path;
  std::string modes = "agg,disagg", seqs = "16,32,64,128,256", tokens = "1024,2048,4096,8192",
              thresholds = "0,256,512,1024,2048", routers = "kv,round-robin";
  std::string ns = "dynamo", discovery_root, model, model_path;
  double ttft = 0, itl = 0, percentile = 90, rate = 10, prefix_share = 0, transfer_ms = 0;
  uint32_t requests = 400, prefix_groups = 0, budget = 8, gpus_per_worker = 1, trace_block_size = 512,
           front_rows = 25, port = 8000, seed = 1;
  cli c(std::string{program},
        "search deployments for an SLA by simulation: aggregated or disaggregated, P:D, replicas, "
        "max_num_seqs, max_num_batched_tokens, prefill-first threshold and router mode; prints the Pareto "
        "front (output tokens/s per GPU vs TTFT and ITL at the percentile) and writes the winner's cluster "
        "YAML for dynamo-launch");
  c.option("profile", &profile_path, "engine profile JSON written by dynamo-profile (required)")
    .option("ttft-ms", &ttft, "TTFT target at the percentile (required)")
    .option("itl-ms", &itl, "ITL target at the percentile (required)")
    .option("percentile", &percentile, "of TTFT and ITL, nearest rank, (0, 100]")
    .option("isl", &isl, "prompt lengths: fixed:N | normal:MEAN,SD | uniform:LO,HI")
    .option("osl", &osl, "output lengths, same forms")
    .option("rate", &rate, "requests per second (Poisson); with --trace: rescales its timestamps (0: as recorded)")
    .option("requests", &requests, "simulated requests per candidate")
    .option("prefix-groups", &prefix_groups, "shared system prompts (0: every prompt unique)")
    .option("prefix-share", &prefix_share, "share of each prompt that is its group's, [0, 1]")
    .option("seed", &seed, "traffic seed")
    .option("trace", &trace_path, "Mooncake-style JSONL trace instead of --isl/--osl (dynamo-route-workload writes one)")
    .option("trace-block-size", &trace_block_size, "tokens per trace hash id")
    .option("gpu-budget", &budget, "GPUs of all workers together")
    .option("gpus-per-worker", &gpus_per_worker, "GPUs one worker (the profiled engine) uses")
    .option("modes", &modes, "agg, disagg or both")
    .option("max-num-seqs", &seqs, "values to try, comma-separated")
    .option("max-num-batched-tokens", &tokens, "values to try, comma-separated")
    .option("thresholds", &thresholds, "disagg max_local_prefill_length values to try")
    .option("routers", &routers, "router modes to try: kv, round-robin, random")
    .option("transfer-ms", &transfer_ms, "prefill -> decode KV hand-off time per request")
    .option("out", &out_path, "write the winner's cluster YAML here")
    .option("json", &json_path, "write every result, the front and the winner as JSON here")
    .option("front", &front_rows, "Pareto front rows printed (all are in --json)")
    .option("namespace", &ns, "the YAML's namespace")
    .option("frontend-port", &port, "the YAML's frontend port")
    .option("discovery-root", &discovery_root, "the YAML's file discovery root")
    .option("model", &model, "served model name (default: the profile's)")
    .option("model-path", &model_path, "GGUF path for cpu/cuda profiles")
    .epilog("Example:\n  dynamo-profile --config examples/configs/mocker-cluster.yaml --out prof.json\n"
            "  dynamo-configure --profile prof.json --ttft-ms 300 --itl-ms 25 --isl normal:1024,256 \\\n"
            "      --osl normal:128,32 --rate 40 --gpu-budget 8 --out winner.yaml\n"
            "  dynamo-launch --config winner.yaml\n"
            "Exit status: 0 with a winner, 1 when no candidate meets the SLA, 2 on bad input.");
  if (auto code = cli_exit_code(program, c.parse(argc, argv)))
    return *code;
  if (profile_path.empty())
    return fail(make_error(errc::invalid_argument, "--profile is required (dynamo-profile writes one)"));
  if (ttft <= 0 || itl <= 0)
    return fail(make_error(errc::invalid_argument, "--ttft-ms and --itl-ms are required and positive"));
  if (percentile <= 0 || percentile > 100)
    return fail(make_error(errc::invalid_argument, "--percentile: in (0, 100]"));
  if (gpus_per_worker == 0 || budget < gpus_per_worker)
    return fail(make_error(errc::invalid_argument, "--gpu-budget: not even one worker of --gpus-per-worker fits"));
  if (port == 0 || port > 65535)
    return fail(make_error(errc::invalid_argument, "--frontend-port: 1..65535"));
  if (prefix_share < 0 || prefix_share > 1)
    return fail(make_error(errc::invalid_argument, "--prefix-share: in [0, 1]"));
  auto profile = plan::load_profile(profile_path);
  if (!profile)
    return fail(profile.error());

  search_space space;
  space.gpu_budget = budget;
  space.gpus_per_worker = gpus_per_worker;
  auto s = parse_number_list<uint32_t>("max-num-seqs", seqs);
  auto t = parse_number_list<uint32_t>("max-num-batched-tokens", tokens);
  auto th = parse_number_list<uint32_t>("thresholds", thresholds);
  for (const auto* list : {&s, &t, &th})
    if (!*list)
      return fail(list->error());
  space.max_num_seqs = *s;
  space.max_num_batched_tokens = *t;
  space.thresholds = *th;
  if (auto ok = parse_modes(modes, space); !ok)
    return fail(ok.error());
  if (auto ok = parse_routers(routers, space); !ok)
    return fail(ok.error());

  request_set reqs;
  if (!trace_path.empty()) {
    std::ifstream in(trace_path);
    if (!in)
      return fail(make_error(errc::io_error, "cannot read trace " + trace_path));
    auto recs = route::read_jsonl(in);
    if (!recs)
      return fail(recs.error());
    reqs = requests_from_trace(*recs, trace_block_size, rate, requests);
  } else {
    auto i = parse_length_dist(isl);
    auto o = parse_length_dist(osl);
    if (!i)
      return fail(make_error(errc::invalid_argument, "--isl: " + message_of(i.error())));
    if (!o)
      return fail(make_error(errc::invalid_argument, "--osl: " + message_of(o.error())));
    if (rate <= 0)
      return fail(make_error(errc::invalid_argument, "--rate: requests per second, positive"));
    reqs = make_requests({*i, *o, rate, requests, prefix_groups, prefix_share, seed});
  }
  if (reqs.requests.empty())
    return fail(make_error(errc::invalid_argument, "no requests to simulate"));

  sim_options so;
  so.percentile = percentile;
  so.gpus_per_worker = gpus_per_worker;
  so.transfer_ms = transfer_ms;
  simulator sim(*profile, so);
  if (!sim.usable())
    return fail(make_error(errc::invalid_argument, profile_path + ": the profile needs prefill (prefix_hit 0) "
                                                                  "and decode points"));
  const auto candidates = enumerate(space);
  fmt::print(stderr, "{}: {} candidates, {} requests each (mean ISL {:.0f}, OSL {:.0f}, {:.1f} s of traffic)\n",
             program, candidates.size(), reqs.requests.size(), reqs.mean_isl(), reqs.mean_osl(), reqs.duration_s());
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  size_t next_report = candidates.size() / 10;
  auto results = evaluate(sim, candidates, reqs, {ttft, itl}, [&](size_t done, size_t total) {
    if (done >= next_report && done < total) {
      fmt::print(stderr, "{}: {}/{} simulated ({:.1f} s)\n", program, done, total, seconds());
      next_report += std::max<size_t>(1, total / 10);
    }
  });
  const double elapsed = seconds();
  const auto front = pareto_front(results);
  const auto win = pick_winner(results);
  size_t meeting = 0;
  for (const auto& e : results)
    meeting += e.meets_sla ? 1 : 0;
  fmt::print(stderr, "{}: {} candidates in {:.2f} s ({:.0f} per minute); {} meet the SLA\n", program,
             results.size(), elapsed, elapsed > 0 ? static_cast<double>(results.size()) * 60 / elapsed : 0.0,
             meeting);

  fmt::print("Pareto front: {} of {} candidates (output tok/s per GPU vs TTFT p{:g} and ITL p{:g}; SLA {} / {} ms)\n",
             front.size(), results.size(), percentile, percentile, ttft, itl);
  fmt::print("{:>9} {:>6} {:>10} {:>9} {:>6} {:>4}  {}\n", "tok/s/GPU", "GPUs", "TTFT ms", "ITL ms", "hit", "SLA",
             "deployment");
  for (size_t k = 0; k < front.size() && k < front_rows; ++k)
    print_row(results[front[k]]);
  if (front.size() > front_rows)
    fmt::print("... {} more (--front, --json)\n", front.size() - front_rows);

  nlohmann::json report{{"candidates", results.size()}, {"meeting_sla", meeting}, {"seconds", elapsed}};
  if (win) {
    fmt::print("\nwinner: ");
    print_row(results[*win]);
    report["winner"] = to_json(results[*win]);
  } else {
    fmt::print("\nno candidate meets TTFT {} ms and ITL {} ms at p{:g} within {} GPUs\n", ttft, itl, percentile,
               budget);
  }
  if (win && !out_path.empty()) {
    cluster_options co{ns, discovery_root, static_cast<uint16_t>(port), model, model_path};
    auto cfg = to_cluster_config(results[*win].d, *profile, co);
    if (!cfg)
      return fail(cfg.error());
    std::ofstream out(out_path);
    out << "# dynamo-configure: " << describe(results[*win].d) << "\n"
        << fmt::format("# predicted: TTFT p{:g} {:.1f} ms, ITL p{:g} {:.2f} ms, {:.1f} output tok/s ({:.1f} per GPU)\n",
                       percentile, results[*win].r.ttft_ms, percentile, results[*win].r.itl_ms,
                       results[*win].r.output_tokens_per_s, results[*win].r.tokens_per_s_per_gpu)
        << to_yaml(*cfg);
    if (!out)
      return fail(make_error(errc::io_error, "cannot write " + out_path));
    fmt::print("wrote {}\n", out_path);
  }
  if (!json_path.empty()) {
    report["front"] = nlohmann::json::array();
    for (size_t k : front)
      report["front"].push_back(to_json(results[k]));
    report["results"] = nlohmann::json::array();
    for (const auto& e : results)
      report["results"].push_back(to_json(e));
    std::ofstream out(json_path);
    out << report.dump(1) << "\n";
    if (!out)
      return fail(make_error(errc::io_error, "cannot write " + json_path));
  }
  return win ? 0 : 1;
}
