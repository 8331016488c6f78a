#include "runtime/admin/admin_forward.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::admin;

namespace {
const expected<void> hosted{};
const expected<void> elsewhere{make_error(errc::not_found, "not hosted here")};
std::optional<instance_host> worker_at(std::string url) { return instance_host{std::move(url), ""}; }
} // namespace

BOOST_AUTO_TEST_SUITE(admin_forward)

BOOST_AUTO_TEST_CASE(advertised_url_names_a_reachable_host) {
  BOOST_TEST(advertised_admin_url("10.0.0.5", "10.9.9.9", 8123) == "http://10.0.0.5:8123");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "10.9.9.9", 8123) == "http://10.9.9.9:8123");
  BOOST_TEST(advertised_admin_url("::", "fd00::7", 9) == "http://[fd00::7]:9");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "", 8123) == "");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "0.0.0.0", 8123) == "");
  BOOST_TEST(advertised_admin_url("127.0.0.1", "", 0) == "");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "10.9.9.9", 8123, true) == "https://10.9.9.9:8123");
}

BOOST_AUTO_TEST_CASE(hosted_or_failed_locally_is_answered) {
  BOOST_TEST((route_drain(hosted, false, worker_at("http://h:1")).route == drain_route::answer));
  auto other = expected<void>{make_error(errc::timeout, "slow")};
  BOOST_TEST((route_drain(other, false, worker_at("http://h:1")).route == drain_route::answer));
}

BOOST_AUTO_TEST_CASE(not_hosted_forwards_to_the_published_url) {
  auto d = route_drain(elsewhere, false, worker_at("http://10.0.0.7:8123"));
  BOOST_TEST((d.route == drain_route::forward));
  BOOST_TEST(d.to.host == "10.0.0.7");
  BOOST_TEST(d.to.port == 8123);
  BOOST_TEST(!d.to.tls);
}

BOOST_AUTO_TEST_CASE(an_https_admin_url_is_forwarded_over_tls) {
  auto d = route_drain(elsewhere, false, worker_at("https://10.0.0.7:8123"));
  BOOST_TEST((d.route == drain_route::forward));
  BOOST_TEST(d.to.host == "10.0.0.7");
  BOOST_TEST(d.to.port == 8123);
  BOOST_TEST(d.to.tls);
}

BOOST_AUTO_TEST_CASE(forwarded_requests_are_never_forwarded_again) {
  auto d = route_drain(elsewhere, true, worker_at("http://10.0.0.7:8123"));
  BOOST_TEST((d.route == drain_route::not_found));
  // The answer is "<local error>; <why>": why adds the cause, not the local error again.
  BOOST_TEST(d.why.find("discovery") != std::string::npos);
  BOOST_TEST(d.why.find("not hosted") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_or_unpublished_hosts_are_not_found) {
  BOOST_TEST((route_drain(elsewhere, false, std::nullopt).route == drain_route::not_found));
  BOOST_TEST((route_drain(elsewhere, false, worker_at("")).route == drain_route::not_found));
  auto bad = route_drain(elsewhere, false, worker_at("ftp://x"));
  BOOST_TEST((bad.route == drain_route::not_found));
  BOOST_TEST(bad.why.find("admin URL") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_process_record_is_not_forwarded_and_says_what_it_is) {
  // A frontend publishes its admin URL too: draining its id must not bounce
  // there and come back as a second "not hosted".
  auto d = route_drain(elsewhere, false, instance_host{"http://10.0.0.7:8123", "frontend"});
  BOOST_TEST((d.route == drain_route::not_found));
  BOOST_TEST(d.why.find("frontend process") != std::string::npos);
  BOOST_TEST(d.why.find("only workers drain") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
