// The real SmolLM2-135M model: logits against the independent numpy
// reference (decoder_ref.py), and exact batching invariants. Skipped with a
// message when the model file (or python3 with numpy + gguf) is missing.
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/decoder_forward.hpp"
#include "runtime/model/sampler.hpp"
#include "tests/runtime/gguf/test_model.hpp"
#include "tests/runtime/model/model_test_util.hpp"
#include "tests/runtime/model/reference_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
namespace utf = boost::unit_test;

namespace {

// "What is the capital of France? The capital of France is" in SmolLM2's
// vocabulary (12 tokens). The reference's top logits: 17.45 (" Paris"), 12.57,
// 11.66, 11.524, 11.521, ... -- ranks 4 and 5 are only 0.003 apart.
const std::vector<uint32_t> golden_prompt = {1780, 314, 260, 3575, 282, 4649, 47, 378, 3575, 282, 4649, 314};

// SmolLM2's ChatML template with its default system prompt around the user
// turn "What is the capital of France?", ending in the assistant header (37
// tokens). Position 0 (<|im_start|>) turns into an attention sink with massive
// activations, which is what int8 activation blocks lost. The reference's top
// two logits for the first answer token are 0.08 apart (" The" 25.33, "L" 25.24).
const std::vector<uint32_t> chat_prompt = {1,    9690, 198,  2683, 359,  253,   5356, 5646, 11173, 3365,
                                           3511, 308,  34519, 28,  7018, 411,   407,  19712, 8182, 2,
                                           198,  1,    4093, 198,  1780, 314,   260,  3575, 282,  4649,
                                           47,   2,    198,  1,    520,  9531,  198};
// The reference's greedy answer: "The capital of France".
const std::vector<uint32_t> chat_answer = {504, 3575, 282, 4649};

template <class T>
std::vector<uint32_t> top_ids(const std::vector<T>& v, size_t k) {
  std::vector<uint32_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](uint32_t a, uint32_t b) { return v[a] > v[b]; });
  idx.resize(k);
  return idx;
}

std::shared_ptr<const decoder_model> smollm2() {
  static std::shared_ptr<const decoder_model> m = [] {
    auto r = decoder_model::load(*testing::smollm2_path());
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
    return std::move(*r);
  }();
  return m;
}

const std::vector<double>& golden_reference() {
  static const std::vector<double> logits = run_reference(*testing::smollm2_path(), golden_prompt).logits;
  return logits;
}

std::vector<float> our_logits(const std::vector<uint32_t>& ids, kv_dtype dtype, bool fp32_activations = false) {
  harness h(smollm2(), 8, 16, dtype, 2, forward_options{fp32_activations});
  std::vector<uint32_t> blocks = {5, 2, 7, 0};
  return h.run(make_batch({entry(1, ids, 0, blocks)})).at(0);
}

/// Greedy continuation of one sequence: the prompt as one prefill, then one
/// decode step per further token (ties go to the lowest id, like np.argmax).
/// `first` receives the logits of the prompt's last position.
std::vector<uint32_t> greedy(harness& h, const std::vector<uint32_t>& prompt, uint32_t n, std::vector<float>& first) {
  const std::vector<uint32_t> blocks = {3, 6, 1, 4};
  std::vector<uint32_t> out;
  auto pick = [](const std::vector<float>& v) {
    return static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin());
  };
  first = h.run(make_batch({entry(1, prompt, 0, blocks)})).at(0);
  out.push_back(pick(first));
  while (out.size() < n) {
    const auto pos = static_cast<uint32_t>(prompt.size() + out.size() - 1);
    out.push_back(pick(h.run(make_batch({entry(1, {out.back()}, pos, blocks)})).at(0)));
  }
  return out;
}

std::string ids_text(const std::vector<uint32_t>& ids) {
  std::ostringstream s;
  for (uint32_t t : ids) s << t << " ";
  return s.str();
}

std::vector<uint32_t> top5(const std::vector<uint32_t>& top10) { return {top10.begin(), top10.begin() + 5}; }

struct comparison {
  double max_diff = 0.0, mean_diff = 0.0;
  std::vector<uint32_t> ours, ref; ///< top-10 ids
};

comparison compare(const std::vector<float>& got, const std::vector<double>& want, const char* label) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  comparison c;
  for (size_t i = 0; i < got.size(); ++i) {
    c.max_diff = std::max(c.max_diff, std::fabs(got[i] - want[i]));
    c.mean_diff += std::fabs(got[i] - want[i]) / double(got.size());
  }
  c.ours = top_ids(got, 10);
  c.ref = top_ids(want, 10);
  std::ostringstream tops;
  for (size_t i = 0; i < 5; ++i) {
    tops << " " << c.ours[i] << "/" << c.ref[i] << " (" << got[c.ours[i]] << "/" << want[c.ref[i]] << ")";
  }
  BOOST_TEST_MESSAGE("SmolLM2 golden, " << label << ": max |logit diff| = " << c.max_diff << ", mean "
                                        << c.mean_diff << "; top-5 ours/ref:" << tops.str());
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(smollm2_golden, *utf::precondition(&testing::model_available))

