#include "actors/worker/engine_factory.hpp"
#include "runtime/core/units.hpp"
#include "runtime/engine/engine_core.hpp"
#include "runtime/kvbm/disk_store.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/decoder_model.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"

#if DYNAMO_HAVE_CUDA
#include "runtime/model/cuda/cuda_executor.hpp"
#endif

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <system_error>

namespace dynamo::actors {

namespace {

engine::engine_config engine_limits(config::engine_kind kind, const config::engine_options& o) {
  engine::engine_config ec;
  ec.max_num_seqs = o.max_num_seqs;
  ec.max_num_batched_tokens = config::max_num_batched_tokens(kind, o);
  ec.enable_prefix_caching = o.prefix_caching;
  ec.max_model_len = o.context_length;
  ec.num_blocks = o.kv_blocks;
  return ec;
}

/// The KVBM tiers of engine `index` of `pool`. Its disk segments go in
/// "<disk_path>/<pool>-<index>", the same directory after a restart, so they
/// are found again; a directory a live engine holds is never shared (the store
/// then takes "<pool>-<index>.1", ...: kvbm::disk_store). The tag names the
/// model file, so blocks of another model there are dropped, not served.
engine::engine_config with_kvbm(engine::engine_config ec, const config::pool_config& pool, uint32_t index) {
  const config::kvbm_options& k = pool.kvbm;
  if (!k.enabled())
    return ec;
  ec.kvbm.host_bytes = gib_to_bytes(k.host_gb);
  ec.kvbm.disk_bytes = gib_to_bytes(k.disk_gb);
  if (!k.disk_path.empty())
    ec.kvbm.disk_path = k.disk_path + "/" + pool.name + "-" + std::to_string(index);
  if (k.disk_readers)
    ec.kvbm.disk_readers = *k.disk_readers;
  if (k.disk_read_mb)
    ec.kvbm.disk_read_bytes = mib_to_bytes(*k.disk_read_mb);
  if (k.disk_segment_mb)
    ec.kvbm.disk_segment_bytes = mib_to_bytes(*k.disk_segment_mb);
  if (k.disk_min_free_gb)
    ec.kvbm.disk_min_free_bytes = gib_to_bytes(*k.disk_min_free_gb);
  if (k.disk_min_frequency)
    ec.kvbm.disk_filter.min_frequency = *k.disk_min_frequency;
  std::error_code ec_size;
  const auto model_bytes = std::filesystem::file_size(pool.model_path, ec_size);
  ec.kvbm.disk_tag = fmt::format("{}:{}:{}", config::to_string(pool.engine), pool.model_path,
                                 ec_size ? 0 : model_bytes);
  return ec;
}

/// The grammar cache of guided decoding over the model's tokenizer, shared by
/// the pool's engines; null (guided requests then fail) when the tokenizer
/// does not load.
std::shared_ptr<gram::grammar_cache> grammars_for(const std::string& model_path) {
  auto fail = [&](const caf::error& e) -> std::shared_ptr<gram::grammar_cache> {
    spdlog::warn("model {}: no guided decoding ({})", model_path, message_of(e));
    return nullptr;
  };
  auto file = gguf::file::open(model_path);
  if (!file)
    return fail(file.error());
  auto tk = tok::load_tokenizer(**file);
  if (!tk)
    return fail(tk.error());
  auto vocab = gram::token_vocab::from_tokenizer(**tk);
  if (!vocab)
    return fail(vocab.error());
  return std::make_shared<gram::grammar_cache>(*vocab);
}

expected<engine_setup> prepare_mocker(const config::pool_config& pool) {
  mocker::mocker_config mc;
  mc.block_size = pool.engine_opts.block_size;
  mc.num_blocks = pool.engine_opts.kv_blocks ? pool.engine_opts.kv_blocks : pool.mocker.num_blocks;
  mc.speedup_ratio = pool.mocker.speedup_ratio;
  mc.decode_speedup_ratio = pool.mocker.decode_speedup_ratio;
  mc.max_num_seqs = pool.engine_opts.max_num_seqs;
  mc.max_num_batched_tokens = config::max_num_batched_tokens(pool.engine, pool.engine_opts);
  mc.enable_prefix_caching = pool.engine_opts.prefix_caching;
  if (pool.engine_opts.context_length)
    mc.context_length = pool.engine_opts.context_length;
  if (auto ok = mocker::validate(mc); !ok)
    return ok.error();
  engine_setup s;
  s.plan.pool = pool;
  // The card advertises what the engine accepts: its context, capped by the
  // KV cache (a prompt the card admits and the engine refuses would reach a
  // worker only to be turned away).
  s.plan.card = {pool.model, "mocker", engine::engine_core::max_model_len_of(mocker::mock_executor(mc), {}),
                 mc.block_size, mc.num_blocks,
                 mc.max_num_seqs, mc.max_num_batched_tokens, mocker::embedding_size};
  s.make_factory = [mc, pool](uint32_t index) -> engine_factory {
    return [mc, base = with_kvbm({}, pool, index)] { return mocker::make_engine(mc, base); };
  };
  return s;
}

expected<engine_setup> prepare_cpu(const config::pool_config& pool, size_t kv_bytes) {
  auto t0 = std::chrono::steady_clock::now();
  spdlog::info("loading model {} from {} ...", pool.model, pool.model_path);
  auto model = model::decoder_model::load(pool.model_path, {.cpu_repack = pool.engine_opts.cpu_repack, .threads = pool.engine_opts.threads});
  if (!model)
    return model.error();
  auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const model::decoder_config& c = (*model)->config();
  const size_t repacked = (*model)->repacked_bytes();
  spdlog::info("model {} loaded in {:.2f} s ({}, {:.1f} MiB of weights{}, {} layers, context {}{})", pool.model, secs,
               c.arch_name(), (*model)->weight_bytes() / bytes_per_mib,
               repacked ? fmt::format(" + {:.1f} MiB repacked for the CPU kernels", repacked / bytes_per_mib) : "",
               c.n_layer, c.context_length,
               c.is_moe() ? fmt::format(", {} of {} experts per token", c.moe.n_expert_used, c.moe.n_expert) : "");
  model::cpu_executor_config xc;
  xc.model_path = pool.model_path;
  xc.block_size = pool.engine_opts.block_size;
  xc.kv_cache_bytes = kv_bytes;
  xc.num_blocks = pool.engine_opts.kv_blocks;
  xc.threads = pool.engine_opts.threads;
  // Validate once here so configuration errors surface at start-up, not in an actor.
  auto probe = model::cpu_executor::create(*model, xc);
  if (!probe)
    return probe.error();
  auto ec = engine_limits(pool.engine, pool.engine_opts);
  ec.grammars = grammars_for(pool.model_path);
  spdlog::info("model {}: {} compute threads, {} tokens per engine step{}", pool.model, (*probe)->threads(),
               ec.max_num_batched_tokens, pool.engine_opts.max_num_batched_tokens ? "" : " (the CPU default)");
  engine_setup s;
  s.plan.pool = pool;
  s.plan.kv_cache_bytes = kv_bytes;
  s.plan.detached = true;
  s.plan.card = {pool.model, pool.model_path, engine::engine_core::max_model_len_of(**probe, ec), xc.block_size, (*probe)->geometry().num_blocks,
                 ec.max_num_seqs, ec.max_num_batched_tokens, c.n_embd};
  auto shared = *model;
  s.make_factory = [shared, xc, ec, pool](uint32_t index) -> engine_factory {
    return [shared, xc, ec = with_kvbm(ec, pool, index)]() -> expected<std::unique_ptr<engine::engine_core>> {
      auto exec = model::cpu_executor::create(shared, xc);
      if (!exec)
        return exec.error();
      return engine::engine_core::create(std::move(*exec), ec);
    };
  };
  return s;
}

#if DYNAMO_HAVE_CUDA
expected<engine_setup> prepare_cuda(const config::pool_config& pool) {
  if (!model::cuda_available())
    return make_error(errc::device_error, "engine cuda: no usable CUDA device");
  spdlog::info("loading model {} from {} for the GPU ...", pool.model, pool.model_path);
  auto model = model::decoder_model::load(pool.model_path, {.cpu_repack = false});
  if (!model)
    return model.error();
  auto ec = engine_limits(pool.engine, pool.engine_opts);
  ec.grammars = grammars_for(pool.model_path);
  model::cuda_executor_config xc;
  xc.block_size = pool.engine_opts.block_size;
  xc.num_blocks = pool.engine_opts.kv_blocks;
  xc.max_num_tokens = ec.max_num_batched_tokens;
  xc.max_num_seqs = ec.max_num_seqs;
  xc.max_model_len = ec.max_model_len;
  xc.gpu_memory_fraction = pool.engine_opts.gpu_memory_fraction;
  auto probe = model::make_cuda_executor(*model, xc);
  if (!probe)
    return probe.error();
  engine_setup s;
  s.plan.pool = pool;
  s.plan.detached = true;
  s.plan.card = {pool.model, pool.model_path, engine::engine_core::max_model_len_of(**probe, ec), xc.block_size,
                 (*probe)->geometry().num_blocks, ec.max_num_seqs, ec.max_num_batched_tokens};
  // One GPU, one executor: the probe is handed to the first worker; more
  // workers per process on one device would each size KV from free memory.
  auto shared = *model;
  auto first = std::make_shared<std::unique_ptr<engine::executor>>(std::move(*probe));
  s.make_factory = [shared, xc, ec, first, pool](uint32_t index) -> engine_factory {
    return [shared, xc, ec = with_kvbm(ec, pool, index), first]() -> expected<std::unique_ptr<engine::engine_core>> {
      std::unique_ptr<engine::executor> exec = std::move(*first);
      if (!exec) {
        auto made = model::make_cuda_executor(shared, xc);
        if (!made)
          return made.error();
        exec = std::move(*made);
      }
      return engine::engine_core::create(std::move(exec), ec);
    };
  };
  return s;
}
#endif

} // namespace

expected<engine_setup> prepare_engines(const config::pool_config& pool, size_t kv_cache_bytes) {
  if (pool.kvbm.disk_gb > 0 && !pool.kvbm.disk_path.empty()) // what workers of the per-process layout left
    (void)kvbm::remove_stale_block_dirs(pool.kvbm.disk_path, pool.name);
  switch (pool.engine) {
    case config::engine_kind::mocker: return prepare_mocker(pool);
    case config::engine_kind::cpu: return prepare_cpu(pool, kv_cache_bytes);
    case config::engine_kind::cuda:
#if DYNAMO_HAVE_CUDA
      return prepare_cuda(pool);
#else
      return make_error(errc::unsupported,
                        "engine cuda: this build has no CUDA backend (configure with -DDYNAMO_WITH_CUDA=ON on a machine with nvcc)");
#endif
  }
  return make_error(errc::internal, "unknown engine kind");
}

} // namespace dynamo::actors
