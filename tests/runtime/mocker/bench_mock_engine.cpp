// Benchmark: engine_core + mock_executor under a closed-loop load with shared
// prompt prefixes. Prints one JSON object: host time per step (the scheduler's
// and mocker's CPU overhead), simulated throughput, prefix-cache hit ratio and
// preemptions, for prefix caching on and off (the baseline) in one invocation.
// Usage: bench_mock_engine [--requests N] [--concurrency C] [--blocks B] [--help]
#include "runtime/mocker/mock_executor.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace dynamo;

namespace {

struct options {
  uint32_t requests = 2000;
  uint32_t concurrency = 128;
  uint32_t blocks = 16384;
  uint32_t prefixes = 8;        ///< distinct shared "system prompts"
  uint32_t prefix_len = 384;    ///< tokens of the shared part
  uint32_t suffix_len = 128;    ///< unique tokens per request
  uint32_t max_tokens = 128;
};

struct result {
  uint64_t steps = 0;
  uint64_t computed_tokens = 0;
  uint64_t output_tokens = 0;
  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;
  uint64_t preemptions = 0;
  double host_s = 0;
  double simulated_s = 0;
};

std::vector<uint32_t> make_prompt(std::mt19937& rng, const options& o) {
  const uint32_t stem = std::uniform_int_distribution<uint32_t>(0, o.prefixes - 1)(rng);
  std::vector<uint32_t> p;
  p.reserve(o.prefix_len + o.suffix_len);
  for (uint32_t i = 0; i < o.prefix_len; ++i)
    p.push_back(32 + (stem * 7919 + i * 31) % 95);
  std::uniform_int_distribution<uint32_t> tok(32, 126);
  for (uint32_t i = 0; i < o.suffix_len; ++i)
    p.push_back(tok(rng));
  return p;
}

[[nodiscard]] bool run(const options& o, bool prefix_caching, result& r) {
  mocker::mocker_config c;
  c.num_blocks = o.blocks;
  c.enable_prefix_caching = prefix_caching;
  auto made = mocker::make_engine(c);
  if (!made) {
    std::fprintf(stderr, "%s\n", describe(made.error()).c_str());
    return false;
  }
  engine::engine_core& core = **made;
  std::mt19937 rng(42);
  uint32_t submitted = 0, done = 0, in_flight = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (done < o.requests) {
    while (in_flight < o.concurrency && submitted < o.requests) {
      protocol::preprocessed_request req;
      req.request_id = "r" + std::to_string(submitted++);
      req.token_ids = make_prompt(rng, o);
      req.stop.max_tokens = o.max_tokens;
      r.prompt_tokens += req.token_ids.size();
      if (!core.add_request(std::move(req)))
        return false;
      ++in_flight;
    }
    auto s = core.step();
    if (!s)
      return false;
    ++r.steps;
    r.computed_tokens += s->num_tokens;
    r.simulated_s += std::chrono::duration<double>(s->duration).count();
    for (const auto& out : s->outputs) {
      r.output_tokens += out.output.token_ids.size();
      r.cached_tokens += out.output.cached_tokens;
      if (out.output.finish != protocol::finish_reason::none) {
        ++done;
        --in_flight;
      }
    }
  }
  r.host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.preemptions = core.sched().num_preemptions();
  return true;
}

void print(const char* name, const result& r, bool last) {
  std::printf("  \"%s\": {\"steps\": %llu, \"host_us_per_step\": %.2f, \"host_s\": %.3f, "
              "\"computed_tokens\": %llu, \"output_tokens\": %llu, \"prefix_hit_ratio\": %.4f, "
              "\"preemptions\": %llu, \"simulated_s\": %.3f, \"simulated_output_tok_per_s\": %.1f}%s\n",
              name, static_cast<unsigned long long>(r.steps), 1e6 * r.host_s / r.steps, r.host_s,
              static_cast<unsigned long long>(r.computed_tokens),
              static_cast<unsigned long long>(r.output_tokens),
              static_cast<double>(r.cached_tokens) / r.prompt_tokens,
              static_cast<unsigned long long>(r.preemptions), r.simulated_s,
              r.output_tokens / r.simulated_s, last ? "" : ",");
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](uint32_t& v) { v = i + 1 < argc ? static_cast<uint32_t>(std::atoi(argv[++i])) : v; };
    if (!std::strcmp(argv[i], "--requests"))
      next(o.requests);
    else if (!std::strcmp(argv[i], "--concurrency"))
      next(o.concurrency);
    else if (!std::strcmp(argv[i], "--blocks"))
      next(o.blocks);
    else {
      std::printf("usage: bench_mock_engine [--requests N=2000] [--concurrency C=128] "
                  "[--blocks B=16384]\nPrints a JSON object; block size 16, speedup 1.\n");
      return std::strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  if (o.requests == 0 || o.concurrency == 0 || o.blocks == 0) {
    std::fprintf(stderr, "requests, concurrency and blocks must be > 0\n");
    return 2;
  }
  result cached, uncached;
  if (!run(o, true, cached) || !run(o, false, uncached))
    return 1;
  std::printf("{\n  \"requests\": %u, \"concurrency\": %u, \"blocks\": %u, \"prompt_len\": %u, "
              "\"shared_prefix_len\": %u, \"max_tokens\": %u,\n",
              o.requests, o.concurrency, o.blocks, o.prefix_len + o.suffix_len, o.prefix_len,
              o.max_tokens);
  print("prefix_caching", cached, false);
  print("no_prefix_caching", uncached, false);
  std::printf("  \"simulated_throughput_ratio\": %.3f\n}\n",
              (cached.output_tokens / cached.simulated_s) /
                  (uncached.output_tokens / uncached.simulated_s));
  return 0;
}
