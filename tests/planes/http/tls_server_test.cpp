// planes/http over TLS: HTTPS requests and an SSE stream through the project's
// HTTPS client (planes/http_client), mutual TLS, and the failures that must end
// only their own connection: a plaintext client, a client trusting another CA,
// a client without the certificate mutual TLS asks for, a silent client (the
// handshake timeout). Certificates: tls/ (tls/make_certs.sh says how).
#include "planes/http/server.hpp"
#include "planes/http_client/http_client.hpp"

#include "tests/support/http_client.hpp"

#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>

using namespace dynamo;
using namespace dynamo::http;

namespace {

std::string tls_file(const std::string& name) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  return (std::filesystem::path{src} / "tests" / "planes" / "http" / "tls" / name).string();
}

tls_files server_files(bool mutual = false) {
  tls_files t;
  t.cert_file = tls_file("server.crt");
  t.key_file = tls_file("server.key");
  if (mutual)
    t.client_ca_file = tls_file("ca.crt");
  return t;
}

client_tls trusting(const std::string& ca, bool with_client_cert = false) {
  client_tls t;
  t.ca_file = tls_file(ca);
  if (with_client_cert) {
    t.cert_file = tls_file("client.crt");
    t.key_file = tls_file("client.key");
  }
  return t;
}

router routes() {
  router r;
  r.add("GET", "/hello", [](request req, std::shared_ptr<http_responder> res) {
    res->respond(200, "text/plain", "world from " + req.method);
  });
  r.add("POST", "/stream", [](request req, std::shared_ptr<http_responder> res) {
    res->start_stream();
    for (int i = 0; i < 3; ++i)
      res->send_event(req.body + std::to_string(i));
    res->send_event("[DONE]");
    res->finish();
  });
  return r;
}

std::unique_ptr<server> start_tls(server_options opts = {}, router r = routes()) {
  if (!opts.tls)
    opts.tls = server_files();
  auto s = server::start(std::move(opts), std::move(r));
  BOOST_REQUIRE_MESSAGE(s, "server failed to start: " << (s ? "" : message_of(s.error())));
  BOOST_TEST((*s)->scheme() == "https");
  return std::move(*s);
}

expected<client_response> fetch(http_client& c, const std::string& method, const std::string& target,
                                std::string body = {}) {
  client_request req;
  req.method = method;
  req.target = target;
  req.body = std::move(body);
  return c.request(std::move(req), std::chrono::seconds(10));
}

expected<client_response> get_hello(uint16_t port, std::optional<client_tls> tls) {
  http_client c{"127.0.0.1", port, 1, std::move(tls)};
  return fetch(c, "GET", "/hello");
}

} // namespace

BOOST_AUTO_TEST_SUITE(tls_server_suite)

BOOST_AUTO_TEST_CASE(https_request_is_answered_and_the_connection_reused) {
  auto srv = start_tls();
  http_client c{"127.0.0.1", srv->port(), 1, trusting("ca.crt")};
  for (int i = 0; i < 3; ++i) {
    auto r = fetch(c, "GET", "/hello");
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : message_of(r.error())));
    BOOST_TEST(r->status == 200u);
    BOOST_TEST(r->body == "world from GET");
  }
  BOOST_TEST(c.connections_opened() == 1u); // keep-alive over TLS
}

BOOST_AUTO_TEST_CASE(sse_stream_over_tls_arrives_whole) {
  auto srv = start_tls();
  http_client c{"127.0.0.1", srv->port(), 1, trusting("ca.crt")};
  auto r = fetch(c, "POST", "/stream", "n");
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : message_of(r.error())));
  BOOST_TEST(r->status == 200u);
  BOOST_TEST(r->body == "data: n0\n\ndata: n1\n\ndata: n2\n\ndata: [DONE]\n\n");
}

BOOST_AUTO_TEST_CASE(plaintext_client_is_closed_and_the_server_serves_on) {
  auto srv = start_tls();
  {
    dynamo::test::http_client plain{srv->port()};
    auto reply = plain.request("GET", "/hello");
    BOOST_TEST(reply.status == 0u); // no HTTP answer: the connection just closes
  }
  auto r = get_hello(srv->port(), trusting("ca.crt"));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->body == "world from GET");
}

BOOST_AUTO_TEST_CASE(a_client_trusting_another_ca_refuses_the_server) {
  auto srv = start_tls();
  auto r = get_hello(srv->port(), trusting("other-ca.crt"));
  BOOST_TEST(!r);
  if (!r)
    BOOST_TEST((code_of(r.error()) == errc::io_error));
  BOOST_TEST(get_hello(srv->port(), trusting("ca.crt")).operator bool()); // others still served
}

BOOST_AUTO_TEST_CASE(a_plaintext_server_is_not_spoken_to_over_tls) {
  auto s = server::start({}, routes());
  BOOST_REQUIRE(s);
  BOOST_TEST((*s)->scheme() == "http");
  BOOST_TEST(!get_hello((*s)->port(), trusting("ca.crt")));
  BOOST_TEST(get_hello((*s)->port(), std::nullopt).operator bool());
}

BOOST_AUTO_TEST_CASE(mutual_tls_admits_only_clients_with_a_certificate_of_its_ca) {
  server_options o;
  o.tls = server_files(true);
  auto srv = start_tls(o);
  BOOST_TEST(!get_hello(srv->port(), trusting("ca.crt")));
  auto r = get_hello(srv->port(), trusting("ca.crt", true));
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : message_of(r.error())));
  BOOST_TEST(r->body == "world from GET");
}

