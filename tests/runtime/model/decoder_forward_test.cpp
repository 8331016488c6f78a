#include "runtime/model/decoder_forward.hpp"
#include "runtime/model/sampler.hpp"
#include "tests/runtime/model/model_test_util.hpp"
#include "tests/runtime/model/naive_llama.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;

namespace {

const std::vector<uint32_t> prompt = {1, 17, 250, 3, 99, 42, 42, 7, 128, 200, 5};

double max_abs_diff(const std::vector<float>& a, const std::vector<double>& b) {
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

} // namespace

BOOST_AUTO_TEST_SUITE(decoder_forward_unit)

BOOST_AUTO_TEST_CASE(float_weights_match_an_independent_naive_forward_closely) {
  random_model_options o = test_model_options();
  o.type = gguf::tensor_type::f32;
  o.embd_type = gguf::tensor_type::f32;
  auto m = tiny_model(o);
  harness h(m, 8);
  const auto got = h.run(make_batch({entry(1, prompt, 0, {5, 2, 7})}));
  const naive_llama ref(m->file(), m->config());
  const auto want = ref.last_logits(prompt);
  const double diff = max_abs_diff(got.at(0), want);
  BOOST_TEST_MESSAGE("f32 weights: max |logit diff| = " << diff << " (max |logit| " << max_abs(want) << ")");
  BOOST_TEST(diff < 1e-4);
}

BOOST_AUTO_TEST_CASE(quantized_weights_match_the_naive_forward_within_activation_rounding) {
  for (auto t : {gguf::tensor_type::q4_1, gguf::tensor_type::q4_0, gguf::tensor_type::q8_0}) {
    random_model_options o = test_model_options();
    o.type = t;
    o.tied_embeddings = false;
    auto m = tiny_model(o);
    harness h(m, 8);
    const auto got = h.run(make_batch({entry(1, prompt, 0, {0, 1, 2})}));
    const auto want = naive_llama(m->file(), m->config()).last_logits(prompt);
    const double diff = max_abs_diff(got.at(0), want);
    BOOST_TEST_MESSAGE(kernels::ref::type_name(t) << " weights: max |logit diff| = " << diff << " (max |logit| "
                                           << max_abs(want) << ")");
    // Activations are rounded to int8 per 32-block before each quantized matmul.
    BOOST_TEST(diff < 0.03 * max_abs(want));
    const auto top = std::max_element(want.begin(), want.end()) - want.begin();
    BOOST_TEST(sampler::argmax(got.at(0)) == top);
  }
}

BOOST_AUTO_TEST_CASE(prefill_then_decode_equals_one_full_prefill_exactly) {
  auto m = tiny_model();
  harness full(m, 8), split(m, 8);
  const auto want = full.run(make_batch({entry(1, prompt, 0, {3, 1, 6})}));
  const std::vector<uint32_t> head(prompt.begin(), prompt.end() - 1);
  const auto none = split.run(make_batch({entry(1, head, 0, {3, 1, 6}, false)}));
  BOOST_TEST(none.empty());
  const auto got = split.run(make_batch({entry(1, {prompt.back()}, uint32_t(head.size()), {3, 1, 6})}));
  // Every kernel computes a token independently of the others in its batch.
  BOOST_TEST(got.at(0) == want.at(0), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(chunked_prefill_equals_one_full_prefill_exactly) {
  auto m = tiny_model();
  harness full(m, 8), chunked(m, 8);
  const auto want = full.run(make_batch({entry(1, prompt, 0, {0, 1, 2})}));
  (void)chunked.run(make_batch({entry(1, {prompt.begin(), prompt.begin() + 5}, 0, {0, 1, 2}, false)}));
  (void)chunked.run(make_batch({entry(1, {prompt.begin() + 5, prompt.begin() + 9}, 5, {0, 1, 2}, false)}));
  const auto got = chunked.run(make_batch({entry(1, {prompt.begin() + 9, prompt.end()}, 9, {0, 1, 2})}));
  BOOST_TEST(got.at(0) == want.at(0), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(batch_of_three_sequences_equals_three_separate_runs) {
  auto m = tiny_model();
  const std::vector<uint32_t> a = {4, 8, 15, 16, 23, 42}, b = {100, 101}, c = {7, 7, 7, 7, 7, 7, 7, 7, 9};
  // b gets a cached head first so that its step in the batch is a decode.
  harness together(m, 16);
  (void)together.run(make_batch({entry(2, {b[0]}, 0, {11}, false)}));
  const auto rows = together.run(
      make_batch({entry(2, {b[1]}, 1, {11}), entry(1, a, 0, {9, 2}), entry(3, c, 0, {0, 14, 6})}));
  BOOST_REQUIRE_EQUAL(rows.size(), 3u);
  harness alone(m, 16);
  const auto ra = alone.run(make_batch({entry(1, a, 0, {1, 3})}));
  const auto rb = alone.run(make_batch({entry(2, b, 0, {4})}));
  const auto rc = alone.run(make_batch({entry(3, c, 0, {5, 6, 7})}));
  BOOST_TEST(rows[0] == rb.at(0), boost::test_tools::per_element());
  BOOST_TEST(rows[1] == ra.at(0), boost::test_tools::per_element());
  BOOST_TEST(rows[2] == rc.at(0), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(logit_rows_follow_entries_and_skip_unsampled_ones) {
  auto m = tiny_model();
  harness h(m, 16);
  auto r = h.fwd.run(make_batch({entry(1, {1, 2}, 0, {0}, false), entry(2, {3}, 0, {1}), entry(3, {4}, 0, {2})}),
                     *h.cache);
  BOOST_REQUIRE(r);
  BOOST_TEST(r->entry.size() == 2u);
  BOOST_TEST(r->entry[0] == 1u);
  BOOST_TEST(r->entry[1] == 2u);
  BOOST_TEST(r->data.size() == 2u * m->config().n_vocab);
  auto empty = h.fwd.run(make_batch({}), *h.cache);
  BOOST_REQUIRE(empty);
  BOOST_TEST(empty->entry.empty());
}

BOOST_AUTO_TEST_CASE(fp16_kv_cache_stays_close_to_the_fp32_reference) {
  // Float weights, so that fp16 rounding of K and V is the only approximation.
  random_model_options o = test_model_options();
  o.type = gguf::tensor_type::f32;
  o.embd_type = gguf::tensor_type::f32;
  auto m = tiny_model(o);
  harness h(m, 8, 4, kv_dtype::f16);
  const auto got = h.run(make_batch({entry(1, prompt, 0, {0, 1, 2})}));
  const auto want = naive_llama(m->file(), m->config()).last_logits(prompt);
  const double diff = max_abs_diff(got.at(0), want);
  BOOST_TEST_MESSAGE("fp16 KV, f32 weights: max |logit diff| = " << diff << " (max |logit| " << max_abs(want) << ")");
  BOOST_TEST(diff < 2e-3 * max_abs(want));
}

BOOST_AUTO_TEST_CASE(malformed_batches_are_rejected_with_the_sequence_named) {
  auto m = tiny_model(); // vocab 300, context 256
  harness h(m, 4);
  auto fails = [&](const engine::batch& b, const std::string& needle) {
    auto r = h.fwd.run(b, *h.cache);
    BOOST_REQUIRE(!r);
    BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
    BOOST_TEST(message_of(r.error()).find(needle) != std::string::npos, message_of(r.error()));
  };
  fails(make_batch({entry(7, {300}, 0, {0})}), "sequence 7: token id 300");
  fails(make_batch({entry(7, {1, 2, 3, 4, 5}, 0, {0})}), "block table has 1 blocks, 2 needed");
  fails(make_batch({entry(7, {1}, 0, {4})}), "block id 4 outside the pool of 4");
  fails(make_batch({entry(7, {1}, 256, {0})}), "exceed the context length 256");
  fails(make_batch({entry(7, {}, 0, {0})}), "no tokens");
  auto b = make_batch({entry(7, {1}, 0, {0})});
  b.num_tokens = 3;
  fails(b, "num_tokens 3");
}

BOOST_AUTO_TEST_SUITE_END()
