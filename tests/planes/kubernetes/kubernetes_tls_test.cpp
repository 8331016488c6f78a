// The in-cluster path over real TLS: a small HTTPS API server (Asio + OpenSSL,
// certificates in tls/: a test CA, a server certificate for IP 127.0.0.1 signed
// by it, and an unrelated CA), the client configured from KUBERNETES_SERVICE_HOST
// / PORT and a service-account directory. A wrong CA or a certificate that does
// not name the host fails the request as a value.
// tls/ was made with (valid until 2126), ca.key thrown away:
//   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key
//     -out ca.crt -days 36500 -subj "/CN=dynamo test cluster CA"      (other-ca.crt alike)
//   openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key
//     -out server.csr -subj "/CN=kube-apiserver"
//   openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt
//     -days 36500 -extfile ext.cnf     (subjectAltName=IP:127.0.0.1, extendedKeyUsage=serverAuth)
#include "planes/kubernetes/kubernetes_client.hpp"
#include "tests/planes/support/support.hpp" // errc printing for BOOST_TEST

#include <utility> // before asio: g++ 12 + Boost 1.74 coroutine fix

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unistd.h>

using namespace dynamo;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace fs = std::filesystem;

namespace {

fs::path tls_dir() {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  return fs::path{src} / "tests" / "planes" / "kubernetes" / "tls";
}

// Answers every request on 127.0.0.1 with a Scale object (one request per
// connection), recording "METHOD target Authorization"; handshakes the client
// rejects are counted as failed.
class tls_api_server {
public:
  tls_api_server() : ctx_(asio::ssl::context::tls_server), acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    ctx_.use_certificate_chain_file((tls_dir() / "server.crt").string());
    ctx_.use_private_key_file((tls_dir() / "server.key").string(), asio::ssl::context::pem);
    thread_ = std::thread([this] { serve(); });
  }
  ~tls_api_server() {
    stop_ = true;
    beast::error_code ec;
    asio::ip::tcp::socket poke(io_);
    poke.connect(acceptor_.local_endpoint(), ec); // wake accept()
    thread_.join();
  }
  [[nodiscard]] uint16_t port() const { return acceptor_.local_endpoint().port(); }
  [[nodiscard]] std::vector<std::string> requests() {
    std::lock_guard lk{m_};
    return requests_;
  }
  [[nodiscard]] int failed_handshakes() const { return failed_handshakes_.load(); }

private:
  void serve() {
    while (!stop_) {
      beast::error_code ec;
      asio::ip::tcp::socket sock(io_);
      acceptor_.accept(sock, ec);
      if (ec || stop_)
        continue;
      asio::ssl::stream<asio::ip::tcp::socket> s(std::move(sock), ctx_);
      s.handshake(asio::ssl::stream_base::server, ec);
      if (ec) {
        ++failed_handshakes_;
        continue;
      }
      beast::flat_buffer buf;
      beast::http::request<beast::http::string_body> req;
      beast::http::read(s, buf, req, ec);
      if (ec)
        continue;
      {
        std::lock_guard lk{m_};
        requests_.push_back(std::string{req.method_string()} + " " + std::string{req.target()} + " " +
                            std::string{req[beast::http::field::authorization]});
      }
      beast::http::response<beast::http::string_body> res{beast::http::status::ok, 11};
      res.set(beast::http::field::content_type, "application/json");
      res.keep_alive(false);
      res.body() = R"({"kind":"Scale","spec":{"replicas":4},"status":{"replicas":3}})";
      res.prepare_payload();
      beast::http::write(s, res, ec);
      s.shutdown(ec);
    }
  }

  asio::io_context io_;
  asio::ssl::context ctx_;
  asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  std::atomic<int> failed_handshakes_{0};
  std::mutex m_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// A service-account directory: token, namespace and the given CA as ca.crt.
struct account {
  fs::path dir = fs::temp_directory_path() / ("dynamo-kube-tls-" + std::to_string(::getpid()));
  explicit account(const std::string& ca) {
    fs::create_directories(dir);
    std::ofstream(dir / "token") << "sa-token\n";
    std::ofstream(dir / "namespace") << "serving";
    fs::copy_file(tls_dir() / ca, dir / "ca.crt", fs::copy_options::overwrite_existing);
  }
  ~account() { fs::remove_all(dir); }
};

expected<plan::deployment_scale> in_cluster_get(const tls_api_server& srv, const std::string& ca,
                                                const std::string& host = "127.0.0.1") {
  account acc(ca);
  ::setenv("KUBERNETES_SERVICE_HOST", host.c_str(), 1);
  ::setenv("KUBERNETES_SERVICE_PORT", std::to_string(srv.port()).c_str(), 1);
  planes::kubernetes_api_options o;
  o.account_dir = acc.dir.string();
  auto c = planes::kubernetes_client::create(o);
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  BOOST_REQUIRE(c);
  BOOST_TEST((*c)->url() == "https://" + host + ":" + std::to_string(srv.port()));
  return (*c)->get_scale("worker-decode");
}

} // namespace

BOOST_AUTO_TEST_SUITE(kubernetes_tls_suite)

BOOST_AUTO_TEST_CASE(in_cluster_over_https_with_the_service_account) {
  tls_api_server srv;
  auto s = in_cluster_get(srv, "ca.crt");
  BOOST_REQUIRE_MESSAGE(s, (s ? "" : describe(s.error())));
  BOOST_TEST(s->spec_replicas == 4u);
  BOOST_TEST(s->status_replicas == 3u);
  BOOST_TEST((srv.requests() ==
              std::vector<std::string>{"GET /apis/apps/v1/namespaces/serving/deployments/worker-decode/scale "
                                       "Bearer sa-token"}));
}

BOOST_AUTO_TEST_CASE(a_server_the_ca_did_not_sign_is_refused) {
  tls_api_server srv;
  auto s = in_cluster_get(srv, "other-ca.crt");
  BOOST_REQUIRE(!s);
  BOOST_TEST(code_of(s.error()) == errc::io_error);
  BOOST_TEST(message_of(s.error()).find("certificate verify failed") != std::string::npos,
             message_of(s.error()));
  BOOST_TEST(srv.requests().empty()); // no token left the client
}

BOOST_AUTO_TEST_CASE(a_certificate_for_another_host_is_refused) {
  tls_api_server srv; // its certificate names IP 127.0.0.1 only
  auto s = in_cluster_get(srv, "ca.crt", "localhost");
  BOOST_REQUIRE(!s);
  BOOST_TEST(code_of(s.error()) == errc::io_error);
  BOOST_TEST(srv.requests().empty());
}

BOOST_AUTO_TEST_SUITE_END()
