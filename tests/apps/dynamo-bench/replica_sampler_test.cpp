#include "apps/dynamo-bench/replica_sampler.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::bench;

BOOST_AUTO_TEST_SUITE(replica_sampler_suite)

BOOST_AUTO_TEST_CASE(sums_every_label_set_of_exactly_that_metric) {
  const std::string page =
      "# HELP dynamo_planner_observed_replicas Replicas seen in discovery (actual)\n"
      "# TYPE dynamo_planner_observed_replicas gauge\n"
      "dynamo_planner_observed_replicas{pool=\"prefill\"} 2\n"
      "dynamo_planner_observed_replicas{pool=\"decode\"} 3.5\n"
      "dynamo_planner_observed_replicas_total 100\n"
      "dynamo_planner_target_replicas{pool=\"decode\"} 7\n";
  auto n = sum_samples(page, "dynamo_planner_observed_replicas");
  BOOST_REQUIRE(n);
  BOOST_TEST(*n == 5.5);
  BOOST_TEST(sum_samples("x 1\n", "x").value_or(-1) == 1.0); // no labels, no trailing text
  BOOST_TEST(!sum_samples(page, "dynamo_planner_absent"));
  BOOST_TEST(!sum_samples("dynamo_planner_observed_replicas{pool=\"a\"} NaN-ish\n",
                          "dynamo_planner_observed_replicas"));
}

BOOST_AUTO_TEST_SUITE_END()