BOOST_AUTO_TEST_CASE(fp32_activation_logits_match_the_numpy_reference, *utf::precondition(&python_available)) {
  // Reference mode: the only differences left are fp32 vs fp64 rounding.
  const auto c = compare(our_logits(golden_prompt, kv_dtype::f32, true), golden_reference(), "fp32 activations, f32 KV");
  BOOST_TEST(top5(c.ours) == top5(c.ref), boost::test_tools::per_element());
  BOOST_TEST(c.max_diff < 1e-3);
}

BOOST_AUTO_TEST_CASE(serving_path_logits_match_the_numpy_reference, *utf::precondition(&python_available)) {
  // The serving configuration: int16 activation blocks, fp16 KV. Measured:
  // max |diff| 0.008, mean 0.002 (int8 blocks gave 0.71 and 0.17). That is
  // below the 0.003 gap between the reference's ranks 4 and 5 on average,
  // and the ranks come out exactly.
  const auto c = compare(our_logits(golden_prompt, kv_dtype::f16), golden_reference(), "serving path (int16 activations, f16 KV)");
  BOOST_TEST(top5(c.ours) == top5(c.ref), boost::test_tools::per_element());
  BOOST_TEST(c.max_diff < 0.05);
  BOOST_TEST(c.mean_diff < 0.01);
}

BOOST_AUTO_TEST_CASE(serving_path_answers_the_chat_prompt_like_the_reference, *utf::precondition(&python_available)) {
  const reference ref = run_reference(*testing::smollm2_path(), chat_prompt, uint32_t(chat_answer.size()));
  // Guards the test itself: the prompt and the reference are the ones above.
  BOOST_TEST_REQUIRE(ref.greedy == chat_answer, boost::test_tools::per_element());

  // Reference mode first: the forward pass itself is exact on this prompt.
  std::vector<float> first;
  {
    harness h(smollm2(), 8, 16, kv_dtype::f32, 2, forward_options{true});
    const auto got = greedy(h, chat_prompt, uint32_t(chat_answer.size()), first);
    const auto c = compare(first, ref.logits, "chat prompt, fp32 activations, f32 KV");
    BOOST_TEST(c.max_diff < 1e-3);
    BOOST_TEST(got == ref.greedy, boost::test_tools::per_element());
  }
  // The serving configuration: default forward options, fp16 KV.
  harness h(smollm2(), 8, 16, kv_dtype::f16);
  const auto got = greedy(h, chat_prompt, uint32_t(chat_answer.size()), first);
  const auto c = compare(first, ref.logits, "chat prompt, serving path");
  BOOST_TEST_MESSAGE("chat prompt, serving path greedy: " << ids_text(got) << "(reference " << ids_text(ref.greedy)
                                                          << ")");
  BOOST_TEST(got == ref.greedy, boost::test_tools::per_element());
  // Measured: max |diff| 0.012, mean 0.002 (int8 blocks: 1.67 and 0.84).
  BOOST_TEST(top5(c.ours) == top5(c.ref), boost::test_tools::per_element());
  BOOST_TEST(c.max_diff < 0.05);
  BOOST_TEST(c.mean_diff < 0.01);
}

