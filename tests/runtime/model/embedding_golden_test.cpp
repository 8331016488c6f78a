// Embeddings (an embed entry's final-norm hidden state, /v1/embeddings)
// against the independent float64 numpy reference (decoder_ref.py --hidden):
// tiny random-weight GGUF files of dense and MoE architectures in a float and
// two quantized formats, the prompt computed in two chunks (the second one
// embeds) with an fp32 KV cache. Both sides L2-normalized, as the frontend
// returns them.
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/random_model.hpp"
#include "tests/runtime/model/model_test_util.hpp"
#include "tests/runtime/model/reference_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
namespace utf = boost::unit_test;

namespace {

template <class T>
std::vector<double> normalized(const std::vector<T>& v) {
  double sum = 0.0;
  for (T x : v) sum += double(x) * double(x);
  std::vector<double> out;
  for (T x : v) out.push_back(double(x) / std::sqrt(sum));
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(embedding_golden, *utf::precondition(&python_available))

BOOST_AUTO_TEST_CASE(the_embedding_is_the_float64_references_last_hidden_state) {
  temp_dir dir("dynamo-embed-golden");
  const std::vector<uint32_t>& prompt = tiny_golden_prompt;
  for (const golden_arch& a : {golden_arch{"llama", architecture::llama, 0}, golden_arch{"qwen3", architecture::qwen3, 0},
                             golden_arch{"qwen3moe", architecture::qwen3moe, 8}}) {
    for (auto type : {gguf::tensor_type::f32, gguf::tensor_type::q8_0, gguf::tensor_type::q4_k}) {
      const std::string label = std::string(a.name) + "/" + kernels::ref::type_name(type);
      BOOST_TEST_CONTEXT(label) {
        random_model_options o = golden_shape(a.arch, a.n_expert);
        o.type = type;
        o.embd_type = type;
        const std::string path = (dir.path / (label.substr(0, label.find('/')) + "-" +
                                              kernels::ref::type_name(type) + ".gguf")).string();
        auto written = write_random_model(o, path);
        BOOST_REQUIRE_MESSAGE(written, (written ? "" : describe(written.error())));
        auto m = decoder_model::load(path);
        BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
        const auto ref = normalized(run_reference_hidden(path, prompt));

        harness h(*m, 16, 4, kv_dtype::f32);
        const std::vector<uint32_t> blocks = {7, 2, 11};
        const uint32_t split = 6; // chunked: the second chunk computes the last token and embeds
        auto first = entry(1, {prompt.begin(), prompt.begin() + split}, 0, blocks, /*sample=*/false);
        BOOST_REQUIRE(h.run(make_batch({first})).empty());
        auto last = entry(1, {prompt.begin() + split, prompt.end()}, split, blocks, /*sample=*/false);
        last.embed = true;
        auto r = h.fwd.run(make_batch({last}), *h.cache);
        BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
        BOOST_REQUIRE(r->entry.empty()); // nothing sampled
        BOOST_REQUIRE_EQUAL(r->hidden_entry.size(), 1u);
        BOOST_REQUIRE_EQUAL(r->hidden_entry[0], 0u);
        const auto row = r->hidden_row(0);
        const auto ours = normalized(std::vector<float>(row.begin(), row.end()));
        BOOST_REQUIRE_EQUAL(ours.size(), ref.size());
        double worst = 0.0, dot = 0.0;
        for (size_t i = 0; i < ours.size(); ++i) {
          worst = std::max(worst, std::fabs(ours[i] - ref[i]));
          dot += ours[i] * ref[i];
        }
        BOOST_TEST_MESSAGE(label << ": max |normalized embedding diff| " << worst << ", cosine " << dot);
        const bool float_weights = kernels::ref::geometry_of(type)->block_elems == 1;
        BOOST_TEST(worst <= (float_weights ? 1e-6 : 1e-4)); // measured: 6.6e-8, 1.6e-5
        BOOST_TEST(dot >= (float_weights ? 1 - 1e-9 : 1 - 1e-6));
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
