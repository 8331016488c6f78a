// CURVE keys of the plane sockets: generation and the pair check.
#include "planes/codec/zmq_curve.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;

BOOST_AUTO_TEST_SUITE(zmq_curve)

BOOST_AUTO_TEST_CASE(generated_keys_are_z85_and_belong_together) {
  auto a = generate_curve_keypair();
  BOOST_REQUIRE(a);
  BOOST_TEST(is_z85_key(a->public_key));
  BOOST_TEST(is_z85_key(a->secret_key));
  BOOST_TEST(static_cast<bool>(check_curve_keypair(*a)));
  auto b = generate_curve_keypair();
  BOOST_REQUIRE(b);
  BOOST_TEST(a->public_key != b->public_key);
}

BOOST_AUTO_TEST_CASE(keys_of_two_pairs_are_refused) {
  auto a = generate_curve_keypair();
  auto b = generate_curve_keypair();
  BOOST_REQUIRE((a && b));
  auto mixed = check_curve_keypair({a->public_key, b->secret_key});
  BOOST_REQUIRE(!mixed);
  BOOST_TEST(static_cast<int>(code_of(mixed.error())) == static_cast<int>(errc::config_error));
  BOOST_TEST(message_of(mixed.error()) == "security.curve: public_key is not the public key of secret_key");
  BOOST_TEST(!check_curve_keypair({"short", a->secret_key}));
}

BOOST_AUTO_TEST_CASE(a_server_socket_outside_the_shared_context_is_refused) {
  auto keys = generate_curve_keypair();
  BOOST_REQUIRE(keys);
  zmq::context_t own{1};
  zmq::socket_t s{own, zmq::socket_type::pub};
  s.set(zmq::sockopt::linger, 0);
  auto zap = curve_server(own, s, *keys);
  BOOST_REQUIRE(!zap);
  BOOST_TEST(static_cast<int>(code_of(zap.error())) == static_cast<int>(errc::internal));
}

BOOST_AUTO_TEST_SUITE_END()
