#include "runtime/model/cuda/cuda_executor.hpp"

#include "runtime/kv/block_count.hpp"
#include "runtime/model/cuda/cuda_state.hpp"

#include "kernels/cuda_check.cuh"
#include "kernels/dequantize.cuh"
#include "kernels/gemm.cuh"
#include "kernels/logits_process.cuh"
#include "kernels/moe.cuh"
#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/rope.hpp"
#include "kernels/sampling.cuh"
#include "kernels/token_bitmask.cuh"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string_view>

namespace dynamo::model {

namespace gpu = kernels::gpu;

// The host packs sampling rows that the kernel reads as sample_params.
static_assert(sizeof(cuda_sample_row) == sizeof(gpu::sample_params));
static_assert(offsetof(cuda_sample_row, seed) == offsetof(gpu::sample_params, seed));
static_assert(offsetof(cuda_sample_row, position) == offsetof(gpu::sample_params, position));
static_assert(offsetof(cuda_sample_row, temperature) == offsetof(gpu::sample_params, temperature));
static_assert(offsetof(cuda_sample_row, top_p) == offsetof(gpu::sample_params, top_p));
static_assert(offsetof(cuda_sample_row, top_k) == offsetof(gpu::sample_params, top_k));
static_assert(offsetof(cuda_sample_row, row) == offsetof(gpu::sample_params, row));
static_assert(offsetof(cuda_sample_row, min_p) == offsetof(gpu::sample_params, min_p));
static_assert(offsetof(cuda_sample_row, num_logprobs) == offsetof(gpu::sample_params, num_logprobs));
static_assert(sizeof(cuda_edit_item) == sizeof(gpu::logit_edit_item));
static_assert(offsetof(cuda_edit_item, row) == offsetof(gpu::logit_edit_item, row));
static_assert(offsetof(cuda_edit_item, edit) == offsetof(gpu::logit_edit_item, edit));
static_assert(offsetof(cuda_edit_item, penalties) == offsetof(gpu::logit_edit_item, penalties));

namespace {

constexpr size_t cublas_workspace_bytes = size_t(32) << 20; // NVIDIA's recommendation for Hopper

caf::error device_error(const std::string& what, cudaError_t e) {
  return make_error(errc::device_error, "cuda_executor: " + what + ": " + cudaGetErrorName(e) + " (" +
                                            cudaGetErrorString(e) + ")");
}

#define CUDA_OR_RETURN(what, expr)                                                                                \
  do {                                                                                                            \
    const cudaError_t cuda_or_return_err_ = (expr);                                                               \
    if (cuda_or_return_err_ != cudaSuccess) return device_error(what, cuda_or_return_err_);                       \
  } while (0)

expected<void> check_config(const decoder_config& c, const cuda_executor_config& x) {
  if (x.block_size == 0) return make_error(errc::config_error, "cuda_executor: block_size must be positive");
  if (x.max_num_tokens == 0 || x.max_num_seqs == 0) {
    return make_error(errc::config_error, "cuda_executor: max_num_tokens and max_num_seqs must be positive");
  }
  if (!(x.gpu_memory_fraction > 0.0 && x.gpu_memory_fraction <= 1.0)) {
    return make_error(errc::config_error, "cuda_executor: gpu_memory_fraction must be in (0, 1]");
  }
  if (c.head_dim > 256 || c.group() > 8) {
    return make_error(errc::unsupported, "cuda_executor: attention kernels need head_dim <= 256 and at most 8 "
                                         "query heads per KV head (model has " +
                                             std::to_string(c.head_dim) + " and " + std::to_string(c.group()) + ")");
  }
  const uint32_t ffn = c.is_moe() ? c.moe.n_ff_expert : c.n_ff;
  if (c.n_embd % 32 != 0 || ffn % 32 != 0 || c.moe.n_ff_shared % 32 != 0 || (c.n_head * c.head_dim) % 32 != 0) {
    return make_error(errc::unsupported, "cuda_executor: weight rows must be multiples of 32 elements");
  }
  if (c.moe.n_expert > gpu::moe_max_experts) {
    return make_error(errc::unsupported, "cuda_executor: " + std::to_string(c.moe.n_expert) +
                                             " experts; the routing kernel takes at most " +
                                             std::to_string(gpu::moe_max_experts));
  }
  return {};
}

/// Copies every weight to the device: GGUF blocks go raw to a staging buffer
/// and are dequantized to bf16 there; fp32 slots (routers) are dequantized on
/// the host; vectors (norms, biases) are copied as they are.
expected<void> upload_weights(cuda_state& s) {
  const auto uploads = plan_uploads(s.model->weights(), s.weights_layout);
  size_t staging_bytes = 0;
  for (const auto& u : uploads) {
    const bool fits = u.vector.empty()
                          ? u.matrix.data != nullptr && u.matrix.k == u.dst.cols && u.row0 + u.matrix.n <= u.dst.rows
                          : u.dst.f32 && u.dst.rows == 1 && u.col0 + u.vector.size() <= u.dst.cols;
    if (!fits) {
      return make_error(errc::internal, "cuda_executor: a weight of " + std::to_string(u.matrix.n) + " x " +
                                            std::to_string(u.matrix.k) + " (or a vector of " +
                                            std::to_string(u.vector.size()) + ") does not fit its device slot");
    }
    if (u.vector.empty() && !u.dst.f32) {
      staging_bytes = std::max(staging_bytes, size_t(u.matrix.n) * u.matrix.stride());
    }
  }
  device_memory staging;
  CUDA_OR_RETURN("weight staging buffer", staging.allocate(staging_bytes));
  std::vector<float> host_f32;
  for (const auto& u : uploads) {
    if (!u.vector.empty()) {
      std::byte* dst = s.weights.get() + u.dst.offset + size_t(u.col0) * 4;
      CUDA_OR_RETURN("vector upload", cudaMemcpyAsync(dst, u.vector.data(), u.vector.size() * 4,
                                                      cudaMemcpyHostToDevice, s.stream));
      continue;
    }
    const weight_matrix& m = u.matrix;
    if (u.dst.f32) {
      host_f32.resize(size_t(m.n) * m.k);
      for (uint32_t r = 0; r < m.n; ++r) {
        kernels::ref::dequantize_row(m.type, m.row(r), host_f32.data() + size_t(r) * m.k, m.k);
      }
      std::byte* dst = s.weights.get() + u.dst.offset + size_t(u.row0) * u.dst.cols * 4;
      CUDA_OR_RETURN("fp32 weight upload", cudaMemcpyAsync(dst, host_f32.data(), host_f32.size() * 4,
                                                           cudaMemcpyHostToDevice, s.stream));
      CUDA_OR_RETURN("fp32 weight upload", cudaStreamSynchronize(s.stream)); // host_f32 is reused
      continue;
    }
    const size_t bytes = size_t(m.n) * m.stride();
    // On the executor's stream: it does not wait for the legacy default stream
    // (cudaStreamNonBlocking), and a pageable cudaMemcpy may return before its
    // DMA lands, so a plain cudaMemcpy let the dequantize read stale staging.
    CUDA_OR_RETURN("weight upload", cudaMemcpyAsync(staging.get(), m.data, bytes, cudaMemcpyHostToDevice, s.stream));
    gpu::dequantize_args d;
    d.type = m.type;
    d.src = staging.get();
    d.n_rows = m.n;
    d.k = m.k;
    d.dst = s.weights.get() + u.dst.offset + size_t(u.row0) * u.dst.cols * 2;
    d.dst_stride = u.dst.cols;
    d.dst_type = gpu::half_type::bf16;
    CUDA_OR_RETURN("dequantize " + kernels::ref::type_name(m.type), gpu::launch_dequantize(d, s.stream));
    CUDA_OR_RETURN("dequantize", cudaStreamSynchronize(s.stream)); // staging is reused by the next upload
  }
  return {};
}

/// Allocates the KV cache: config.num_blocks, or what the memory fraction leaves.
expected<void> allocate_kv(cuda_state& s) {
  const decoder_config& c = s.cfg;
  s.kv_block_bytes = size_t(c.n_layer) * 2 * s.config.block_size * c.n_kv_head * c.head_dim * 2;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_OR_RETURN("cudaMemGetInfo", cudaMemGetInfo(&free_bytes, &total_bytes));
  uint32_t blocks = s.config.num_blocks;
  if (blocks == 0) {
    const size_t own = s.weights.bytes() + s.activations.bytes() + s.metadata.bytes() + s.rope_cos.bytes() +
                       s.rope_sin.bytes() + s.cublas_workspace.bytes();
    blocks = kv_blocks_for_memory(
        {total_bytes, free_bytes, s.config.gpu_memory_fraction, s.config.reserve_bytes, s.kv_block_bytes, own});
  }
  if (blocks == 0) {
    return make_error(errc::config_error,
                      "cuda_executor: no device memory left for a KV block of " + std::to_string(s.kv_block_bytes) +
                          " bytes (free " + std::to_string(free_bytes >> 20) + " MiB of " +
                          std::to_string(total_bytes >> 20) + " MiB, fraction " +
                          std::to_string(s.config.gpu_memory_fraction) + ")");
  }
  if (size_t(blocks) * s.kv_block_bytes > free_bytes) {
    return make_error(errc::config_error, "cuda_executor: " + std::to_string(blocks) + " KV blocks need " +
                                              std::to_string((size_t(blocks) * s.kv_block_bytes) >> 20) +
                                              " MiB, only " + std::to_string(free_bytes >> 20) + " MiB free");
  }
  CUDA_OR_RETURN("KV cache allocation", s.kv.allocate(size_t(blocks) * s.kv_block_bytes));
  CUDA_OR_RETURN("KV cache clear", cudaMemsetAsync(s.kv.get(), 0, s.kv.bytes(), s.stream)); // padding rows read zeros
  s.num_blocks = blocks;
  return {};
}

expected<void> setup(cuda_state& s) {
  const decoder_config& c = s.cfg;
  CUDA_OR_RETURN("cudaSetDevice", cudaSetDevice(s.config.device));
  // Launch checks read cudaGetLastError: drop an error left on this thread by an
  // earlier failed call (another executor's missing device, say) so it is not ours.
  (void)cudaGetLastError();
  CUDA_OR_RETURN("stream", cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  if (auto st = cublasCreate(&s.cublas); st != CUBLAS_STATUS_SUCCESS) {
    s.cublas = nullptr;
    return device_error("cublasCreate", gpu::to_cuda_error(st));
  }
  // A fixed workspace lets cuBLAS run inside graph capture without allocating.
  CUDA_OR_RETURN("cuBLAS workspace", s.cublas_workspace.allocate(cublas_workspace_bytes));
  if (auto st = cublasSetWorkspace(s.cublas, s.cublas_workspace.get(), cublas_workspace_bytes);
      st != CUBLAS_STATUS_SUCCESS) {
    return device_error("cublasSetWorkspace", gpu::to_cuda_error(st));
  }
  if (auto st = cublasSetStream(s.cublas, s.stream); st != CUBLAS_STATUS_SUCCESS) {
    return device_error("cublasSetStream", gpu::to_cuda_error(st));
  }

  s.weights_layout = plan_weights(c, s.model->weights());
  CUDA_OR_RETURN("weight arena (" + std::to_string(s.weights_layout.total_bytes >> 20) + " MiB)",
                 s.weights.allocate(s.weights_layout.total_bytes));
  if (auto ok = upload_weights(s); !ok) return ok.error();

  const auto rope = kernels::ref::make_rope_table(c.rot_dim, s.max_model_len, c.rope_base, c.rope_freq_scale,
                                                  s.model->weights().rope_freqs);
  CUDA_OR_RETURN("RoPE tables", s.rope_cos.allocate(rope.cos.size() * 4));
  CUDA_OR_RETURN("RoPE tables", s.rope_sin.allocate(rope.sin.size() * 4));
  CUDA_OR_RETURN("RoPE upload", cudaMemcpyAsync(s.rope_cos.get(), rope.cos.data(), rope.cos.size() * 4,
                                                 cudaMemcpyHostToDevice, s.stream));
  CUDA_OR_RETURN("RoPE upload", cudaMemcpyAsync(s.rope_sin.get(), rope.sin.data(), rope.sin.size() * 4,
                                                 cudaMemcpyHostToDevice, s.stream));
  CUDA_OR_RETURN("RoPE upload", cudaStreamSynchronize(s.stream)); // `rope` is freed when setup returns

  s.split = plan_attention_split(s.max_model_len, s.config.block_size, s.config.attention_partition);
  s.act_layout = plan_activations(c, s.config.max_num_tokens, s.config.max_num_seqs, s.split);
  CUDA_OR_RETURN("activations (" + std::to_string(s.act_layout.total_bytes >> 20) + " MiB)",
                 s.activations.allocate(s.act_layout.total_bytes));
  // The largest metadata image: an eager step at the limits (graph layouts are smaller).
  const cuda_step_layout biggest =
      make_step_layout(s.config.max_num_tokens, s.config.max_num_seqs, s.config.max_num_seqs, s.table_stride);
  CUDA_OR_RETURN("metadata buffer", s.metadata.allocate(biggest.total_bytes));
  CUDA_OR_RETURN("pinned staging", s.staging.allocate(biggest.total_bytes));
  CUDA_OR_RETURN("pinned results", s.sampled_host.allocate(size_t(s.config.max_num_seqs) * 4));
  const size_t logprob_bytes = size_t(s.config.max_num_seqs) * sizeof(gpu::sample_logprobs);
  CUDA_OR_RETURN("logprobs buffer", s.logprobs_dev.allocate(logprob_bytes));
  CUDA_OR_RETURN("pinned logprobs", s.logprobs_host.allocate(logprob_bytes));

  if (auto ok = allocate_kv(s); !ok) return ok.error();
  if (const char* v = std::getenv("DYNAMO_CUDA_CHECK_FINITE"); v != nullptr && std::string_view(v) == "1") {
    CUDA_OR_RETURN("finite check counter", s.finite_count.allocate(4));
    s.check_finite = true;
    spdlog::warn("cuda_executor: DYNAMO_CUDA_CHECK_FINITE=1: eager steps are checked op by op (slow)");
  }
  CUDA_OR_RETURN("setup", cudaStreamSynchronize(s.stream));
  return {};
}

cuda_step_pointers pointers_of(const cuda_state& s, const cuda_step_layout& l) {
  auto p = [&](size_t off) { return s.metadata.at<const uint32_t>(off); };
  return {p(l.ids), p(l.positions), p(l.slots), p(l.token_seq), p(l.lm_rows), p(l.tables), s.metadata.get() + l.params};
}

/// Runs a decode step of `bucket` tokens: replays the bucket's graph, or on
/// first use runs the step eagerly (which also loads every kernel and lets
/// cuBLAS pick its algorithms) and then captures the graph for later steps.
cudaError_t run_graph(cuda_state& s, uint32_t bucket, const cuda_step_pointers& m) {
  if (auto it = s.graphs.find(bucket); it != s.graphs.end()) {
    ++s.graph_replays;
    return cudaGraphLaunch(it->second, s.stream);
  }
  const cuda_attention_split split =
      step_attention_split(s.split, s.config.max_num_seqs, bucket, s.config.block_size);
  DYNAMO_CUDA_TRY(encode_forward(s, m, bucket, bucket, split));
  DYNAMO_CUDA_TRY(cudaStreamSynchronize(s.stream));
  DYNAMO_CUDA_TRY(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal));
  s.capturing = true;
  const cudaError_t encoded = encode_forward(s, m, bucket, bucket, split);
  s.capturing = false;
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s.stream, &graph); // always end the capture
  DYNAMO_CUDA_TRY(encoded);
  DYNAMO_CUDA_TRY(ended);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  DYNAMO_CUDA_TRY(inst);
  s.graphs.emplace(bucket, exec);
  spdlog::debug("cuda_executor: captured the decode graph for batch {}", bucket);
  return cudaSuccess;
}

/// Runs the batch's block copies (copy-on-write of forked prompts' last blocks).
cudaError_t copy_blocks(cuda_state& s, const std::vector<engine::block_copy>& copies) {
  for (const engine::block_copy& c : copies) {
    DYNAMO_CUDA_TRY(cudaMemcpyAsync(s.kv.get() + c.dst * s.kv_block_bytes, s.kv.get() + c.src * s.kv_block_bytes,
                                    s.kv_block_bytes, cudaMemcpyDeviceToDevice, s.stream));
  }
  return cudaSuccess;
}

/// Applies the step's logit edits to the logits rows (grows the edit buffers on demand).
cudaError_t process_logits(cuda_state& s, const std::vector<cuda_edit_item>& edits) {
  if (edits.empty()) return cudaSuccess;
  const size_t bytes = edits.size() * sizeof(cuda_edit_item);
  if (s.edits_dev.bytes() < bytes) {
    DYNAMO_CUDA_TRY(cudaStreamSynchronize(s.stream)); // the old buffers may still be in use
    const size_t cap = std::max(bytes, 2 * s.edits_dev.bytes());
    DYNAMO_CUDA_TRY(s.edits_dev.allocate(cap)); // allocate() frees the old buffer
    DYNAMO_CUDA_TRY(s.edits_host.allocate(cap));
  }
  std::memcpy(s.edits_host.get(), edits.data(), bytes);
  DYNAMO_CUDA_TRY(cudaMemcpyAsync(s.edits_dev.get(), s.edits_host.get(), bytes, cudaMemcpyHostToDevice, s.stream));
  gpu::logits_process_args a;
  a.logits = s.activations.at<float>(s.act_layout.logits.offset);
  a.logits_stride = s.cfg.n_vocab;
  a.n_vocab = s.cfg.n_vocab;
  a.items = reinterpret_cast<const gpu::logit_edit_item*>(s.edits_dev.get());
  a.n_items = static_cast<uint32_t>(edits.size());
  return gpu::launch_logits_process(a, s.stream);
}

/// Masks the logits rows of guided requests by their grammar bitmasks (grows
/// the mask buffers on demand). Runs before the logit edits.
cudaError_t apply_masks(cuda_state& s, const cuda_packed_step& p) {
  if (p.mask_rows.empty()) return cudaSuccess;
  const size_t n = p.mask_rows.size();
  const size_t rows_bytes = (n * 4 + 7) / 8 * 8;
  const size_t bytes = rows_bytes + p.masks.size() * 8;
  if (s.masks_dev.bytes() < bytes) {
    DYNAMO_CUDA_TRY(cudaStreamSynchronize(s.stream)); // the old buffers may still be in use
    const size_t cap = std::max(bytes, 2 * s.masks_dev.bytes());
    DYNAMO_CUDA_TRY(s.masks_dev.allocate(cap));
    DYNAMO_CUDA_TRY(s.masks_host.allocate(cap));
  }
  std::byte* host = s.masks_host.get();
  std::memcpy(host, p.mask_rows.data(), n * 4);
  std::memcpy(host + rows_bytes, p.masks.data(), p.masks.size() * 8);
  DYNAMO_CUDA_TRY(cudaMemcpyAsync(s.masks_dev.get(), host, bytes, cudaMemcpyHostToDevice, s.stream));
  std::byte* dev = s.masks_dev.get();
  gpu::token_bitmask_args a;
  a.logits = s.activations.at<float>(s.act_layout.logits.offset);
  a.logits_stride = s.cfg.n_vocab;
  a.n_vocab = s.cfg.n_vocab;
  a.rows = reinterpret_cast<const uint32_t*>(dev);
  a.mask = reinterpret_cast<const uint64_t*>(dev + rows_bytes);
  a.mask_words = p.mask_words;
  a.n_rows = static_cast<uint32_t>(n);
  return gpu::launch_token_bitmask(a, s.stream);
}

/// The logprobs of draw `r` (downloaded into logprobs_host).
protocol::token_logprob logprobs_of(const cuda_state& s, uint32_t r) {
  const auto& lp = reinterpret_cast<const gpu::sample_logprobs*>(s.logprobs_host.get())[r];
  protocol::token_logprob out;
  out.logprob = lp.logprob;
  for (uint32_t i = 0; i < std::min(lp.n_top, gpu::max_logprobs); ++i) out.top.push_back({lp.top_ids[i], lp.top_logprobs[i]});
  return out;
}

} // namespace

