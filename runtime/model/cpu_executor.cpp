#include "runtime/model/cpu_executor.hpp"

#include <cstddef>
#include <algorithm>
#include <cstring>
#include <random>

namespace dynamo::model {

cpu_executor::cpu_executor(std::shared_ptr<const decoder_model> model, std::unique_ptr<kernels::ref::thread_pool> pool,
                           std::unique_ptr<kv_cache> cache, uint64_t process_seed, forward_options options)
    : pool_(std::move(pool)), cache_(std::move(cache)), forward_(std::move(model), *pool_, options),
      sampler_(process_seed) {}

expected<std::unique_ptr<cpu_executor>> cpu_executor::create(const cpu_executor_config& config) {
  auto model = decoder_model::load(config.model_path, {.cpu_repack = config.cpu_repack, .threads = config.threads});
  if (!model) return model.error();
  return create(std::move(*model), config);
}

expected<std::unique_ptr<cpu_executor>> cpu_executor::create(std::shared_ptr<const decoder_model> model,
                                                             const cpu_executor_config& config) {
  if (model == nullptr) return make_error(errc::invalid_argument, "cpu_executor: null model");
  if (config.block_size == 0) return make_error(errc::config_error, "cpu_executor: block_size must be positive");
  kv_cache_shape shape = kv_shape_for_budget(model->config(), config.block_size, config.kv_type, config.kv_cache_bytes);
  if (config.num_blocks > 0) shape.num_blocks = config.num_blocks;
  if (shape.num_blocks == 0) {
    return make_error(errc::config_error, "cpu_executor: kv_cache_bytes " + std::to_string(config.kv_cache_bytes) +
                                              " holds no block of " + std::to_string(shape.block_bytes()) + " bytes");
  }
  auto cache = kv_cache::create(shape);
  if (!cache) return cache.error();
  const uint64_t seed = config.process_seed ? *config.process_seed : (uint64_t(std::random_device{}()) << 32) ^
                                                                          std::random_device{}();
  auto pool = std::make_unique<kernels::ref::thread_pool>(config.threads);
  return std::unique_ptr<cpu_executor>(new cpu_executor(std::move(model), std::move(pool), std::move(*cache), seed,
                                                          forward_options{config.fp32_activations}));
}

expected<engine::batch_result> cpu_executor::execute(const engine::batch& b) {
  const kv_cache_shape& shape = cache_->shape();
  for (const engine::block_copy& c : b.block_copies) {
    if (c.src >= shape.num_blocks || c.dst >= shape.num_blocks)
      return make_error(errc::invalid_argument, "cpu_executor: block copy " + std::to_string(c.src) + " -> " +
                                                    std::to_string(c.dst) + " outside the pool");
    auto* base = static_cast<std::byte*>(cache_->data());
    std::memcpy(base + c.dst * shape.block_bytes(), base + c.src * shape.block_bytes(), shape.block_bytes());
  }
  auto logits = forward_.run(b, *cache_);
  if (!logits) return logits.error();
  engine::batch_result r;
  r.sampled.resize(b.entries.size());
  r.logprobs.resize(b.entries.size());
  auto sample = [&](size_t entry, std::span<const float> row) {
    const engine::batch_entry& e = b.entries[entry];
    auto s = sampler_.sample(row, e.sampling, e.logit_edits, e.seq_id, e.sample_position, e.allowed_tokens);
    r.sampled[entry] = s.token;
    r.logprobs[entry] = std::move(s.logprobs);
  };
  for (size_t i = 0; i < logits->entry.size(); ++i) sample(logits->entry[i], logits->row(i));
  if (!logits->hidden_entry.empty()) r.embeddings.resize(b.entries.size());
  for (size_t i = 0; i < logits->hidden_entry.size(); ++i) {
    const auto row = logits->hidden_row(i);
    r.embeddings[logits->hidden_entry[i]].assign(row.begin(), row.end());
  }
  // Forks draw from their parent's row (the parent's edits are theirs too).
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const engine::batch_entry& e = b.entries[i];
    if (!e.fork_of) continue;
    size_t row = logits->entry.size();
    for (size_t j = 0; j < logits->entry.size(); ++j)
      if (b.entries[logits->entry[j]].seq_id == *e.fork_of) row = j;
    if (row == logits->entry.size())
      return make_error(errc::invalid_argument, "cpu_executor: fork of seq " + std::to_string(*e.fork_of) +
                                                    ", which has no logits in this batch");
    sample(i, logits->row(row));
  }
  prompt_logprobs(b, logits->prompt_entry, r);
  return r;
}

void cpu_executor::prompt_logprobs(const engine::batch& b, std::span<const uint32_t> row_entry,
                                   engine::batch_result& r) {
  if (row_entry.empty()) return;
  constexpr uint32_t slice = 32; // rows of logits held at once
  const uint32_t n_vocab = forward_.model().config().n_vocab;
  r.prompt_logprobs.resize(b.entries.size());
  for (size_t row0 = 0; row0 < row_entry.size(); row0 += slice) {
    const auto rows = static_cast<uint32_t>(std::min<size_t>(slice, row_entry.size() - row0));
    const std::span<const float> logits = forward_.prompt_head(row0, rows);
    for (uint32_t j = 0; j < rows; ++j) {
      const engine::batch_entry& e = b.entries[row_entry[row0 + j]];
      auto& out = r.prompt_logprobs[row_entry[row0 + j]];
      const uint32_t k = std::min(e.sampling.prompt_logprobs.value_or(0), protocol::max_top_logprobs);
      // The raw distribution: temperature 1, no edits (vLLM's prompt logprobs).
      out.push_back(sampler_.logprobs(logits.subspan(size_t(j) * n_vocab, n_vocab), 1.0f,
                                      e.prompt_targets[out.size()], k));
    }
  }
}

engine::kv_geometry cpu_executor::geometry() const noexcept {
  return {cache_->shape().block_size, cache_->shape().num_blocks};
}

std::optional<engine::kv_memory_view> cpu_executor::kv_memory() {
  const kv_cache_shape& s = cache_->shape();
  const auto dtype = s.dtype == kv_dtype::f32 ? protocol::kv_dtype::f32 : protocol::kv_dtype::f16;
  engine::kv_memory_view v;
  v.base = cache_->data();
  v.block_stride = s.block_bytes();
  v.num_blocks = s.num_blocks;
  v.layout = protocol::make_head_major_layout(s.n_layer, s.block_size, s.n_kv_head, s.head_dim, dtype);
  return v;
}

uint32_t cpu_executor::context_length() const noexcept { return forward_.model().config().context_length; }

} // namespace dynamo::model
