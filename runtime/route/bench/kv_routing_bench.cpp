// dynamo-kv-routing-bench: a discrete-event simulation on a virtual clock. The
// same multi-turn, prefix-heavy trace is replayed against N mocker engines (the
// real engine_core + mock_executor with Dynamo's timing model) behind the real
// kv_router, once per router mode, with no sleeping. Each engine steps back to
// back while it has work; a step's tokens and KV events become visible at its
// simulated end, when the router receives the events and the request lifecycle
// calls. Prints one JSON object: per mode TTFT percentiles, prefill tokens
// computed, cache hit rate, and the round-robin / kv ratios. With --kvbm, each
// mode also runs with the engines' KV block manager tiers (host, host + disk:
// the mocker's tiers hold hashes and charge onboarding time per block and
// tier), with the KVBM-off / KVBM-on ratios.
#include "runtime/route/bench/kv_routing_sim.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using namespace dynamo;
using namespace dynamo::route;
using namespace dynamo::route::bench;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

struct summary {
  double ttft_p50_ms = 0, ttft_p90_ms = 0, ttft_p99_ms = 0, ttft_mean_ms = 0, e2e_p50_ms = 0;
  uint64_t prefill_tokens = 0, prompt_tokens = 0, cached_tokens = 0, predicted_tokens = 0;
};

summary summarize(const sim_result& r) {
  summary s;
  std::vector<double> ttft, e2e;
  uint64_t decode_tokens = 0;
  for (const auto& q : r.requests) {
    if (q.first_token_us >= 0)
      ttft.push_back((q.first_token_us - q.arrival_us) / 1000.0);
    if (q.done_us >= 0)
      e2e.push_back((q.done_us - q.arrival_us) / 1000.0);
    s.prompt_tokens += q.prompt;
    s.cached_tokens += q.cached;
    s.predicted_tokens += std::min(q.predicted_overlap_tokens, q.prompt);
    decode_tokens += q.outputs > 0 ? q.outputs - 1 : 0; // each later token is one decode input
  }
  s.prefill_tokens = r.computed_tokens - std::min(r.computed_tokens, decode_tokens);
  s.ttft_p50_ms = percentile(ttft, 0.5);
  s.ttft_p90_ms = percentile(ttft, 0.90);
  s.ttft_p99_ms = percentile(ttft, 0.99);
  for (double t : ttft)
    s.ttft_mean_ms += t / static_cast<double>(ttft.size());
  s.e2e_p50_ms = percentile(e2e, 0.5);
  return s;
}

std::string kvbm_json(const sim_result& r) {
  if (!r.has_kvbm)
    return "null";
  const protocol::kvbm_metrics& k = r.kvbm;
  return fmt::format(R"({{"kvbm_matched_tokens": {}, "kvbm_offload_blocks_d2h": {}, "kvbm_offload_blocks_h2d": {}, )"
                     R"("kvbm_onboard_blocks_h2d": {}, "kvbm_onboard_blocks_d2d": {}, )"
                     R"("kvbm_host_cache_hit_rate": {:.4f}, "kvbm_disk_cache_hit_rate": {:.4f}}})",
                     k.kvbm_matched_tokens, k.kvbm_offload_blocks_d2h, k.kvbm_offload_blocks_h2d,
                     k.kvbm_onboard_blocks_h2d, k.kvbm_onboard_blocks_d2d, k.kvbm_host_cache_hit_rate,
                     k.kvbm_disk_cache_hit_rate);
}

