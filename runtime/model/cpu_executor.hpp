// The CPU engine::executor: a Llama-family GGUF model, a paged KV cache in
// host memory sized from a byte budget, the forward pass on a persistent
// thread pool, and the sampler. Created once per worker; execute() is called
// by the worker's step thread only (not thread-safe).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/model/kv_cache.hpp"
#include "runtime/model/decoder_forward.hpp"
#include "runtime/model/decoder_model.hpp"
#include "runtime/model/sampler.hpp"

#include "kernels/reference/thread_pool.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace dynamo::model {

struct cpu_executor_config {
  std::string model_path;               ///< GGUF file (create(config) only)
  uint32_t block_size = 16;             ///< tokens per KV block
  size_t kv_cache_bytes = size_t(256) << 20; ///< KV budget: num_blocks = budget / block bytes
  uint32_t num_blocks = 0;              ///< when > 0, overrides the budget
  kv_dtype kv_type = kv_dtype::f16;     ///< KV storage precision
  unsigned threads = 0;                 ///< compute threads incl. the caller; 0 = hardware threads
  std::optional<uint64_t> process_seed; ///< seed for unseeded requests; random when empty
  bool fp32_activations = false;        ///< reference mode (see forward_options); slower
  bool cpu_repack = true;               ///< load_options::cpu_repack (create(config) only)
};

class cpu_executor final : public engine::executor {
public:
  /// Loads config.model_path. Errors: the model loader's, or config_error
  /// for a zero block size / a budget smaller than one block.
  [[nodiscard]] static expected<std::unique_ptr<cpu_executor>> create(const cpu_executor_config& config);

  /// Uses an already loaded model (shared between executors or built in tests).
  [[nodiscard]] static expected<std::unique_ptr<cpu_executor>> create(std::shared_ptr<const decoder_model> model,
                                                                      const cpu_executor_config& config);

  [[nodiscard]] expected<engine::batch_result> execute(const engine::batch& b) override;
  [[nodiscard]] engine::kv_geometry geometry() const noexcept override;
  [[nodiscard]] uint32_t context_length() const noexcept override;
  [[nodiscard]] std::string name() const override { return "cpu"; }
  /// Embed entries get the final-norm hidden state of their last token.
  [[nodiscard]] bool computes_embeddings() const noexcept override { return true; }
  /// Prompt targets get the log-softmax of the raw logits at their token.
  [[nodiscard]] bool computes_prompt_logprobs() const noexcept override { return true; }
  /// The host KV cache: blocks at block_bytes() stride, layout "head-major"
  /// ([layer][K,V][kv head][token][head_dim], kv_cache.hpp's real order).
  [[nodiscard]] std::optional<engine::kv_memory_view> kv_memory() override;

  [[nodiscard]] const decoder_model& model() const noexcept { return forward_.model(); }
  [[nodiscard]] unsigned threads() const noexcept { return pool_->size(); }
  [[nodiscard]] kv_cache& cache() noexcept { return *cache_; }

private:
  cpu_executor(std::shared_ptr<const decoder_model> model, std::unique_ptr<kernels::ref::thread_pool> pool,
               std::unique_ptr<kv_cache> cache, uint64_t process_seed, forward_options options);

  /// The logprobs of every prompt row (forward_logits::prompt_entry) into r.prompt_logprobs.
  void prompt_logprobs(const engine::batch& b, std::span<const uint32_t> row_entry, engine::batch_result& r);

  std::unique_ptr<kernels::ref::thread_pool> pool_;
  std::unique_ptr<kv_cache> cache_;
  decoder_forward forward_;
  sampler sampler_;
};

} // namespace dynamo::model
