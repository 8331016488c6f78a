// The etcd backend against a real etcd with TLS (client certificates required)
// and with auth enabled (skipped without the binary): members get in, clients
// without the certificate, with another CA or without the password do not, and
// a token etcd no longer knows is replaced by a new one.
#include "planes/discovery/etcd_client.hpp"
#include "planes/discovery/etcd_codec.hpp"
#include "planes/discovery/etcd_discovery.hpp"

#include "discovery_backends.hpp"
#include "etcd_server.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
using namespace std::chrono_literals;
namespace ec = dynamo::planes::etcd_codec;

namespace {

constexpr const char* prefix = "/dynamo-sec";

etcd_discovery_options options(const etcd_server& s, etcd_security sec) {
  etcd_discovery_options o;
  o.endpoints = {s.url()};
  o.key_prefix = prefix;
  o.security = std::move(sec);
  o.base.lease_ttl = 1000ms;
  o.base.keep_alive_interval = 333ms;
  o.request_timeout = 2000ms;
  o.max_backoff = 200ms;
  return o;
}

std::unique_ptr<discovery_plane> plane(const etcd_server& s, etcd_security sec) {
  auto p = make_etcd_discovery(options(s, std::move(sec)));
  BOOST_REQUIRE_MESSAGE(p, "etcd discovery failed");
  return std::move(*p);
}

/// The error of one register_instance through a plane with `sec` (ok: none).
caf::error register_error(const etcd_server& s, etcd_security sec) {
  auto p = plane(s, std::move(sec));
  auto reg = p->register_instance(make_record("dyn/backend/generate"));
  return reg ? caf::error{} : reg.error();
}

} // namespace

BOOST_AUTO_TEST_SUITE(discovery_etcd_security, *boost::unit_test::precondition(etcd_installed))

BOOST_AUTO_TEST_CASE(tls_with_a_client_certificate) {
  auto server = etcd_server::start(true);
  BOOST_REQUIRE_MESSAGE(server, "etcd (TLS) did not start");
  BOOST_TEST(server->url().rfind("https://", 0) == 0u);
  auto owner = plane(*server, server->security());
  auto reg = owner->register_instance(make_record("dyn/backend/generate"));
  BOOST_REQUIRE_MESSAGE(reg, (reg ? "" : describe(reg.error())));
  watch_recorder rec;
  auto reader = plane(*server, server->security());
  auto watch = reader->watch("dyn", rec.callback());
  BOOST_REQUIRE(watch);
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_TEST(rec.lines().front().rfind("added dyn/backend/generate/", 0) == 0u);

  auto no_cert = server->security();
  no_cert.cert_file = no_cert.key_file = "";
  BOOST_TEST(static_cast<bool>(register_error(*server, no_cert))); // etcd wants a client certificate
  auto other_ca = server->security();
  other_ca.ca_file = etcd_tls_dir() + "/../../kubernetes/tls/other-ca.crt";
  auto err = register_error(*server, other_ca);
  BOOST_REQUIRE(static_cast<bool>(err));
  BOOST_TEST(message_of(err).find("certificate verify failed") != std::string::npos, message_of(err));
  auto plain = options(*server, {});
  plain.endpoints = {"http://127.0.0.1:" + std::to_string(server->port())};
  auto p = make_etcd_discovery(plain);
  BOOST_REQUIRE(p);
  BOOST_TEST(!(*p)->register_instance(make_record("dyn/backend/generate")));
}

BOOST_AUTO_TEST_CASE(auth_admits_the_user_and_refuses_the_rest) {
  auto server = etcd_server::start();
  BOOST_REQUIRE_MESSAGE(server, "etcd did not start");
  BOOST_REQUIRE(server->enable_auth("dynamo", "s3cret-pw", prefix));
  auto member = plane(*server, server->security("dynamo", "s3cret-pw"));
  auto reg = member->register_instance(make_record("dyn/backend/generate"));
  BOOST_REQUIRE_MESSAGE(reg, (reg ? "" : describe(reg.error())));
  watch_recorder rec;
  auto watch = member->watch("dyn", rec.callback());
  BOOST_REQUIRE(watch);
  BOOST_REQUIRE(rec.wait_size(1));

  auto wrong = register_error(*server, server->security("dynamo", "guess"));
  BOOST_REQUIRE(static_cast<bool>(wrong));
  BOOST_TEST(static_cast<int>(code_of(wrong)) == static_cast<int>(errc::config_error));
  BOOST_TEST(message_of(wrong).find("authentication") != std::string::npos, message_of(wrong));
  BOOST_TEST(static_cast<bool>(register_error(*server, server->security()))); // no credentials at all
  // Authenticated, but outside its role's prefix.
  etcd_client c{{*parse_etcd_endpoint(server->url())}, 2000ms, server->security("dynamo", "s3cret-pw")};
  auto outside = c.call("/v3/kv/put", ec::put_body("/elsewhere/x", {}, 0));
  BOOST_REQUIRE(!outside);
  BOOST_TEST(message_of(outside.error()).find("permission denied") != std::string::npos,
             message_of(outside.error()));
}

// (An etcd restart does not do it: etcd 3.4 replays its authentications from
// the raft log and knows the tokens again.)
BOOST_AUTO_TEST_CASE(a_token_etcd_forgot_is_replaced) {
  auto server = etcd_server::start();
  BOOST_REQUIRE_MESSAGE(server, "etcd did not start");
  BOOST_REQUIRE(server->enable_auth("dynamo", "s3cret-pw", prefix));
  etcd_client c{{*parse_etcd_endpoint(server->url())}, 2000ms, server->security("dynamo", "s3cret-pw")};
  BOOST_REQUIRE(c.call("/v3/kv/put", ec::put_body(std::string{prefix} + "/a", {}, 0)));
  BOOST_REQUIRE(server->invalidate_tokens());
  auto again = c.call("/v3/kv/put", ec::put_body(std::string{prefix} + "/b", {}, 0));
  BOOST_TEST(static_cast<bool>(again), (again ? "" : describe(again.error())));
  BOOST_REQUIRE(server->restart());
  auto member = plane(*server, server->security("dynamo", "s3cret-pw"));
  BOOST_TEST(static_cast<bool>(member->register_instance(make_record("dyn/backend/generate"))));
}

BOOST_AUTO_TEST_SUITE_END()