std::string mode_json(std::string_view mode, const sim_result& r, const summary& s, const cost_weights& w) {
  std::string spread;
  for (uint64_t n : r.per_worker_requests)
    spread += fmt::format("{}{}", spread.empty() ? "" : ", ", n);
  auto prompt = static_cast<double>(std::max<uint64_t>(s.prompt_tokens, 1));
  return fmt::format(
      R"("{}": {{"ttft_p50_ms": {:.1f}, "ttft_p90_ms": {:.1f}, "ttft_p99_ms": {:.1f}, "ttft_mean_ms": {:.1f}, )"
      R"("e2e_p50_ms": {:.1f}, "prefill_tokens_computed": {}, "prompt_tokens": {}, )"
      R"("cached_prompt_tokens": {}, "cache_hit_rate": {:.4f}, "router_predicted_hit_rate": {:.4f}, )"
      R"("engine_steps": {}, "preemptions": {}, "errors": {}, "resync_requests": {}, )"
      R"("lifecycle_mismatches": {}, "simulated_s": {:.1f}, "requests_per_worker": [{}], )"
      R"("router_weights": {{"kv_overlap_score_weight": {:.3f}, "router_lower_tier_weight": {:.3f}}}, "kvbm": {}, "ttft_breakdown": {}}})",
      mode, s.ttft_p50_ms, s.ttft_p90_ms, s.ttft_p99_ms, s.ttft_mean_ms, s.e2e_p50_ms, s.prefill_tokens,
      s.prompt_tokens, s.cached_tokens, static_cast<double>(s.cached_tokens) / prompt,
      static_cast<double>(s.predicted_tokens) / prompt, r.steps, r.preemptions, r.errors,
      r.resyncs, r.lifecycle_mismatches, r.end_us / 1e6, spread, w.overlap_score_weight, w.lower_tier_weight, kvbm_json(r),
      bench::breakdown_json(r.probes, r.first_token_us, r.engine_block_size, r.engine_num_blocks));
}

} // namespace

namespace {

template <class T>
T number(std::string_view flag, std::string_view text) {
  T v{};
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || p != text.data() + text.size()) {
    std::fprintf(stderr, "%.*s needs a number (try --help)\n", int(flag.size()), flag.data());
    std::exit(2);
  }
  return v;
}

