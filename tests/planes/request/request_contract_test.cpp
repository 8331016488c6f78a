// The request plane's contract, run against ZeroMQ on loopback and the fake.
#include "planes/codec/serial_executor.hpp"

#include "../support/support.hpp"
#include "request_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <sstream>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;

namespace {

/// Serves "<label> <n>" by sending "<label>/0" .. "<label>/<n-1>" then finishing,
/// from a worker thread (handlers must not block the I/O thread).
request_handler counting_handler(serial_executor& worker) {
  return [&worker](bytes request, response_stream_ptr stream) {
    (void)worker.post([request = to_string(request), stream] {
      std::istringstream in{request};
      std::string label;
      int n = 0;
      in >> label >> n;
      for (int i = 0; i < n; ++i)
        if (!stream->send(to_bytes(label + "/" + std::to_string(i))))
          return;
      stream->finish();
    });
  };
}

std::vector<std::string> expected_items(const std::string& label, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back(label + "/" + std::to_string(i));
  return out;
}

/// A handler that keeps its stream open and counts cancellations.
struct held_streams {
  std::mutex mutex;
  std::vector<response_stream_ptr> streams;
  std::atomic<int> cancels{0};
  request_handler handler() {
    return [this](bytes, response_stream_ptr stream) {
      stream->on_cancel([this] { ++cancels; });
      (void)stream->send(to_bytes("first"));
      std::lock_guard lock{mutex};
      streams.push_back(std::move(stream));
    };
  }
  size_t count() {
    std::lock_guard lock{mutex};
    return streams.size();
  }
  response_stream_ptr at(size_t i) {
    std::lock_guard lock{mutex};
    return streams.at(i);
  }
};

errc code(const caf::error& e) {
  return code_of(e);
}

} // namespace

BOOST_AUTO_TEST_SUITE(request_plane_contract)

