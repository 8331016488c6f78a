// The CUDA engine::executor: a Llama-family GGUF model on one GPU. Weights are
// dequantized to bf16 on the device at load (Q|K|V and gate|up fused into one
// matrix each), the paged KV cache (bf16, same block layout as the CPU cache)
// is sized from free device memory, decode-only steps replay CUDA graphs
// captured at padded batch sizes, and sampling runs on the GPU with the CPU
// sampler's semantics. A device error fails execute() with errc::device_error
// (and every later call); it never aborts. Created once per worker; execute()
// is called by the worker's step thread only (not thread-safe). Built only
// with DYNAMO_HAVE_CUDA; this header itself needs no CUDA headers.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/model/decoder_model.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::model {

struct cuda_executor_config {
  // Device and memory.
  int device = 0;                     ///< CUDA device ordinal
  double gpu_memory_fraction = 0.9;   ///< of total device memory for this executor's weights + activations + KV
                                      ///< (vLLM v1's per-instance gpu_memory_utilization: several fit one GPU)
  size_t reserve_bytes = size_t(512) << 20; ///< kept free for CUDA graphs, cuBLAS and the runtime
  // KV cache.
  uint32_t block_size = 16;           ///< tokens per KV block
  uint32_t num_blocks = 0;            ///< > 0: exactly this many blocks instead of sizing from memory
  // Step limits: activation buffers are sized for them; larger batches are rejected (invalid_argument).
  uint32_t max_num_tokens = 8192;     ///< tokens per step (the scheduler's token budget must not exceed it)
  uint32_t max_num_seqs = 256;        ///< entries per step (the scheduler's sequence cap must not exceed it)
  uint32_t max_model_len = 0;         ///< 0: the model's context_length; else the smaller of the two
  // Execution.
  bool cuda_graphs = true;            ///< replay captured graphs for decode-only steps
  uint32_t max_graph_batch = 256;     ///< largest captured batch; buckets 1, 2, 4, ... (clamped to max_num_seqs)
  uint32_t attention_partition = 256; ///< split-K keys per partition for decode-only steps; 0 never splits
  std::optional<uint64_t> process_seed; ///< seed for unseeded requests; random when empty
};

/// True when a CUDA device can be used (any runtime error counts as none).
[[nodiscard]] bool cuda_available() noexcept;

struct cuda_state; // device resources; defined in cuda_state.hpp

class cuda_executor final : public engine::executor {
public:
  /// Selects the device, uploads and dequantizes the weights, allocates the
  /// activations and the KV cache. Errors: config_error for bad limits or no
  /// memory left for a single KV block, unsupported for shapes the kernels
  /// lack (head_dim > 256, more than 8 query heads per KV head), device_error
  /// for any CUDA failure (including "no device").
  [[nodiscard]] static expected<std::unique_ptr<cuda_executor>> create(std::shared_ptr<const decoder_model> model,
                                                                       const cuda_executor_config& config);
  ~cuda_executor() override;
  cuda_executor(const cuda_executor&) = delete;
  cuda_executor& operator=(const cuda_executor&) = delete;

  [[nodiscard]] expected<engine::batch_result> execute(const engine::batch& b) override;
  [[nodiscard]] engine::kv_geometry geometry() const noexcept override;
  [[nodiscard]] uint32_t context_length() const noexcept override;
  [[nodiscard]] std::string name() const override { return "cuda"; }

  [[nodiscard]] uint32_t max_num_tokens() const noexcept;
  [[nodiscard]] uint32_t max_num_seqs() const noexcept;
  /// Device bytes of the weight arena, the activations and the KV cache.
  [[nodiscard]] size_t weight_bytes() const noexcept;
  [[nodiscard]] size_t activation_bytes() const noexcept;
  [[nodiscard]] size_t kv_cache_bytes() const noexcept;
  /// The KV cache as device memory ([block][layer][K, V][Hkv][block_size][D] bf16,
  /// head-major): what cuda-ipc and inproc KV transfers move.
  [[nodiscard]] std::optional<engine::kv_memory_view> kv_memory() override;
  /// Logits of the last step, per batch entry (empty for entries not
  /// sampled); copied from the device. For tests and diagnostics.
  [[nodiscard]] expected<std::vector<std::vector<float>>> last_logits() const;
  /// Steps that replayed a captured graph, and graphs captured so far.
  [[nodiscard]] uint64_t graph_replays() const noexcept;
  [[nodiscard]] size_t graphs_captured() const noexcept;

private:
  explicit cuda_executor(std::unique_ptr<cuda_state> state);
  std::unique_ptr<cuda_state> s_;
};

/// The factory the worker's engine factory calls for `out=cuda`.
[[nodiscard]] expected<std::unique_ptr<engine::executor>> make_cuda_executor(std::shared_ptr<const decoder_model> model,
                                                                             const cuda_executor_config& config);

} // namespace dynamo::model
