// Every architecture x weight format against the independent float64 numpy
// reference (decoder_ref.py): tiny random-weight GGUF files written by
// random_model, 32 greedy steps each, the engine teacher-forced on the
// reference's tokens. Per step, over the reference's top-5 log-probs:
//  - with an fp32 KV cache, the engine matches the exact reference within
//    1e-4 (float weights: only fp32 arithmetic is left) or 2.5e-3 (quantized
//    weights: the int16 activation blocks);
//  - on the serving path (fp16 KV) it matches the reference's fp16-KV variant
//    within 0.01, and its argmax is the reference's token wherever the
//    reference's margin is clear (fp32-vs-fp64 differences still flip some
//    fp16 roundings, so this is not tighter than the next check);
//  - on the serving path it is within 0.01 of the exact reference (the
//    issue's target) for dense models. MoE models are reported, not held to
//    it: KV rounding may flip a near-tied expert choice, in any engine.
#include "runtime/model/decoder_model.hpp"
#include "runtime/model/random_model.hpp"
#include "tests/runtime/model/model_test_util.hpp"
#include "tests/runtime/model/reference_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
namespace utf = boost::unit_test;

namespace {

constexpr uint32_t steps = 32;
constexpr double tolerance = 0.01;
/// Steps whose reference margin (top-1 minus top-2 log-prob) is below this
/// are near-ties: either token is a correct greedy answer there.
constexpr double tie_margin = 2 * tolerance;
const std::vector<uint32_t> prompt = {1, 17, 250, 3, 99, 42, 42, 7, 128, 200};

random_model_options base_shape(architecture arch) {
  random_model_options o = golden_shape(arch);
  o.name = "arch-golden";
  return o;
}

struct arch_case {
  std::string name;
  random_model_options options;
};

std::vector<arch_case> architectures() {
  std::vector<arch_case> cases;
  {
    auto o = base_shape(architecture::llama);
    o.tied_embeddings = true;
    cases.push_back({"llama", o});
  }
  {
    auto o = base_shape(architecture::llama); // Llama 3.1: rope_freqs, untied head
    o.llama3_rope_freqs = true;
    o.rope_base = 500000.0f;
    cases.push_back({"llama3", o});
  }
  {
    auto o = base_shape(architecture::llama); // Mixtral layout
    o.n_expert = 8;
    o.n_expert_used = 2;
    o.n_ff = 256;
    cases.push_back({"mixtral", o});
  }
  {
    auto o = base_shape(architecture::qwen2);
    o.tied_embeddings = true;
    o.rope_base = 1000000.0f;
    cases.push_back({"qwen2", o});
  }
  {
    auto o = base_shape(architecture::qwen2moe);
    o.n_expert = 8;
    o.n_expert_used = 4;
    o.n_ff_expert = 256;
    o.n_ff_shared = 512;
    cases.push_back({"qwen2moe", o});
  }
  {
    auto o = base_shape(architecture::qwen3); // head_dim 64 with 8 heads: q width 512 != n_embd
    o.n_head = 8;
    o.head_dim = 64;
    o.tied_embeddings = true;
    cases.push_back({"qwen3", o});
  }
  {
    auto o = base_shape(architecture::qwen3moe);
    o.n_head = 8;
    o.head_dim = 64;
    o.n_expert = 8;
    o.n_expert_used = 2;
    o.n_ff_expert = 256;
    cases.push_back({"qwen3moe", o});
  }
  return cases;
}

/// Every type the kernels compute with (kernels/reference/tensor_type.hpp).
const std::vector<gguf::tensor_type>& formats() {
  static const std::vector<gguf::tensor_type> all = [] {
    std::vector<gguf::tensor_type> v;
    for (uint32_t id = 0; id < 64; ++id)
      if (kernels::ref::is_computed(static_cast<gguf::tensor_type>(id))) v.push_back(static_cast<gguf::tensor_type>(id));
    return v;
  }();
  return all;
}

} // namespace

BOOST_AUTO_TEST_SUITE(architecture_golden, *utf::precondition(&python_available))

BOOST_AUTO_TEST_CASE(every_architecture_and_format_matches_the_float64_reference) {
  temp_dir dir("dynamo-arch-golden");
  struct job {
    std::string label, path;
    bool float_weights, moe;
  };
  std::vector<job> jobs;
  std::vector<std::pair<std::string, std::vector<uint32_t>>> ref_jobs;
  for (const auto& a : architectures()) {
    for (auto type : formats()) {
      auto o = a.options;
      o.type = type;
      o.embd_type = type; // the format under test also holds the embeddings and the LM head
      const std::string label = a.name + "/" + kernels::ref::type_name(type);
      const std::string path = (dir.path / (a.name + "-" + kernels::ref::type_name(type) + ".gguf")).string();
      auto written = write_random_model(o, path);
      BOOST_REQUIRE_MESSAGE(written, label << ": " << (written ? "" : describe(written.error())));
      const bool float_weights = kernels::ref::geometry_of(type)->block_elems == 1;
      jobs.push_back({label, path, float_weights, o.n_expert > 0});
      ref_jobs.emplace_back(path, prompt);
    }
  }
  const auto refs = run_reference_batch(ref_jobs, (dir.path / "jobs.txt").string(), steps, 5);
  for (size_t i = 0; i < jobs.size(); ++i) {
    BOOST_TEST_CONTEXT(jobs[i].label) {
      auto m = decoder_model::load(jobs[i].path);
      BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
      const reference_run& ref = refs[i];
      BOOST_REQUIRE_EQUAL(ref.steps.size(), steps);
      const auto serving = our_steps(*m, prompt, ref, steps, kv_dtype::f16);
      const auto exact_kv = our_steps(*m, prompt, ref, steps, kv_dtype::f32);
      const double exact_err = worst_top_diff(exact_kv, ref.steps, false);
      const double serving_err = worst_top_diff(serving, ref.steps, true);
      const double target_err = worst_top_diff(serving, ref.steps, false);
      uint32_t agree = 0, ties = 0;
      for (uint32_t s = 0; s < steps; ++s) {
        const auto argmax =
            static_cast<uint32_t>(std::max_element(serving[s].begin(), serving[s].end()) - serving[s].begin());
        if (argmax == ref.steps[s].top_kv16[0].first) {
          ++agree;
        } else if (ref.steps[s].top_kv16[0].second - ref.steps[s].top_kv16[1].second < tie_margin) {
          ++ties;
        } else {
          BOOST_ERROR("step " << s << ": our argmax " << argmax << " vs reference " << ref.steps[s].top_kv16[0].first);
        }
      }
      BOOST_TEST_MESSAGE(jobs[i].label << ": max |top-5 log-prob diff| fp32 KV " << exact_err << ", fp16 KV "
                                       << serving_err << " (vs the exact reference " << target_err
                                       << "); greedy agrees on " << agree << "/" << steps << " steps (" << ties
                                       << " near-ties)");
      BOOST_TEST(exact_err <= (jobs[i].float_weights ? 1e-4 : 2.5e-3));
      BOOST_TEST(serving_err <= tolerance);
      if (!jobs[i].moe) BOOST_TEST(target_err <= tolerance);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
