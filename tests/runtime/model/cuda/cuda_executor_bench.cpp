// Benchmark (not a test): the CUDA executor alone, no HTTP. For each batch
// size it prefills that many sequences of --context random tokens, then
// times --steps greedy decode steps, with CUDA graphs off (the baseline) and
// on, in one invocation. Prints one JSON object. Needs a GPU.
// Usage: cuda_executor_bench --model PATH [--batches 1,16,64,256] [--context 512] [--steps 32]
#include "runtime/core/cli.hpp"
#include "runtime/model/cuda/cuda_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace dynamo;

namespace {

using clock_type = std::chrono::steady_clock;

struct run_result {
  uint32_t batch = 0;
  bool graphs = false;
  double prefill_tok_s = 0, decode_ms = 0, decode_tok_s = 0;
};

expected<run_result> run_one(model::cuda_executor& ex, uint32_t batch, uint32_t context, uint32_t steps,
                             uint32_t vocab, uint32_t max_tokens) {
  const uint32_t bs = ex.geometry().block_size;
  const uint32_t per_seq = (context + steps + 1 + bs - 1) / bs;
  if (uint64_t(per_seq) * batch > ex.geometry().num_blocks) {
    return make_error(errc::config_error, "batch " + std::to_string(batch) + " needs " +
                                              std::to_string(uint64_t(per_seq) * batch) + " KV blocks, have " +
                                              std::to_string(ex.geometry().num_blocks));
  }
  if (context == 0 || context > max_tokens) return make_error(errc::config_error, "--context must be in [1, max_num_tokens]");
  std::mt19937 rng(batch);
  std::uniform_int_distribution<uint32_t> tok(3, vocab - 1);
  std::vector<engine::batch_entry> seqs(batch);
  for (uint32_t i = 0; i < batch; ++i) {
    auto& e = seqs[i];
    e.seq_id = i;
    for (uint32_t j = 0; j < context; ++j) e.tokens.push_back(tok(rng));
    for (uint32_t b = 0; b < per_seq; ++b) e.block_table.push_back(i * per_seq + b);
    e.sample = true;
    e.sampling.temperature = 0.0f;
    e.sample_position = context;
  }
  run_result r;
  r.batch = batch;
  // Prefill whole prompts, as many per step as max_tokens allows.
  const auto t0 = clock_type::now();
  for (uint32_t i = 0; i < batch;) {
    engine::batch b;
    while (i < batch && b.num_tokens + context <= max_tokens) {
      b.num_tokens += context;
      b.entries.push_back(seqs[i++]);
    }
    auto out = ex.execute(b);
    if (!out) return out.error();
    for (size_t k = 0; k < b.entries.size(); ++k) {
      auto& s = seqs[b.entries[k].seq_id];
      s.start_pos = context;
      s.tokens = {out->sampled[k].value_or(0)};
      s.sample_position = context + 1;
    }
  }
  r.prefill_tok_s = double(batch) * context / std::chrono::duration<double>(clock_type::now() - t0).count();
  // One untimed decode step (captures the graph), then the timed ones.
  double decode_s = 0;
  for (uint32_t s = 0; s <= steps; ++s) {
    engine::batch b;
    b.entries = seqs;
    b.num_tokens = batch;
    const auto t = clock_type::now();
    auto out = ex.execute(b);
    if (!out) return out.error();
    if (s > 0) decode_s += std::chrono::duration<double>(clock_type::now() - t).count();
    for (uint32_t k = 0; k < batch; ++k) {
      auto& e = seqs[k];
      e.start_pos += 1;
      e.tokens = {out->sampled[k].value_or(0)};
      e.sample_position = e.start_pos + 1;
    }
  }
  r.decode_ms = decode_s / steps * 1e3;
  r.decode_tok_s = double(batch) * steps / decode_s;
  return r;
}

std::vector<uint32_t> parse_list(const std::string& s) {
  std::vector<uint32_t> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(static_cast<uint32_t>(std::stoul(item)));
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  std::string model_path, batches = "1,16,64,256";
  uint32_t context = 512, steps = 32, max_tokens = 8192, kv_blocks = 0, partition = 256, max_model_len = 0;
  double fraction = 0.9;
  cli c("cuda_executor_bench", "CUDA executor decode/prefill throughput, graphs off vs on (JSON)");
  c.option("model", &model_path, "GGUF model (e.g. from dynamo-gguf-random)")
      .option("batches", &batches, "comma-separated decode batch sizes")
      .option("context", &context, "prompt tokens per sequence before decoding")
      .option("steps", &steps, "timed decode steps")
      .option("max-num-tokens", &max_tokens, "executor token budget per step")
      .option("kv-blocks", &kv_blocks, "KV blocks (0: from memory)")
      .option("attention-partition", &partition, "split-K keys per partition for decode steps (0: no split)")
      .option("max-model-len", &max_model_len, "context the executor is sized for (0: the model's)")
      .option("gpu-memory-fraction", &fraction, "fraction of device memory for the executor");
  if (auto code = cli_exit_code("cuda_executor_bench", c.parse(argc, argv)))
    return *code;
  if (model_path.empty() || steps == 0) {
    std::fprintf(stderr, "cuda_executor_bench: --model is required and --steps must be positive\n");
    return 2;
  }
  const auto sizes = parse_list(batches);
  auto m = model::decoder_model::load(model_path, {.cpu_repack = false});
  if (!m) {
    std::fprintf(stderr, "cuda_executor_bench: %s\n", describe(m.error()).c_str());
    return 1;
  }
  std::string json = "{\"model\": \"" + model_path + "\", \"context\": " + std::to_string(context) +
                     ", \"steps\": " + std::to_string(steps) + ", \"results\": [";
  std::vector<run_result> all;
  for (const bool graphs : {false, true}) {
    model::cuda_executor_config xc;
    xc.max_num_tokens = max_tokens;
    xc.max_num_seqs = std::max<uint32_t>(256, *std::max_element(sizes.begin(), sizes.end()));
    xc.cuda_graphs = graphs;
    xc.num_blocks = kv_blocks;
    xc.gpu_memory_fraction = fraction;
    xc.process_seed = 1;
    xc.attention_partition = partition;
    xc.max_model_len = max_model_len;
    auto ex = model::cuda_executor::create(*m, xc);
    if (!ex) {
      std::fprintf(stderr, "cuda_executor_bench: %s\n", describe(ex.error()).c_str());
      return 1;
    }
    // Warm-up (not reported): loads the kernel modules and lets cuBLAS pick its
    // algorithms, so the first measured batch does not pay for them.
    if (auto w = run_one(**ex, 1, std::min<uint32_t>(context, 64), 2, (*m)->config().n_vocab, max_tokens); !w) {
      std::fprintf(stderr, "cuda_executor_bench: warm-up: %s\n", describe(w.error()).c_str());
      return 1;
    }
    for (uint32_t b : sizes) {
      auto r = run_one(**ex, b, context, steps, (*m)->config().n_vocab, max_tokens);
      if (!r) {
        std::fprintf(stderr, "cuda_executor_bench: batch %u: %s\n", b, describe(r.error()).c_str());
        return 1;
      }
      r->graphs = graphs;
      all.push_back(*r);
    }
  }
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& r = all[i];
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "%s{\"batch\": %u, \"graphs\": %s, \"prefill_tok_s\": %.1f, \"decode_ms_per_step\": %.3f, "
                  "\"decode_tok_s\": %.1f}",
                  i ? ", " : "", r.batch, r.graphs ? "true" : "false", r.prefill_tok_s, r.decode_ms, r.decode_tok_s);
    json += buf;
  }
  json += "], \"graph_speedup\": {";
  for (size_t i = 0; i < sizes.size(); ++i) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s\"%u\": %.3f", i ? ", " : "", sizes[i],
                  all[i].decode_ms / all[sizes.size() + i].decode_ms);
    json += buf;
  }
  json += "}}";
  std::puts(json.c_str());
  return 0;
}
