// dynamo-disagg-bench's runner: serves the mocker twice with dynamo-run child
// processes, aggregated (P+D workers) and disaggregated (P prefill + D decode),
// drives both with the same seeded mix of chat requests and long prompts
// (dynamo-bench's load generator), and reports both plus an ITL/TTFT summary
// as one JSON document. run() blocks its (main) thread; never leaves children.
#pragma once

#include "apps/dynamo-bench/load_generator.hpp"
#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dynamo::disagg_bench {

struct bench_config {
  std::string dynamo_run;                  ///< the dynamo-run binary
  uint32_t prefill_workers = 1;            ///< disaggregated: prefill pool size
  uint32_t decode_workers = 3;             ///< disaggregated: decode pool size
  uint32_t max_local_prefill_length = 512; ///< shorter prompts prefill on the decode worker
  double speedup_ratio = 1.0;              ///< mocker timing (1: H100-like)
  uint32_t max_num_batched_tokens = 8192;  ///< mocker step token budget (chunked prefill)
  uint32_t max_num_seqs = 256;
  std::string router_mode = "kv";
  std::string kv_transfer = "auto";
  std::string log_level = "warn";          ///< the children's
  uint32_t startup_timeout_s = 60;
  bench::load_config load;                 ///< host and port are set per server
};

/// config_error naming the first bad field, if any.
[[nodiscard]] expected<void> validate(const bench_config& cfg);

/// Runs both servers one after the other; the JSON report
/// {"config", "aggregated", "disaggregated", "summary"}, or the first error
/// (a child that would not start or died, a failed load run).
[[nodiscard]] expected<std::string> run(const bench_config& cfg);

/// What is wrong with a report for --check (empty: fine): both runs complete
/// every request without failures, both classes are reported, and long
/// prompts were prefilled remotely when the mix has any.
[[nodiscard]] std::vector<std::string> check(const bench_config& cfg, const std::string& report);

} // namespace dynamo::disagg_bench