bool cuda_available() noexcept { return gpu::cuda_available(); }

cuda_executor::cuda_executor(std::unique_ptr<cuda_state> state) : s_(std::move(state)) {}
cuda_executor::~cuda_executor() = default;

expected<std::unique_ptr<cuda_executor>> cuda_executor::create(std::shared_ptr<const decoder_model> model,
                                                               const cuda_executor_config& config) {
  if (model == nullptr) return make_error(errc::invalid_argument, "cuda_executor: null model");
  if (auto ok = check_config(model->config(), config); !ok) return ok.error();
  if (!cuda_available()) return make_error(errc::device_error, "cuda_executor: no usable CUDA device");
  auto s = std::make_unique<cuda_state>();
  s->model = model;
  s->cfg = model->config();
  s->config = config;
  s->config.max_graph_batch = std::min({config.max_graph_batch, config.max_num_seqs, config.max_num_tokens});
  s->max_model_len = config.max_model_len == 0 ? s->cfg.context_length
                                               : std::min(config.max_model_len, s->cfg.context_length);
  s->table_stride = static_cast<uint32_t>(kv::blocks_for_tokens(s->max_model_len, config.block_size));
  s->process_seed = config.process_seed ? *config.process_seed
                                        : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  if (config.cuda_graphs) s->buckets = graph_buckets(s->config.max_graph_batch);
  if (auto ok = setup(*s); !ok) return ok.error();
  spdlog::info("cuda_executor: device {}: weights {} MiB (bf16), activations {} MiB, KV cache {} blocks x {} tokens "
               "({} MiB), context {}, graphs {}",
               config.device, s->weights.bytes() >> 20, s->activations.bytes() >> 20, s->num_blocks,
               config.block_size, s->kv.bytes() >> 20, s->max_model_len,
               config.cuda_graphs ? "up to batch " + std::to_string(s->config.max_graph_batch) : std::string("off"));
  return std::unique_ptr<cuda_executor>(new cuda_executor(std::move(s)));
}

