// Internal to runtime/model/cuda: the device resources of one cuda_executor
// (allocations, stream, cuBLAS handle, captured graphs) and the forward-pass
// encoder shared by eager steps and graph capture. Owned by the executor;
// used from its step thread only.
#pragma once

#include "runtime/model/cuda/cuda_executor.hpp"
#include "runtime/model/cuda/cuda_plan.hpp"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::model {

/// A device allocation freed on destruction.
class device_memory {
public:
  device_memory() = default;
  ~device_memory() { reset(); }
  device_memory(device_memory&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  device_memory& operator=(device_memory&& o) noexcept;
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;

  [[nodiscard]] cudaError_t allocate(size_t bytes);
  void reset() noexcept;
  [[nodiscard]] std::byte* get() const noexcept { return static_cast<std::byte*>(p_); }
  [[nodiscard]] size_t bytes() const noexcept { return bytes_; }
  template <class T>
  [[nodiscard]] T* at(size_t offset) const noexcept { return reinterpret_cast<T*>(get() + offset); }

private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Pinned (page-locked) host memory freed on destruction.
class pinned_memory {
public:
  pinned_memory() = default;
  ~pinned_memory();
  pinned_memory(const pinned_memory&) = delete;
  pinned_memory& operator=(const pinned_memory&) = delete;

  [[nodiscard]] cudaError_t allocate(size_t bytes);
  [[nodiscard]] std::byte* get() const noexcept { return static_cast<std::byte*>(p_); }
  [[nodiscard]] size_t bytes() const noexcept { return bytes_; }

private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

/// Device pointers of one step's metadata (inside cuda_state::metadata).
struct cuda_step_pointers {
  const uint32_t* ids = nullptr;
  const uint32_t* positions = nullptr;
  const uint32_t* slots = nullptr;
  const uint32_t* token_seq = nullptr;
  const uint32_t* lm_rows = nullptr;
  const uint32_t* tables = nullptr;
  const void* params = nullptr;
};

struct cuda_state {
  std::shared_ptr<const decoder_model> model;
  decoder_config cfg;
  cuda_executor_config config;
  uint32_t max_model_len = 0;
  uint32_t table_stride = 0; ///< block-table row length: ceil(max_model_len / block_size)
  uint64_t process_seed = 0;

  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;

  cuda_weight_layout weights_layout;
  cuda_activation_layout act_layout;
  cuda_attention_split split;
  device_memory weights;
  device_memory activations;
  device_memory metadata;     ///< per-step metadata image (largest layout)
  device_memory cublas_workspace;
  device_memory rope_cos, rope_sin;
  device_memory kv;           ///< [num_blocks][n_layer][2][n_kv_head][block_size][head_dim] bf16 (the CPU cache's layout)
  pinned_memory staging;      ///< host image of `metadata`
  pinned_memory sampled_host; ///< u32 [max_num_seqs]
  device_memory logprobs_dev; ///< kernels::gpu::sample_logprobs [max_num_seqs]
  pinned_memory logprobs_host;
  device_memory edits_dev;    ///< cuda_edit_item [capacity], grown on demand
  pinned_memory edits_host;
  device_memory masks_dev;    ///< grammar masks: u32 rows [n], padded to 8 bytes, then u64 [n][words]; grown on demand
  pinned_memory masks_host;
  uint32_t num_blocks = 0;
  size_t kv_block_bytes = 0;

  std::vector<uint32_t> buckets;
  std::map<uint32_t, cudaGraphExec_t> graphs;
  uint64_t graph_replays = 0;

  std::vector<int32_t> last_row_entry; ///< logits row -> batch entry of the last step (-1: none)
  size_t last_entries = 0;             ///< entries of the last step

  bool failed = false;        ///< a device error happened: every later step fails
  /// DYNAMO_CUDA_CHECK_FINITE=1: eager steps count non-finite outputs after each
  /// op and log the first op that made one (a debugging aid: it synchronizes).
  bool check_finite = false;
  bool capturing = false;     ///< inside graph capture (no checks, no syncs)
  device_memory finite_count; ///< one uint32 for the check
  std::string failure;

  ~cuda_state();
};

/// Records one forward pass on s.stream (embedding, all layers, final norm on
/// the LM-head rows, LM head into the logits buffer). Kernel arguments depend
/// only on the shape and the pointers, so the same call is captured into a
/// graph for a bucket. `split` is the split-K geometry (decode-only steps;
/// partition_size 0: one pass).
[[nodiscard]] cudaError_t encode_forward(cuda_state& s, const cuda_step_pointers& m, uint32_t n_tokens,
                                         uint32_t n_lm_rows, const cuda_attention_split& split);

} // namespace dynamo::model
