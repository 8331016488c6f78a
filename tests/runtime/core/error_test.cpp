#include "runtime/core/error.hpp"

#include <caf/sec.hpp>

#include <boost/test/unit_test.hpp>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(error)

BOOST_AUTO_TEST_CASE(make_error_keeps_code_and_message) {
  auto err = make_error(errc::corrupt_file, "bad magic");
  BOOST_TEST(static_cast<int>(code_of(err)) == static_cast<int>(errc::corrupt_file));
  BOOST_TEST(message_of(err) == "bad magic");
  BOOST_TEST(describe(err) == "corrupt_file: bad magic");
}

BOOST_AUTO_TEST_CASE(expected_carries_value_or_error) {
  auto f = [](bool ok) -> expected<int> {
    if (ok)
      return 7;
    return make_error(errc::timeout, "deadline");
  };
  BOOST_TEST(*f(true) == 7);
  auto bad = f(false);
  BOOST_REQUIRE(!bad);
  BOOST_TEST(static_cast<int>(code_of(bad.error())) == static_cast<int>(errc::timeout));
}

BOOST_AUTO_TEST_CASE(foreign_errors_map_to_internal) {
  auto err = caf::make_error(caf::sec::request_timeout);
  BOOST_TEST(static_cast<int>(code_of(err)) == static_cast<int>(errc::internal));
  BOOST_TEST(describe(err).find("request_timeout") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_code_has_a_name) {
  for (int c = 1; c <= static_cast<int>(errc::context_length_exceeded); ++c) // the last code
    BOOST_TEST(to_string(static_cast<errc>(c)) != "unknown");
}

BOOST_AUTO_TEST_SUITE_END()
