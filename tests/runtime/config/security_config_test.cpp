// security: (CURVE), the etcd credentials of discovery and the TLS blocks of
// discovery, frontend and admin: parsing and resolution.
#include "runtime/config/cluster_config.hpp"
#include "tests/runtime/config/config_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>

using namespace dynamo;
using namespace dynamo::config;
using dynamo::config::test::error_of;

namespace {

// A keypair from zmq_curve_keypair (any 40 Z85 characters parse; planes check the pair).
constexpr const char* pub = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
constexpr const char* sec = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";


} // namespace

BOOST_AUTO_TEST_SUITE(security_config_suite)

BOOST_AUTO_TEST_CASE(curve_is_off_by_default) {
  auto c = parse_cluster_config("pools: [{name: a, model: m}]");
  BOOST_REQUIRE(c);
  BOOST_TEST(!c->security.curve.enabled());
  auto keys = resolve_curve_keys(c->security.curve);
  BOOST_REQUIRE(keys);
  BOOST_TEST(!keys->has_value());
}

BOOST_AUTO_TEST_CASE(literal_and_env_keys_resolve) {
  ::setenv("DYNAMO_TEST_CURVE_SECRET", sec, 1);
  auto c = parse_cluster_config(std::string{"security: {curve: {public_key: '"} + pub +
                                "', secret_key: env:DYNAMO_TEST_CURVE_SECRET}}\n"
                                "pools: [{name: a, model: m}]");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : message_of(c.error())));
  BOOST_TEST(c->security.curve.secret_key == "env:DYNAMO_TEST_CURVE_SECRET");
  auto keys = resolve_curve_keys(c->security.curve);
  BOOST_REQUIRE(keys);
  BOOST_REQUIRE(keys->has_value());
  BOOST_TEST((*keys)->public_key == pub);
  BOOST_TEST((*keys)->secret_key == sec);
  ::setenv("DYNAMO_TEST_CURVE_SECRET", "not-a-key", 1);
  auto bad = resolve_curve_keys(c->security.curve);
  BOOST_REQUIRE(!bad);
  BOOST_TEST(message_of(bad.error()).find("security.curve.secret_key") == 0);
  ::unsetenv("DYNAMO_TEST_CURVE_SECRET");
  auto unset = resolve_curve_keys(c->security.curve);
  BOOST_REQUIRE(!unset);
  BOOST_TEST(message_of(unset.error()) ==
             "security.curve.secret_key: environment variable 'DYNAMO_TEST_CURVE_SECRET' is unset or empty");
}

BOOST_AUTO_TEST_CASE(curve_errors_name_the_field) {
  BOOST_TEST(error_of(std::string{"security: {curve: {public_key: '"} + pub + "'}}") ==
             "security.curve.secret_key: is required when security.curve is set");
  BOOST_TEST(error_of("security: {curve: {public_key: short, secret_key: env:X}}") ==
             "security.curve.public_key: expected 40 Z85 characters (dynamo-launch --gen-curve-keys) or env:NAME");
  BOOST_TEST(error_of("security: {curve: {public_key: env:A, secret_key: env:B, server: x}}") ==
             "security.curve.server: unknown key");
  BOOST_TEST(error_of("security: {tls: {}}") == "security.tls: unknown key");
  BOOST_TEST(error_of("security: [1]") != "");
}

