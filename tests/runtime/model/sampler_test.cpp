#include "runtime/model/sampler.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

using dynamo::model::sampler;
using dynamo::protocol::sampling_options;

namespace {

std::vector<float> random_logits(size_t n, uint32_t seed, float spread = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

sampling_options opts(float temperature, float top_p = 1.0f, int32_t top_k = 0,
                      std::optional<uint64_t> seed = std::nullopt) {
  sampling_options o;
  o.temperature = temperature;
  o.top_p = top_p;
  o.top_k = top_k;
  o.seed = seed;
  return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(sampler_unit)

BOOST_AUTO_TEST_CASE(greedy_top_k_one_and_tiny_top_p_all_pick_the_argmax) {
  sampler s(42);
  for (uint32_t trial = 0; trial < 20; ++trial) {
    const auto logits = random_logits(1000, trial);
    const uint32_t best = sampler::argmax(logits);
    BOOST_TEST(uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()) == best);
    for (uint32_t pos = 0; pos < 5; ++pos) {
      BOOST_TEST(s.sample(logits, opts(0.0f), trial, pos) == best);
      BOOST_TEST(s.sample(logits, opts(1.0f, 1.0f, 1), trial, pos) == best);
      BOOST_TEST(s.sample(logits, opts(1.5f, 1e-6f), trial, pos) == best);
      BOOST_TEST(s.sample(logits, opts(1.5f, 0.0f), trial, pos) == best);
    }
  }
}

BOOST_AUTO_TEST_CASE(greedy_breaks_ties_toward_the_lowest_id) {
  sampler s(1);
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 3.0f};
  BOOST_TEST(s.sample(logits, opts(0.0f), 0, 0) == 1u);
  BOOST_TEST(s.sample(logits, opts(1.0f, 1e-6f), 0, 0) == 1u);
}

BOOST_AUTO_TEST_CASE(seeded_draws_depend_only_on_seed_and_position) {
  const auto logits = random_logits(500, 9, 1.0f); // flat enough for top-50/top-0.9 to keep many
  sampler a(1), b(2); // different process seeds must not matter when seeded
  std::vector<uint32_t> first, second;
  for (uint32_t pos = 0; pos < 64; ++pos) first.push_back(a.sample(logits, opts(1.0f, 0.9f, 50, 1234), 1, pos));
  for (uint32_t pos = 0; pos < 64; ++pos) second.push_back(b.sample(logits, opts(1.0f, 0.9f, 50, 1234), 99, pos));
  BOOST_TEST(first == second, boost::test_tools::per_element());
  // Resuming at position 40 (after a preemption) continues the same stream.
  BOOST_TEST(b.sample(logits, opts(1.0f, 0.9f, 50, 1234), 5, 40) == first[40]);
  // Another seed gives another sequence of draws.
  std::vector<uint32_t> other;
  for (uint32_t pos = 0; pos < 64; ++pos) other.push_back(a.sample(logits, opts(1.0f, 0.9f, 50, 4321), 1, pos));
  BOOST_TEST(other != first);
}

BOOST_AUTO_TEST_CASE(unseeded_draws_differ_between_sequences_and_processes) {
  const std::vector<float> logits(64, 0.0f); // uniform: any token is possible
  sampler a(1), b(2);
  int same_seq = 0, same_process = 0;
  for (uint32_t pos = 0; pos < 64; ++pos) {
    same_seq += a.sample(logits, opts(1.0f), 1, pos) == a.sample(logits, opts(1.0f), 2, pos);
    same_process += a.sample(logits, opts(1.0f), 1, pos) == b.sample(logits, opts(1.0f), 1, pos);
  }
  BOOST_TEST(same_seq < 10);     // ~1 expected by chance (64 draws from 64 tokens)
  BOOST_TEST(same_process < 10);
}

BOOST_AUTO_TEST_CASE(draw_frequencies_follow_softmax_on_a_four_way_toy) {
  const std::vector<float> logits = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
  sampler s(3);
  const int n = 20000;
  std::vector<int> counts(4, 0);
  for (int pos = 0; pos < n; ++pos) ++counts[s.sample(logits, opts(1.0f, 1.0f, 0, 77), 0, uint32_t(pos))];
  for (int i = 0; i < 4; ++i) {
    const double p = 0.1 * (i + 1), got = double(counts[i]) / n;
    BOOST_TEST_MESSAGE("token " << i << ": " << got << " (softmax " << p << ")");
    BOOST_TEST(std::fabs(got - p) < 0.02); // ~7 standard deviations for p = 0.4
  }
}

BOOST_AUTO_TEST_CASE(temperature_top_k_and_top_p_restrict_the_support) {
  const std::vector<float> logits = {std::log(0.1f), std::log(0.2f), std::log(0.3f), std::log(0.4f)};
  sampler s(3);
  std::vector<int> k2(4, 0), p5(4, 0), cold(4, 0);
  for (uint32_t pos = 0; pos < 4000; ++pos) {
    ++k2[s.sample(logits, opts(1.0f, 1.0f, 2, 5), 0, pos)];
    ++p5[s.sample(logits, opts(1.0f, 0.5f, 0, 5), 0, pos)]; // 0.4 + 0.3 reaches 0.5
    ++cold[s.sample(logits, opts(0.05f, 1.0f, 0, 5), 0, pos)];
  }
  BOOST_TEST(k2[0] + k2[1] == 0);
  BOOST_TEST(std::fabs(k2[3] / 4000.0 - 0.4 / 0.7) < 0.04);
  BOOST_TEST(p5[0] + p5[1] == 0);
  BOOST_TEST(p5[2] > 0);
  BOOST_TEST(cold[3] > 3900); // (0.4/0.3)^20 makes token 3 nearly certain
}

BOOST_AUTO_TEST_CASE(uniform_stream_is_in_range_and_varies_with_position) {
  double lo = 1.0, hi = 0.0;
  for (uint32_t pos = 0; pos < 1000; ++pos) {
    const double u = sampler::uniform(7, pos);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    BOOST_TEST_REQUIRE((u >= 0.0 && u < 1.0));
  }
  BOOST_TEST(lo < 0.01);
  BOOST_TEST(hi > 0.99);
  BOOST_TEST(sampler::uniform(7, 3) == sampler::uniform(7, 3));
  BOOST_TEST(sampler::uniform(7, 3) != sampler::uniform(8, 3));
}


// -- logits processing, min_p and logprobs (issue 14) -------------------------

namespace {

using dynamo::kernels::logit_edit;
using dynamo::kernels::logit_seen;
using dynamo::kernels::logit_suppressed;

/// vLLM's processing written out directly: bias, mask, repetition over seen
/// tokens (divide positive, multiply the rest), then frequency x count + presence.
std::vector<double> reference_processed(const std::vector<float>& logits, const std::vector<logit_edit>& edits,
                                        const sampling_options& o) {
  std::vector<double> out(logits.begin(), logits.end());
  for (const auto& e : edits) {
    float l = logits[e.token];
    if (e.flags & logit_suppressed) {
      out[e.token] = -INFINITY;
      continue;
    }
    l += e.bias;
    if ((e.flags & logit_seen) && o.repetition_penalty != 1.0f) l = l > 0 ? l / o.repetition_penalty : l * o.repetition_penalty;
    if (e.count > 0) l -= o.frequency_penalty * static_cast<float>(e.count) + o.presence_penalty;
    out[e.token] = l;
  }
  return out;
}

/// log-softmax(x / t) in long double.
std::vector<double> reference_log_softmax(const std::vector<double>& x, double t) {
  long double mx = -INFINITY;
  for (double v : x) mx = std::max<long double>(mx, v);
  long double z = 0;
  for (double v : x) z += std::exp((static_cast<long double>(v) - mx) / t);
  std::vector<double> out;
  for (double v : x) out.push_back(static_cast<double>((static_cast<long double>(v) - mx) / t - std::log(z)));
  return out;
}

sampling_options full(float temperature, float presence, float frequency, float repetition, uint32_t logprobs,
                      uint64_t seed = 5) {
  sampling_options o = opts(temperature, 1.0f, 0, seed);
  o.presence_penalty = presence;
  o.frequency_penalty = frequency;
  o.repetition_penalty = repetition;
  o.logprobs = logprobs;
  return o;
}

} // namespace

BOOST_AUTO_TEST_CASE(logprobs_are_the_double_log_softmax_of_the_processed_logits) {
  const auto logits = random_logits(3000, 41, 4.0f);
  std::vector<logit_edit> edits;
  for (uint32_t t = 3; t < 3000; t += 37)
    edits.push_back({t, t % 2 ? 1.5f : -3.0f, t % 4, logit_seen | (t % 13 == 0 ? logit_suppressed : 0u)});
  sampler s(1);
  for (const float temp : {0.0f, 0.6f, 1.0f, 1.7f}) {
    const auto o = full(temp, 0.4f, 0.9f, 1.25f, 20);
    const auto got = s.sample(logits, o, edits, 3, 9);
    BOOST_REQUIRE(got.logprobs);
    const auto ref = reference_log_softmax(reference_processed(logits, edits, o), temp > 0 ? temp : 1.0);
    BOOST_TEST(std::abs(got.logprobs->logprob - ref[got.token]) < 1e-6);
    // The 20 most likely of the processed distribution, most likely first, ties by id.
    std::vector<uint32_t> order(ref.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return ref[a] > ref[b]; });
    BOOST_REQUIRE_EQUAL(got.logprobs->top.size(), 20u);
    for (size_t i = 0; i < 20; ++i) {
      BOOST_TEST(got.logprobs->top[i].token == order[i]);
      BOOST_TEST(std::abs(got.logprobs->top[i].logprob - ref[order[i]]) < 1e-6);
    }
    if (temp == 0.0f) BOOST_TEST(got.token == order[0]); // greedy on the processed logits
  }
}

