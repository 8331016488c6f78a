// dynamo-cpu-bench: speed of the CPU engine on a GGUF model, printed as JSON.
// Measures model load time (wall and CPU), prefill tokens/s (one prompt), decode tokens/s at
// several batch sizes (each sequence with a prompt already cached), a scalar
// kernel baseline for decode at batch 1 (same invocation), threads, and peak
// RSS. Every measurement is repeated; the JSON holds the best and all runs,
// and tokens per CPU-second of the process for each run. With --guided, batch-1
// decode is also run under a json_object grammar mask (filled and advanced each
// step as the scheduler does, applied by the sampler), alternating with
// unguided runs, and the mask's share of a step is reported.
#include "runtime/model/cpu_executor.hpp"
#include "runtime/kv/block_count.hpp"
#include "runtime/core/cli.hpp"

#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/matcher.hpp"
#include "runtime/tokenizer/gguf_tokenizer.hpp"

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/tensor_type.hpp"
#include "runtime/gguf/gguf_file.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace dynamo;
using clock_type = std::chrono::steady_clock;

struct options {
  std::string model;
  unsigned threads = 0;
  uint32_t prompt = 128;
  uint32_t steps = 64;
  std::vector<uint32_t> batches = {1, 8};
  int repeat = 3;
  bool baseline = true;
  bool guided = false;
  bool cpu_repack = true;
  /// Kernel path to force (clamped to what the CPU has); empty: the detected one.
  std::string isa;
  model::kv_dtype kv = model::kv_dtype::f16;
};

const char* usage =
    "usage: dynamo-cpu-bench [--model PATH] [--threads N] [--prompt N] [--steps N]\n"
    "                        [--batch 1,8] [--repeat N] [--kv f16|f32] [--no-baseline] [--guided]\n"
    "                        [--cpu-repack on|off] [--isa scalar|avx2|avx2_vnni|amx]\n"
    "Prints JSON: load time, prefill tok/s, decode tok/s per batch size, threads, peak RSS,\n"
    "and the 1-minute load average of the machine at the end.\n"
    "Default model: $DYNAMO_MODEL_PATH, else ~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf\n";

std::string default_model() {
  if (const char* p = std::getenv("DYNAMO_MODEL_PATH"); p != nullptr && *p) return p;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

bool parse(int argc, char** argv, options& o) {
  o.model = default_model();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    } else if (a == "--model") {
      o.model = next();
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::stoul(next()));
    } else if (a == "--prompt") {
      o.prompt = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--steps") {
      o.steps = static_cast<uint32_t>(std::stoul(next()));
    } else if (a == "--repeat") {
      o.repeat = std::max(1, std::stoi(next()));
    } else if (a == "--kv") {
      o.kv = next() == "f32" ? model::kv_dtype::f32 : model::kv_dtype::f16;
    } else if (a == "--cpu-repack") {
      auto on = parse_on_off("cpu-repack", next());
      if (!on) {
        std::fprintf(stderr, "%s\n%s", describe(on.error()).c_str(), usage);
        return false;
      }
      o.cpu_repack = *on;
    } else if (a == "--isa") {
      o.isa = next();
    } else if (a == "--guided") {
      o.guided = true;
    } else if (a == "--no-baseline") {
      o.baseline = false;
    } else if (a == "--batch") {
      o.batches.clear();
      std::stringstream ss(next());
      for (std::string part; std::getline(ss, part, ',');) o.batches.push_back(static_cast<uint32_t>(std::stoul(part)));
    } else {
      std::fprintf(stderr, "unknown argument %s\n%s", a.c_str(), usage);
      return false;
    }
  }
  return !o.batches.empty() && o.prompt > 0 && o.steps > 0;
}

long peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

/// The 1-minute load average, to read the numbers against (the machine may be
/// shared with other jobs).
double load_average() {
  std::ifstream in("/proc/loadavg");
  double l = -1.0;
  in >> l;
  return l;
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// User + system CPU seconds of the whole process (all threads).
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto sec = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return sec(u.ru_utime) + sec(u.ru_stime);
}

/// One timed run: tokens per wall second, and per CPU second of the process
/// (on a machine shared with other jobs, the latter shows what the code does
/// when it gets the cores; with threads > 1 it also counts spin-waiting).
struct rate {
  double wall = 0.0;
  double cpu = 0.0;
};