BOOST_AUTO_TEST_CASE(a_silent_client_is_cut_at_the_handshake_timeout) {
  server_options o;
  o.handshake_timeout = std::chrono::seconds(1);
  auto srv = start_tls(o);
  namespace net = boost::asio;
  net::io_context io;
  net::ip::tcp::socket silent{io};
  silent.connect({net::ip::make_address("127.0.0.1"), srv->port()});
  timeval tv{30, 0}; // a server that never gave up would fail the read with EAGAIN
  ::setsockopt(silent.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // Nothing sent: the server gives up on the handshake and closes.
  char byte;
  boost::system::error_code ec;
  BOOST_TEST(silent.read_some(net::buffer(&byte, 1), ec) == 0u);
  BOOST_TEST((ec == net::error::eof || ec == net::error::connection_reset), ec.message());
  BOOST_TEST(get_hello(srv->port(), trusting("ca.crt")).operator bool());
}

BOOST_AUTO_TEST_CASE(client_leaving_a_tls_stream_fires_on_disconnect) {
  std::mutex m;
  std::condition_variable cv;
  bool gone = false;
  std::shared_ptr<http_responder> held;
  router r;
  r.add("POST", "/stream", [&](request, std::shared_ptr<http_responder> res) {
    res->on_disconnect([&] {
      std::lock_guard lock{m};
      gone = true;
      cv.notify_all();
    });
    res->start_stream();
    res->send_event("first");
    std::lock_guard lock{m};
    held = res; // never finished: only the client can end this
  });
  auto srv = start_tls({}, std::move(r));
  {
    http_client c{"127.0.0.1", srv->port(), 1, trusting("ca.crt")};
    auto cancel = std::make_shared<cancel_token>();
    std::promise<void> first;
    client_callbacks cb;
    cb.on_data = [&first, fired = false](std::string_view) mutable {
      if (!std::exchange(fired, true))
        first.set_value();
    };
    client_request req;
    req.target = "/stream";
    req.cancel = cancel;
    c.start(std::move(req), std::move(cb));
    BOOST_REQUIRE(first.get_future().wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    cancel->cancel(); // shuts the socket down: the server sees the client leave
  }
  std::unique_lock lock{m};
  BOOST_TEST(cv.wait_for(lock, std::chrono::seconds(5), [&] { return gone; })); // no write needed
  BOOST_TEST(!held->send_event("after"));
}

BOOST_AUTO_TEST_CASE(a_pipelined_request_waits_in_the_socket_while_the_first_is_pending) {
  // The second request's records arrive while the first response is pending:
  // the EOF watch must leave them for the next read, and not take the client for gone.
  std::atomic<bool> gone{false};
  std::vector<std::thread> later;
  router r = routes();
  r.add("GET", "/slow", [&](request, std::shared_ptr<http_responder> res) {
    res->on_disconnect([&] { gone = true; });
    later.emplace_back([res] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300)); // several watch rechecks
      res->respond(200, "text/plain", "slow");
    });
  });
  auto srv = start_tls({}, std::move(r));
  namespace net = boost::asio;
  namespace bhttp = boost::beast::http;
  net::io_context io;
  net::ssl::context ctx{net::ssl::context::tls_client};
  ctx.load_verify_file(tls_file("ca.crt"));
  ctx.set_verify_mode(net::ssl::verify_peer);
  boost::beast::ssl_stream<net::ip::tcp::socket> s{io, ctx};
  s.next_layer().connect({net::ip::make_address("127.0.0.1"), srv->port()});
  s.handshake(net::ssl::stream_base::client);
  net::write(s, net::buffer(std::string{"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the first is pending now
  net::write(s, net::buffer(std::string{"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"}));
  boost::beast::flat_buffer buf;
  for (const char* want : {"slow", "world from GET"}) {
    bhttp::response<bhttp::string_body> res;
    boost::beast::error_code ec;
    bhttp::read(s, buf, res, ec);
    BOOST_TEST(!ec, ec.message());
    BOOST_TEST(res.body() == want);
  }
  BOOST_TEST(!gone);
  for (auto& t : later)
    t.join();
}

BOOST_AUTO_TEST_CASE(bad_tls_files_fail_the_start_naming_the_file) {
  auto fails = [](tls_files t, const std::string& names) {
    server_options o;
    o.tls = std::move(t);
    auto s = server::start(std::move(o), routes());
    BOOST_REQUIRE(!s);
    BOOST_TEST((code_of(s.error()) == errc::config_error));
    BOOST_TEST(message_of(s.error()).find(names) != std::string::npos, message_of(s.error()));
  };
  fails({"", tls_file("server.crt"), ""}, "tls.key_file");
  fails({"", "/nonexistent/server.crt", tls_file("server.key")}, "/nonexistent/server.crt");
  fails({"", tls_file("server.crt"), tls_file("client.key")}, "tls.key_file: cannot load '" + tls_file("client.key"));
  fails({"", tls_file("server.key"), tls_file("server.key")}, "tls.cert_file");
  fails({"", "", "", tls_file("ca.crt")}, "tls.cert_file");
  fails({"", tls_file("server.crt"), tls_file("server.key"), "/nonexistent/ca.crt"},
        "tls.client_ca_file: cannot read '/nonexistent/ca.crt'");
}

BOOST_AUTO_TEST_SUITE_END()
