// The mocker: an engine::executor that computes nothing; it checks each batch,
// emits mocker::next_token per sampling entry and reports Dynamo's mocker step
// time, so routing, planning and fault tolerance run at fleet scale without a
// GPU. Called by engine_core from its one thread: not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/engine_core.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/mocker/timing_model.hpp"
#include "runtime/mocker/token_stream.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace dynamo::mocker {

/// Dynamo mocker flags, with this project's defaults (Dynamo's --block-size is 64).
struct mocker_config {
  uint32_t block_size = 16;               ///< tokens per KV block
  uint32_t num_blocks = 16384;            ///< KV blocks (--num-gpu-blocks-override)
  uint32_t context_length = 8192;         ///< prompt + output limit (SmolLM2's)
  double speedup_ratio = 1.0;             ///< 0: no simulated delay
  double decode_speedup_ratio = 1.0;      ///< extra divisor for decode time; > 0
  uint32_t max_num_seqs = 256;
  uint32_t max_num_batched_tokens = 8192;
  uint32_t max_num_partial_prefills = 1;
  bool enable_prefix_caching = true;
};

/// config_error naming the first bad field, if any.
[[nodiscard]] expected<void> validate(const mocker_config& cfg);

class mock_executor final : public engine::executor {
public:
  /// REQUIRES: validate(cfg) succeeds.
  explicit mock_executor(const mocker_config& cfg);

  /// errc::internal for a batch that breaks the layout contract (a scheduler bug).
  [[nodiscard]] expected<engine::batch_result> execute(const engine::batch& b) override;
  [[nodiscard]] engine::kv_geometry geometry() const noexcept override { return geometry_; }
  [[nodiscard]] uint32_t context_length() const noexcept override { return context_length_; }
  [[nodiscard]] std::string name() const override { return "mocker"; }

  /// Steps executed so far (including rejected batches).
  [[nodiscard]] uint64_t num_steps() const noexcept { return num_steps_; }

private:
  engine::kv_geometry geometry_;
  uint32_t context_length_;
  timing_config timing_;
  uint64_t num_steps_ = 0;
};

/// An engine_core over a mock_executor configured by `cfg`.
[[nodiscard]] expected<std::unique_ptr<engine::engine_core>> make_engine(const mocker_config& cfg);

} // namespace dynamo::mocker
