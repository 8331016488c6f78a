// Runs the independent float64 numpy reference (decoder_ref.py) from C++
// tests and parses what it prints: last-position logits with an optional
// greedy continuation, the final hidden state, every prompt token's log-prob,
// or per-step top-k log-probs for a batch of models;
// and our engine's log-probs at the reference's steps. Test code only; each
// reference call starts one python3 process.
#pragma once

#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace dynamo::model::test {

inline std::string python() {
  const char* p = std::getenv("DYNAMO_PYTHON");
  return p != nullptr && *p ? p : "python3";
}

inline std::string reference_script() {
  const char* s = std::getenv("DYNAMO_SOURCE_DIR");
  return std::string(s != nullptr ? s : ".") + "/tests/runtime/model/decoder_ref.py";
}

/// Boost.Test precondition: skips the case without python3 + numpy + gguf.
inline boost::test_tools::assertion_result python_available(boost::unit_test::test_unit_id) {
  const std::string cmd = python() + " -c 'import numpy, gguf' > /dev/null 2>&1";
  boost::test_tools::assertion_result r(std::system(cmd.c_str()) == 0);
  if (!r) r.message() << "python3 with numpy and gguf not available (" << python() << ")";
  return r;
}

/// What the reference says about a prompt: the logits of its last position
/// and, when asked for, its greedy continuation.
struct reference {
  std::vector<double> logits;
  std::vector<uint32_t> greedy;
};

/// Runs decoder_ref.py on one model (with --greedy n_greedy when > 0).
inline reference run_reference(const std::string& model, const std::vector<uint32_t>& ids, uint32_t n_greedy = 0) {
  std::ostringstream cmd;
  cmd << python() << " " << reference_script() << " --model '" << model << "'";
  if (n_greedy > 0) cmd << " --greedy " << n_greedy;
  for (uint32_t id : ids) cmd << " " << id;
  FILE* p = popen(cmd.str().c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  reference r;
  char line[1024];
  size_t n_vocab = 0;
  if (std::fgets(line, sizeof line, p) != nullptr) std::sscanf(line, "n_vocab %zu", &n_vocab);
  while (r.logits.size() < n_vocab && std::fgets(line, sizeof line, p) != nullptr) {
    r.logits.push_back(std::strtod(line, nullptr));
  }
  if (n_greedy > 0 && std::fgets(line, sizeof line, p) != nullptr && std::strncmp(line, "greedy", 6) == 0) {
    std::istringstream in(line + 6);
    for (uint32_t id; in >> id;) r.greedy.push_back(id);
  }
  BOOST_REQUIRE_EQUAL(pclose(p), 0);
  BOOST_REQUIRE_EQUAL(r.logits.size(), n_vocab);
  BOOST_REQUIRE_EQUAL(r.greedy.size(), n_greedy);
  return r;
}

/// What decoder_ref.py prints in `mode` (--hidden, --prompt-logprobs): a
/// "<name> <count>" line, then `count` values, one a line.
inline std::vector<double> run_reference_values(const std::string& model, const char* mode,
                                                const std::vector<uint32_t>& ids) {
  std::ostringstream cmd;
  cmd << python() << " " << reference_script() << " --model '" << model << "' " << mode;
  for (uint32_t id : ids) cmd << " " << id;
  FILE* p = popen(cmd.str().c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::vector<double> values;
  char line[1024];
  size_t count = 0;
  if (std::fgets(line, sizeof line, p) != nullptr) std::sscanf(line, "%*s %zu", &count);
  while (values.size() < count && std::fgets(line, sizeof line, p) != nullptr)
    values.push_back(std::strtod(line, nullptr));
  BOOST_REQUIRE_EQUAL(pclose(p), 0);
  BOOST_REQUIRE_EQUAL(values.size(), count);
  return values;
}

/// The reference's final-norm hidden state of the last of `ids` (decoder_ref.py --hidden).
inline std::vector<double> run_reference_hidden(const std::string& model, const std::vector<uint32_t>& ids) {
  return run_reference_values(model, "--hidden", ids);
}

/// The reference's log-prob of each prompt token after the first under the
/// distribution at the position before it (decoder_ref.py --prompt-logprobs).
inline std::vector<double> run_reference_prompt_logprobs(const std::string& model, const std::vector<uint32_t>& ids) {
  auto lps = run_reference_values(model, "--prompt-logprobs", ids);
  BOOST_REQUIRE_EQUAL(lps.size() + 1, ids.size());
  return lps;
}

/// A prompt for the golden tests' tiny models (vocabulary 300).
inline const std::vector<uint32_t> tiny_golden_prompt = {1, 17, 250, 3, 99, 42, 42, 7, 128, 200, 5};

/// One architecture of a golden test: its label, and experts (0: dense).
struct golden_arch {
  const char* name;
  architecture arch;
  uint32_t n_expert;
};

/// The golden tests' random-model shape, one every format can encode (rows
/// multiples of 256 for the K-quants); `n_expert` > 0: 2 of them per token.
inline random_model_options golden_shape(architecture arch, uint32_t n_expert = 0) {
  random_model_options o;
  o.n_expert = n_expert;
  o.n_expert_used = n_expert ? 2 : 0;
  o.n_ff_expert = n_expert ? 256 : 0;
  o.arch = arch;
  o.name = "golden";
  o.n_layer = 2;
  o.n_embd = 256;
  o.n_head = 4;
  o.n_kv_head = 2;
  o.n_ff = 512;
  o.n_vocab = 300;
  o.context_length = 128;
  o.stddev = 0.0f; // scaled: unit-variance activations, logits far from uniform
  o.threads = 1;
  return o;
}

/// One greedy step of the reference: its top-k (id, log-prob), most likely
/// first, and the gap between its first and second log-probs.
struct reference_step {
  std::vector<std::pair<uint32_t, double>> top;
  /// The same step with K and V cached in float16 (teacher-forced on the
  /// exact run's tokens): what an fp16 KV cache should give.
  std::vector<std::pair<uint32_t, double>> top_kv16;
  double margin = 0.0;
  /// MoE: the smallest gap between the router logits of a token's k-th and
  /// (k+1)-th experts in the step's pass (infinite for dense models).
  double route_margin = std::numeric_limits<double>::infinity();
};

/// The reference's greedy run of `steps` tokens for one model.
struct reference_run {
  std::string model;
  std::vector<uint32_t> greedy;
  std::vector<reference_step> steps;
};

/// Runs decoder_ref.py --batch over (model path, prompt) pairs in one process.
inline std::vector<reference_run> run_reference_batch(const std::vector<std::pair<std::string, std::vector<uint32_t>>>& jobs,
                                                      const std::string& list_path, uint32_t steps, uint32_t top) {
  {
    std::ofstream list(list_path);
    for (const auto& [model, ids] : jobs) {
      list << model;
      for (uint32_t id : ids) list << " " << id;
      list << "\n";
    }
  }
  std::ostringstream cmd;
  cmd << python() << " " << reference_script() << " --batch '" << list_path << "' --greedy " << steps << " --top "
      << top;
  FILE* p = popen(cmd.str().c_str(), "r");
  BOOST_REQUIRE(p != nullptr);
  std::vector<reference_run> runs;
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p) != nullptr) {
    text += buf;
    if (text.empty() || text.back() != '\n') continue;
    const auto j = nlohmann::json::parse(text);
    text.clear();
    reference_run r;
    r.model = j.at("model").get<std::string>();
    r.greedy = j.at("greedy").get<std::vector<uint32_t>>();
    for (size_t s = 0; s < j.at("top").size(); ++s) {
      reference_step step;
      for (const auto& e : j.at("top")[s]) step.top.emplace_back(e[0].get<uint32_t>(), e[1].get<double>());
      for (const auto& e : j.at("top_kv16")[s]) step.top_kv16.emplace_back(e[0].get<uint32_t>(), e[1].get<double>());
      step.margin = j.at("margin")[s].get<double>();
      if (const auto& rm = j.at("route_margin")[s]; !rm.is_null()) step.route_margin = rm.get<double>();
      r.steps.push_back(std::move(step));
    }
    runs.push_back(std::move(r));
  }
  BOOST_REQUIRE_EQUAL(pclose(p), 0);
  BOOST_REQUIRE_EQUAL(runs.size(), jobs.size());
  return runs;
}

