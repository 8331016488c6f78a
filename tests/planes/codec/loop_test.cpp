#include "planes/codec/periodic_thread.hpp"
#include "planes/codec/serial_executor.hpp"
#include "planes/codec/zmq_io_loop.hpp"

#include "../support/support.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(executors)

BOOST_AUTO_TEST_CASE(serial_executor_runs_tasks_in_order_off_the_caller_thread) {
  std::vector<int> seen;
  std::atomic<bool> off_thread{true};
  auto caller = std::this_thread::get_id();
  {
    serial_executor ex{"t"};
    for (int i = 0; i < 100; ++i)
      BOOST_REQUIRE(ex.post([&, i] {
        seen.push_back(i);
        off_thread = off_thread && std::this_thread::get_id() != caller;
      }));
    BOOST_REQUIRE(ex.post([] { throw std::runtime_error("swallowed and logged"); }));
  } // the destructor drains the queue
  BOOST_TEST(seen.size() == 100u);
  BOOST_TEST(std::is_sorted(seen.begin(), seen.end()));
  BOOST_TEST(off_thread.load());
}

BOOST_AUTO_TEST_CASE(serial_executor_refuses_work_once_stopped) {
  serial_executor ex{"t"};
  ex.stop();
  BOOST_TEST(!ex.post([] {}));
}

BOOST_AUTO_TEST_CASE(periodic_thread_runs_again_on_wake) {
  std::atomic<int> runs{0};
  periodic_thread t{"t", std::chrono::hours{1}, [&] { ++runs; }};
  t.wake();
  BOOST_TEST(wait_until([&] { return runs.load() >= 1; }));
  t.wake();
  BOOST_TEST(wait_until([&] { return runs.load() >= 2; }));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(zmq_loop)

BOOST_AUTO_TEST_CASE(posted_tasks_and_calls_run_on_the_loop_thread) {
  zmq_io_loop loop{"t", 10ms};
  std::atomic<int> ticks{0};
  loop.set_tick([&] { ++ticks; });
  loop.start();
  auto on_loop = loop.call<bool>([&]() -> expected<bool> { return loop.in_loop(); });
  BOOST_REQUIRE(on_loop);
  BOOST_TEST(*on_loop);
  BOOST_TEST(!loop.in_loop());
  std::atomic<int> n{0};
  for (int i = 0; i < 1000; ++i)
    BOOST_REQUIRE(loop.post([&] { ++n; }));
  BOOST_TEST(wait_until([&] { return n.load() == 1000 && ticks.load() >= 2; }));
  loop.stop();
  BOOST_TEST(!loop.post([] {}));
  BOOST_TEST(code_of(loop.call<int>([]() -> expected<int> { return 1; }).error()) == errc::closed);
}

BOOST_AUTO_TEST_CASE(watched_sockets_are_read_and_oversized_messages_flagged) {
  zmq_io_loop loop{"t", 10ms};
  zmq::socket_t rx{loop.context(), zmq::socket_type::pair};
  zmq::socket_t tx{loop.context(), zmq::socket_type::pair};
  auto endpoint = unique_inproc_endpoint("test");
  rx.bind(endpoint);
  tx.connect(endpoint);
  std::atomic<int> good{0}, overflowed{0};
  loop.watch(rx, [&] {
    std::vector<zmq::message_t> parts;
    bool overflow = false;
    while (recv_parts(rx, parts, 2, overflow))
      ++(overflow ? overflowed : good);
  });
  loop.set_on_stop([&] { rx.close(); });
  loop.start();
  std::array<zmq::const_buffer, 2> two{zmq::str_buffer("a"), zmq::str_buffer("b")};
  std::array<zmq::const_buffer, 3> three{zmq::str_buffer("a"), zmq::str_buffer("b"),
                                         zmq::str_buffer("c")};
  auto sent = loop.call<bool>([&]() -> expected<bool> {
    // The sender is used from the loop thread only, like every plane socket.
    bool ok = send_parts(tx, two) == send_status::sent && send_parts(tx, three) == send_status::sent;
    tx.close();
    return ok;
  });
  BOOST_REQUIRE(sent);
  BOOST_TEST(*sent);
  BOOST_TEST(wait_until([&] { return good.load() == 1 && overflowed.load() == 1; }));
  loop.stop();
}

BOOST_AUTO_TEST_SUITE_END()
