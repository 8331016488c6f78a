#include "runtime/plan/budget.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::plan;

namespace {

using counts = std::vector<uint32_t>;

// Pools with proposals only (current = proposed), cost 1, min 1 unless given.
std::vector<budget_pool> proposals(counts p, counts cost = {}, counts min = {}) {
  std::vector<budget_pool> out;
  for (size_t i = 0; i < p.size(); ++i)
    out.push_back({p[i], p[i], min.empty() ? 1u : min[i], cost.empty() ? 1u : cost[i]});
  return out;
}

std::vector<budget_pool> moves(counts current, counts proposed, counts cost = {}) {
  std::vector<budget_pool> out;
  for (size_t i = 0; i < current.size(); ++i)
    out.push_back({current[i], proposed[i], 1u, cost.empty() ? 1u : cost[i]});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(budget_suite)

BOOST_AUTO_TEST_CASE(unlimited_or_fitting_is_unchanged) {
  BOOST_TEST(*proportional_fit(proposals({4, 4}), -1) == counts({4, 4}));
  BOOST_TEST(*proportional_fit(proposals({4, 4}), 8) == counts({4, 4}));
  BOOST_TEST(*enforce_gpu_budget(moves({3, 3}, {4, 3}), 7) == counts({4, 3}));
}

BOOST_AUTO_TEST_CASE(prefill_decode_pair_scales_by_budget_over_total) {
  // total 8 > 6: prefill floor(4 * 6/8) = 3, decode gets the remaining 3.
  BOOST_TEST(*proportional_fit(proposals({4, 4}), 6) == counts({3, 3}));
  // GPUs per replica differ: prefill floor(3 * 8/10) = 2 (4 GPUs), decode min(4, 4 left) = 4.
  BOOST_TEST(*proportional_fit(proposals({3, 4}, {2, 1}), 8) == counts({2, 4}));
}

BOOST_AUTO_TEST_CASE(minimums_are_reserved_and_kept) {
  // prefill wants 10 of 11 GPUs: floor(10 * 5/11) = 4 leaves decode its minimum 1.
  BOOST_TEST(*proportional_fit(proposals({10, 1}), 5) == counts({4, 1}));
  // prefill scaled to floor(1 * 5/10) = 0 is raised to its minimum; decode gets the rest.
  BOOST_TEST(*proportional_fit(proposals({1, 9}), 5) == counts({1, 4}));
  // prefill may not take the GPUs decode's minimum (2 x 2) needs.
  BOOST_TEST(*proportional_fit(proposals({9, 2}, {1, 2}, {1, 2}), 6) == counts({2, 2}));
}

BOOST_AUTO_TEST_CASE(infeasible_minimums_do_not_fit) {
  BOOST_TEST(!proportional_fit(proposals({2, 2}, {2, 2}, {2, 2}), 7).has_value());
  BOOST_TEST(!enforce_gpu_budget(moves({1, 1}, {3, 3}, {4, 4}), 7).has_value());
}

BOOST_AUTO_TEST_CASE(three_pools_in_priority_order) {
  // prefill floor(2*6/8)=1, aggregated floor(2*6/8)=1, decode the remaining 4.
  BOOST_TEST(*proportional_fit(proposals({2, 2, 4}), 6) == counts({1, 1, 4}));
}

BOOST_AUTO_TEST_CASE(guard_never_reverses_a_direction) {
  // At the budget, decode wants one more: the rule would take prefill to 2,
  // but prefill did not ask to shrink, so decode's growth is refused instead.
  BOOST_TEST(*enforce_gpu_budget(moves({3, 3}, {3, 4}), 6) == counts({3, 3}));
  // Both want one more and one fits: prefill floor(3*5/6)=2 keeps its 2, decode gets 3.
  BOOST_TEST(*enforce_gpu_budget(moves({2, 2}, {3, 3}), 5) == counts({2, 3}));
  // Clamping prefill back to 3 puts growth over budget: decode's is taken back by one.
  BOOST_TEST(*enforce_gpu_budget(moves({3, 1}, {3, 3}), 5) == counts({3, 2}));
  // A jump (throughput bound) is split: (3,3) -> floor(3*4/6)=2 and the remaining 2.
  BOOST_TEST(*enforce_gpu_budget(moves({1, 1}, {3, 3}), 4) == counts({2, 2}));
}

BOOST_AUTO_TEST_CASE(over_budget_allocation_only_shrinks) {
  // Current (4,4) costs 8 > 6; prefill's wish to grow is ignored, the shrink is kept.
  BOOST_TEST(*enforce_gpu_budget(moves({4, 4}, {5, 3}), 6) == counts({3, 3}));
}

BOOST_AUTO_TEST_CASE(total_cost_weights_replicas) {
  BOOST_TEST(total_cost(proposals({3, 4}, {2, 1}), {3, 4}) == 10u);
}

BOOST_AUTO_TEST_SUITE_END()
