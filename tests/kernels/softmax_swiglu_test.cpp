#include "kernels/reference/softmax.hpp"
#include "kernels/reference/swiglu.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

BOOST_AUTO_TEST_SUITE(softmax_op)

BOOST_AUTO_TEST_CASE(matches_naive_and_is_stable_for_large_logits) {
  for (uint32_t n : {1u, 5u, 1000u}) {
    auto x = test::random_floats(n, n, 500.0f, 520.0f); // exp would overflow unshifted
    const auto orig = x;
    softmax(x.data(), n);
    double m = orig[0];
    for (float v : orig) m = std::max(m, double(v));
    double z = 0.0;
    for (float v : orig) z += std::exp(v - m);
    double total = 0.0;
    for (uint32_t i = 0; i < n; ++i) {
      BOOST_TEST_REQUIRE(std::fabs(x[i] - std::exp(orig[i] - m) / z) < 1e-6);
      total += x[i];
    }
    BOOST_TEST(std::fabs(total - 1.0) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(masked_entries_get_zero) {
  const float inf = std::numeric_limits<float>::infinity();
  float x[] = {1.0f, -inf, 1.0f, -inf};
  softmax(x, 4);
  BOOST_TEST(x[0] == 0.5f);
  BOOST_TEST(x[1] == 0.0f);
  BOOST_TEST(x[2] == 0.5f);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(swiglu_op)

BOOST_AUTO_TEST_CASE(silu_of_gate_times_up_with_strided_fused_input) {
  const uint32_t n = 13, tokens = 3;
  const auto gu = test::random_floats(tokens * 2 * n, 4, -6.0f, 6.0f); // [gate | up] per token
  std::vector<float> out(tokens * n);
  swiglu({gu.data(), gu.data() + n, 2 * n, out.data(), n, tokens, n});
  for (uint32_t t = 0; t < tokens; ++t) {
    for (uint32_t i = 0; i < n; ++i) {
      const double g = gu[t * 2 * n + i], u = gu[t * 2 * n + n + i];
      const double want = g / (1.0 + std::exp(-g)) * u;
      BOOST_TEST_REQUIRE(std::fabs(out[t * n + i] - want) < 1e-5);
    }
  }
}

// Over the whole range of the gate, including e^-g past float's range (g <
// -88.72: e^-g = inf, silu = -0 where the exact one is below 3e-37, as with
// std::exp) and in its subnormals (g > 87.3): silu(g) * 1 within 4 ulp of the
// double result; each value the same bits at every position of a 37-element
// row (full vectors and the padded tail of every path) and on every path.
BOOST_AUTO_TEST_CASE(silu_is_within_4_ulp_over_the_whole_range_at_every_position_and_path) {
  const uint32_t n = 37;
  std::vector<float> gu(2 * n);
  for (float g = -120.0f; g <= 120.0f; g += 0.0625f) {
    for (uint32_t i = 0; i < n; ++i) {
      gu[i] = g;
      gu[n + i] = 1.0f;
    }
    std::vector<float> first;
    for (const cpu_isa isa : test::runnable_isas()) {
      test::isa_guard guard(isa);
      std::vector<float> out(n, NAN);
      swiglu({gu.data(), gu.data() + n, 2 * n, out.data(), n, 1, n});
      if (first.empty()) first = out;
      for (uint32_t i = 0; i < n; ++i) {
        BOOST_TEST_REQUIRE(std::memcmp(&out[i], &first[0], sizeof(float)) == 0,
                           "g " << g << " isa " << to_string(isa) << " position " << i);
      }
    }
    const double want = double(g) / (1.0 + std::exp(-double(g)));
    BOOST_TEST_REQUIRE(std::fabs(first[0] - want) <= 4 * std::numeric_limits<float>::epsilon() * std::fabs(want) + 1e-36,
                       "g " << g << ": " << first[0] << " vs " << want);
  }
  const float inf = std::numeric_limits<float>::infinity();
  float special[] = {inf, -inf, NAN, 1.0f, 1.0f, 1.0f}, out[3];
  swiglu({special, special + 3, 6, out, 3, 1, 3});
  BOOST_TEST(out[0] == inf);
  BOOST_TEST(std::isnan(out[1])); // -inf / (1 + e^inf), as with std::exp
  BOOST_TEST(std::isnan(out[2]));
}

BOOST_AUTO_TEST_SUITE_END()
