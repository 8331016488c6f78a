#include "runtime/admin/admin_wire.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <ostream>

using namespace dynamo;
using namespace dynamo::admin;

namespace dynamo {
inline std::ostream& boost_test_print_type(std::ostream& os, errc code) {
  return os << to_string(code);
}
} // namespace dynamo

BOOST_AUTO_TEST_SUITE(admin_wire)

BOOST_AUTO_TEST_CASE(bearer_check) {
  BOOST_TEST(bearer_matches("Bearer abc", "abc"));
  BOOST_TEST(bearer_matches("bearer abc", "abc"));
  BOOST_TEST(bearer_matches("BEARER   abc  ", "abc"));
  BOOST_TEST(!bearer_matches("", "abc"));
  BOOST_TEST(!bearer_matches("Bearer", "abc"));
  BOOST_TEST(!bearer_matches("Bearer ", "abc"));
  BOOST_TEST(!bearer_matches("Bearerabc", "abc"));
  BOOST_TEST(!bearer_matches("Basic abc", "abc"));
  BOOST_TEST(!bearer_matches("Bearer ab", "abc"));
  BOOST_TEST(!bearer_matches("Bearer abcd", "abc"));
  BOOST_TEST(!bearer_matches("Bearer abC", "abc"));
  BOOST_TEST(!bearer_matches("Bearer abc", "")); // an empty token never matches
}

BOOST_AUTO_TEST_CASE(instance_ids_are_1_to_16_hex_digits_not_zero) {
  BOOST_TEST(*parse_instance_hex("00000000000000ab") == 0xabu);
  BOOST_TEST(*parse_instance_hex("AB") == 0xabu);
  BOOST_TEST(*parse_instance_hex("ffffffffffffffff") == 0xffffffffffffffffull);
  for (auto bad : {"", "0", "0000000000000000", "xyz", "0x1f", "-1", "+1", "1 ",
                   "10000000000000000", "12345678901234567"})
    BOOST_TEST(!parse_instance_hex(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(bodies_are_exact_json) {
  BOOST_TEST(health_json("worker") == R"({"status":"ok","process":"worker"})");
  BOOST_TEST(actors_json({{"sup", "a", "running", 2, "boom"}}) ==
             R"({"actors":[{"supervisor":"sup","name":"a","state":"running","restarts":2,"last_reason":"boom"}]})");
  BOOST_TEST(actors_json({}) == R"({"actors":[]})");
  instance_row row{"ns/c/e/00000000000000ab", 0xab, "tcp://127.0.0.1:5555", "draining", {{"m", "v"}},
                   "http://10.0.0.5:8123", std::nullopt};
  BOOST_TEST(instances_json({row}) ==
             R"({"instances":[{"key":"ns/c/e/00000000000000ab","instance_id":"00000000000000ab","address":"tcp://127.0.0.1:5555","health":"draining","admin_url":"http://10.0.0.5:8123","metadata":{"m":"v"}}]})");
  // An instance the answering process routes to: its router's view.
  row.metadata.clear();
  row.routing = routing_view{"router[m]", true, 300};
  instance_row unknown = row;
  unknown.routing->kv_capacity_blocks.reset();
  unknown.routing->kv_capacity_rule = false;
  BOOST_TEST(instances_json({row, unknown}) ==
             R"({"instances":[{"key":"ns/c/e/00000000000000ab","instance_id":"00000000000000ab","address":"tcp://127.0.0.1:5555","health":"draining","admin_url":"http://10.0.0.5:8123","metadata":{},)"
             R"("routing":{"router":"router[m]","kv_capacity_rule":true,"kv_capacity_blocks":300}},)"
             R"({"key":"ns/c/e/00000000000000ab","instance_id":"00000000000000ab","address":"tcp://127.0.0.1:5555","health":"draining","admin_url":"http://10.0.0.5:8123","metadata":{},)"
             R"("routing":{"router":"router[m]","kv_capacity_rule":false,"kv_capacity_blocks":null}}]})");
  BOOST_TEST(drain_json(0xab, true) == R"({"instance_id":"00000000000000ab","draining":true})");
  BOOST_TEST(restarted_json("x\"y") == R"({"restarted":"x\"y"})");
  BOOST_TEST(error_json("m", "t", "c") == R"({"error":{"message":"m","type":"t","code":"c"}})");
  // Invalid UTF-8 is replaced, never thrown.
  BOOST_TEST(restarted_json("\xff") == "{\"restarted\":\"\xef\xbf\xbd\"}");
}

BOOST_AUTO_TEST_CASE(statuses_for_backend_errors) {
  BOOST_TEST(status_for(errc::invalid_argument) == 400u);
  BOOST_TEST(status_for(errc::not_found) == 404u);
  BOOST_TEST(status_for(errc::unsupported) == 501u);
  BOOST_TEST(status_for(errc::timeout) == 504u);
  BOOST_TEST(status_for(errc::closed) == 503u);
  BOOST_TEST(status_for(errc::io_error) == 500u);
  BOOST_TEST(error_type_for(401) == "authentication_error");
  BOOST_TEST(error_type_for(404) == "not_found_error");
  BOOST_TEST(error_type_for(400) == "invalid_request_error");
  BOOST_TEST(error_type_for(500) == "server_error");
}

BOOST_AUTO_TEST_CASE(paths_route_to_one_method_and_operation) {
  auto r = match_admin_route("/admin/health");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->method == "GET");
  BOOST_TEST((r->what == admin_op::health));
  r = match_admin_route("/admin/workers/00ab/undrain");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->method == "POST");
  BOOST_TEST((r->what == admin_op::undrain));
  BOOST_TEST(r->raw_arg == "00ab");
  r = match_admin_route("/admin/actors/a%2Fb/restart");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST((r->what == admin_op::restart));
  BOOST_TEST(r->raw_arg == "a%2Fb");
  BOOST_TEST(!match_admin_route(""));
  BOOST_TEST(!match_admin_route("admin/health"));
  BOOST_TEST(!match_admin_route("/admin/health/"));
  BOOST_TEST(!match_admin_route("/admin//drain"));
  BOOST_TEST(!match_admin_route("/admin/workers/1/drain/x"));
  BOOST_TEST(!match_admin_route("/admin/actors/x/drain"));
}

BOOST_AUTO_TEST_SUITE_END()