BOOST_AUTO_TEST_CASE(penalties_follow_vllm_on_a_small_row) {
  // Token 0: 2.0 seen once; token 1: -1.0 seen twice; token 2: 1.9 unseen.
  const std::vector<float> logits = {2.0f, -1.0f, 1.9f, 0.0f};
  const std::vector<logit_edit> edits = {{0, 0.0f, 1, logit_seen}, {1, 0.0f, 2, logit_seen}};
  sampler s(1);
  auto o = full(0.0f, 0.5f, 0.25f, 2.0f, 4);
  auto r = s.sample(logits, o, edits, 0, 0);
  // 0: 2 / 2 - (0.25 + 0.5) = 0.25; 1: -1 x 2 - (0.5 + 0.5) = -3; 2 is now the largest.
  BOOST_TEST(r.token == 2u);
  const auto ref = reference_log_softmax({0.25, -3.0, 1.9, 0.0}, 1.0);
  BOOST_REQUIRE_EQUAL(r.logprobs->top.size(), 4u);
  BOOST_TEST(r.logprobs->top[1].token == 0u);
  BOOST_TEST(std::abs(r.logprobs->top[1].logprob - ref[0]) < 1e-6);
  BOOST_TEST(r.logprobs->top[3].token == 1u);
  BOOST_TEST(std::abs(r.logprobs->top[3].logprob - ref[1]) < 1e-6);
}

