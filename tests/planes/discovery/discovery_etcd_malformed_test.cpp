// The etcd backend fed malformed data by a fake etcd (a loopback HTTP server
// that answers ranges with no records and streams scripted watch messages):
// every bad message is skipped (the watch lists again), counted where it is a
// bad message rather than an etcd error, and never crashes; a good event after
// them is still delivered. Needs no etcd binary.
#include "planes/discovery/etcd_discovery.hpp"
#include "planes/discovery/etcd_codec.hpp"
#include "planes/discovery/record_codec.hpp"
#include "runtime/core/base64.hpp"

#include "discovery_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
using namespace std::chrono_literals;

namespace {

// Serves POST /v3/kv/range (empty, revision 5) and /v3/watch: the n-th watch
// connection gets script[n] (then the connection closes), or, past the script,
// `last` and stays open.
class fake_etcd {
public:
  fake_etcd(std::vector<std::string> script, std::string last) : script_(std::move(script)), last_(std::move(last)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    BOOST_REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    BOOST_REQUIRE(::listen(fd_, 16) == 0);
    BOOST_REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~fake_etcd() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard lock{mutex_};
      for (int c : conns_)
        ::shutdown(c, SHUT_RDWR);
    }
    for (auto& t : sessions_)
      t.join();
    for (int c : conns_)
      ::close(c);
    ::close(fd_);
  }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  [[nodiscard]] int watches() const { return watches_.load(); }

private:
  void accept_loop() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0)
        return;
      std::lock_guard lock{mutex_};
      conns_.push_back(c);
      sessions_.emplace_back([this, c] { serve(c); });
    }
  }
  static bool send_all(int c, std::string_view s) {
    while (!s.empty()) {
      auto n = ::send(c, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads one request; returns its target ("" at EOF).
  static std::string read_request(int c, std::string& buf) {
    for (;;) {
      auto end = buf.find("\r\n\r\n");
      if (end != std::string::npos) {
        auto head = buf.substr(0, end);
        size_t length = 0;
        if (auto p = head.find("Content-Length: "); p != std::string::npos)
          length = std::stoul(head.substr(p + 16));
        if (buf.size() >= end + 4 + length) {
          auto target = head.substr(5, head.find(' ', 5) - 5); // "POST <target> HTTP/1.1"
          buf.erase(0, end + 4 + length);
          return target;
        }
      }
      char tmp[4096];
      auto n = ::recv(c, tmp, sizeof tmp, 0);
      if (n <= 0)
        return "";
      buf.append(tmp, static_cast<size_t>(n));
    }
  }
  static std::string chunk(std::string_view s) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", s.size());
    return std::string{size} + std::string{s} + "\r\n";
  }
  void serve(int c) {
    std::string buf;
    for (;;) {
      auto target = read_request(c, buf);
      if (target.empty())
        return;
      if (target == "/v3/kv/range") {
        std::string body = R"({"header":{"revision":"5"}})";
        if (!send_all(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n" + body))
          return;
        continue;
      }
      int n = watches_++;
      std::string out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
      out += chunk(R"({"result":{"header":{"revision":"5"},"created":true}})" "\n");
      if (n < static_cast<int>(script_.size())) {
        // The message split across two chunks, as a network may deliver it.
        auto& m = script_[static_cast<size_t>(n)];
        out += chunk(std::string_view{m}.substr(0, m.size() / 2));
        out += chunk(std::string_view{m}.substr(m.size() / 2) );
        out += chunk("\n");
        out += "0\r\n\r\n";
        send_all(c, out);
        continue;
      }
      out += chunk(last_ + "\n");
      send_all(c, out);
      char tmp[256];
      while (::recv(c, tmp, sizeof tmp, 0) > 0) {
      } // held open until the client leaves
      return;
    }
  }

  std::vector<std::string> script_;
  std::string last_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> watches_{0};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<int> conns_;
  std::vector<std::thread> sessions_;
};

std::string b64(const std::string& s) { return base64_encode(s); }

} // namespace

BOOST_AUTO_TEST_SUITE(discovery_etcd_malformed)

BOOST_AUTO_TEST_CASE(malformed_watch_messages_are_skipped_counted_and_survived) {
  auto rec = make_record("dyn/backend/generate", 0x1);
  rec.lease_ttl_ms = 1000;
  auto value = discovery_codec::encode(rec);
  auto key = etcd_codec::instance_key("/dynamo", rec.key());
  auto put = R"({"result":{"header":{"revision":"6"},"events":[{"kv":{"key":")" + b64(key) +
             R"(","mod_revision":"6","value":")" + base64_encode(std::span<const uint8_t>{value}) + R"("}}]}})";
  std::vector<std::string> script{
    "this is not json",                                                       // counted
    "{\"result\":" + std::string(3000, '[') + std::string(3000, ']') + "}",   // too deep: counted
    R"({"result":{"header":{"revision":true}}})",                             // wrong type: counted
    R"({"result":{"header":{"revision":"6"},"events":[{"kv":{"key":"%%%%","value":"eA=="}}]}})", // bad base64: counted
    R"({"result":{"header":{"revision":"6"},"events":[{"kv":{"key":")" + b64(key) + R"(","mod_revision":"6","value":"wQ=="}}]}})", // not a record: counted
    R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader"}})", // etcd's error: not counted
    R"({"result":{"header":{"revision":"6"},"canceled":true,"compact_revision":"6"}})", // compacted: list again
  };
  fake_etcd etcd{script, put};
  etcd_discovery_options o;
  o.endpoints = {etcd.url()};
  o.base.lease_ttl = 1000ms;
  o.base.keep_alive_interval = 333ms;
  o.max_backoff = 100ms;
  auto plane = make_etcd_discovery(o);
  BOOST_REQUIRE(plane);
  watch_recorder recorder;
  auto w = (*plane)->watch("dyn", recorder.callback());
  BOOST_REQUIRE(w);
  BOOST_REQUIRE(recorder.wait_size(1));
  BOOST_TEST(recorder.lines().at(0) == "added dyn/backend/generate/0000000000000001 ready");
  BOOST_TEST(etcd.watches() == static_cast<int>(script.size()) + 1);
  BOOST_TEST((*plane)->corrupt_count() == 5u);
}

BOOST_AUTO_TEST_SUITE_END()
