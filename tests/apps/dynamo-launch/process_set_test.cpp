// process_set: restarts, and the failed-start rule that ends a restart loop.
#include "apps/dynamo-launch/process_set.hpp"

#include <boost/test/unit_test.hpp>

#include <chrono>
#include <thread>

using namespace dynamo::apps;
using namespace std::chrono_literals;

namespace {

process_spec shell(std::string name, std::string script) {
  return {name, name, {"/bin/sh", "-c", std::move(script)}};
}

// Polls until `done` or 20 s (the backoffs before the third start are 100 + 200 ms).
template <class Pred>
bool poll_until(process_set& ps, Pred done) {
  for (int i = 0; i < 2000; ++i) {
    ps.poll();
    if (done())
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

BOOST_AUTO_TEST_SUITE(process_set_suite)

BOOST_AUTO_TEST_CASE(a_child_that_cannot_start_ends_the_restart_loop) {
  process_set ps;
  ps.add(shell("bad", "exit 3"));
  BOOST_REQUIRE(poll_until(ps, [&] { return ps.failed_start().has_value(); }));
  BOOST_TEST(*ps.failed_start() == "bad (exit code 3)");
  const auto* e = ps.find("bad");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->restarts == max_failed_starts - 1);
  BOOST_TEST(e->failed_starts == max_failed_starts);
  BOOST_TEST(ps.count("bad") == 0u); // not restarted again
}

BOOST_AUTO_TEST_CASE(a_crashing_child_keeps_being_restarted) {
  // Killed by a signal: a crash, not a start failure; the backoff restarts it.
  process_set ps;
  ps.add(shell("crash", "kill -9 $$"));
  BOOST_REQUIRE(poll_until(ps, [&] { return ps.find("crash")->restarts >= max_failed_starts + 1; }));
  BOOST_TEST(!ps.failed_start().has_value());
  BOOST_TEST(ps.count("crash") == 1u);
  ps.stop_all({"crash"}, 1000ms);
}

BOOST_AUTO_TEST_CASE(a_clean_exit_is_not_a_failed_start) {
  process_set ps;
  ps.add(shell("done", "exit 0"));
  BOOST_REQUIRE(poll_until(ps, [&] { return ps.find("done")->restarts >= max_failed_starts + 1; }));
  BOOST_TEST(!ps.failed_start().has_value());
  ps.stop_all({"done"}, 1000ms);
}

BOOST_AUTO_TEST_SUITE_END()
