// planes/kubernetes against a fake API server (fake_kube_api.hpp): the exact
// requests (method, path, Bearer token, merge-patch content type, body), the
// in-cluster settings, and every failure as a value (403, 404, 409, refused).
#include "planes/kubernetes/kubernetes_client.hpp"
#include "tests/planes/kubernetes/fake_kube_api.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dynamo;
namespace fs = std::filesystem;

namespace {

// A service-account directory (token, namespace, ca.crt) in a fresh temp dir.
struct account_dir {
  fs::path dir = fs::temp_directory_path() / ("dynamo-kube-" + std::to_string(::getpid()) + "-" +
                                              std::to_string(std::rand()));
  account_dir() { fs::create_directories(dir); }
  ~account_dir() { fs::remove_all(dir); }
  void write(const std::string& file, const std::string& text) { std::ofstream(dir / file) << text; }
  std::string path(const std::string& file) const { return (dir / file).string(); }
};

std::unique_ptr<planes::kubernetes_client> client_for(const test::fake_kube_api& api, const account_dir& acc,
                                                      std::string ns = "serving") {
  planes::kubernetes_api_options o;
  o.url = api.url();
  o.namespace_name = std::move(ns);
  o.token_file = acc.path("token");
  auto c = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(c);
  return std::move(*c);
}

// A fake API server in namespace "serving" expecting `server_token`, Deployment
// worker-a (1 replica), and a client whose token file holds `file_token`.
struct served_client {
  test::fake_kube_api api;
  account_dir acc;
  std::unique_ptr<planes::kubernetes_client> c;
  served_client(std::string server_token, const std::string& file_token) : api("serving", std::move(server_token)) {
    api.add_deployment("worker-a", 1);
    acc.write("token", file_token);
    c = client_for(api, acc);
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(kubernetes_client_suite)

BOOST_AUTO_TEST_CASE(get_then_patch_the_scale_subresource) {
  test::fake_kube_api api("serving", "t0ken");
  api.add_deployment("worker-decode", 2);
  account_dir acc;
  acc.write("token", "t0ken\n"); // kubelet's files may end in a newline
  auto c = client_for(api, acc);

  auto s = c->get_scale("worker-decode");
  BOOST_REQUIRE(s);
  BOOST_TEST(s->spec_replicas == 2u);
  BOOST_TEST(s->status_replicas == 2u);
  auto set = c->set_replicas("worker-decode", 5);
  BOOST_REQUIRE(set);
  BOOST_TEST(set->spec_replicas == 5u);
  BOOST_TEST(api.replicas("worker-decode") == 5u);

  auto reqs = api.take_requests();
  BOOST_REQUIRE_EQUAL(reqs.size(), 2u);
  BOOST_TEST(reqs[0].method == "GET");
  BOOST_TEST(reqs[0].target == "/apis/apps/v1/namespaces/serving/deployments/worker-decode/scale");
  BOOST_TEST(reqs[0].authorization == "Bearer t0ken");
  BOOST_TEST(reqs[0].body == "");
  BOOST_TEST(reqs[1].method == "PATCH");
  BOOST_TEST(reqs[1].target == "/apis/apps/v1/namespaces/serving/deployments/worker-decode/scale");
  BOOST_TEST(reqs[1].authorization == "Bearer t0ken");
  BOOST_TEST(reqs[1].content_type == "application/merge-patch+json");
  BOOST_TEST(reqs[1].body == R"({"spec":{"replicas":5}})");
}

BOOST_AUTO_TEST_CASE(the_token_is_read_before_every_request) {
  served_client s("second", "first");
  auto& [api, acc, c] = s;
  auto old = c->get_scale("worker-a");
  BOOST_REQUIRE(!old);
  BOOST_TEST(code_of(old.error()) == errc::config_error); // 401
  BOOST_TEST(message_of(old.error()).find("HTTP 401 Unauthorized") != std::string::npos,
             message_of(old.error()));
  acc.write("token", "second"); // rotated
  BOOST_TEST(static_cast<bool>(c->get_scale("worker-a")));
  auto reqs = api.take_requests();
  BOOST_REQUIRE_EQUAL(reqs.size(), 2u);
  BOOST_TEST(reqs[0].authorization == "Bearer first");
  BOOST_TEST(reqs[1].authorization == "Bearer second");
}

BOOST_AUTO_TEST_CASE(api_errors_are_values_with_the_status_message) {
  served_client s("t", "t");
  auto& [api, acc, c] = s;
  api.fail("worker-a", 403, "Forbidden");
  auto forbidden = c->set_replicas("worker-a", 3);
  BOOST_REQUIRE(!forbidden);
  BOOST_TEST(code_of(forbidden.error()) == errc::config_error);
  BOOST_TEST(message_of(forbidden.error()) ==
             "kubernetes API PATCH /apis/apps/v1/namespaces/serving/deployments/worker-a/scale: "
             "HTTP 403 Forbidden: scripted failure of worker-a");
  api.fail("worker-a", 409, "Conflict");
  auto conflict = c->set_replicas("worker-a", 3);
  BOOST_REQUIRE(!conflict);
  BOOST_TEST(code_of(conflict.error()) == errc::io_error); // retried by the connector
  BOOST_TEST(message_of(conflict.error()).find("HTTP 409 Conflict") != std::string::npos);
  api.heal("worker-a");
  BOOST_TEST(api.replicas("worker-a") == 1u); // nothing applied by the failures

  auto missing = c->get_scale("worker-nope");
  BOOST_REQUIRE(!missing);
  BOOST_TEST(code_of(missing.error()) == errc::not_found);
  BOOST_TEST(message_of(missing.error()).find("deployments.apps \"worker-nope\" not found") != std::string::npos);

  auto wrong_ns = client_for(api, acc, "other")->get_scale("worker-a");
  BOOST_REQUIRE(!wrong_ns);
  BOOST_TEST(code_of(wrong_ns.error()) == errc::not_found);
}

BOOST_AUTO_TEST_CASE(a_refused_connection_is_an_io_error) {
  account_dir acc;
  acc.write("token", "t");
  planes::kubernetes_api_options o;
  o.namespace_name = "serving";
  o.token_file = acc.path("token");
  {
    test::fake_kube_api api("serving", "t");
    o.url = api.url();
  } // stopped: its port now refuses
  auto c = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(c);
  auto r = (*c)->get_scale("worker-a");
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::io_error);
  BOOST_TEST(message_of(r.error()).find("refused") != std::string::npos, message_of(r.error()));
}

BOOST_AUTO_TEST_CASE(bad_names_and_missing_tokens_send_nothing) {
  test::fake_kube_api api("serving", "t");
  account_dir acc;
  auto c = client_for(api, acc);
  auto no_token = c->get_scale("worker-a"); // the token file does not exist
  BOOST_REQUIRE(!no_token);
  BOOST_TEST(code_of(no_token.error()) == errc::config_error);
  acc.write("token", "t");
  for (const char* bad : {"Worker", "worker_a", "-a", "a-", "a/b", ""}) {
    auto r = c->get_scale(bad);
    BOOST_REQUIRE(!r);
    BOOST_TEST(code_of(r.error()) == errc::invalid_argument, bad);
  }
  BOOST_TEST(api.take_requests().empty());
}

BOOST_AUTO_TEST_CASE(in_cluster_settings_come_from_the_environment_and_the_account) {
  account_dir acc;
  planes::kubernetes_api_options o;
  o.account_dir = acc.dir.string();
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
  auto outside = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(!outside);
  BOOST_TEST(code_of(outside.error()) == errc::config_error);

  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto no_ns = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(!no_ns);
  BOOST_TEST(message_of(no_ns.error()).find("/namespace") != std::string::npos);

  acc.write("namespace", "dynamo-prod\n");
  auto c = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(c);
  BOOST_TEST((*c)->url() == "https://10.96.0.1:443");
  BOOST_TEST((*c)->namespace_name() == "dynamo-prod");

  ::setenv("KUBERNETES_SERVICE_HOST", "fd00:10:96::1", 1);
  auto v6 = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(v6);
  BOOST_TEST((*v6)->url() == "https://[fd00:10:96::1]:443");
  // No CA file in the account dir: every request fails (the trust store), never throws.
  acc.write("token", "t");
  auto r = (*v6)->get_scale("worker-a");
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::io_error);
  BOOST_TEST(message_of(r.error()).find("ca.crt") != std::string::npos, message_of(r.error()));
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ::unsetenv("KUBERNETES_SERVICE_PORT");
}

BOOST_AUTO_TEST_SUITE_END()
