#include "planes/http/server.hpp"

#include "tests/support/http_client.hpp"

#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <random>
#include <thread>

using namespace dynamo;
using namespace dynamo::http;
using dynamo::test::http_client;
using dynamo::test::sse_data;

namespace {

/// A one-shot event a test can wait for (5 s at most, so nothing hangs).
class flag {
public:
  void set() {
    std::lock_guard lock{m_};
    set_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock lock{m_};
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return set_; });
  }
  bool is_set() {
    std::lock_guard lock{m_};
    return set_;
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  bool set_ = false;
};

std::unique_ptr<server> start(router r, server_options opts = {}) {
  auto s = server::start(std::move(opts), std::move(r));
  BOOST_REQUIRE_MESSAGE(s, "server failed to start");
  BOOST_REQUIRE((*s)->port() != 0);
  return std::move(*s);
}

handler text(std::string body) {
  return [body](request, std::shared_ptr<http_responder> res) {
    res->respond(200, "text/plain", body);
  };
}

router echo_routes() {
  router r;
  r.add("GET", "/hello", text("world"));
  r.add("POST", "/echo", [](request req, std::shared_ptr<http_responder> res) {
    res->respond(200, "application/json", req.method + " " + req.path + "?" + req.query + " " +
                                            req.body,
                 {{"X-Seen-Header", std::string{req.header("x-test")}}});
  });
  r.add_prefix("GET", "/items/", [](request req, std::shared_ptr<http_responder> res) {
    res->respond(200, "text/plain", percent_decode(req.path.substr(7)));
  });
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(server_suite)

BOOST_AUTO_TEST_CASE(answers_and_keeps_the_connection_alive) {
  auto srv = start(echo_routes());
  http_client c{srv->port()};
  auto a = c.request("GET", "/hello");
  BOOST_TEST(a.status == 200u);
  BOOST_TEST(a.body == "world");
  BOOST_TEST(a.header("content-type") == "text/plain");
  BOOST_TEST(a.keep_alive);
  auto b = c.request("POST", "/echo?x=1", "{\"k\":2}", {{"X-Test", "yes"}});
  BOOST_TEST(b.status == 200u);
  BOOST_TEST(b.body == "POST /echo?x=1 {\"k\":2}");
  BOOST_TEST(b.header("x-seen-header") == "yes");
}

BOOST_AUTO_TEST_CASE(unknown_path_is_404_and_wrong_method_is_405_with_allow) {
  auto srv = start(echo_routes());
  http_client c{srv->port()};
  auto a = c.request("GET", "/nope");
  BOOST_TEST(a.status == 404u);
  BOOST_TEST(a.header("content-type") == "application/json");
  BOOST_TEST(a.body == R"({"error":{"message":"No route for /nope"}})");
  auto b = c.request("DELETE", "/hello");
  BOOST_TEST(b.status == 405u);
  BOOST_TEST(b.header("allow") == "GET");
  BOOST_TEST(c.request("GET", "/hello").status == 200u); // still alive
}

BOOST_AUTO_TEST_CASE(error_bodies_come_from_the_formatter) {
  server_options opts;
  opts.error_body = [](unsigned status, std::string_view msg) {
    return std::to_string(status) + ":" + std::string{msg};
  };
  auto srv = start(echo_routes(), opts);
  http_client c{srv->port()};
  BOOST_TEST(c.request("GET", "/x").body == "404:No route for /x");
}

BOOST_AUTO_TEST_CASE(prefix_route_gets_the_rest_of_the_path) {
  auto srv = start(echo_routes());
  http_client c{srv->port()};
  BOOST_TEST(c.request("GET", "/items/org/model%2Fx").body == "org/model/x");
  BOOST_TEST(c.request("GET", "/items/").status == 404u);
}

BOOST_AUTO_TEST_CASE(oversized_body_is_413_and_closes) {
  server_options opts;
  opts.body_limit = 1024;
  auto srv = start(echo_routes(), opts);
  http_client c{srv->port()};
  auto r = c.request("POST", "/echo", std::string(4096, 'x'));
  BOOST_TEST(r.status == 413u);
  BOOST_TEST(!r.keep_alive);
  BOOST_TEST(c.server_closed());
  http_client ok{srv->port()};
  BOOST_TEST(ok.request("POST", "/echo", std::string(1024, 'y')).status == 200u);
}

BOOST_AUTO_TEST_CASE(malformed_requests_get_400_and_never_crash) {
  auto srv = start(echo_routes());
  for (std::string bad : {std::string{"GARBAGE\r\n\r\n"}, std::string{"GET /hello HTTP/9.9\r\n\r\n"},
                          std::string{"POST /echo HTTP/1.1\r\nContent-Length: abc\r\n\r\n"},
                          std::string{"GET /hello HTTP/1.1\r\nBad Header\r\n\r\n"},
                          std::string("\0\0\0\r\n\r\n", 7)}) {
    http_client c{srv->port()};
    auto out = c.raw(bad);
    BOOST_TEST(out.rfind("HTTP/1.1 400", 0) == 0u, out);
  }
  http_client after{srv->port()};
  BOOST_TEST(after.request("GET", "/hello").status == 200u);
}

BOOST_AUTO_TEST_CASE(random_garbage_never_takes_the_server_down) {
  auto srv = start(echo_routes());
  std::mt19937 rng{42};
  const std::string valid = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
  for (int i = 0; i < 40; ++i) {
    std::string bytes = valid;
    for (int e = 0; e < 4; ++e)
      bytes[rng() % bytes.size()] = static_cast<char>(rng() % 256);
    http_client c{srv->port()};
    auto out = c.raw(bytes, /*half_close=*/true);
    // Either an answer (any status) or a closed connection; never a hang.
    BOOST_TEST((out.empty() || out.rfind("HTTP/1.", 0) == 0u), out);
  }
  http_client after{srv->port()};
  BOOST_TEST(after.request("GET", "/hello").body == "world");
}

BOOST_AUTO_TEST_CASE(huge_headers_get_431) {
  server_options opts;
  opts.header_limit = 512;
  auto srv = start(echo_routes(), opts);
  http_client c{srv->port()};
  auto out = c.raw("GET /hello HTTP/1.1\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
  BOOST_TEST(out.rfind("HTTP/1.1 431", 0) == 0u, out);
}

BOOST_AUTO_TEST_CASE(pipelined_requests_are_answered_in_order) {
  auto srv = start(echo_routes());
  http_client c{srv->port()};
  auto out = c.raw("GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                   "GET /items/z HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  auto first = out.find("world");
  auto second = out.find("\r\n\r\nz");
  BOOST_TEST(first != std::string::npos);
  BOOST_TEST(second != std::string::npos);
  BOOST_TEST(first < second);
}

BOOST_AUTO_TEST_CASE(expect_100_continue_is_honoured) {
  auto srv = start(echo_routes());
  http_client c{srv->port()};
  auto r = c.request("POST", "/echo", "{}", {{"Expect", "100-continue"}});
  BOOST_TEST(r.status == 200u);
  BOOST_TEST(r.body == "POST /echo? {}");
}

BOOST_AUTO_TEST_CASE(http_1_0_request_is_answered_and_closed) {
  auto srv = start(echo_routes());
  http_client c{srv->port()};
  auto out = c.raw("GET /hello HTTP/1.0\r\n\r\n");
  BOOST_TEST(out.rfind("HTTP/1.0 200", 0) == 0u, out);
  BOOST_TEST(out.find("world") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(sse_stream_is_chunked_and_connection_reusable) {
  router r;
  r.add("GET", "/hello", text("world"));
  r.add("GET", "/stream", [](request, std::shared_ptr<http_responder> res) {
    BOOST_TEST(!res->send_event("too early"));
    BOOST_TEST(res->start_stream({{"X-Request-Id", "abc"}}));
    BOOST_TEST(res->send_event("{\"n\":1}"));
    BOOST_TEST(res->send_event("{\"n\":2}"));
    BOOST_TEST(res->send_event("oops", "error"));
    BOOST_TEST(res->send_event("[DONE]"));
    BOOST_TEST(res->finish());
    BOOST_TEST(!res->send_event("too late"));
    BOOST_TEST(!res->respond(200, "text/plain", "x"));
  });
  auto srv = start(std::move(r));
  http_client c{srv->port()};
  auto reply = c.request("GET", "/stream");
  BOOST_TEST(reply.status == 200u);
  BOOST_TEST(reply.chunked);
  BOOST_TEST(reply.header("content-type") == "text/event-stream");
  BOOST_TEST(reply.header("cache-control") == "no-cache");
  BOOST_TEST(reply.header("x-request-id") == "abc");
  BOOST_TEST(reply.body == "data: {\"n\":1}\n\ndata: {\"n\":2}\n\nevent: error\ndata: oops\n\n"
                           "data: [DONE]\n\n");
  BOOST_TEST(c.request("GET", "/hello").body == "world");
}

BOOST_AUTO_TEST_CASE(responders_complete_from_other_threads) {
  std::vector<std::thread> workers;
  std::mutex m;
  router r;
  r.add("GET", "/later", [&](request, std::shared_ptr<http_responder> res) {
    std::lock_guard lock{m};
    workers.emplace_back([res] {
      res->start_stream();
      for (int i = 0; i < 50; ++i)
        res->send_event(std::to_string(i));
      res->finish();
    });
  });
  auto srv = start(std::move(r));
  http_client c{srv->port()};
  auto reply = c.request("GET", "/later");
  auto events = sse_data(reply.body);
  BOOST_REQUIRE_EQUAL(events.size(), 50u);
  for (int i = 0; i < 50; ++i)
    BOOST_TEST(events[i] == std::to_string(i));
  std::lock_guard lock{m};
  for (auto& t : workers)
    t.join();
}

BOOST_AUTO_TEST_CASE(client_leaving_mid_stream_fires_on_disconnect) {
  flag gone;
  std::shared_ptr<http_responder> held;
  router r;
  r.add("GET", "/stream", [&](request, std::shared_ptr<http_responder> res) {
    res->on_disconnect([&] { gone.set(); });
    res->start_stream();
    res->send_event("first");
    held = res; // never finished: only the client can end this
  });
  auto srv = start(std::move(r));
  {
    http_client c{srv->port()};
    c.send("GET", "/stream");
    BOOST_TEST(c.read_header().status == 200u);
    BOOST_TEST(c.read_body_until("first").find("data: first") != std::string::npos);
    c.close();
  }
  BOOST_TEST(gone.wait()); // noticed by the EOF watch, without any write
  BOOST_TEST(held->client_gone());
  BOOST_TEST(!held->send_event("after"));
  flag late;
  held->on_disconnect([&] { late.set(); }); // already gone: fires at once
  BOOST_TEST(late.is_set());
}

BOOST_AUTO_TEST_CASE(client_leaving_before_a_whole_response_fires_on_disconnect) {
  flag gone;
  std::shared_ptr<http_responder> held;
  router r;
  r.add("POST", "/slow", [&](request, std::shared_ptr<http_responder> res) {
    res->on_disconnect([&] { gone.set(); });
    held = res;
  });
  auto srv = start(std::move(r));
  {
    http_client c{srv->port()};
    c.send("POST", "/slow", "{}");
    c.close();
  }
  BOOST_TEST(gone.wait());
  BOOST_TEST(!held->respond(200, "text/plain", "too late"));
}

BOOST_AUTO_TEST_CASE(finished_response_never_fires_on_disconnect) {
  int fired = 0;
  router r;
  r.add("GET", "/x", [&](request, std::shared_ptr<http_responder> res) {
    res->on_disconnect([&] { ++fired; });
    res->respond(200, "text/plain", "done");
  });
  auto srv = start(std::move(r));
  {
    http_client c{srv->port()};
    BOOST_TEST(c.request("GET", "/x").body == "done");
  }
  srv->stop();
  BOOST_TEST(fired == 0);
}

BOOST_AUTO_TEST_CASE(dropped_responder_becomes_500) {
  router r;
  r.add("GET", "/forgot", [](request, std::shared_ptr<http_responder>) {});
  r.add("GET", "/throws", [](request, std::shared_ptr<http_responder>) {
    throw std::runtime_error("handler bug");
  });
  auto srv = start(std::move(r));
  http_client c{srv->port()};
  BOOST_TEST(c.request("GET", "/forgot").status == 500u);
  BOOST_TEST(c.request("GET", "/throws").status == 500u);
}

BOOST_AUTO_TEST_CASE(stop_fires_on_disconnect_for_pending_requests) {
  flag gone;
  std::shared_ptr<http_responder> held;
  flag arrived;
  router r;
  r.add("GET", "/pending", [&](request, std::shared_ptr<http_responder> res) {
    res->on_disconnect([&] { gone.set(); });
    held = res;
    arrived.set();
  });
  auto srv = start(std::move(r));
  http_client c{srv->port()};
  c.send("GET", "/pending");
  BOOST_REQUIRE(arrived.wait());
  srv->stop();
  BOOST_TEST(gone.is_set());
  BOOST_TEST(!held->respond(200, "text/plain", "x"));
  srv->stop(); // idempotent
}

BOOST_AUTO_TEST_CASE(binding_a_busy_port_is_an_io_error) {
  auto a = start(echo_routes());
  server_options opts;
  opts.port = a->port();
  auto b = server::start(opts, echo_routes());
  BOOST_REQUIRE(!b);
  BOOST_TEST(to_string(code_of(b.error())) == "io_error");
  opts.port = 0;
  opts.io_threads = 0;
  BOOST_TEST(!server::start(opts, echo_routes()));
}

BOOST_AUTO_TEST_CASE(several_io_threads_serve_concurrent_clients) {
  server_options opts;
  opts.io_threads = 2;
  auto srv = start(echo_routes(), opts);
  std::vector<std::thread> clients;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    clients.emplace_back([&] {
      http_client c{srv->port()};
      for (int i = 0; i < 20; ++i)
        if (c.request("GET", "/hello").body == "world")
          ++ok;
    });
  for (auto& t : clients)
    t.join();
  BOOST_TEST(ok.load() == 80);
}

BOOST_AUTO_TEST_SUITE_END()