std::vector<std::string> split(std::string_view v) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= v.size();) {
    size_t comma = std::min(v.find(',', at), v.size());
    out.emplace_back(v.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::vector<double> numbers(std::string_view flag, std::string_view v) {
  std::vector<double> out;
  for (const std::string& item : split(v))
    out.push_back(number<double>(flag, item));
  return out;
}

/// agent: history-heavy multi-turn sessions (tool outputs, long histories);
/// chat: short sessions dominated by a long shared system prompt.
bool apply_preset(options& o, std::string_view name) {
  workload_config& w = o.workload;
  if (name == "chat") {
    w.system_prompt_tokens = 2048;
    w.min_turns = 2, w.max_turns = 6;
    w.min_user_tokens = 64, w.max_user_tokens = 512;
    w.min_output_tokens = 32, w.max_output_tokens = 256;
    w.sessions = 1000;
    o.rates = {8, 16, 24, 32};
  } else if (name == "agent") {
    w.system_prompt_tokens = 1024;
    w.min_turns = 4, w.max_turns = 16;
    w.min_user_tokens = 128, w.max_user_tokens = 1024;
    w.min_output_tokens = 64, w.max_output_tokens = 256;
    w.sessions = 300;
    o.rates = {2, 4, 6, 8};
  } else {
    return false;
  }
  o.preset = std::string{name};
  return true;
}

constexpr const char* usage =
    "dynamo-kv-routing-bench [--preset agent|chat] [--rates r1,r2,...] [--workers 8]\n"
    "  [--sessions N] [--system-prompts 4] [--system-prompt-tokens N] [--min-turns N]\n"
    "  [--max-turns N] [--min-user-tokens N] [--max-user-tokens N] [--min-output-tokens N]\n"
    "  [--max-output-tokens N] [--trace-block-size 512] [--mean-think-ms 2000]\n"
    "  [--blocks 16384] [--block-size 16] [--modes kv,round-robin] [--seed 1] [--smoke]\n"
    "  [--kvbm off,host,host+disk] [--kvbm-host-gb 4] [--kvbm-disk-gb 64] [--kvbm-disk-min-frequency 2] [--router-lower-tier-weight 0.5]\n"
    "  [--kv-overlap-score-weight 1.0] [--router-cost dynamo|timing] [--router-profile PATH] [--router-kv-capacity] [--replies actual|trace]\n"
    "  [--cpu-engine] [--cpu-model PATH] [--cpu-sessions 8] [--cpu-turns 4] [--cpu-system-tokens 256]\n"
    "  [--cpu-min-user-tokens 64] [--cpu-max-user-tokens 192] [--cpu-output-tokens 8] [--cpu-g1-blocks 96]\n"
    "  [--cpu-host-blocks 64] [--cpu-disk-path /tmp/dynamo-kvbm-bench] [--cpu-threads 0]\n"
    "  [--disk-onboard] [--disk-blocks 1024] [--disk-block-bytes 368640] [--disk-job-blocks 16]\n"
    "  [--disk-readers 1,2,4,8,16] [--disk-read-kib 4096] [--disk-rounds 3] [--disk-scatter]\n"
    "  [--disk-restart] [--disk-segment-kib 65536]\n"
    "--disk-restart times only the KVBM disk tier's start-up (disk_store::open over --disk-blocks\n"
    "blocks of --disk-block-bytes in segments of --disk-segment-kib under --cpu-disk-path): every\n"
    "segment read by its footer, and every footer cut off (the record-header scan), each cold\n"
    "(page cache dropped) and warm, --disk-rounds times; it prints that JSON alone.\n"
    "--disk-onboard measures only the KVBM disk tier's read path (onboarding blocks from its\n"
    "segment files under --cpu-disk-path into memory, page cache dropped, per reader count\n"
    "and largest read) against the device's sequential read speed in the same run, and prints\n"
    "that JSON alone. --disk-scatter appends the blocks in a shuffled order, so a job's blocks\n"
    "are never adjacent on disk (the worst case: one read per block).\n"
    "--cpu-engine adds \"cpu_engine\": the same KVBM variants (off, host, host+disk with a\n"
    "host tier of --cpu-host-blocks) on one CPU engine with --cpu-g1-blocks of KV, sessions\n"
    "taking turns one request at a time (wall-clock TTFT), with the disk's sequential read\n"
    "speed measured under --cpu-disk-path.\n"
    "--router-cost timing: the overlap and lower-tier weights priced in one unit, time: a\n"
    "prompt block's prefill over what a resident block adds to a step, fitted to a profile\n"
    "as a deployment's router does (--router-profile, a dynamo-profile JSON; default: a\n"
    "profile of the bench's mocker engine taken at start), and a lower-tier hit saving its\n"
    "prefill less the mocker's onboarding, per KVBM variant; dynamo\n"
    "(default): the two weight flags as given. --router-kv-capacity: the router knows each\n"
    "worker's G1 blocks and sends a request where it fits next to the running ones if any.\n"
    "--replies actual (default): a session's next turn is its previous prompt, the reply the\n"
    "engine returned and the new user tokens, sent the trace's think time after that reply;\n"
    "trace: every prompt from the trace's hash ids at its timestamp (the reply never reused).\n"
    "For each arrival rate (sessions per second), replays one synthetic multi-turn\n"
    "trace against mocker engines on a virtual clock, once per router mode, and\n"
    "prints one JSON object (ratios: second mode over first). With --kvbm, every\n"
    "mode runs once per KVBM variant (named mode+variant; kvbm_ratios: off over each).\n"
    "Presets (default agent; later flags override):\n"
    "  agent: 300 sessions of 4-16 turns, 1024-token system prompts, 128-1024 user\n"
    "         and 64-256 output tokens per turn; rates 2,4,6,8\n"
    "  chat:  1000 sessions of 2-6 turns, 2048-token system prompts, 64-512 user and\n"
    "         32-256 output tokens per turn; rates 8,16,24,32";

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string_view f = argv[i];
    if (f == "--help" || f == "-h") {
      std::puts(usage);
      return false;
    }
    if (f == "--cpu-engine") {
      o.cpu_engine = true;
      continue;
    }
    if (f == "--disk-onboard") {
      o.disk_onboard = true;
      continue;
    }
    if (f == "--disk-restart") {
      o.disk_restart = true;
      continue;
    }
    if (f == "--router-kv-capacity") {
      o.router_capacity = true;
      continue;
    }
    if (f == "--disk-scatter") {
      o.disk.scatter = true;
      continue;
    }
    if (f == "--smoke") {
      o.workers = 2;
      o.workload.sessions = 6;
      o.workload.min_turns = 2;
      o.workload.max_turns = 3;
      o.rates = {2};
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value (try --help)\n", argv[i]);
      std::exit(2);
    }
    std::string_view v = argv[++i];
    if (f == "--workers") o.workers = number<uint32_t>(f, v);
    else if (f == "--sessions") o.workload.sessions = number<uint32_t>(f, v);
    else if (f == "--sessions-per-second" || f == "--rates") o.rates = numbers(f, v);
    else if (f == "--preset") {
      if (!apply_preset(o, v)) {
        std::fprintf(stderr, "--preset: agent or chat (try --help)\n");
        std::exit(2);
      }
    }
    else if (f == "--system-prompts") o.workload.system_prompts = number<uint32_t>(f, v);
    else if (f == "--system-prompt-tokens") o.workload.system_prompt_tokens = number<uint32_t>(f, v);
    else if (f == "--min-turns") o.workload.min_turns = number<uint32_t>(f, v);
    else if (f == "--max-turns") o.workload.max_turns = number<uint32_t>(f, v);
    else if (f == "--min-user-tokens") o.workload.min_user_tokens = number<uint32_t>(f, v);
    else if (f == "--max-user-tokens") o.workload.max_user_tokens = number<uint32_t>(f, v);
    else if (f == "--min-output-tokens") o.workload.min_output_tokens = number<uint32_t>(f, v);
    else if (f == "--max-output-tokens") o.workload.max_output_tokens = number<uint32_t>(f, v);
    else if (f == "--trace-block-size") o.workload.trace_block_size = number<uint32_t>(f, v);
    else if (f == "--mean-think-ms") o.workload.mean_think_ms = number<double>(f, v);
    else if (f == "--blocks") o.engine.num_blocks = number<uint32_t>(f, v);
    else if (f == "--block-size") o.engine.block_size = number<uint32_t>(f, v);
    else if (f == "--seed") o.seed = o.workload.seed = number<uint64_t>(f, v);
    else if (f == "--modes") o.modes = split(v);
    else if (f == "--replies") {
      if (v != "actual" && v != "trace") {
        std::fprintf(stderr, "--replies: actual or trace (try --help)\n");
        std::exit(2);
      }
      o.trace_replies = v == "trace";
    }
    else if (f == "--kvbm") {
      o.kvbm = split(v);
      for (const std::string& k : o.kvbm)
        if (k != "off" && k != "host" && k != "host+disk") {
          std::fprintf(stderr, "--kvbm: off, host and/or host+disk (try --help)\n");
          std::exit(2);
        }
    }
    else if (f == "--kvbm-host-gb") o.kvbm_host_gb = number<double>(f, v);
    else if (f == "--kvbm-disk-gb") o.kvbm_disk_gb = number<double>(f, v);
    else if (f == "--kvbm-disk-min-frequency") o.kvbm_disk_min_frequency = number<int64_t>(f, v);
    else if (f == "--router-lower-tier-weight") o.lower_tier_weight = number<double>(f, v);
    else if (f == "--kv-overlap-score-weight") o.overlap_weight = number<double>(f, v);
    else if (f == "--router-cost") {
      auto cost = parse_cost_model(v);
      if (!cost) {
        std::fprintf(stderr, "%s (try --help)\n", message_of(cost.error()).c_str());
        std::exit(2);
      }
      o.timing_cost = *cost == cost_model::timing;
    }
    else if (f == "--router-profile") o.router_profile = std::string{v};
    else if (f == "--cpu-model") o.cpu.model = std::string{v};
    else if (f == "--cpu-sessions") o.cpu.sessions = number<uint32_t>(f, v);
    else if (f == "--cpu-turns") o.cpu.turns = number<uint32_t>(f, v);
    else if (f == "--cpu-system-tokens") o.cpu.system_tokens = number<uint32_t>(f, v);
    else if (f == "--cpu-min-user-tokens") o.cpu.min_user_tokens = number<uint32_t>(f, v);
    else if (f == "--cpu-max-user-tokens") o.cpu.max_user_tokens = number<uint32_t>(f, v);
    else if (f == "--cpu-output-tokens") o.cpu.output_tokens = number<uint32_t>(f, v);
    else if (f == "--cpu-g1-blocks") o.cpu.g1_blocks = number<uint32_t>(f, v);
    else if (f == "--cpu-host-blocks") o.cpu.host_blocks_small = number<uint32_t>(f, v);
    else if (f == "--cpu-disk-path") o.cpu.disk_path = o.disk.disk_path = std::string{v};
    else if (f == "--disk-blocks") o.disk.blocks = number<uint32_t>(f, v);
    else if (f == "--disk-block-bytes") o.disk.block_bytes = number<uint64_t>(f, v);
    else if (f == "--disk-job-blocks") o.disk.job_blocks = number<uint32_t>(f, v);
    else if (f == "--disk-rounds") o.disk.rounds = number<uint32_t>(f, v);
    else if (f == "--disk-segment-kib") o.disk.segment_bytes = number<uint64_t>(f, v) * 1024;
    else if (f == "--disk-readers") {
      o.disk.readers.clear();
      for (double r : numbers(f, v))
        o.disk.readers.push_back(static_cast<unsigned>(r));
    }
    else if (f == "--disk-read-kib") {
      o.disk.read_bytes.clear();
      for (double k : numbers(f, v))
        o.disk.read_bytes.push_back(static_cast<uint64_t>(k) * 1024);
    }
    else if (f == "--cpu-threads") o.cpu.threads = number<unsigned>(f, v);
    else {
      std::fprintf(stderr, "unknown option %s (try --help)\n", argv[i - 1]);
      std::exit(2);
    }
  }
  o.workers = std::max<uint32_t>(o.workers, 1);
  return true;
}

