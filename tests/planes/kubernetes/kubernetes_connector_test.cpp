// apps/dynamo-planner's Kubernetes connector against the fake API server: a
// decision becomes GET + merge-PATCH per changed pool, an applied pool is not
// asked again, a failed pool is retried on the next call while the others apply.
#include "apps/dynamo-planner/kubernetes_connector.hpp"
#include "tests/planes/kubernetes/fake_kube_api.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace dynamo;

namespace {

struct connector_fixture {
  test::fake_kube_api api{"serving", "tok"};
  std::string token_file = "/tmp/dynamo-kube-connector-" + std::to_string(::getpid());
  std::unique_ptr<apps::kubernetes_connector> conn;

  connector_fixture() {
    std::ofstream(token_file) << "tok";
    api.add_deployment("worker-prefill", 1);
    api.add_deployment("worker-decode", 1);
    planes::kubernetes_api_options o;
    o.url = api.url();
    o.namespace_name = "serving";
    o.token_file = token_file;
    auto client = planes::kubernetes_client::create(o);
    BOOST_REQUIRE(client);
    auto c = apps::kubernetes_connector::create(std::move(*client), "worker-", {"prefill", "decode"});
    BOOST_REQUIRE(c);
    conn = std::move(*c);
  }
  ~connector_fixture() { std::remove(token_file.c_str()); }

  // "METHOD path-tail" of each request since the last call.
  std::vector<std::string> calls() {
    std::vector<std::string> out;
    for (const auto& r : api.take_requests()) {
      auto tail = r.target.substr(std::string{"/apis/apps/v1/namespaces/serving/deployments/"}.size());
      out.push_back(r.method + " " + tail + (r.body.empty() ? "" : " " + r.body));
    }
    return out;
  }
};

using calls_t = std::vector<std::string>;

} // namespace

BOOST_FIXTURE_TEST_SUITE(kubernetes_connector_suite, connector_fixture)

BOOST_AUTO_TEST_CASE(a_decision_patches_only_what_differs) {
  BOOST_TEST(conn->deployment("decode") == "worker-decode");
  BOOST_TEST(static_cast<bool>(conn->check()));
  BOOST_TEST((calls() == calls_t{"GET worker-prefill/scale", "GET worker-decode/scale"}));

  BOOST_REQUIRE(conn->apply({1, {{"decode", 3}, {"prefill", 1}}}));
  BOOST_TEST((calls() == calls_t{"GET worker-decode/scale", R"(PATCH worker-decode/scale {"spec":{"replicas":3}})",
                                 "GET worker-prefill/scale"}));
  BOOST_TEST(api.replicas("worker-decode") == 3u);

  // The same targets again: nothing to ask. Scale-down: decode only.
  BOOST_REQUIRE(conn->apply({1, {{"decode", 3}, {"prefill", 1}}}));
  BOOST_TEST(calls().empty());
  BOOST_REQUIRE(conn->apply({2, {{"decode", 1}, {"prefill", 1}}}));
  BOOST_TEST((calls() == calls_t{"GET worker-decode/scale", R"(PATCH worker-decode/scale {"spec":{"replicas":1}})"}));
  BOOST_TEST(api.replicas("worker-decode") == 1u);
}

BOOST_AUTO_TEST_CASE(a_failed_pool_is_retried_and_does_not_block_the_others) {
  api.fail("worker-prefill", 403, "Forbidden");
  auto first = conn->apply({1, {{"decode", 2}, {"prefill", 2}}});
  BOOST_REQUIRE(!first);
  BOOST_TEST(code_of(first.error()) == errc::config_error);
  BOOST_TEST(api.replicas("worker-decode") == 2u);
  BOOST_TEST(api.replicas("worker-prefill") == 1u);
  (void)calls();

  api.fail("worker-prefill", 409, "Conflict");
  BOOST_TEST(!conn->apply({1, {{"decode", 2}, {"prefill", 2}}}));
  BOOST_TEST((calls() == calls_t{"GET worker-prefill/scale"})); // decode is done already

  api.heal("worker-prefill");
  BOOST_REQUIRE(conn->apply({1, {{"decode", 2}, {"prefill", 2}}}));
  BOOST_TEST((calls() == calls_t{"GET worker-prefill/scale", R"(PATCH worker-prefill/scale {"spec":{"replicas":2}})"}));
  BOOST_TEST(api.replicas("worker-prefill") == 2u);
}

BOOST_AUTO_TEST_CASE(an_unreachable_api_server_is_an_error_value) {
  api.stop();
  auto r = conn->apply({1, {{"decode", 2}}});
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::io_error);
  BOOST_TEST(!conn->check());
}

BOOST_AUTO_TEST_CASE(pool_names_must_make_deployment_names) {
  planes::kubernetes_api_options o;
  o.url = api.url();
  o.namespace_name = "serving";
  auto client = planes::kubernetes_client::create(o);
  BOOST_REQUIRE(client);
  auto bad = apps::kubernetes_connector::create(std::move(*client), "worker-", {"decode", "Prefill_1"});
  BOOST_REQUIRE(!bad);
  BOOST_TEST(code_of(bad.error()) == errc::config_error);
  BOOST_TEST(message_of(bad.error()).find("'worker-Prefill_1'") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
