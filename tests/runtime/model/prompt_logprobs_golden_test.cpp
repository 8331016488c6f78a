// Prompt logprobs (sampling.prompt_logprobs, /v1/completions echo) against
// the independent float64 numpy reference (decoder_ref.py --prompt-logprobs):
// an engine_core over the CPU executor computes the prompt in chunks of 4
// tokens after a request that put the same prompt in the prefix cache, so the
// logprobs are gathered across chunks and the cache is bypassed. Dense and
// MoE architectures, a float and a quantized format, fp32 KV and activations.
#include "runtime/engine/engine_core.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/random_model.hpp"
#include "tests/runtime/model/model_test_util.hpp"
#include "tests/runtime/model/reference_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
namespace utf = boost::unit_test;

namespace {

protocol::preprocessed_request greedy_request(std::string id, const std::vector<uint32_t>& prompt,
                                              std::optional<uint32_t> prompt_logprobs) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.token_ids = prompt;
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  r.stop.max_tokens = 2;
  r.sampling.temperature = 0.0f;
  r.sampling.prompt_logprobs = prompt_logprobs;
  return r;
}

/// Steps `core` until idle; the first chunk of each request.
std::map<std::string, protocol::engine_output> first_chunks(engine::engine_core& core) {
  std::map<std::string, protocol::engine_output> out;
  for (int i = 0; i < 100 && core.has_work(); ++i) {
    auto r = core.step();
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
    for (auto& o : r->outputs) {
      BOOST_REQUIRE_MESSAGE(o.output.finish != protocol::finish_reason::error, o.output.error);
      out.try_emplace(o.request_id, o.output);
    }
  }
  BOOST_REQUIRE(!core.has_work());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(prompt_logprobs_golden, *utf::precondition(&python_available))

BOOST_AUTO_TEST_CASE(prompt_logprobs_are_the_float64_references_over_chunks_and_a_cached_prefix) {
  temp_dir dir("dynamo-prompt-logprobs-golden");
  const std::vector<uint32_t>& prompt = tiny_golden_prompt;
  for (const golden_arch& a : {golden_arch{"llama", architecture::llama, 0}, golden_arch{"qwen3moe", architecture::qwen3moe, 8}}) {
    for (auto type : {gguf::tensor_type::f32, gguf::tensor_type::q8_0}) {
      const std::string label = std::string(a.name) + "-" + kernels::ref::type_name(type);
      BOOST_TEST_CONTEXT(label) {
        random_model_options o = golden_shape(a.arch, a.n_expert);
        o.type = type;
        o.embd_type = type;
        const std::string path = (dir.path / (label + ".gguf")).string();
        auto written = write_random_model(o, path);
        BOOST_REQUIRE_MESSAGE(written, (written ? "" : describe(written.error())));
        auto m = decoder_model::load(path);
        BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
        const std::vector<double> ref = run_reference_prompt_logprobs(path, prompt);

        cpu_executor_config cfg;
        cfg.block_size = 4;
        cfg.num_blocks = 32;
        cfg.kv_type = kv_dtype::f32;
        cfg.threads = 2;
        cfg.process_seed = 1;
        cfg.fp32_activations = true;
        auto ex = cpu_executor::create(*m, cfg);
        BOOST_REQUIRE_MESSAGE(ex, (ex ? "" : describe(ex.error())));
        engine::engine_config ec;
        ec.max_num_batched_tokens = 4; // the 11-token prompt in 3 chunks
        auto core = engine::engine_core::create(std::move(*ex), ec);
        BOOST_REQUIRE_MESSAGE(core, (core ? "" : describe(core.error())));
        BOOST_REQUIRE((*core)->add_request(greedy_request("warm", prompt, std::nullopt)));
        (void)first_chunks(**core);
        BOOST_REQUIRE((*core)->add_request(greedy_request("scored", prompt, 3)));
        const protocol::engine_output first = first_chunks(**core).at("scored");

        BOOST_TEST(first.cached_tokens == 0u); // the cached prefix would have no logits
        BOOST_REQUIRE_EQUAL(first.prompt_logprobs.size(), ref.size());
        double worst = 0.0;
        for (size_t p = 0; p < ref.size(); ++p) {
          const protocol::token_logprob& lp = first.prompt_logprobs[p];
          worst = std::max(worst, std::fabs(double(lp.logprob) - ref[p]));
          BOOST_REQUIRE_EQUAL(lp.top.size(), 3u);
          BOOST_TEST(lp.top[0].logprob >= lp.top[1].logprob);
          BOOST_TEST(lp.top[1].logprob >= lp.top[2].logprob);
          BOOST_TEST(lp.top[0].logprob >= lp.logprob);
          for (const protocol::top_logprob& t : lp.top) // an alternative that is the target has its value
            if (t.token == prompt[p + 1]) BOOST_TEST(t.logprob == lp.logprob);
        }
        BOOST_TEST_MESSAGE(label << ": max |prompt logprob - float64 reference| " << worst);
        BOOST_TEST(worst <= 1e-5); // measured: at most 9.8e-7
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