BOOST_AUTO_TEST_CASE(prefill_then_decode_equals_full_prefill_exactly) {
  const auto want = our_logits(golden_prompt, kv_dtype::f16);
  harness h(smollm2(), 8, 16, kv_dtype::f16);
  const std::vector<uint32_t> head(golden_prompt.begin(), golden_prompt.end() - 1);
  (void)h.run(make_batch({entry(1, head, 0, {5, 2}, false)}));
  const auto got = h.run(make_batch({entry(1, {golden_prompt.back()}, uint32_t(head.size()), {5, 2})})).at(0);
  BOOST_TEST(got == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(greedy_generation_is_deterministic_across_runs_and_batch_compositions) {
  const std::vector<std::vector<uint32_t>> prompts = {
      golden_prompt, {1780, 314, 260}, {504, 3575, 282, 4649, 314, 7042, 30, 378}};
  auto generate = [&](const std::vector<size_t>& which, uint32_t first_block) {
    cpu_executor_config cfg;
    cfg.num_blocks = 64;
    cfg.threads = 2;
    auto ex = cpu_executor::create(smollm2(), cfg);
    BOOST_REQUIRE(ex);
    std::vector<engine::batch_entry> es;
    for (size_t i : which) {
      es.push_back(entry(i, prompts[i], 0, {first_block + uint32_t(i) * 3, first_block + uint32_t(i) * 3 + 1}));
    }
    std::vector<std::vector<uint32_t>> out(which.size());
    for (int step = 0; step < 16; ++step) {
      auto r = (*ex)->execute(make_batch(es));
      BOOST_REQUIRE(r);
      for (size_t j = 0; j < es.size(); ++j) {
        out[j].push_back(*r->sampled[j]);
        es[j].start_pos += uint32_t(es[j].tokens.size());
        es[j].tokens = {*r->sampled[j]};
        es[j].sample_position = es[j].start_pos + 1;
      }
    }
    return out;
  };
  const auto all = generate({0, 1, 2}, 0);
  BOOST_TEST(generate({0, 1, 2}, 20) == all);
  BOOST_TEST(generate({2, 0}, 40).at(1) == all[0]);
  BOOST_TEST(generate({1}, 7).at(0) == all[1]);
  BOOST_TEST_MESSAGE("greedy continuation of the golden prompt: " << ids_text(all[0]));
}

BOOST_AUTO_TEST_CASE(every_model_file_is_within_0_01_of_the_float64_reference, *utf::precondition(&python_available)) {
  // The target for every weight format: over 8 greedy steps of the
  // chat prompt, the engine's top-5 log-probs are within 0.01 of the float64
  // reference with the int16 activation blocks every quant format computes
  // with (fp32 KV cache: what the formats control), within 1e-4 with fp32
  // activations, and the serving path (fp16 KV) agrees on every clear greedy
  // token. The fp16 KV cache itself costs this model 0.005-0.02 (measured on
  // the llama-quantize files of every format; docs/BENCHMARKS.md), so the
  // serving path is only held to 0.03 here.
  // $DYNAMO_GOLDEN_MODELS lists the files (':'-separated; a directory means
  // its *.gguf); by default, the one SmolLM2 model.
  constexpr uint32_t steps = 8;
  constexpr double tolerance = 0.01, tie_margin = 2 * tolerance;
  std::vector<std::string> files;
  if (const char* env = std::getenv("DYNAMO_GOLDEN_MODELS"); env != nullptr && *env) {
    std::stringstream list(env);
    for (std::string item; std::getline(list, item, ':');) {
      if (std::filesystem::is_directory(item)) {
        std::vector<std::string> in_dir;
        for (const auto& e : std::filesystem::directory_iterator(item)) {
          if (e.path().extension() == ".gguf") in_dir.push_back(e.path().string());
        }
        std::sort(in_dir.begin(), in_dir.end());
        files.insert(files.end(), in_dir.begin(), in_dir.end());
      } else if (!item.empty()) {
        files.push_back(item);
      }
    }
  } else {
    files.push_back(*testing::smollm2_path());
  }
  std::vector<std::pair<std::string, std::vector<uint32_t>>> jobs;
  for (const auto& f : files) jobs.emplace_back(f, chat_prompt);
  const auto list = std::filesystem::temp_directory_path() / ("dynamo-golden-files-" + std::to_string(::getpid()));
  const auto refs = run_reference_batch(jobs, list.string(), steps, 5);
  std::filesystem::remove(list);
  for (size_t i = 0; i < files.size(); ++i) {
    BOOST_TEST_CONTEXT(files[i]) {
      auto m = decoder_model::load(files[i]);
      BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
      const auto& ref = refs[i].steps;
      const auto serving = our_steps(*m, chat_prompt, refs[i], steps, kv_dtype::f16);
      const double err_serving = worst_top_diff(serving, ref, false);
      const double err_act = worst_top_diff(our_steps(*m, chat_prompt, refs[i], steps, kv_dtype::f32), ref, false);
      const double err_exact =
          worst_top_diff(our_steps(*m, chat_prompt, refs[i], steps, kv_dtype::f32, forward_options{true}), ref, false);
      uint32_t agree = 0;
      for (uint32_t s = 0; s < steps; ++s) {
        const auto& top = ref[s].top;
        const auto argmax =
            static_cast<uint32_t>(std::max_element(serving[s].begin(), serving[s].end()) - serving[s].begin());
        if (argmax == top[0].first) {
          ++agree;
        } else if (top[0].second - top[1].second >= tie_margin) {
          BOOST_ERROR("step " << s << ": our argmax " << argmax << " vs reference " << top[0].first);
        }
      }
      BOOST_TEST_MESSAGE(std::filesystem::path(files[i]).filename().string()
                         << ": max |top-5 log-prob diff| vs the float64 reference: fp32 activations and KV "
                         << err_exact << ", int16 activation blocks and fp32 KV " << err_act
                         << ", serving path (fp16 KV) " << err_serving << "; greedy agrees on " << agree << "/"
                         << steps << " steps");
      BOOST_TEST(err_exact <= 1e-4);
      BOOST_TEST(err_act <= tolerance);
      BOOST_TEST(err_serving <= 3 * tolerance);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
