#include "kernels/reference/moe.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

using namespace dynamo::kernels::ref;

BOOST_AUTO_TEST_SUITE(moe_op)

BOOST_AUTO_TEST_CASE(routes_each_token_to_its_top_k_experts_with_softmax_weights) {
  // Token 0: experts 2 > 0 > 3 > 1; token 1: expert 1 and a tie between 0 and 3.
  const std::vector<float> logits = {1.0f, -1.0f, 3.0f, 0.5f, /**/ 0.0f, 2.0f, -5.0f, 0.0f};
  std::vector<uint32_t> expert(4);
  std::vector<float> weight(4);
  moe_route({logits.data(), 4, 2, 4, 2, false, 1.0f, expert.data(), weight.data()});
  const double z0 = std::exp(1.0) + std::exp(-1.0) + std::exp(3.0) + std::exp(0.5);
  BOOST_TEST(expert[0] == 2u);
  BOOST_TEST(expert[1] == 0u);
  BOOST_TEST(weight[0] == std::exp(3.0) / z0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(weight[1] == std::exp(1.0) / z0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(expert[2] == 1u);
  BOOST_TEST(expert[3] == 0u); // ties go to the lower id
}

BOOST_AUTO_TEST_CASE(renormalised_weights_sum_to_the_scale) {
  const std::vector<float> logits = {0.3f, 1.7f, -0.2f, 0.9f, 2.2f, -1.0f};
  std::vector<uint32_t> expert(3);
  std::vector<float> weight(3);
  moe_route({logits.data(), 6, 1, 6, 3, true, 2.5f, expert.data(), weight.data()});
  BOOST_TEST(expert[0] == 4u);
  BOOST_TEST(expert[1] == 1u);
  BOOST_TEST(expert[2] == 3u);
  BOOST_TEST(weight[0] + weight[1] + weight[2] == 2.5f, boost::test_tools::tolerance(1e-6f));
  // Ratios are those of the softmax: exp(2.2 - 1.7).
  BOOST_TEST(weight[0] / weight[1] == std::exp(0.5f), boost::test_tools::tolerance(1e-5f));
}

BOOST_AUTO_TEST_CASE(strided_rows_and_k_equal_to_all_experts) {
  // Rows are 5 floats apart; only the first 3 are logits.
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 99.0f, 99.0f, /**/ 5.0f, 5.0f, 5.0f, 99.0f, 99.0f};
  std::vector<uint32_t> expert(6);
  std::vector<float> weight(6);
  moe_route({logits.data(), 5, 2, 3, 3, true, 1.0f, expert.data(), weight.data()});
  BOOST_TEST((expert == std::vector<uint32_t>{2, 1, 0, 0, 1, 2}));
  for (int j = 3; j < 6; ++j) BOOST_TEST(weight[j] == 1.0f / 3.0f, boost::test_tools::tolerance(1e-6f));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(moe_group_combine)

BOOST_AUTO_TEST_CASE(group_sorts_pairs_by_expert_keeping_token_order) {
  // 3 tokens, k = 2, 4 experts: pairs (t, j) -> expert
  //   t0: 2, 0   t1: 0, 3   t2: 2, 0     (expert 1 unused)
  const std::vector<uint32_t> expert = {2, 0, 0, 3, 2, 0};
  std::vector<uint32_t> start(5, 99), token(6, 99), row(6, 99);
  moe_group({expert.data(), 6, 2, 4, start.data(), token.data(), row.data()});
  // Expert 0 gets pairs 1, 2, 5 (tokens 0, 1, 2), expert 2 pairs 0, 4, expert 3 pair 3.
  BOOST_TEST(start == (std::vector<uint32_t>{0, 3, 3, 5, 6}), boost::test_tools::per_element());
  BOOST_TEST(token == (std::vector<uint32_t>{0, 1, 2, 0, 2, 1}), boost::test_tools::per_element());
  BOOST_TEST(row == (std::vector<uint32_t>{3, 0, 1, 5, 4, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(group_of_no_pairs_gives_empty_experts) {
  std::vector<uint32_t> start(4, 7);
  moe_group({nullptr, 0, 2, 3, start.data(), nullptr, nullptr});
  BOOST_TEST(start == (std::vector<uint32_t>{0, 0, 0, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(combine_sums_in_rank_order_and_adds_the_gated_shared_expert) {
  // 2 tokens, k = 2, n = 2; expert outputs by sorted row, rows 3 floats apart.
  const std::vector<float> y = {1.0f,  2.0f, 0.0f, /**/ 10.0f, 20.0f,  0.0f, //
                                -4.0f, 8.0f, 0.0f, /**/ 0.5f,  0.25f, 0.0f};
  const std::vector<float> weight = {0.75f, 0.25f, /**/ 0.5f, 0.5f};
  const std::vector<uint32_t> pair_row = {1, 3, 0, 2}; // t0: rows 1, 3; t1: rows 0, 2
  std::vector<float> out(4, 99.0f);
  moe_combine({y.data(), 3, weight.data(), pair_row.data(), nullptr, 0, nullptr, out.data(), 2, 2, 2, 2});
  BOOST_TEST(out == (std::vector<float>{0.75f * 10 + 0.25f * 0.5f, 0.75f * 20 + 0.25f * 0.25f, 0.5f * 1 - 0.5f * 4,
                                        0.5f * 2 + 0.5f * 8}),
             boost::test_tools::per_element());
  // Shared expert with gate logits 0 (sigmoid 1/2) and ln 3 (sigmoid 3/4).
  const std::vector<float> shared = {4.0f, -8.0f, /**/ 1.0f, 2.0f};
  const std::vector<float> gate = {0.0f, std::log(3.0f)};
  moe_combine({y.data(), 3, weight.data(), pair_row.data(), shared.data(), 2, gate.data(), out.data(), 2, 2, 2, 2});
  const float tol = 1e-6f;
  BOOST_TEST(out[0] == 7.625f + 2.0f, boost::test_tools::tolerance(tol));
  BOOST_TEST(out[1] == 15.0625f - 4.0f, boost::test_tools::tolerance(tol));
  BOOST_TEST(out[2] == -1.5f + 0.75f, boost::test_tools::tolerance(tol));
  BOOST_TEST(out[3] == 5.0f + 1.5f, boost::test_tools::tolerance(tol));
}

BOOST_AUTO_TEST_SUITE_END()
