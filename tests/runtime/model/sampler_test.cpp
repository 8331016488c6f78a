#include "runtime/model/sampler.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
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

BOOST_AUTO_TEST_SUITE_END()
