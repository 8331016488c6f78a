#include "kernels/reference/thread_pool.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <vector>

using dynamo::kernels::ref::thread_pool;

BOOST_AUTO_TEST_SUITE(thread_pool_unit)

BOOST_AUTO_TEST_CASE(every_task_runs_exactly_once_over_many_jobs) {
  for (unsigned threads : {1u, 2u, 4u}) {
    thread_pool pool(threads);
    BOOST_TEST(pool.size() == threads);
    for (uint32_t job = 0; job < 500; ++job) {
      const uint32_t n = job % 37;
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](uint32_t t) { hits[t].fetch_add(1); });
      for (uint32_t t = 0; t < n; ++t) BOOST_REQUIRE_EQUAL(hits[t].load(), 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(zero_means_hardware_threads) {
  thread_pool pool(0);
  BOOST_TEST(pool.size() >= 1u);
}

BOOST_AUTO_TEST_SUITE_END()