BOOST_AUTO_TEST_CASE_TEMPLATE(streams_items_in_order_then_finishes, B, request_backends) {
  B b;
  serial_executor worker{"test-worker"};
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", counting_handler(worker)));
  auto client = b.client();
  call_recorder rec;
  (void)client->call(server->address(), "dyn/backend/generate", to_bytes("tok 5"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(!rec.error());
  BOOST_TEST(rec.items() == expected_items("tok", 5), boost::test_tools::per_element());
  BOOST_TEST(rec.end_count() == 1);
  BOOST_TEST(wait_until([&] { return server->open_streams() == 0 && client->open_calls() == 0; }));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(many_concurrent_streams_are_multiplexed, B, request_backends) {
  B b;
  serial_executor worker{"test-worker"};
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", counting_handler(worker)));
  auto client = b.client();
  constexpr int calls = 64;
  std::vector<call_recorder> recs(calls);
  for (int i = 0; i < calls; ++i)
    (void)client->call(server->address(), "dyn/backend/generate",
                       to_bytes("s" + std::to_string(i) + " " + std::to_string(i % 9)),
                       recs[i].on_item(), recs[i].on_end());
  for (int i = 0; i < calls; ++i) {
    BOOST_REQUIRE(recs[i].wait_end());
    BOOST_TEST(!recs[i].error());
    BOOST_TEST(recs[i].items() == expected_items("s" + std::to_string(i), i % 9));
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(two_clients_with_equal_stream_ids_do_not_collide, B,
                              request_backends) {
  B b;
  serial_executor worker{"test-worker"};
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", counting_handler(worker)));
  auto c1 = b.client();
  auto c2 = b.client();
  call_recorder r1, r2;
  auto h1 = c1->call(server->address(), "dyn/backend/generate", to_bytes("one 3"), r1.on_item(),
                     r1.on_end());
  auto h2 = c2->call(server->address(), "dyn/backend/generate", to_bytes("two 4"), r2.on_item(),
                     r2.on_end());
  BOOST_TEST(h1.id() == h2.id()); // both clients start at stream id 1
  BOOST_REQUIRE(r1.wait_end());
  BOOST_REQUIRE(r2.wait_end());
  BOOST_TEST(r1.items() == expected_items("one", 3));
  BOOST_TEST(r2.items() == expected_items("two", 4));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(client_cancel_reaches_the_handler, B, request_backends) {
  B b;
  auto held = std::make_shared<held_streams>();
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", held->handler()));
  auto client = b.client();
  call_recorder rec;
  auto handle = client->call(server->address(), "dyn/backend/generate", to_bytes("x"),
                             rec.on_item(), rec.on_end());
  BOOST_REQUIRE(rec.wait_items(1));
  handle.cancel();
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code(rec.error()) == errc::cancelled);
  BOOST_REQUIRE(wait_until([&] { return held->cancels.load() == 1; }));
  auto stream = held->at(0);
  BOOST_TEST(stream->cancelled());
  BOOST_TEST(!stream->send(to_bytes("late")));
  bool ran_now = false;
  stream->on_cancel([&] { ran_now = true; }); // already cancelled: runs at once
  BOOST_TEST(ran_now);
  handle.cancel(); // idempotent
  BOOST_TEST(wait_until([&] { return server->open_streams() == 0; }));
  BOOST_TEST(rec.end_count() == 1);
  BOOST_TEST(rec.items() == std::vector<std::string>{"first"});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(unknown_endpoint_is_not_found, B, request_backends) {
  B b;
  auto server = b.server();
  auto client = b.client();
  call_recorder rec;
  (void)client->call(server->address(), "dyn/backend/nope", to_bytes("x"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code(rec.error()) == errc::not_found);
  BOOST_TEST(rec.items().empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(serving_a_path_twice_is_refused_and_unserve_stops_routing, B,
                              request_backends) {
  B b;
  serial_executor worker{"test-worker"};
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", counting_handler(worker)));
  auto again = server->serve("dyn/backend/generate", counting_handler(worker));
  BOOST_TEST(code(again.error()) == errc::invalid_argument);
  BOOST_TEST(code(server->serve("", counting_handler(worker)).error()) == errc::invalid_argument);
  BOOST_TEST(server->unserve("dyn/backend/generate"));
  BOOST_TEST(!server->unserve("dyn/backend/generate"));
  auto client = b.client();
  call_recorder rec;
  (void)client->call(server->address(), "dyn/backend/generate", to_bytes("a 1"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code(rec.error()) == errc::not_found);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(request_over_32_mib_is_refused, B, request_backends) {
  B b;
  BOOST_TEST(b.timing.max_message_bytes == size_t{32} << 20);
  std::atomic<int> handled{0};
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate",
                              [&](bytes, response_stream_ptr s) {
                                ++handled;
                                s->finish();
                              }));
  auto client = b.client();
  call_recorder big;
  (void)client->call(server->address(), "dyn/backend/generate", bytes((size_t{32} << 20) + 1, 7),
                     big.on_item(), big.on_end());
  BOOST_REQUIRE(big.wait_end());
  BOOST_TEST(code(big.error()) == errc::invalid_argument);
  call_recorder small; // the connection is still fine afterwards
  (void)client->call(server->address(), "dyn/backend/generate", bytes(1024, 7), small.on_item(),
                     small.on_end());
  BOOST_REQUIRE(small.wait_end());
  BOOST_TEST(!small.error());
  BOOST_TEST(handled.load() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(oversized_response_item_fails_the_stream, B, request_backends) {
  B b;
  b.timing.max_message_bytes = 1024;
  std::atomic<int> send_result{-1};
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", [&](bytes, response_stream_ptr s) {
    send_result = s->send(bytes(2000, 1)) ? 1 : 0;
  }));
  auto client = b.client();
  call_recorder rec;
  (void)client->call(server->address(), "dyn/backend/generate", to_bytes("x"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  // The caller may hear the end before the handler has stored send()'s result.
  BOOST_REQUIRE(wait_until([&] { return send_result.load() != -1; }));
  BOOST_TEST(send_result.load() == 0);
  BOOST_TEST(code(rec.error()) == errc::invalid_argument);
  BOOST_TEST(rec.items().empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(handler_failure_and_dropped_stream_reach_the_caller, B,
                              request_backends) {
  B b;
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/fail", [](bytes, response_stream_ptr s) {
    (void)s->send(to_bytes("partial"));
    s->fail(make_error(errc::overloaded, "busy"));
    s->finish(); // ignored: already ended
  }));
  BOOST_REQUIRE(server->serve("dyn/backend/drop", [](bytes, response_stream_ptr) {}));
  BOOST_REQUIRE(server->serve("dyn/backend/throw",
                              [](bytes, response_stream_ptr) { throw std::runtime_error("boom"); }));
  auto client = b.client();
  call_recorder failed, dropped, threw;
  (void)client->call(server->address(), "dyn/backend/fail", to_bytes("x"), failed.on_item(),
                     failed.on_end());
  (void)client->call(server->address(), "dyn/backend/drop", to_bytes("x"), dropped.on_item(),
                     dropped.on_end());
  (void)client->call(server->address(), "dyn/backend/throw", to_bytes("x"), threw.on_item(),
                     threw.on_end());
  BOOST_REQUIRE(failed.wait_end());
  BOOST_REQUIRE(dropped.wait_end());
  BOOST_REQUIRE(threw.wait_end());
  BOOST_TEST(failed.items() == std::vector<std::string>{"partial"});
  BOOST_TEST(code(failed.error()) == errc::overloaded);
  BOOST_TEST(message_of(failed.error()) == "busy");
  BOOST_TEST(code(dropped.error()) == errc::internal);
  BOOST_TEST(code(threw.error()) == errc::internal);
  BOOST_TEST(failed.end_count() == 1);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_the_server_fails_open_calls_as_disconnected, B,
                              request_backends) {
  B b;
  auto held = std::make_shared<held_streams>();
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", held->handler()));
  auto address = server->address();
  auto client = b.client();
  call_recorder rec;
  (void)client->call(address, "dyn/backend/generate", to_bytes("x"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_items(1));
  server.reset();
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code(rec.error()) == errc::disconnected);
  BOOST_TEST(held->cancels.load() == 1); // the handler heard about it too
  BOOST_TEST(!held->at(0)->send(to_bytes("after")));
  call_recorder later; // nobody listens there any more
  (void)client->call(address, "dyn/backend/generate", to_bytes("x"), later.on_item(),
                     later.on_end());
  BOOST_REQUIRE(later.wait_end());
  BOOST_TEST(code(later.error()) == errc::disconnected);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_the_client_cancels_its_server_streams, B,
                              request_backends) {
  B b;
  auto held = std::make_shared<held_streams>();
  auto server = b.server();
  BOOST_REQUIRE(server->serve("dyn/backend/generate", held->handler()));
  auto client = b.client();
  call_recorder rec;
  (void)client->call(server->address(), "dyn/backend/generate", to_bytes("x"), rec.on_item(),
                     rec.on_end());
  BOOST_REQUIRE(rec.wait_items(1));
  client.reset();
  BOOST_TEST(rec.ended()); // ended during destruction
  BOOST_TEST(code(rec.error()) == errc::closed);
  BOOST_REQUIRE(wait_until([&] { return held->cancels.load() == 1; }));
  BOOST_TEST(wait_until([&] { return server->open_streams() == 0; }));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(unreachable_address_is_disconnected, B, request_backends) {
  B b;
  auto client = b.client();
  call_recorder rec;
  (void)client->call(b.unreachable_address(), "dyn/backend/generate", to_bytes("x"),
                     rec.on_item(), rec.on_end());
  BOOST_REQUIRE(rec.wait_end());
  BOOST_TEST(code(rec.error()) == errc::disconnected);
  BOOST_TEST(client->open_calls() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