BOOST_AUTO_TEST_CASE(etcd_tls_and_credentials_parse_and_resolve) {
  ::setenv("DYNAMO_TEST_ETCD_PASSWORD", "pw", 1);
  auto c = parse_cluster_config(R"(
discovery:
  backend: etcd
  endpoints: [https://10.0.0.5:2379, http://h]
  tls: {ca_file: /ca.crt, cert_file: /c.crt, key_file: /c.key}
  username: dynamo
  password: env:DYNAMO_TEST_ETCD_PASSWORD
pools: [{name: a, model: m}])");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : message_of(c.error())));
  const auto& d = c->discovery;
  BOOST_TEST(d.endpoints.at(0) == "https://10.0.0.5:2379");
  BOOST_TEST(d.tls.ca_file == "/ca.crt");
  BOOST_TEST(d.tls.cert_file == "/c.crt");
  BOOST_TEST(d.tls.key_file == "/c.key");
  BOOST_TEST(d.username == "dynamo");
  BOOST_TEST(*resolve_discovery_password(d) == "pw");
  ::unsetenv("DYNAMO_TEST_ETCD_PASSWORD");
  BOOST_TEST(message_of(resolve_discovery_password(d).error()) ==
             "discovery.password: environment variable 'DYNAMO_TEST_ETCD_PASSWORD' is unset or empty");
  BOOST_TEST(*resolve_discovery_password(discovery_config{}) == "");
}

BOOST_AUTO_TEST_CASE(etcd_security_errors_name_the_field) {
  auto with = [](const std::string& d) { return error_of("discovery: " + d + "\npools: [{name: b, model: m}]"); };
  BOOST_TEST(with("{backend: etcd, tls: {cert_file: /c.crt}}") ==
             "discovery.tls.key_file: cert_file and key_file go together");
  BOOST_TEST(with("{backend: etcd, username: u}") == "discovery.password: username and password go together");
  BOOST_TEST(with("{backend: etcd, password: p}") == "discovery.username: username and password go together");
  BOOST_TEST(with("{backend: file, tls: {ca_file: /ca}}") == "discovery.tls: only for backend etcd");
  BOOST_TEST(with("{backend: file, username: u, password: p}") == "discovery.username: only for backend etcd");
  BOOST_TEST(with("{backend: etcd, tls: {ca: /ca}}") == "discovery.tls.ca: unknown key");
  BOOST_TEST(with("{backend: etcd, tls: {client_ca_file: /ca}}") == "discovery.tls.client_ca_file: unknown key");
}

BOOST_AUTO_TEST_CASE(frontend_and_admin_tls_parse_in_the_etcd_vocabulary) {
  auto c = parse_cluster_config(R"(
frontend: {tls: {cert_file: /f.crt, key_file: /f.key}}
admin:
  enabled: true
  tls: {cert_file: /a.crt, key_file: /a.key, ca_file: /ca.crt, client_ca_file: /clients.crt}
pools: [{name: a, model: m}])");
  BOOST_REQUIRE_MESSAGE(c, (c ? "" : message_of(c.error())));
  BOOST_TEST((c->frontend.tls == tls_files{"", "/f.crt", "/f.key", ""}));
  BOOST_TEST((c->admin.tls == tls_files{"/ca.crt", "/a.crt", "/a.key", "/clients.crt"}));
  auto plain = parse_cluster_config("pools: [{name: a, model: m}]");
  BOOST_REQUIRE(plain);
  BOOST_TEST(!plain->frontend.tls.any());
  BOOST_TEST(!plain->admin.tls.any());
}

BOOST_AUTO_TEST_CASE(server_tls_errors_name_the_field) {
  auto with = [](const std::string& yaml) { return error_of(yaml + "\npools: [{name: b, model: m}]"); };
  BOOST_TEST(with("admin: {tls: {cert_file: /a.crt}}") == "admin.tls.key_file: cert_file and key_file go together");
  BOOST_TEST(with("admin: {tls: {ca_file: /ca.crt}}") == "admin.tls.cert_file: a TLS server needs cert_file and key_file");
  BOOST_TEST(with("frontend: {tls: {key_file: /f.key}}") ==
             "frontend.tls.cert_file: cert_file and key_file go together");
  BOOST_TEST(with("frontend: {tls: {cert: /f.crt}}") == "frontend.tls.cert: unknown key");
  BOOST_TEST(with("frontend: {tls: /f.crt}") == "frontend.tls: expected a mapping");
  // The same check for dynamo-run's flags: the key is the tls block's.
  admin_config a;
  a.tls.cert_file = "/a.crt";
  auto bad = check_admin_config(a);
  BOOST_REQUIRE(bad.has_value());
  BOOST_TEST(bad->key == "tls.key_file");
}

BOOST_AUTO_TEST_SUITE_END()
