// dynamo-soak: fault-injection benchmark (kills workers under load, checks
// every token). Exit status 1 when a request was lost or wrong.
#include "apps/dynamo-soak/soak.hpp"
#include "runtime/core/cli.hpp"

#include <cstdio>
#include <filesystem>
#include <iostream>

int main(int argc, char** argv) {
  dynamo::soak::soak_config cfg;
  std::error_code ec;
  cfg.bin_dir = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
  int64_t seed = 1;
  dynamo::cli c("dynamo-soak", "kill workers under streaming load and check that no request is lost");
  c.option("bin-dir", &cfg.bin_dir, "directory with dynamo-launch and the other binaries")
    .option("workers", &cfg.workers, "mocker worker processes")
    .option("requests", &cfg.requests, "requests to send (ignored with --duration-s)")
    .option("duration-s", &cfg.duration_s, "run for this many seconds instead")
    .option("concurrency", &cfg.concurrency, "streams in flight")
    .option("isl", &cfg.isl, "prompt tokens")
    .option("osl", &cfg.osl, "output tokens per request")
    .option("speedup-ratio", &cfg.speedup_ratio, "mocker speed-up (1: Dynamo's timing model)")
    .option("kill-interval-ms", &cfg.kill_interval_ms, "SIGKILL a random worker this often (0: never)")
    .option("migration-limit", &cfg.migration_limit, "frontend --migration-limit")
    .option("router-mode", &cfg.router_mode, "kv | round-robin | random")
    .option("seed", &seed, "RNG seed (prompts and victims)")
    .option("log-level", &cfg.log_level, "log level of the cluster's processes");
  if (auto code = dynamo::cli_exit_code("dynamo-soak", c.parse(argc, argv)))
    return *code;
  cfg.seed = static_cast<uint64_t>(seed);
  bool ok = false;
  auto report = dynamo::soak::run(cfg, ok);
  if (!report) {
    std::fprintf(stderr, "dynamo-soak: %s\n", dynamo::describe(report.error()).c_str());
    return 2;
  }
  std::cout << *report << std::endl;
  return ok ? 0 : 1;
}
