#include "runtime/core/http_url.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(http_url_suite)

BOOST_AUTO_TEST_CASE(urls_split_into_host_port_and_target) {
  auto u = parse_http_url("http://127.0.0.1:9000/metrics");
  BOOST_REQUIRE(u);
  BOOST_TEST(u->host == "127.0.0.1");
  BOOST_TEST(u->port == 9000);
  BOOST_TEST(u->target == "/metrics");
  auto d = parse_http_url("http://etcd-0", "etcd endpoint", 2379);
  BOOST_REQUIRE(d);
  BOOST_TEST(d->port == 2379);
  BOOST_TEST(d->target.empty());
  auto v6 = parse_http_url("http://[::1]:2379/");
  BOOST_REQUIRE(v6);
  BOOST_TEST(v6->host == "::1");
  BOOST_TEST(v6->port == 2379);
  BOOST_TEST(parse_http_url("http://[::1]")->host == "::1");
}

BOOST_AUTO_TEST_CASE(bad_urls_name_what_they_are) {
  for (auto bad : {"https://x/metrics", "http://:80/", "http://x:0/", "http://x:99999/", "x:80", "http://a@b:1"})
    BOOST_TEST(!parse_http_url(bad), bad);
  auto e = parse_http_url("http://x:0", "metrics url");
  BOOST_TEST(message_of(e.error()) == "metrics url 'http://x:0': bad port");
}

BOOST_AUTO_TEST_CASE(https_only_where_asked) {
  auto s = parse_http_or_https_url("https://10.96.0.1");
  BOOST_REQUIRE(s);
  BOOST_TEST(s->tls);
  BOOST_TEST(s->host == "10.96.0.1");
  BOOST_TEST(s->port == 443);
  auto v6 = parse_http_or_https_url("https://[fd00::1]:6443/");
  BOOST_REQUIRE(v6);
  BOOST_TEST(v6->host == "fd00::1");
  BOOST_TEST(v6->port == 6443);
  auto plain = parse_http_or_https_url("http://127.0.0.1:8001");
  BOOST_REQUIRE(plain);
  BOOST_TEST(!plain->tls);
  BOOST_TEST(plain->port == 8001);
  BOOST_TEST(!parse_http_or_https_url("https://:1/"));
  BOOST_TEST(!parse_http_or_https_url("ftp://x"));
  BOOST_TEST(!parse_http_url("https://x")); // plain-HTTP clients (etcd) still refuse https
}

BOOST_AUTO_TEST_SUITE_END()
