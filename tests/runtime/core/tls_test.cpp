// runtime/core/tls: which TLS files go together, and that unreadable ones are named.
#include "runtime/core/tls.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(tls_suite)

BOOST_AUTO_TEST_CASE(cert_and_key_go_together_and_a_server_needs_them) {
  BOOST_TEST(!check_tls_shape({}, false).has_value());
  BOOST_TEST(!check_tls_shape({"/ca.crt", "", "", ""}, false).has_value()); // a client trusting a CA
  BOOST_TEST(!check_tls_shape({"", "/c.crt", "/c.key", "/clients.crt"}, true).has_value());
  BOOST_TEST(check_tls_shape({"", "/c.crt", "", ""}, false)->key == "key_file");
  BOOST_TEST(check_tls_shape({"", "", "/c.key", ""}, true)->key == "cert_file");
  BOOST_TEST(check_tls_shape({"/ca.crt", "", "", ""}, true)->why == "a TLS server needs cert_file and key_file");
  BOOST_TEST(check_tls_shape({"", "", "", "/clients.crt"}, false)->key == "client_ca_file");
}

BOOST_AUTO_TEST_CASE(files_that_cannot_be_read_are_named) {
  tls_files t{"", "/nonexistent/a.crt", "/nonexistent/a.key", ""};
  BOOST_TEST(!check_tls_shape(t, true).has_value());
  auto bad = check_tls_files(t, true);
  BOOST_REQUIRE(bad.has_value());
  BOOST_TEST(bad->key == "cert_file");
  BOOST_TEST(bad->why == "cannot read '/nonexistent/a.crt': No such file or directory");
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  std::string dir = std::string{src} + "/tests/planes/http/tls/";
  BOOST_TEST(!check_tls_files({dir + "ca.crt", dir + "server.crt", dir + "server.key", dir + "ca.crt"}, true));
  BOOST_TEST(check_tls_files({"", dir + "server.crt", dir + "server.key", "/nonexistent/ca.crt"}, true)->key ==
             "client_ca_file");
}

BOOST_AUTO_TEST_SUITE_END()
