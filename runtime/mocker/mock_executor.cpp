#include "runtime/mocker/mock_executor.hpp"

#include "runtime/engine/batch_check.hpp"
#include "runtime/mocker/token_stream.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cmath>

namespace dynamo::mocker {

namespace {

/// `token` when `mask` allows it, else the next allowed id above it, wrapping
/// around (the grammar always allows some token; `token` if none).
uint32_t allowed_from(uint32_t token, std::span<const uint64_t> mask) {
  const size_t n = mask.size() * 64;
  for (size_t k = 0; k < n; ++k) {
    const size_t id = (token + k) % n;
    if ((mask[id / 64] >> (id % 64)) & 1) return static_cast<uint32_t>(id);
  }
  return token;
}

} // namespace

std::shared_ptr<gram::grammar_cache> mocker_grammars() {
  static const std::shared_ptr<gram::grammar_cache> cache = [] {
    auto vocab = gram::token_vocab::from_tokenizer(tok::byte_tokenizer{});
    return vocab ? std::make_shared<gram::grammar_cache>(*vocab) : nullptr;
  }();
  return cache;
}

expected<void> validate(const mocker_config& cfg) {
  auto bad = [](const char* field, const char* why) {
    return make_error(errc::config_error, std::string{"mocker "} + field + " " + why);
  };
  if (cfg.block_size == 0)
    return bad("block_size", "must be > 0");
  if (cfg.num_blocks == 0)
    return bad("num_blocks", "must be > 0");
  if (cfg.context_length < 2)
    return bad("context_length", "must be >= 2");
  if (!(cfg.speedup_ratio >= 0.0))
    return bad("speedup_ratio", "must be >= 0");
  if (!(cfg.decode_speedup_ratio > 0.0))
    return bad("decode_speedup_ratio", "must be > 0");
  if (!(cfg.kv_transfer_bandwidth > 0.0))
    return bad("kv_transfer_bandwidth", "must be > 0");
  if (!(cfg.kvbm_host_bandwidth > 0.0) || !(cfg.kvbm_disk_bandwidth > 0.0))
    return bad("kvbm_host_bandwidth / kvbm_disk_bandwidth", "must be > 0");
  if (!(cfg.kvbm_host_block_us >= 0.0) || !(cfg.kvbm_disk_block_us >= 0.0))
    return bad("kvbm_host_block_us / kvbm_disk_block_us", "must be >= 0");
  if (auto ok = protocol::validate(transfer_layout(cfg)); !ok)
    return make_error(errc::config_error, "mocker kv shape: " + message_of(ok.error()));
  return {};
}

protocol::kv_layout transfer_layout(const mocker_config& cfg) {
  return protocol::make_block_major_layout(cfg.kv_num_layers, cfg.block_size, cfg.kv_num_heads,
                                           cfg.kv_head_dim, cfg.kv_dtype);
}

uint64_t kv_bytes_per_token(const mocker_config& cfg) {
  if (cfg.kv_bytes_per_token != 0)
    return cfg.kv_bytes_per_token;
  return uint64_t{cfg.kv_num_layers} * 2 * cfg.kv_num_heads * cfg.kv_head_dim *
         protocol::dtype_bytes(cfg.kv_dtype);
}

std::chrono::microseconds transfer_time(uint64_t num_tokens, const mocker_config& cfg) {
  if (cfg.speedup_ratio <= 0.0 || !(cfg.kv_transfer_bandwidth > 0.0))
    return std::chrono::microseconds{0};
  const double seconds = static_cast<double>(num_tokens) *
                         static_cast<double>(kv_bytes_per_token(cfg)) /
                         (cfg.kv_transfer_bandwidth * 1e9) / cfg.speedup_ratio;
  return std::chrono::microseconds{std::llround(seconds * 1e6)};
}

std::chrono::microseconds onboard_time(uint64_t host_blocks, uint64_t disk_blocks, const mocker_config& cfg) {
  if (cfg.speedup_ratio <= 0.0 || host_blocks + disk_blocks == 0)
    return std::chrono::microseconds{0};
  const double block_bytes = static_cast<double>(kv_bytes_per_token(cfg)) * cfg.block_size;
  const double us = static_cast<double>(host_blocks) * (cfg.kvbm_host_block_us + block_bytes / (cfg.kvbm_host_bandwidth * 1e3)) +
                    static_cast<double>(disk_blocks) * (cfg.kvbm_disk_block_us + block_bytes / (cfg.kvbm_disk_bandwidth * 1e3));
  return std::chrono::microseconds{std::llround(us / cfg.speedup_ratio)};
}

mock_executor::mock_executor(const mocker_config& cfg)
    : cfg_(cfg), geometry_{cfg.block_size, cfg.num_blocks}, context_length_(cfg.context_length),
      timing_{cfg.speedup_ratio, cfg.decode_speedup_ratio}, layout_(transfer_layout(cfg)) {}

expected<engine::batch_result> mock_executor::execute(const engine::batch& b) {
  ++num_steps_;
  if (auto ok = engine::check_batch(b, geometry_); !ok)
    return ok.error();
  engine::batch_result r;
  r.sampled.reserve(b.entries.size());
  r.logprobs.resize(b.entries.size());
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const engine::batch_entry& e = b.entries[i];
    if (e.embed) {
      r.embeddings.resize(b.entries.size());
      r.embeddings[i] = embedding(e.tokens.back(), e.start_pos + static_cast<uint32_t>(e.tokens.size()) - 1);
    }
    if (!e.prompt_targets.empty()) {
      r.prompt_logprobs.resize(b.entries.size());
      for (size_t j = 0; j < e.prompt_targets.size(); ++j)
        r.prompt_logprobs[i].push_back(prompt_logprob(e.prompt_targets[j], e.start_pos + static_cast<uint32_t>(j) + 1,
                                                      e.sampling.prompt_logprobs.value_or(0)));
    }
    if (!e.sample) {
      r.sampled.emplace_back(std::nullopt);
      continue;
    }
    // A fork continues its parent's last token (check_batch: the parent is earlier).
    uint32_t prev = e.tokens.empty() ? 0 : e.tokens.back();
    for (size_t j = 0; e.fork_of && j < i; ++j)
      if (b.entries[j].seq_id == *e.fork_of) prev = b.entries[j].tokens.back();
    if (!e.fork_of && e.tokens.size() > 1) {
      if (auto reply = scripted_reply(e.tokens))
        scripts_[e.seq_id] = {std::move(*reply), e.sample_position};
    } else if (e.fork_of) { // choice c > 0 of n: the same script
      if (auto parent = scripts_.find(*e.fork_of); parent != scripts_.end())
        scripts_[e.seq_id] = parent->second;
    }
    uint32_t token = next_token(prev, e.sample_position, stream_of(e.sampling.seed, e.choice));
    if (auto s = scripts_.find(e.seq_id); s != scripts_.end()) {
      const uint32_t k = e.sample_position - s->second.base;
      if (k < s->second.reply.size()) {
        token = s->second.reply[k];
      } else {
        token = tok::byte_tokenizer::eos_id;
        scripts_.erase(s);
      }
    }
    if (!e.allowed_tokens.empty()) token = allowed_from(token, e.allowed_tokens);
    r.sampled.emplace_back(token);
    if (e.sampling.logprobs) {
      // The mocker's distribution is a point mass: the token has probability 1.
      protocol::token_logprob lp;
      if (*e.sampling.logprobs > 0) lp.top.push_back({token, 0.0f});
      r.logprobs[i] = std::move(lp);
    }
  }
  r.simulated = step_time(b, geometry_, timing_);
  return r;
}

expected<std::unique_ptr<engine::engine_core>> make_engine(const mocker_config& cfg,
                                                         engine::engine_config ec) {
  if (auto ok = validate(cfg); !ok)
    return ok.error();
  return make_engine(std::make_unique<mock_executor>(cfg), cfg, std::move(ec));
}

expected<std::unique_ptr<engine::engine_core>> make_engine(std::unique_ptr<engine::executor> exec,
                                                         const mocker_config& cfg, engine::engine_config ec) {
  if (auto ok = validate(cfg); !ok)
    return ok.error();
  ec.max_num_seqs = cfg.max_num_seqs;
  ec.max_num_batched_tokens = cfg.max_num_batched_tokens;
  ec.max_num_partial_prefills = cfg.max_num_partial_prefills;
  ec.enable_prefix_caching = cfg.enable_prefix_caching;
  if (ec.grammars == nullptr)
    ec.grammars = mocker_grammars();
  return engine::engine_core::create(std::move(exec), ec);
}

} // namespace dynamo::mocker
