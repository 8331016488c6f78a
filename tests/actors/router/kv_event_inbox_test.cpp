// kv_event_inbox: one wake-up per burst, everything taken in order, and the
// capacity bound drops (and counts) rather than grows.
#include "actors/router/kv_event_inbox.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <thread>

using namespace dynamo;
using namespace dynamo::actors;

namespace {
protocol::router_event event(uint64_t worker, uint64_t id) {
  protocol::router_event e;
  e.worker_id = worker;
  e.event.event_id = id;
  return e;
}
} // namespace

BOOST_AUTO_TEST_SUITE(kv_event_inbox_batches)

BOOST_AUTO_TEST_CASE(only_the_first_event_of_a_burst_wakes_the_router) {
  kv_event_inbox inbox;
  BOOST_TEST(inbox.push(event(1, 0)));
  BOOST_TEST(!inbox.push(event(1, 1)));
  BOOST_TEST(!inbox.push(event(2, 0)));
  auto got = inbox.take();
  BOOST_REQUIRE_EQUAL(got.size(), 3u);
  BOOST_TEST(got[1].event.event_id == 1u);
  BOOST_TEST(got[2].worker_id == 2u);
  BOOST_TEST(inbox.take().empty());
  BOOST_TEST(inbox.push(event(1, 2))); // empty again: the next burst wakes it
}

BOOST_AUTO_TEST_CASE(a_full_inbox_drops_and_counts) {
  kv_event_inbox inbox(2);
  BOOST_TEST(inbox.push(event(1, 0)));
  BOOST_TEST(!inbox.push(event(1, 1)));
  BOOST_TEST(!inbox.push(event(1, 2)));
  BOOST_TEST(inbox.dropped() == 1u);
  BOOST_TEST(inbox.take().size() == 2u);
}

// A writer and a reader race: every event arrives once, in order, and each
// wake-up the writer sees is followed by at least one event to take.
BOOST_AUTO_TEST_CASE(concurrent_writer_and_reader_lose_nothing) {
  kv_event_inbox inbox;
  constexpr uint64_t n = 200000;
  std::atomic<uint64_t> wakes{0};
  std::thread writer([&] {
    for (uint64_t i = 0; i < n; ++i)
      if (inbox.push(event(7, i)))
        wakes.fetch_add(1);
  });
  uint64_t next = 0;
  bool in_order = true;
  while (next < n) {
    for (const auto& e : inbox.take()) {
      in_order = in_order && e.event.event_id == next;
      ++next;
    }
  }
  writer.join();
  BOOST_TEST(in_order);
  BOOST_TEST(next == n);
  BOOST_TEST(wakes.load() >= 1u);
  BOOST_TEST(wakes.load() <= n);
}

BOOST_AUTO_TEST_SUITE_END()
