#include "runtime/admin/admin_forward.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::admin;

namespace {
const expected<void> hosted{};
const expected<void> elsewhere{make_error(errc::not_found, "not hosted here")};
} // namespace

BOOST_AUTO_TEST_SUITE(admin_forward)

BOOST_AUTO_TEST_CASE(advertised_url_names_a_reachable_host) {
  BOOST_TEST(advertised_admin_url("10.0.0.5", "10.9.9.9", 8123) == "http://10.0.0.5:8123");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "10.9.9.9", 8123) == "http://10.9.9.9:8123");
  BOOST_TEST(advertised_admin_url("::", "fd00::7", 9) == "http://[fd00::7]:9");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "", 8123) == "");
  BOOST_TEST(advertised_admin_url("0.0.0.0", "0.0.0.0", 8123) == "");
  BOOST_TEST(advertised_admin_url("127.0.0.1", "", 0) == "");
}

BOOST_AUTO_TEST_CASE(hosted_or_failed_locally_is_answered) {
  BOOST_TEST((route_drain(hosted, false, std::string{"http://h:1"}).route == drain_route::answer));
  auto other = expected<void>{make_error(errc::timeout, "slow")};
  BOOST_TEST((route_drain(other, false, std::string{"http://h:1"}).route == drain_route::answer));
}

BOOST_AUTO_TEST_CASE(not_hosted_forwards_to_the_published_url) {
  auto d = route_drain(elsewhere, false, std::string{"http://10.0.0.7:8123"});
  BOOST_TEST((d.route == drain_route::forward));
  BOOST_TEST(d.to.host == "10.0.0.7");
  BOOST_TEST(d.to.port == 8123);
}

BOOST_AUTO_TEST_CASE(forwarded_requests_are_never_forwarded_again) {
  auto d = route_drain(elsewhere, true, std::string{"http://10.0.0.7:8123"});
  BOOST_TEST((d.route == drain_route::not_found));
  BOOST_TEST(d.why.find("forwarded") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(unknown_or_unpublished_hosts_are_not_found) {
  BOOST_TEST((route_drain(elsewhere, false, std::nullopt).route == drain_route::not_found));
  BOOST_TEST((route_drain(elsewhere, false, std::string{}).route == drain_route::not_found));
  auto bad = route_drain(elsewhere, false, std::string{"ftp://x"});
  BOOST_TEST((bad.route == drain_route::not_found));
  BOOST_TEST(bad.why.find("admin URL") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