expected<engine::batch_result> cuda_executor::execute(const engine::batch& b) {
  cuda_state& s = *s_;
  if (s.failed) return make_error(errc::device_error, "cuda_executor: unusable after an earlier error: " + s.failure);
  const cuda_batch_limits limits{s.cfg.n_vocab, s.max_model_len, s.config.block_size,
                                 s.num_blocks,  s.config.max_num_tokens, s.config.max_num_seqs};
  if (auto ok = check_batch(b, limits); !ok) return ok.error();
  engine::batch_result result;
  result.sampled.resize(b.entries.size());
  result.logprobs.resize(b.entries.size());
  if (b.entries.empty() && b.block_copies.empty()) return result;

  auto fail = [&](const std::string& what, cudaError_t e) -> caf::error {
    auto err = device_error(what, e);
    s.failed = true;
    s.failure = message_of(err);
    spdlog::error("{}", s.failure);
    return err;
  };
  if (auto e = cudaSetDevice(s.config.device); e != cudaSuccess) return fail("cudaSetDevice", e);
  (void)cudaGetLastError(); // as in setup(): only this step's launch errors count
  if (auto e = copy_blocks(s, b.block_copies); e != cudaSuccess) return fail("block copies", e);
  if (b.entries.empty()) {
    if (auto e = cudaStreamSynchronize(s.stream); e != cudaSuccess) return fail("block copies", e);
    return result;
  }

  bool decode_only = true;
  for (const auto& e : b.entries) decode_only = decode_only && e.tokens.size() == 1;
  // A decode-only step that fits a bucket replays that bucket's graph (0: eager).
  uint32_t bucket = 0;
  if (decode_only && !s.buckets.empty()) {
    bucket = choose_graph_bucket(s.buckets, static_cast<uint32_t>(b.entries.size())).value_or(0);
  }
  const cuda_packed_step p = pack_step(b, s.config.block_size, s.table_stride, s.process_seed, bucket);
  const cuda_step_layout layout =
      bucket > 0 ? make_step_layout(bucket, bucket, bucket, s.table_stride)
                 : make_step_layout(p.n_tokens, p.n_seqs, std::max(p.n_lm_rows, p.n_sample_rows), s.table_stride);
  write_step(p, layout, {s.staging.get(), layout.total_bytes});
  if (auto e = cudaMemcpyAsync(s.metadata.get(), s.staging.get(), layout.total_bytes, cudaMemcpyHostToDevice, s.stream);
      e != cudaSuccess) {
    return fail("metadata upload", e);
  }
  const cuda_step_pointers m = pointers_of(s, layout);
  const cuda_attention_split split = p.decode_only ? step_attention_split(s.split, s.config.max_num_seqs, p.n_tokens,
                                                                         s.config.block_size)
                                                  : cuda_attention_split{};
  if (auto e = bucket > 0 ? run_graph(s, bucket, m) : encode_forward(s, m, p.n_tokens, p.n_lm_rows, split);
      e != cudaSuccess) {
    return fail(bucket > 0 ? "decode graph" : "forward pass", e);
  }
  uint32_t* sampled = s.activations.at<uint32_t>(s.act_layout.sampled.offset);
  const bool any_logprobs = std::any_of(p.params.begin(), p.params.end(),
                                        [](const cuda_sample_row& r) { return r.num_logprobs >= 0; });
  if (auto e = apply_masks(s, p); e != cudaSuccess) return fail("grammar masks", e);
  if (auto e = process_logits(s, p.edits); e != cudaSuccess) return fail("logits processing", e);
  if (p.n_sample_rows > 0) {
    gpu::sample_args a;
    a.logits = s.activations.at<float>(s.act_layout.logits.offset);
    a.logits_stride = s.cfg.n_vocab;
    a.n_rows = p.n_sample_rows;
    a.n_vocab = s.cfg.n_vocab;
    a.params = static_cast<const gpu::sample_params*>(m.params);
    a.out = sampled;
    a.logprobs = any_logprobs ? reinterpret_cast<gpu::sample_logprobs*>(s.logprobs_dev.get()) : nullptr;
    if (auto e = gpu::launch_sample(a, s.stream); e != cudaSuccess) return fail("sampling", e);
    if (any_logprobs) {
      if (auto e = cudaMemcpyAsync(s.logprobs_host.get(), s.logprobs_dev.get(),
                                   size_t(p.n_sample_rows) * sizeof(gpu::sample_logprobs), cudaMemcpyDeviceToHost,
                                   s.stream);
          e != cudaSuccess) {
        return fail("logprobs download", e);
      }
    }
    if (auto e = cudaMemcpyAsync(s.sampled_host.get(), sampled, size_t(p.n_sample_rows) * 4, cudaMemcpyDeviceToHost,
                                 s.stream);
        e != cudaSuccess) {
      return fail("sampled tokens download", e);
    }
  }
  if (auto e = cudaStreamSynchronize(s.stream); e != cudaSuccess) return fail("step", e);
  s.last_row_entry = p.row_entry;
  s.last_entries = b.entries.size();
  const auto* host = reinterpret_cast<const uint32_t*>(s.sampled_host.get());
  for (uint32_t r = 0; r < p.n_sample_rows; ++r) {
    if (p.row_entry[r] < 0) continue;
    const auto entry = static_cast<size_t>(p.row_entry[r]);
    result.sampled[entry] = host[r];
    if (p.params[r].num_logprobs >= 0) result.logprobs[entry] = logprobs_of(s, r);
  }
  return result;
}