std::string run_json(const options& o, double rate) {
  workload_config wc = o.workload;
  wc.sessions_per_second = rate;
  std::vector<trace_record> trace = generate_workload(wc);
  workload_stats ws = analyze_workload(trace);
  uint64_t distinct = 0; // the working set, in engine blocks: distinct prompt blocks
  std::string body;
  std::vector<summary> sums;
  std::string kvbm_ratios;
  for (const std::string& name : o.modes) {
    auto mode = parse_router_mode(name);
    if (!mode) {
      std::fprintf(stderr, "%s\n", describe(mode.error()).c_str());
      std::exit(2);
    }
    std::optional<summary> off;
    for (const std::string& k : o.kvbm) {
      sim_result r = simulate(o, *mode, trace, k);
      distinct = std::max(distinct, r.working_set_blocks);
      const summary s = summarize(r);
      const std::string label = k == "off" ? name : name + "+" + k;
      body += mode_json(label, r, s, router_cost_weights(o, k)) + ", ";
      if (k == "off") {
        sums.push_back(s);
        off = s;
      } else if (off) {
        kvbm_ratios += fmt::format(R"({}"{}": {{"ttft_p50": {:.2f}, "ttft_p99": {:.2f}, "prefill_tokens": {:.2f}}})",
                                   kvbm_ratios.empty() ? "" : ", ", label,
                                   off->ttft_p50_ms / std::max(s.ttft_p50_ms, 1e-9),
                                   off->ttft_p99_ms / std::max(s.ttft_p99_ms, 1e-9),
                                   static_cast<double>(off->prefill_tokens) /
                                       static_cast<double>(std::max<uint64_t>(s.prefill_tokens, 1)));
      }
    }
  }
  body += fmt::format(R"("working_set_blocks": {}, "g1_blocks_all_workers": {}, "working_set_over_g1": {:.2f}, )",
                      distinct, uint64_t{o.engine.num_blocks} * o.workers,
                      static_cast<double>(distinct) /
                          static_cast<double>(uint64_t{o.engine.num_blocks} * o.workers));
  if (!kvbm_ratios.empty())
    body += "\"kvbm_ratios\": {" + kvbm_ratios + "}, ";
  std::string ratios = "null";
  if (sums.size() >= 2) { // baseline (second mode) over the first
    const summary& kv = sums[0];
    const summary& base = sums[1];
    ratios = fmt::format(R"({{"baseline": "{}", "ttft_p50": {:.2f}, "ttft_p99": {:.2f}, )"
                         R"("prefill_tokens": {:.2f}}})",
                         o.modes[1], base.ttft_p50_ms / std::max(kv.ttft_p50_ms, 1e-9),
                         base.ttft_p99_ms / std::max(kv.ttft_p99_ms, 1e-9),
                         static_cast<double>(base.prefill_tokens) /
                             static_cast<double>(std::max<uint64_t>(kv.prefill_tokens, 1)));
  }
  return fmt::format(R"({{"sessions_per_second": {}, "workload": {{"requests": {}, )"
                     R"("requests_per_s": {:.1f}, "mean_input_length": {:.0f}, )"
                     R"("mean_output_length": {:.0f}, "duration_s": {:.1f}, )"
                     R"("trace_reuse_ratio": {:.4f}}}, {}"ratios": {}}})",
                     rate, ws.requests,
                     static_cast<double>(ws.requests) / std::max(ws.duration_s, 1e-9),
                     ws.mean_input_length, ws.mean_output_length, ws.duration_s,
                     ws.reuse_ratio, body, ratios);
}

} // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn); // stdout is the JSON
  options o;
  o.engine.context_length = 32768;
  apply_preset(o, "agent");
  if (!parse(argc, argv, o))
    return 0;
  if (o.disk_restart) {
    fmt::print(R"({{"bench": "dynamo-kv-routing-bench", "disk_restart": {}}})" "\n", bench::disk_restart_json(o.disk));
    return 0;
  }
  if (o.disk_onboard) {
    fmt::print(R"({{"bench": "dynamo-kv-routing-bench", "disk_onboard": {}}})" "\n", bench::disk_onboard_json(o.disk));
    return 0;
  }
  if (auto ok = mocker::validate(o.engine); !ok) {
    std::fprintf(stderr, "%s\n", describe(ok.error()).c_str());
    return 2;
  }
  std::string timing = "null";
  if (o.timing_cost) {
    auto t = profiled_timing(o);
    if (!t) {
      std::fprintf(stderr, "--router-cost timing: %s\n", describe(t.error()).c_str());
      return 2;
    }
    o.timing = *t;
    timing = fmt::format(R"({{"profile": "{}", "prefill_ms_per_block": {:.6g}, "step_ms_per_block": {:.6g}}})",
                         o.router_profile.empty() ? "(this engine)" : o.router_profile, t->prefill_ms_per_block,
                         t->step_ms_per_block);
  }
  std::string runs;
  for (double rate : o.rates)
    runs += (runs.empty() ? "" : ", ") + run_json(o, rate);
  const std::string cpu = o.cpu_engine ? bench::cpu_engine_json(o.cpu) : std::string{"null"};
  const workload_config& w = o.workload;
  fmt::print(R"({{"bench": "dynamo-kv-routing-bench", "preset": "{}", "workers": {}, )"
             R"("engine": {{"block_size": {}, "num_blocks": {}, "max_num_batched_tokens": {}, )"
             R"("timing": "dynamo mocker polynomial, speedup 1"}}, "workload": {{"sessions": {}, )"
             R"("system_prompts": {}, "system_prompt_tokens": {}, "turns": [{}, {}], )"
             R"("user_tokens": [{}, {}], "output_tokens": [{}, {}], "mean_think_ms": {}, )"
             R"("trace_block_size": {}, "seed": {}}}, "kvbm": {{"variants": "{}", "host_gb_per_worker": {}, )"
             R"("disk_gb_per_worker": {}, "router_lower_tier_weight": {}, "kv_overlap_score_weight": {}, "host_gbps": {}, "disk_gbps": {}, "host_block_us": {}, "disk_block_us": {}}}, )"
             R"("router_timing": {}, "runs": [{}], "cpu_engine": {}}})"
             "\n",
             o.preset, o.workers, o.engine.block_size, o.engine.num_blocks,
             o.engine.max_num_batched_tokens, w.sessions, w.system_prompts,
             w.system_prompt_tokens, w.min_turns, w.max_turns, w.min_user_tokens,
             w.max_user_tokens, w.min_output_tokens, w.max_output_tokens, w.mean_think_ms,
             w.trace_block_size, w.seed, fmt::format("{}", fmt::join(o.kvbm, ",")), o.kvbm_host_gb,
             o.kvbm_disk_gb, o.lower_tier_weight, o.overlap_weight, o.engine.kvbm_host_bandwidth, o.engine.kvbm_disk_bandwidth, o.engine.kvbm_host_block_us,
             o.engine.kvbm_disk_block_us, timing, runs, cpu);
  return 0;
}
