#include "runtime/plan/kubernetes_scale.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::plan;

namespace dynamo {
inline std::ostream& boost_test_print_type(std::ostream& os, errc code) { return os << to_string(code); }
} // namespace dynamo

BOOST_AUTO_TEST_SUITE(kubernetes_scale_suite)

BOOST_AUTO_TEST_CASE(path_and_patch) {
  BOOST_TEST(deployment_scale_path("serving", "worker-decode") ==
             "/apis/apps/v1/namespaces/serving/deployments/worker-decode/scale");
  BOOST_TEST(replicas_patch(0) == R"({"spec":{"replicas":0}})");
  BOOST_TEST(replicas_patch(12) == R"({"spec":{"replicas":12}})");
}

BOOST_AUTO_TEST_CASE(scale_objects) {
  auto s = parse_scale(R"({"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"w"},)"
                       R"("spec":{"replicas":3},"status":{"replicas":2,"selector":"app=w"}})");
  BOOST_REQUIRE(s);
  BOOST_TEST(s->spec_replicas == 3u);
  BOOST_TEST(s->status_replicas == 2u);
  auto no_status = parse_scale(R"({"spec":{"replicas":1}})");
  BOOST_REQUIRE(no_status);
  BOOST_TEST(no_status->status_replicas == 0u);
  for (const char* bad : {"", "[]", "{}", R"({"spec":{}})", R"({"spec":{"replicas":-1}})",
                          R"({"spec":{"replicas":"3"}})", R"({"spec":{"replicas":1.5}})", "{\"spec\""})
    BOOST_TEST(code_of(parse_scale(bad).error()) == errc::malformed_message, bad);
}

BOOST_AUTO_TEST_CASE(api_errors_carry_the_status_reason_and_message) {
  const char* forbidden = R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)"
                          R"("deployments.apps \"w\" is forbidden: User \"system:serviceaccount:s:planner\" )"
                          R"(cannot patch resource \"deployments/scale\"","reason":"Forbidden","code":403})";
  auto e = api_error("PATCH", "/p", 403, forbidden);
  BOOST_TEST(code_of(e) == errc::config_error);
  BOOST_TEST(message_of(e) == "kubernetes API PATCH /p: HTTP 403 Forbidden: deployments.apps \"w\" is "
                              "forbidden: User \"system:serviceaccount:s:planner\" cannot patch resource "
                              "\"deployments/scale\"");
  BOOST_TEST(code_of(api_error("GET", "/p", 401, "")) == errc::config_error);
  BOOST_TEST(code_of(api_error("GET", "/p", 404, "")) == errc::not_found);
  BOOST_TEST(code_of(api_error("PATCH", "/p", 409, "")) == errc::io_error);
  BOOST_TEST(code_of(api_error("GET", "/p", 503, "")) == errc::io_error);
  BOOST_TEST(message_of(api_error("GET", "/p", 502, "<html>bad gateway</html>")) ==
             "kubernetes API GET /p: HTTP 502 <html>bad gateway</html>");
  BOOST_TEST(message_of(api_error("GET", "/p", 500, "")) == "kubernetes API GET /p: HTTP 500");
}

BOOST_AUTO_TEST_CASE(dns1123_labels) {
  for (const char* ok : {"a", "worker-decode", "w0", "0w"})
    BOOST_TEST(is_dns1123_label(ok), ok);
  BOOST_TEST(is_dns1123_label(std::string(63, 'a')));
  for (const char* bad : {"", "-a", "a-", "A", "a_b", "a.b", "a/b"})
    BOOST_TEST(!is_dns1123_label(bad), bad);
  BOOST_TEST(!is_dns1123_label(std::string(64, 'a')));
}

BOOST_AUTO_TEST_SUITE_END()
