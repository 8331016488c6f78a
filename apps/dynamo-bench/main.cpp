// dynamo-bench: load generator for any OpenAI-compatible server, or (--mode
// cancel-storm) the cost of streams that clients abandon; prints JSON.
#include "apps/dynamo-bench/cancel_storm.hpp"
#include "apps/dynamo-bench/load_generator.hpp"
#include "runtime/core/cli.hpp"
#include "runtime/core/http_url.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  dynamo::bench::load_config cfg;
  dynamo::bench::storm_config storm;
  std::string url = "http://127.0.0.1:8000", output, mode = "load";
  dynamo::tls_files tls;
  int64_t seed = 1, arrival_seed = 0;
  dynamo::cli cli("dynamo-bench",
                  "load generator for OpenAI-compatible servers (TTFT, ITL, TPOT, throughput as JSON)");
  cli.option("mode", &mode, "load (TTFT, ITL, throughput) | cancel-storm (TTFT idle vs. after cancelled streams)")
    .option("url", &url, "server base URL (http:// or https://)")
    .option("ca-file", &tls.ca_file, "https: the CA that signed the server's certificate (default: the system's trust store)")
    .option("cert-file", &tls.cert_file, "https: a client certificate, for a server that asks for one (with --key-file)")
    .option("key-file", &tls.key_file, "https: the client certificate's key")
    .option("model", &cfg.model, "model name (default: first of /v1/models)")
    .option("endpoint", &cfg.endpoint, "completions | chat")
    .option("concurrency", &cfg.concurrency, "maximum requests in flight")
    .option("request-rate", &cfg.request_rate, "requests/s with Poisson arrivals (0: closed loop)")
    .option("num-requests", &cfg.num_requests, "measured requests")
    .option("warmup", &cfg.warmup_requests, "unmeasured requests sent first")
    .option("isl", &cfg.isl, "input sequence length (tokens; words for chat)")
    .option("osl", &cfg.osl, "output sequence length (max_tokens, ignore_eos)")
    .option("long-fraction", &cfg.long_fraction, "share of requests that are long prompts (0..1, seeded)")
    .option("long-isl", &cfg.long_isl, "input length of a long request")
    .option("long-osl", &cfg.long_osl, "output length of a long request")
    .option("token-lo", &cfg.token_lo, "smallest random prompt token id")
    .option("token-hi", &cfg.token_hi, "largest random prompt token id")
    .option("seed", &seed, "RNG seed for prompts and arrivals")
    .option("arrival-seed", &arrival_seed,
            "> 0: Poisson arrivals from their own RNG seeded so (dynamo-configure --seed N --isl fixed:.. "
            "--osl fixed:.. simulates the same arrivals)")
    .option("trace", &cfg.trace_path, "replay this Mooncake-style JSONL trace (completions): its arrivals, "
                                      "prompt blocks (hash_ids) and output lengths; --num-requests N > 0 keeps the first N, 0 all")
    .option("trace-block-size", &cfg.trace_block_size, "tokens per trace hash id")
    .option("trace-rate", &cfg.trace_rate, "rescale the trace's timestamps to this many requests per second (0: as recorded)")
    .option("io-threads", &cfg.io_threads, "client I/O threads")
    .option("rate-schedule", &cfg.rate_schedule, "open loop whose rate follows t:rate,... (seconds:requests/s, linear between); the run lasts the schedule")
    .option("sla-ttft-ms", &cfg.sla_ttft_ms, "with --sla-itl-ms: report the share of requests meeting both (TTFT, mean ITL)")
    .option("sla-itl-ms", &cfg.sla_itl_ms, "see --sla-ttft-ms")
    .option("replicas-url", &cfg.replicas_url, "planner /metrics URL: GPU-seconds from dynamo_planner_observed_replicas, sampled each second")
    .option("static-gpus", &cfg.static_gpus, "without --replicas-url: GPU-seconds = this x duration")
    .option("gpus-per-replica", &cfg.gpus_per_replica, "GPUs one replica counts for")
    .option("window-s", &cfg.window_s, "SLA timeline window (seconds)")
    .option("label", &cfg.label, "free text copied into the report")
    .option("output", &output, "also write the JSON report to this file")
    .option("storm", &storm.storm, "cancel-storm: streams per storm")
    .option("cancel-after-ms", &storm.cancel_after_ms, "cancel-storm: close the storm's streams this long after sending")
    .option("rounds", &storm.rounds, "cancel-storm: idle probes, then storm + probe rounds")
    .option("storm-osl", &storm.storm_osl, "cancel-storm: max_tokens of a storm stream (--osl is the probe's)")
    .option("busy-streams", &storm.busy_streams, "cancel-storm: streams already decoding when the storm arrives")
    .epilog("Examples:\n  dynamo-bench --url http://127.0.0.1:8000 --concurrency 64 --isl 512 --osl 128\n"
            "  dynamo-bench --long-fraction 0.1 --long-isl 4096 --long-osl 16   # chat + long prompts\n"
            "  dynamo-bench --mode cancel-storm --endpoint chat --isl 512 --osl 8 --storm 50 --cancel-after-ms 500\n"
            "  dynamo-bench --rate-schedule 0:2,60:16,120:2 --concurrency 4096 --sla-ttft-ms 500 --sla-itl-ms 20 \\\n"
            "      --replicas-url http://127.0.0.1:9090/metrics   # bursty load against an SLA planner\n"
            "  dynamo-bench --trace traffic.jsonl --trace-block-size 64 --concurrency 4096   # dynamo-configure --write-trace");
  if (auto code = dynamo::cli_exit_code("dynamo-bench", cli.parse(argc, argv)))
    return *code;
  cfg.seed = static_cast<uint64_t>(seed);
  cfg.arrival_seed = static_cast<uint64_t>(std::max<int64_t>(0, arrival_seed));
  // A path after the server (e.g. /v1) is ignored: the routes are fixed.
  auto u = dynamo::parse_http_or_https_url(url.find("://") == std::string::npos ? "http://" + url : url, "--url");
  if (!u) {
    std::fprintf(stderr, "dynamo-bench: %s\n", dynamo::message_of(u.error()).c_str());
    return 2;
  }
  cfg.host = u->host;
  cfg.port = u->port;
  if (u->tls)
    cfg.tls = tls;
  else if (tls.any()) {
    std::fprintf(stderr, "dynamo-bench: --ca-file, --cert-file and --key-file need an https:// --url\n");
    return 2;
  }
  if (mode != "load" && mode != "cancel-storm") {
    std::fprintf(stderr, "dynamo-bench: --mode %s: expected load or cancel-storm\n", mode.c_str());
    return 2;
  }
  auto report = mode == "load" ? dynamo::bench::run_load(cfg) : dynamo::bench::run_cancel_storm(cfg, storm);
  if (!report) {
    std::fprintf(stderr, "dynamo-bench: %s\n", dynamo::describe(report.error()).c_str());
    return 1;
  }
  std::cout << *report << std::endl;
  if (!output.empty())
    std::ofstream(output) << *report << '\n';
  return 0;
}
