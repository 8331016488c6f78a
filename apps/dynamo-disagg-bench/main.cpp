// dynamo-disagg-bench: ITL and TTFT of a mix of chat requests and long prompts
// on the mocker, aggregated vs disaggregated, in one run; prints JSON. Exit
// status 1 when --check finds the report wrong, 2 when the run fails. Wiring only.
#include "apps/dynamo-disagg-bench/disagg_bench.hpp"
#include "apps/dynamo-launch/child_server.hpp"
#include "runtime/core/cli.hpp"
#include "runtime/core/log.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

int main(int argc, char** argv) {
  dynamo::disagg_bench::bench_config cfg;
  cfg.dynamo_run = dynamo::apps::sibling_binary("dynamo-run");
  auto& load = cfg.load;
  load.concurrency = 32;
  load.num_requests = 300;
  load.isl = 128;
  load.osl = 128;
  load.long_fraction = 0.1;
  load.long_isl = 4096;
  load.long_osl = 16;
  std::string output, log_level;
  int64_t seed = 1;
  bool check = false;
  dynamo::cli c("dynamo-disagg-bench",
                "ITL/TTFT of chat traffic mixed with long prompts on the mocker, aggregated vs "
                "disaggregated (two dynamo-run children, one after the other); prints JSON");
  c.option("dynamo-run", &cfg.dynamo_run, "dynamo-run binary (default: next to this one)")
    .option("prefill-workers", &cfg.prefill_workers, "disaggregated: prefill workers (P)")
    .option("decode-workers", &cfg.decode_workers, "disaggregated: decode workers (D); aggregated runs P+D")
    .option("max-local-prefill-length", &cfg.max_local_prefill_length,
            "disaggregated: prompts shorter than this prefill on the decode worker")
    .option("speedup-ratio", &cfg.speedup_ratio, "mocker: divide simulated time by this (1: H100-like)")
    .option("max-num-batched-tokens", &cfg.max_num_batched_tokens, "mocker: tokens per engine step")
    .option("max-num-seqs", &cfg.max_num_seqs, "mocker: running sequences per worker")
    .option("router-mode", &cfg.router_mode, "round-robin | random | kv")
    .option("kv-transfer", &cfg.kv_transfer, "disaggregated: auto | ucx | tcp | inproc")
    .option("server-log-level", &cfg.log_level, "log level of the dynamo-run children")
    .option("startup-timeout-s", &cfg.startup_timeout_s, "seconds for a server to become healthy")
    .option("concurrency", &load.concurrency, "requests in flight (closed loop)")
    .option("request-rate", &load.request_rate, "requests/s, Poisson arrivals (0: closed loop)")
    .option("num-requests", &load.num_requests, "measured requests per server")
    .option("warmup", &load.warmup_requests, "unmeasured requests sent first")
    .option("isl", &load.isl, "short (chat) request input tokens")
    .option("osl", &load.osl, "short (chat) request output tokens")
    .option("long-fraction", &load.long_fraction, "share of long requests (0..1, seeded)")
    .option("long-isl", &load.long_isl, "long request input tokens")
    .option("long-osl", &load.long_osl, "long request output tokens")
    .option("seed", &seed, "RNG seed (prompts, classes, arrivals)")
    .option("io-threads", &load.io_threads, "client I/O threads")
    .option("output", &output, "also write the JSON report to this file")
    .option("check", &check, "exit 1 unless every request completed and long prompts went remote")
    .option("log-level", &log_level, "this program's log level (stderr)")
    .epilog("Example:\n  dynamo-disagg-bench --prefill-workers 1 --decode-workers 3 --long-fraction 0.1\n"
            "The summary's itl_p99_ratio is the short (chat) class's ITL p99, aggregated / disaggregated.");
  if (auto code = dynamo::cli_exit_code("dynamo-disagg-bench", c.parse(argc, argv)))
    return *code;
  dynamo::init_logging("dynamo-disagg-bench", log_level);
  load.seed = static_cast<uint64_t>(seed);
  auto report = dynamo::disagg_bench::run(cfg);
  if (!report) {
    std::fprintf(stderr, "dynamo-disagg-bench: %s\n", dynamo::describe(report.error()).c_str());
    return 2;
  }
  std::cout << *report << std::endl;
  if (!output.empty())
    std::ofstream(output) << *report << '\n';
  if (!check)
    return 0;
  auto problems = dynamo::disagg_bench::check(cfg, *report);
  for (const auto& p : problems)
    std::fprintf(stderr, "dynamo-disagg-bench: check failed: %s\n", p.c_str());
  return problems.empty() ? 0 : 1;
}