struct stopwatch {
  clock_type::time_point wall0 = clock_type::now();
  double cpu0 = process_cpu_seconds();
  [[nodiscard]] rate rate_for(double tokens) const {
    return {tokens / seconds_since(wall0), tokens / (process_cpu_seconds() - cpu0)};
  }
};

/// Sequences of `prompt` random tokens, each with its own run of blocks.
std::vector<engine::batch_entry> make_prompts(uint32_t n, uint32_t prompt, uint32_t total, uint32_t block_size,
                                              uint32_t vocab) {
  std::mt19937 rng(7);
  const auto blocks_per_seq = static_cast<uint32_t>(kv::blocks_for_tokens(total, block_size));
  std::vector<engine::batch_entry> es(n);
  for (uint32_t s = 0; s < n; ++s) {
    es[s].seq_id = s;
    for (uint32_t t = 0; t < prompt; ++t) es[s].tokens.push_back(rng() % vocab);
    for (uint32_t b = 0; b < blocks_per_seq; ++b) es[s].block_table.push_back(s * blocks_per_seq + b);
    es[s].sample = true;
    es[s].sampling.temperature = 0.0f;
    es[s].sample_position = prompt;
  }
  return es;
}

engine::batch batch_of(const std::vector<engine::batch_entry>& es) {
  engine::batch b;
  b.entries = es;
  for (const auto& e : es) b.num_tokens += static_cast<uint32_t>(e.tokens.size());
  return b;
}

/// Prefill tokens/s of one prompt.
rate run_prefill(model::cpu_executor& ex, const options& o) {
  const auto es = make_prompts(1, o.prompt, o.prompt, ex.geometry().block_size, ex.model().config().n_vocab);
  const stopwatch sw;
  auto r = ex.execute(batch_of(es));
  const rate out = sw.rate_for(o.prompt);
  if (!r) throw std::runtime_error(describe(r.error()));
  return out;
}

/// Grammar work of a guided decode run: seconds spent filling masks and
/// accepting tokens, per token.
struct guide_timing {
  std::vector<double> per_token_s;
};

/// Decode tokens/s with `n` sequences whose prompts are cached (not timed).
/// With `grammar`, each sequence decodes under its mask (the matcher restarts
/// when the grammar completes); `timing` gets the mask work per token.
rate run_decode(model::cpu_executor& ex, const options& o, uint32_t n, uint32_t steps,
                std::shared_ptr<const gram::compiled_grammar> grammar = nullptr, guide_timing* timing = nullptr) {
  auto es = make_prompts(n, o.prompt, o.prompt + steps, ex.geometry().block_size, ex.model().config().n_vocab);
  auto r = ex.execute(batch_of(es));
  if (!r) throw std::runtime_error(describe(r.error()));
  for (uint32_t s = 0; s < n; ++s) {
    es[s].start_pos = o.prompt;
    es[s].tokens = {*r->sampled[s]};
    es[s].sample_position = o.prompt + 1;
  }
  std::vector<gram::matcher> guides;
  if (grammar)
    for (uint32_t s = 0; s < n; ++s) guides.emplace_back(grammar);
  const stopwatch sw;
  for (uint32_t step = 0; step < steps; ++step) {
    const auto t0 = clock_type::now();
    for (uint32_t s = 0; s < guides.size(); ++s) {
      es[s].allowed_tokens.resize(guides[s].mask_words());
      guides[s].fill_next_token_bitmask(es[s].allowed_tokens);
    }
    double mask_s = seconds_since(t0);
    r = ex.execute(batch_of(es));
    if (!r) throw std::runtime_error(describe(r.error()));
    const auto t1 = clock_type::now();
    for (uint32_t s = 0; s < guides.size(); ++s) {
      if (!guides[s].accept_token(*r->sampled[s])) throw std::runtime_error("sampled a token outside the grammar");
      if (guides[s].is_terminated() || !guides[s].can_continue()) guides[s].reset();
    }
    mask_s += seconds_since(t1);
    if (timing && !guides.empty()) timing->per_token_s.push_back(mask_s / n);
    for (uint32_t s = 0; s < n; ++s) {
      es[s].start_pos += 1;
      es[s].tokens = {*r->sampled[s]};
      es[s].sample_position += 1;
    }
  }
  return sw.rate_for(double(n) * steps);
}