inline std::vector<double> log_softmax(const std::vector<float>& z) {
  const double mx = *std::max_element(z.begin(), z.end());
  double sum = 0.0;
  for (float v : z) sum += std::exp(double(v) - mx);
  const double lse = mx + std::log(sum);
  std::vector<double> out(z.size());
  for (size_t i = 0; i < z.size(); ++i) out[i] = double(z[i]) - lse;
  return out;
}

/// Our log-probs at each of the reference's `steps` greedy steps, teacher-forced
/// on its tokens (the prompt as one prefill, then one decode step per token).
inline std::vector<std::vector<double>> our_steps(const std::shared_ptr<const decoder_model>& m,
                                                  const std::vector<uint32_t>& prompt, const reference_run& ref,
                                                  uint32_t steps, kv_dtype kv, forward_options options = {}) {
  // Blocks of 4 tokens, scattered over the cache: (5i + 3) mod a pool size
  // that is no multiple of 5 (a permutation).
  const uint32_t n_blocks = std::max<uint32_t>(12, (static_cast<uint32_t>(prompt.size()) + steps + 3) / 4);
  uint32_t pool = std::max<uint32_t>(16, n_blocks + 4);
  if (pool % 5 == 0) ++pool;
  harness h(m, pool, 4, kv, 2, options);
  std::vector<uint32_t> blocks(n_blocks);
  for (uint32_t i = 0; i < n_blocks; ++i) blocks[i] = (i * 5 + 3) % pool;
  std::vector<std::vector<double>> out;
  out.push_back(log_softmax(h.run(make_batch({entry(1, prompt, 0, blocks)})).at(0)));
  for (uint32_t s = 1; s < steps; ++s) {
    const auto pos = static_cast<uint32_t>(prompt.size() + s - 1);
    out.push_back(log_softmax(h.run(make_batch({entry(1, {ref.greedy[s - 1]}, pos, blocks)})).at(0)));
  }
  return out;
}

/// The largest |ours - reference| over the reference's top-k log-probs of every step.
inline double worst_top_diff(const std::vector<std::vector<double>>& ours, const std::vector<reference_step>& ref,
                             bool kv16) {
  double w = 0.0;
  for (size_t s = 0; s < ref.size(); ++s) {
    for (const auto& [id, lp] : kv16 ? ref[s].top_kv16 : ref[s].top) w = std::max(w, std::fabs(ours[s][id] - lp));
  }
  return w;
}

} // namespace dynamo::model::test
