#include "kernels/reference/rms_norm.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

BOOST_AUTO_TEST_SUITE(rms_norm_op)

BOOST_AUTO_TEST_CASE(matches_naive_for_odd_sizes) {
  for (uint32_t n : {1u, 7u, 576u, 1001u}) {
    const uint32_t tokens = 3;
    auto x = test::random_floats(tokens * n, n, -3.0f, 3.0f);
    const auto w = test::random_floats(n, n + 1);
    std::vector<float> out(tokens * n);
    rms_norm({x.data(), n, nullptr, 0, w.data(), out.data(), n, tokens, n, 1e-5f});
    for (uint32_t t = 0; t < tokens; ++t) {
      double ss = 0.0;
      for (uint32_t i = 0; i < n; ++i) ss += double(x[t * n + i]) * x[t * n + i];
      const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
      for (uint32_t i = 0; i < n; ++i) {
        const double want = x[t * n + i] * inv * w[i];
        BOOST_TEST_REQUIRE(std::fabs(out[t * n + i] - want) <= 1e-6 * (1.0 + std::fabs(want)));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(fused_residual_add_updates_x_then_normalizes) {
  const uint32_t n = 33, tokens = 2;
  auto x = test::random_floats(tokens * n, 1);
  const auto r = test::random_floats(tokens * n, 2);
  const auto w = test::random_floats(n, 3);
  auto sum = x;
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += r[i];
  std::vector<float> fused(tokens * n), plain(tokens * n);
  rms_norm({x.data(), n, r.data(), n, w.data(), fused.data(), n, tokens, n, 1e-5f});
  BOOST_TEST(x == sum, boost::test_tools::per_element());
  rms_norm({sum.data(), n, nullptr, 0, w.data(), plain.data(), n, tokens, n, 1e-5f});
  BOOST_TEST(fused == plain, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
