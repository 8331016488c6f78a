#include "runtime/core/secret.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <ostream>

using namespace dynamo;

namespace dynamo {
inline std::ostream& operator<<(std::ostream& os, errc c) { return os << to_string(c); }
} // namespace dynamo

BOOST_AUTO_TEST_SUITE(secret)

BOOST_AUTO_TEST_CASE(literal_and_empty_values_pass_through) {
  BOOST_TEST(*resolve_secret("", "f") == "");
  BOOST_TEST(*resolve_secret("s3cret-Token_1", "f") == "s3cret-Token_1");
  BOOST_TEST(!is_env_secret("s3cret"));
  BOOST_TEST(is_env_secret("env:X"));
}

BOOST_AUTO_TEST_CASE(env_values_are_read_and_must_be_set) {
  ::setenv("DYNAMO_SECRET_TEST", "from-env", 1);
  BOOST_TEST(*resolve_secret("env:DYNAMO_SECRET_TEST", "f") == "from-env");
  ::setenv("DYNAMO_SECRET_TEST", "", 1);
  auto empty = resolve_secret("env:DYNAMO_SECRET_TEST", "admin.token");
  BOOST_REQUIRE(!empty);
  BOOST_TEST(code_of(empty.error()) == errc::config_error);
  BOOST_TEST(message_of(empty.error()).find("admin.token") != std::string::npos);
  BOOST_TEST(message_of(empty.error()).find("DYNAMO_SECRET_TEST") != std::string::npos);
  ::unsetenv("DYNAMO_SECRET_TEST");
  BOOST_TEST(code_of(resolve_secret("env:DYNAMO_SECRET_TEST", "f").error()) == errc::config_error);
  BOOST_TEST(code_of(resolve_secret("env:", "f").error()) == errc::config_error);
}

BOOST_AUTO_TEST_CASE(values_with_spaces_or_control_bytes_are_refused) {
  BOOST_TEST(code_of(resolve_secret("two words", "f").error()) == errc::config_error);
  BOOST_TEST(code_of(resolve_secret("tab\t", "f").error()) == errc::config_error);
  BOOST_TEST(code_of(resolve_secret("caf\xc3\xa9", "f").error()) == errc::config_error);
}

BOOST_AUTO_TEST_CASE(z85_keys_are_forty_alphabet_characters) {
  BOOST_TEST(is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"));
  BOOST_TEST(!is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf"));   // 39
  BOOST_TEST(!is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf77")); // 41
  BOOST_TEST(!is_z85_key("rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf\""));  // '"' is not Z85
}

BOOST_AUTO_TEST_SUITE_END()
