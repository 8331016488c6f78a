#include "runtime/core/host.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(host)

BOOST_AUTO_TEST_CASE(wildcards_name_no_interface) {
  for (const char* h : {"0.0.0.0", "::", "[::]", "*", ""})
    BOOST_TEST(is_wildcard_host(h), h);
  for (const char* h : {"127.0.0.1", "10.0.0.5", "::1", "worker-3.cluster.local", "0.0.0.1"})
    BOOST_TEST(!is_wildcard_host(h), h);
}

BOOST_AUTO_TEST_CASE(loopback_hosts) {
  for (auto h : {"127.0.0.1", "127.1.2.3", "::1", "localhost", "LocalHost", "::ffff:127.0.0.1"})
    BOOST_TEST(is_loopback_host(h), h);
  for (auto h : {"0.0.0.0", "::", "10.0.0.1", "128.0.0.1", "example.com", "", "[::1]",
                 "::ffff:10.0.0.1", "127.0.0.1 "})
    BOOST_TEST(!is_loopback_host(h), h);
}

BOOST_AUTO_TEST_CASE(the_host_of_a_bound_endpoint_is_replaced) {
  BOOST_TEST(with_host("tcp://0.0.0.0:41234", "10.0.0.5") == "tcp://10.0.0.5:41234");
  BOOST_TEST(with_host("tcp://[::]:5555", "10.0.0.5") == "tcp://10.0.0.5:5555");
  BOOST_TEST(with_host("tcp://0.0.0.0:5555", "fd00::7") == "tcp://[fd00::7]:5555");
  BOOST_TEST(with_host("tcp://0.0.0.0:5555", "[fd00::7]") == "tcp://[fd00::7]:5555");
  BOOST_TEST(with_host("tcp://127.0.0.1:5555", "") == "tcp://127.0.0.1:5555");
  BOOST_TEST(with_host("ipc:///tmp/x", "10.0.0.5") == "ipc:///tmp/x");
  BOOST_TEST(with_host("inproc-fake://event/3", "10.0.0.5") == "inproc-fake://event/3");
}

BOOST_AUTO_TEST_CASE(urls_bracket_ipv6_literals) {
  BOOST_TEST(url_host("10.0.0.5") == "10.0.0.5");
  BOOST_TEST(url_host("fd00::7") == "[fd00::7]");
  BOOST_TEST(url_host("[fd00::7]") == "[fd00::7]");
  BOOST_TEST(url_host("node-1.lan") == "node-1.lan");
}

BOOST_AUTO_TEST_SUITE_END()