double best_wall(const std::vector<rate>& v) {
  double b = 0.0;
  for (const rate& r : v) b = std::max(b, r.wall);
  return b;
}

/// {"Q5_0": 166, "Q8_0": 15, ...}: how many tensors of each storage type the file holds.
std::string type_census(const gguf::file& f) {
  std::map<std::string, int> n;
  for (const auto& t : f.tensors()) ++n[kernels::ref::type_name(t.type)];
  std::ostringstream s;
  s << "{";
  for (auto it = n.begin(); it != n.end(); ++it) s << (it == n.begin() ? "" : ", ") << "\"" << it->first << "\": " << it->second;
  s << "}";
  return s.str();
}

std::string json_runs(const std::vector<rate>& v) {
  std::ostringstream s;
  s.precision(4);
  s << "{\"best\": " << best_wall(v) << ", \"runs\": [";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i].wall;
  s << "], \"per_cpu_second\": [";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i].cpu;
  s << "]}";
  return s.str();
}

} // namespace

int main(int argc, char** argv) {
  options o;
  try {
    if (!parse(argc, argv, o)) return 2;
  } catch (const std::exception&) { // std::stoul on a non-number
    std::fputs(usage, stderr);
    return 2;
  }
  if (!std::filesystem::is_regular_file(o.model)) {
    std::fprintf(stderr, "model file not found: %s (use --model or DYNAMO_MODEL_PATH)\n", o.model.c_str());
    return 1;
  }
  if (!o.isa.empty()) { // the lower paths, to compare them in one binary (--isa avx2_vnni: no AMX tiles)
    bool known = false;
    for (const auto isa : {kernels::ref::cpu_isa::scalar, kernels::ref::cpu_isa::avx2, kernels::ref::cpu_isa::avx2_vnni,
                           kernels::ref::cpu_isa::amx}) {
      if (to_string(isa) == o.isa) {
        kernels::ref::set_isa(isa);
        known = true;
      }
    }
    if (!known) {
      std::fprintf(stderr, "unknown --isa %s\n%s", o.isa.c_str(), usage);
      return 2;
    }
  }
  const uint32_t max_batch = *std::max_element(o.batches.begin(), o.batches.end());
  model::cpu_executor_config cfg;
  cfg.model_path = o.model;
  cfg.threads = o.threads;
  cfg.kv_type = o.kv;
  cfg.cpu_repack = o.cpu_repack;
  cfg.num_blocks = max_batch * ((o.prompt + o.steps + 15) / 16 + 1);
  const auto t0 = clock_type::now();
  const double cpu0 = process_cpu_seconds();
  auto ex = model::cpu_executor::create(cfg);
  const double load_s = seconds_since(t0), load_cpu_s = process_cpu_seconds() - cpu0;
  if (!ex) {
    std::fprintf(stderr, "cannot load %s: %s\n", o.model.c_str(), describe(ex.error()).c_str());
    return 1;
  }
  try {
    std::vector<rate> prefill;
    for (int i = 0; i < o.repeat; ++i) prefill.push_back(run_prefill(**ex, o));
    std::ostringstream decode;
    double decode1_best = 0.0;
    for (size_t bi = 0; bi < o.batches.size(); ++bi) {
      std::vector<rate> runs;
      for (int i = 0; i < o.repeat; ++i) runs.push_back(run_decode(**ex, o, o.batches[bi], o.steps));
      if (o.batches[bi] == 1) decode1_best = best_wall(runs);
      decode << (bi ? ", " : "") << "\"" << o.batches[bi] << "\": " << json_runs(runs);
    }
    std::string guided_json;
    if (o.guided) {
      auto tk = tok::load_tokenizer((*ex)->model().file());
      if (!tk) throw std::runtime_error(describe(tk.error()));
      auto vocab = gram::token_vocab::from_tokenizer(**tk);
      if (!vocab) throw std::runtime_error(describe(vocab.error()));
      const auto tc = clock_type::now();
      auto cg = gram::compiled_grammar::compile(gram::json_object_grammar(), *vocab);
      if (!cg) throw std::runtime_error(describe(cg.error()));
      const double compile_ms = seconds_since(tc) * 1e3;
      // Cold: the first run fills the per-state mask cache; then warm runs,
      // alternating with unguided ones so both see the same machine load.
      guide_timing cold, warm;
      const rate first = run_decode(**ex, o, 1, o.steps, *cg, &cold);
      std::vector<rate> with, without;
      for (int i = 0; i < o.repeat; ++i) {
        without.push_back(run_decode(**ex, o, 1, o.steps));
        with.push_back(run_decode(**ex, o, 1, o.steps, *cg, &warm));
      }
      auto pct = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[std::min(v.size() - 1, size_t(q * double(v.size())))] * 1e6;
      };
      double warm_sum = 0;
      for (double s : warm.per_token_s) warm_sum += s;
      const double warm_mean_us = warm.per_token_s.empty() ? 0.0 : warm_sum / double(warm.per_token_s.size()) * 1e6;
      const double step_us = 1e6 / best_wall(without);
      std::ostringstream g;
      g.precision(4);
      g << "  \"guided\": {\"grammar\": \"json_object\", \"vocab\": " << (*vocab)->size()
        << ", \"compile_ms\": " << compile_ms << ", \"cold_run_tokens_per_s\": " << first.wall
        << ", \"cold_mask_us_max\": " << pct(cold.per_token_s, 1.0)
        << ",\n    \"unguided_batch1\": " << json_runs(without) << ",\n    \"guided_batch1\": " << json_runs(with)
        << ",\n    \"warm_mask_us_per_token\": {\"mean\": " << warm_mean_us << ", \"median\": " << pct(warm.per_token_s, 0.5)
        << ", \"p99\": " << pct(warm.per_token_s, 0.99) << "}, \"unguided_step_us\": " << step_us
        << ", \"warm_mask_share_of_step\": " << warm_mean_us / step_us
        << ", \"guided_over_unguided_tokens_per_s\": " << best_wall(with) / best_wall(without) << "},\n";
      guided_json = g.str();
    }
    double scalar = 0.0;
    if (o.baseline) {
      const auto isa = kernels::ref::active_isa();
      kernels::ref::set_isa(kernels::ref::cpu_isa::scalar);
      scalar = run_decode(**ex, o, 1, std::min<uint32_t>(o.steps, 16)).wall;
      kernels::ref::set_isa(isa);
    }
    const auto& c = (*ex)->model().config();
    std::printf("{\n  \"model\": \"%s\",\n  \"layers\": %u, \"hidden\": %u, \"vocab\": %u,\n"
                "  \"tensor_types\": %s,\n"
                "  \"weight_bytes\": %zu,\n  \"repacked_bytes\": %zu,\n  \"isa\": \"%s\",\n  \"threads\": %u,\n  \"kv_dtype\": \"%s\",\n"
                "  \"load_time_s\": %.4f,\n  \"load_cpu_s\": %.4f,\n  \"prompt_tokens\": %u,\n  \"decode_steps\": %u,\n"
                "  \"prefill_tokens_per_s\": %s,\n  \"decode_tokens_per_s\": {%s},\n",
                std::filesystem::path(o.model).filename().c_str(), c.n_layer, c.n_embd, c.n_vocab,
                type_census((*ex)->model().file()).c_str(), (*ex)->model().weight_bytes(), (*ex)->model().repacked_bytes(), std::string(to_string(kernels::ref::active_isa())).c_str(),
                (*ex)->threads(), o.kv == model::kv_dtype::f16 ? "f16" : "f32", load_s, load_cpu_s, o.prompt, o.steps,
                json_runs(prefill).c_str(), decode.str().c_str());
    std::fputs(guided_json.c_str(), stdout);
    if (o.baseline) {
      std::printf("  \"scalar_decode_batch1_tokens_per_s\": %.2f,\n  \"speedup_vs_scalar_batch1\": %.2f,\n", scalar,
                  decode1_best > 0 && scalar > 0 ? decode1_best / scalar : 0.0);
    }
    std::printf("  \"load_average_1m\": %.2f,\n  \"peak_rss_mib\": %.1f\n}\n", load_average(),
                peak_rss_kib() / 1024.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "benchmark failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
