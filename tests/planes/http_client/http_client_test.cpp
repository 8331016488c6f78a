#include "planes/http_client/http_client.hpp"

#include "planes/http/responder.hpp"
#include "planes/http/server.hpp"

#include "tests/support/loopback_listener.hpp"

#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace dynamo;

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

private:
  std::mutex m_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Serves /stream: one event, then nothing until the client leaves; and /hello.
struct fixture {
  flag client_left;
  std::atomic<int> streams{0};
  std::unique_ptr<http::server> srv;

  fixture() {
    http::router r;
    r.add("POST", "/stream", [this](http::request, std::shared_ptr<http::http_responder> res) {
      ++streams;
      res->on_disconnect([this] { client_left.set(); });
      res->start_stream();
      res->send_event("first");
      keep_ = res; // never finished: only the client can end it
    });
    r.add("GET", "/hello", [](http::request, std::shared_ptr<http::http_responder> res) {
      res->respond(200, "text/plain", "world");
    });
    auto s = http::server::start({.host = "127.0.0.1", .port = 0}, std::move(r));
    BOOST_REQUIRE(s);
    srv = std::move(*s);
  }
  ~fixture() { srv->stop(); }

private:
  std::shared_ptr<http::http_responder> keep_;
};

/// A raw TCP server that plays a script per accepted connection: answer the
/// first request "ok" with keep-alive, then either close at once (an idle
/// connection the server times out) or read the next request and close
/// without answering (the close racing the client's reuse); or answer nothing.
class scripted_server {
public:
  enum class after_first { close_idle, close_on_next_request, never_answer };
  explicit scripted_server(std::vector<after_first> script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    BOOST_REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    BOOST_REQUIRE(::listen(fd_, 8) == 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~scripted_server() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  [[nodiscard]] uint16_t port() const { return port_; }
  [[nodiscard]] int accepted() const { return accepted_.load(); }

private:
  /// Reads one request's head (these requests have no body); false at EOF.
  static bool read_request(int c) {
    std::string got;
    char buf[1024];
    while (got.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::read(c, buf, sizeof buf);
      if (n <= 0)
        return false;
      got.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  void serve() {
    for (size_t i = 0;; ++i) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0)
        return;
      ++accepted_;
      const after_first what = i < script_.size() ? script_[i] : after_first::close_idle;
      if (read_request(c) && what != after_first::never_answer) {
        constexpr std::string_view ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok";
        (void)!::write(c, ok.data(), ok.size());
        if (what == after_first::close_on_next_request)
          (void)read_request(c);
      }
      ::close(c);
    }
  }
  std::vector<after_first> script_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

} // namespace

BOOST_AUTO_TEST_CASE(a_pooled_connection_the_server_closed_is_not_used) {
  scripted_server srv({scripted_server::after_first::close_idle});
  http::http_client client("127.0.0.1", srv.port());
  BOOST_REQUIRE(client.request({"GET", "/a", "", ""}));
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // the server's close arrives
  auto r = client.request({"POST", "/b", "{}", "application/json"});
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
  BOOST_TEST(r->body == "ok");
  BOOST_TEST(srv.accepted() == 2);
}

BOOST_AUTO_TEST_CASE(a_request_the_closing_server_never_answered_goes_once_more) {
  using w = scripted_server::after_first;
  scripted_server srv({w::close_on_next_request, w::close_idle});
  http::http_client client("127.0.0.1", srv.port());
  BOOST_REQUIRE(client.request({"GET", "/a", "", ""}));
  // Written to the pooled connection, which the server closes unanswered:
  // sent again on a fresh one, which answers.
  auto r = client.request({"POST", "/b", "{}", "application/json"});
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
  BOOST_TEST(r->body == "ok");
  BOOST_TEST(srv.accepted() == 2);
}

BOOST_AUTO_TEST_CASE(the_retry_is_one_fresh_connection_only) {
  using w = scripted_server::after_first;
  scripted_server srv({w::close_on_next_request, w::never_answer, w::close_idle});
  http::http_client client("127.0.0.1", srv.port());
  BOOST_REQUIRE(client.request({"GET", "/a", "", ""}));
  auto r = client.request({"GET", "/b", "", ""});
  BOOST_REQUIRE(!r);
  BOOST_TEST(static_cast<int>(code_of(r.error())) == static_cast<int>(errc::io_error));
  BOOST_TEST(srv.accepted() == 2);
}

BOOST_FIXTURE_TEST_SUITE(http_client_suite, fixture)

BOOST_AUTO_TEST_CASE(cancel_mid_stream_closes_the_connection_and_reports_cancelled) {
  http::http_client client("127.0.0.1", srv->port());
  auto token = std::make_shared<http::cancel_token>();
  std::promise<expected<void>> done;
  http::client_callbacks cb;
  cb.on_data = [token](std::string_view d) {
    if (d.find("data: first") != std::string_view::npos)
      token->cancel(); // from the client's own io thread, mid-read
  };
  cb.on_done = [&done](expected<void> r) { done.set_value(std::move(r)); };
  client.start({"POST", "/stream", "{}", "application/json", token}, std::move(cb));
  auto fut = done.get_future();
  BOOST_REQUIRE(fut.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  auto r = fut.get();
  BOOST_REQUIRE(!r);
  BOOST_TEST(static_cast<int>(code_of(r.error())) == static_cast<int>(errc::cancelled));
  BOOST_TEST(client_left.wait()); // the server saw its client leave
  // The shut-down connection is not reused.
  auto next = client.request({"GET", "/hello", "", ""});
  BOOST_REQUIRE(next);
  BOOST_TEST(next->body == "world");
  BOOST_TEST(client.connections_opened() == 2u);
}

BOOST_AUTO_TEST_CASE(cancel_from_another_thread_before_and_during_the_request) {
  http::http_client client("127.0.0.1", srv->port());
  // Cancelled before it starts: never sent.
  auto early = std::make_shared<http::cancel_token>();
  early->cancel();
  auto r = client.request({"POST", "/stream", "{}", "application/json", early});
  BOOST_REQUIRE(!r);
  BOOST_TEST(static_cast<int>(code_of(r.error())) == static_cast<int>(errc::cancelled));
  BOOST_TEST(streams.load() == 0);
  // Cancelled by the test thread while the stream is open.
  auto late = std::make_shared<http::cancel_token>();
  flag got_first;
  std::promise<expected<void>> done;
  http::client_callbacks cb;
  cb.on_data = [&got_first](std::string_view) { got_first.set(); };
  cb.on_done = [&done](expected<void> res) { done.set_value(std::move(res)); };
  client.start({"POST", "/stream", "{}", "application/json", late}, std::move(cb));
  BOOST_REQUIRE(got_first.wait());
  late->cancel();
  auto fut = done.get_future();
  BOOST_REQUIRE(fut.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  auto res = fut.get();
  BOOST_REQUIRE(!res);
  BOOST_TEST(static_cast<int>(code_of(res.error())) == static_cast<int>(errc::cancelled));
  BOOST_TEST(client_left.wait());
}

BOOST_AUTO_TEST_CASE(an_unused_token_changes_nothing) {
  http::http_client client("127.0.0.1", srv->port());
  for (int i = 0; i < 2; ++i) {
    auto r = client.request({"GET", "/hello", "", "", std::make_shared<http::cancel_token>()});
    BOOST_REQUIRE(r);
    BOOST_TEST(r->status == 200u);
  }
  BOOST_TEST(client.connections_opened() == 1u); // kept alive and reused
}

BOOST_AUTO_TEST_CASE(a_cancel_while_connecting_ends_a_blocking_request_at_once) {
  // A loopback listener whose accept queue is full: the kernel drops further
  // SYNs, so the client's connect hangs (10 s) with no socket to shut down yet.
  test::loopback_listener full{0};
  std::vector<int> fillers;
  for (int i = 0; i < 2; ++i) {
    int f = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    (void) ::connect(f, reinterpret_cast<sockaddr*>(&full.addr), sizeof full.addr);
    fillers.push_back(f);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  http::http_client client("127.0.0.1", full.port);
  auto token = std::make_shared<http::cancel_token>();
  std::thread canceller{[token] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    token->cancel();
  }};
  auto t0 = std::chrono::steady_clock::now();
  auto r = client.request({"GET", "/hello", "", "application/json", token}, std::chrono::seconds(30));
  auto waited = std::chrono::steady_clock::now() - t0;
  canceller.join();
  BOOST_REQUIRE(!r);
  BOOST_TEST(static_cast<int>(code_of(r.error())) == static_cast<int>(errc::cancelled));
  BOOST_TEST((waited < std::chrono::seconds(2)));
  for (int f : fillers)
    ::close(f);
}

BOOST_AUTO_TEST_SUITE_END()