engine::kv_geometry cuda_executor::geometry() const noexcept { return {s_->config.block_size, s_->num_blocks}; }
uint32_t cuda_executor::context_length() const noexcept { return s_->max_model_len; }
uint32_t cuda_executor::max_num_tokens() const noexcept { return s_->config.max_num_tokens; }
uint32_t cuda_executor::max_num_seqs() const noexcept { return s_->config.max_num_seqs; }
size_t cuda_executor::weight_bytes() const noexcept { return s_->weights.bytes(); }
size_t cuda_executor::activation_bytes() const noexcept { return s_->activations.bytes(); }
size_t cuda_executor::kv_cache_bytes() const noexcept { return s_->kv.bytes(); }
expected<std::vector<std::vector<float>>> cuda_executor::last_logits() const {
  const cuda_state& s = *s_;
  std::vector<std::vector<float>> out(s.last_entries);
  const uint32_t V = s.cfg.n_vocab;
  for (size_t r = 0; r < s.last_row_entry.size(); ++r) {
    if (s.last_row_entry[r] < 0) continue;
    auto& row = out[static_cast<size_t>(s.last_row_entry[r])];
    row.resize(V);
    const float* src = s.activations.at<float>(s.act_layout.logits.offset) + r * V;
    CUDA_OR_RETURN("logits download", cudaMemcpy(row.data(), src, size_t(V) * 4, cudaMemcpyDeviceToHost));
  }
  return out;
}

std::optional<engine::kv_memory_view> cuda_executor::kv_memory() {
  const cuda_state& s = *s_;
  engine::kv_memory_view v;
  v.base = s.kv.get(); // the cudaMalloc base, as cuda-ipc needs
  v.block_stride = s.kv_block_bytes;
  v.num_blocks = s.num_blocks;
  v.layout = protocol::make_head_major_layout(s.cfg.n_layer, s.config.block_size, s.cfg.n_kv_head, s.cfg.head_dim,
                                              protocol::kv_dtype::bf16);
  v.on_device = true;
  v.device = s.config.device;
  return v;
}

uint64_t cuda_executor::graph_replays() const noexcept { return s_->graph_replays; }
size_t cuda_executor::graphs_captured() const noexcept { return s_->graphs.size(); }

expected<std::unique_ptr<engine::executor>> make_cuda_executor(std::shared_ptr<const decoder_model> model,
                                                               const cuda_executor_config& config) {
  auto e = cuda_executor::create(std::move(model), config);
  if (!e) return e.error();
  return std::unique_ptr<engine::executor>(std::move(*e));
}

} // namespace dynamo::model
