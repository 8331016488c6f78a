// The mocker: an engine::executor that computes nothing; it checks each batch,
// emits mocker::next_token per sampling entry (in the stream of the entry's
// seed and choice; logprobs of a point mass: 0 for the token, which is its
// only alternative), mocker::embedding per embed entry and
// mocker::prompt_logprob per prompt target, and reports
// Dynamo's mocker step time, so routing, planning and fault tolerance run at
// fleet scale without a GPU. Block copies are checked, not done (no KV
// bytes). Called by engine_core from its one thread: not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/engine_core.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/mocker/timing_model.hpp"
#include "runtime/mocker/token_stream.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
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

  // Disaggregation. The mocker holds no KV bytes: this model shape (SmolLM2-135M's
  // by default) names a synthetic block-major layout, so that a prefill mocker and
  // a decode mocker agree on it (and refuse a differently configured peer), and it
  // sizes the simulated transfer (transfer_time).
  uint32_t kv_num_layers = 30;
  uint32_t kv_num_heads = 3; ///< KV heads
  uint32_t kv_head_dim = 64;
  protocol::kv_dtype kv_dtype = protocol::kv_dtype::f16;
  /// Bytes of KV per token (--kv-bytes-per-token); 0: from the shape above,
  /// layers × 2 × KV heads × head_dim × dtype bytes (23,040 by default).
  uint64_t kv_bytes_per_token = 0;
  double kv_transfer_bandwidth = 64.0; ///< GB/s, 1e9 bytes/s (--kv-transfer-bandwidth); > 0

  // KVBM onboarding (runtime/kvbm): a block of block_size x kv_bytes_per_token
  // bytes comes from host memory or disk at these rates, plus a fixed cost per
  // block and tier (a copy launch; a file open and read).
  double kvbm_host_bandwidth = 25.0; ///< GB/s: pinned host -> device (PCIe 5 x16, in practice)
  double kvbm_disk_bandwidth = 6.0;  ///< GB/s: NVMe -> device
  double kvbm_host_block_us = 2.0;   ///< per block from host
  double kvbm_disk_block_us = 20.0;  ///< per block from disk
};

/// Simulated time to onboard blocks from KVBM's tiers (see mocker_config),
/// divided by speedup_ratio (0 with speedup_ratio 0).
[[nodiscard]] std::chrono::microseconds onboard_time(uint64_t host_blocks, uint64_t disk_blocks,
                                                     const mocker_config& cfg);

/// config_error naming the first bad field, if any.
[[nodiscard]] expected<void> validate(const mocker_config& cfg);

/// The synthetic block-major layout of `cfg` (block_size and the kv_* shape).
[[nodiscard]] protocol::kv_layout transfer_layout(const mocker_config& cfg);

/// cfg.kv_bytes_per_token, or the shape's when that is 0.
[[nodiscard]] uint64_t kv_bytes_per_token(const mocker_config& cfg);

/// Simulated time to move the KV of `num_tokens` tokens between workers
/// (research/dynamo.md 7): num_tokens × kv_bytes_per_token / bandwidth, divided
/// by speedup_ratio like every mocker delay (0 with speedup_ratio 0).
/// 4096 tokens × 23,040 B / 64 GB/s = 1,475 µs.
[[nodiscard]] std::chrono::microseconds transfer_time(uint64_t num_tokens, const mocker_config& cfg);

class mock_executor final : public engine::executor {
public:
  /// REQUIRES: validate(cfg) succeeds.
  explicit mock_executor(const mocker_config& cfg);

  /// errc::internal for a batch that breaks the layout contract (a scheduler bug).
  [[nodiscard]] expected<engine::batch_result> execute(const engine::batch& b) override;
  [[nodiscard]] engine::kv_geometry geometry() const noexcept override { return geometry_; }
  [[nodiscard]] uint32_t context_length() const noexcept override { return context_length_; }
  [[nodiscard]] std::string name() const override { return "mocker"; }
  /// Embed entries get mocker::embedding of their last token.
  [[nodiscard]] bool computes_embeddings() const noexcept override { return true; }
  /// Prompt targets get mocker::prompt_logprob.
  [[nodiscard]] bool computes_prompt_logprobs() const noexcept override { return true; }
  /// No KV bytes: kv_memory() stays nullopt; this names transfer_layout(cfg).
  [[nodiscard]] std::optional<protocol::kv_layout> kv_transfer_layout() override { return layout_; }
  [[nodiscard]] std::chrono::microseconds simulated_onboard_time(uint64_t host_blocks,
                                                                 uint64_t disk_blocks) const override {
    return onboard_time(host_blocks, disk_blocks, cfg_);
  }

  /// Steps executed so far (including rejected batches).
  [[nodiscard]] uint64_t num_steps() const noexcept { return num_steps_; }

private:
  mocker_config cfg_;
  engine::kv_geometry geometry_;
  uint32_t context_length_;
  timing_config timing_;
  protocol::kv_layout layout_;
  uint64_t num_steps_ = 0;
  /// Sequences with a scripted reply (token_stream.hpp scripted_reply): the
  /// reply and the sample_position of its first token. Found in the prefill
  /// chunk that samples only: the script must be in the prompt's last chunk
  /// (prompts within max_num_batched_tokens, and not cached up to the script:
  /// tests start each prompt with something unique). An entry goes once its
  /// EOS is out.
  struct script {
    std::vector<uint32_t> reply;
    uint32_t base = 0;
  };
  std::unordered_map<uint64_t, script> scripts_;
};

/// An engine_core over a mock_executor configured by `cfg`. `base` supplies what
/// mocker_config does not (hold_ttl, clock, ...); its scheduler limits
/// (max_num_seqs, max_num_batched_tokens, max_num_partial_prefills, prefix
/// caching) are replaced by cfg's. Without base.grammars, guided requests use
/// mocker_grammars().
[[nodiscard]] expected<std::unique_ptr<engine::engine_core>> make_engine(const mocker_config& cfg,
                                                                       engine::engine_config base = {});
/// The same over `exec`: a mock_executor of `cfg` or a wrapper around one (a
/// benchmark's probe). REQUIRES: exec != nullptr.
[[nodiscard]] expected<std::unique_ptr<engine::engine_core>> make_engine(std::unique_ptr<engine::executor> exec,
                                                                       const mocker_config& cfg,
                                                                       engine::engine_config base = {});

/// The process's grammar cache over tok::byte_tokenizer's vocabulary (what a
/// frontend serving the mocker detokenizes with), so the mocker honours guided
/// decoding: it emits its usual token when the grammar allows it, else the
/// next allowed id above it (wrapping around).
[[nodiscard]] std::shared_ptr<gram::grammar_cache> mocker_grammars();

} // namespace dynamo::mocker