BOOST_AUTO_TEST_CASE(logit_bias_forces_and_a_masked_token_is_never_drawn) {
  const auto logits = random_logits(500, 3, 2.0f);
  sampler s(9);
  const std::vector<logit_edit> force = {{123, 100.0f, 0, 0}};
  const std::vector<logit_edit> mask = {{sampler::argmax(logits), 0.0f, 0, logit_suppressed}};
  for (uint32_t pos = 0; pos < 50; ++pos) {
    BOOST_TEST(s.sample(logits, opts(1.0f, 1.0f, 0, pos), force, 0, pos).token == 123u);
    BOOST_TEST(s.sample(logits, opts(0.0f), mask, 0, pos).token != sampler::argmax(logits));
  }
  auto masked = s.logprobs(std::vector<float>{1.0f, -INFINITY}, 1.0f, 1, 0);
  BOOST_TEST(std::isinf(masked.logprob));
}

BOOST_AUTO_TEST_CASE(min_p_keeps_only_tokens_near_the_top_one) {
  const auto logits = random_logits(400, 17, 2.0f);
  const float mx = *std::max_element(logits.begin(), logits.end());
  sampler s(3);
  for (const float min_p : {0.05f, 0.3f}) {
    auto o = opts(1.3f, 1.0f, 0, 0);
    o.min_p = min_p;
    std::set<uint32_t> drawn;
    for (uint32_t seed = 0; seed < 300; ++seed) {
      o.seed = seed;
      const uint32_t t = s.sample(logits, o, seed, 4);
      drawn.insert(t);
      // p_t / p_max = exp((l_t - max) / T) must reach min_p.
      BOOST_TEST(std::exp((static_cast<double>(logits[t]) - mx) / 1.3) >= min_p - 1e-12);
    }
    BOOST_TEST(drawn.size() > 1u); // still a sample, not greedy
  }
  auto o = opts(1.5f, 1.0f, 0, 7);
  o.min_p = 1.0f;
  for (uint32_t pos = 0; pos < 20; ++pos) BOOST_TEST(s.sample(logits, o, 0, pos) == sampler::argmax(logits));
}

BOOST_AUTO_TEST_SUITE_END()
