// The CPU-engine half of dynamo-kv-routing-bench --cpu-engine: a multi-turn
// agent workload (sessions taking turns, each prompt the session's history
// plus the model's own replies plus a new user turn) replayed one request at a
// time on real CPU engines whose G1 holds a fraction of the working set, with
// KVBM off, host tier, and host + disk (real bytes through block files, read
// from the device: the bench drops their pages from the page cache before each
// request), the three engines taking turns request by request. Also measures
// the disk's own sequential read speed under the disk path, in the same run;
// and (--disk-onboard) the disk tier's read path alone against that speed.
// Called from the bench's main thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dynamo::route::bench {

struct cpu_bench_options {
  std::string model;                ///< GGUF path ("" = $DYNAMO_MODEL_PATH or the SmolLM2 default)
  uint32_t sessions = 8;
  uint32_t turns = 4;
  uint32_t system_tokens = 256;     ///< shared by every session
  uint32_t min_user_tokens = 64;
  uint32_t max_user_tokens = 192;
  uint32_t output_tokens = 8;
  uint32_t block_size = 16;
  uint32_t g1_blocks = 96;          ///< the engine's KV blocks
  uint32_t host_blocks_small = 64;  ///< host+disk: a host tier smaller than the working set
  std::string disk_path = "/tmp/dynamo-kvbm-bench";
  unsigned threads = 0;             ///< 0: all cores
  uint64_t seed = 1;
};

/// Runs the three variants and returns one JSON object (no trailing newline).
[[nodiscard]] std::string cpu_engine_json(const cpu_bench_options& o);

/// --disk-onboard: the G3 read path alone. Writes `blocks` blocks of
/// `block_bytes` through a disk_store (appended to its segment files: a job's
/// blocks adjacent, as a prompt's are, unless `scatter`), then onboards them
/// all with onboard_worker, `job_blocks` per job, once per (reader count,
/// largest read), page cache dropped before each pass, rounds alternating the
/// settings; and the device's sequential read speed in the same run (one JSON
/// object).
struct disk_onboard_options {
  std::string disk_path = "/tmp/dynamo-kvbm-bench";
  uint64_t block_bytes = 368640; ///< SmolLM2-135M, 16 tokens, fp16 KV
  uint32_t blocks = 1024;
  uint32_t job_blocks = 16;      ///< blocks onboarded per request
  std::vector<unsigned> readers{1, 2, 4, 8, 16};
  std::vector<uint64_t> read_bytes{uint64_t{4} << 20}; ///< kvbm_config::disk_read_bytes
  uint32_t rounds = 3;
  bool scatter = false;          ///< append the blocks in a shuffled order
  uint64_t segment_bytes = uint64_t{64} << 20; ///< kvbm_config::disk_segment_bytes
};
[[nodiscard]] std::string disk_onboard_json(const disk_onboard_options& o);

/// --disk-restart: the G3 store's start-up. Writes `blocks` blocks as
/// --disk-onboard does, into segments of `segment_bytes`, then times
/// disk_store::open() `rounds` times each: every segment read by its footer,
/// and every footer cut off first (the record-header scan, which seals each
/// segment again), each with the page cache dropped (cold) and kept (warm).
[[nodiscard]] std::string disk_restart_json(const disk_onboard_options& o);

} // namespace dynamo::route::bench
