// Synthetic multi-turn, prefix-heavy traffic for router benchmarks and
// simulations, as Mooncake-style trace records (research/dynamo.md 11), with
// JSONL reading/writing. Pure functions and values; I/O errors are values.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

namespace dynamo::route {

/// Shared system prompts; every turn of a conversation re-sends its whole
/// history plus a new user message. hash_ids name `trace_block_size`-token
/// prompt blocks; equal ids mean equal content at the same position, so tokens
/// can be synthesized from them.
struct trace_record {
  uint64_t timestamp_ms = 0;
  uint32_t input_length = 0;
  uint32_t output_length = 0;
  std::vector<uint64_t> hash_ids; ///< ceil(input_length / trace_block_size) ids
  uint64_t session = 0;           ///< conversation (not in Mooncake files; 0 when read)
};

struct workload_config {
  uint32_t trace_block_size = 512;   ///< tokens per hash id (Mooncake traces use 512)
  uint32_t system_prompts = 4;       ///< distinct shared system prompts
  uint32_t system_prompt_tokens = 2048;
  uint32_t sessions = 64;            ///< conversations
  uint32_t min_turns = 2, max_turns = 6;
  uint32_t min_user_tokens = 64, max_user_tokens = 512;
  uint32_t min_output_tokens = 32, max_output_tokens = 256;
  double sessions_per_second = 4.0;  ///< Poisson arrival rate of new conversations
  double mean_think_ms = 2000.0;     ///< exponential gap between a session's turns
  uint64_t seed = 1;
};

/// The requests of all sessions, sorted by timestamp (ties by session).
[[nodiscard]] std::vector<trace_record> generate_workload(const workload_config& config);

/// Synthesizes `input_length` prompt tokens from the record's hash ids: each
/// id always expands to the same `trace_block_size` tokens (the last block
/// may be cut short), in [0, vocab).
[[nodiscard]] std::vector<uint32_t> synthesize_tokens(const trace_record& record,
                                                      uint32_t trace_block_size,
                                                      uint32_t vocab = 49152);

/// The prompt of a session's next turn as a real multi-turn or agent client
/// sends it: the previous turn's prompt, the reply the engine actually
/// returned, then `record`'s new user (or tool) tokens: the last
/// record.input_length - previous.size() - reply.size() tokens of
/// synthesize_tokens(record) (at least one), which come from the record's
/// new hash ids. The whole history, reply included, is thus reusable KV at
/// token granularity, not only the previous prompt's full trace blocks.
[[nodiscard]] std::vector<uint32_t> next_turn_prompt(std::span<const uint32_t> previous,
                                                     std::span<const uint32_t> reply,
                                                     const trace_record& record, uint32_t trace_block_size,
                                                     uint32_t vocab = 49152);

/// Arrival times (ms after the first) of the first `limit` records (all when
/// 0): their timestamps, rescaled when rate > 0 so that the span from first
/// to last arrival is (n - 1) / rate seconds. What dynamo-configure simulates
/// from a trace and what dynamo-bench --trace sends: one rule for both.
[[nodiscard]] std::vector<double> trace_arrivals_ms(const std::vector<trace_record>& records, double rate,
                                                    size_t limit);

struct workload_stats {
  size_t requests = 0;
  double mean_input_length = 0;
  double mean_output_length = 0;
  double duration_s = 0;
  /// Fraction of prompt blocks whose id appeared earlier in the trace: the hit
  /// rate of one infinite cache (an upper bound for any router).
  double reuse_ratio = 0;
};

[[nodiscard]] workload_stats analyze_workload(const std::vector<trace_record>& records);

/// One JSON object per line: {"timestamp","input_length","output_length","hash_ids"}
/// (plus "session_id" when non-zero).
void write_jsonl(std::ostream& out, const std::vector<trace_record>& records);

/// Reads JSONL written by write_jsonl or a Mooncake trace; unknown keys are
/// ignored, a bad line is errc::invalid_argument naming the line.
[[nodiscard]] expected<std::vector<trace_record>> read_jsonl(std::istream& in);

} // namespace dynamo::route
