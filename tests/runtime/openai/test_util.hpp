// Helpers for runtime/openai tests: expect a parse failure and look at the
// client-facing error it becomes.
#pragma once

#include "runtime/openai/error.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

namespace dynamo::openai::test {

/// True when `r` holds a value; otherwise prints the error.
template <class T>
bool ok(const expected<T>& r) {
  if (!r)
    BOOST_TEST_MESSAGE("unexpected error: " << describe(r.error()));
  return static_cast<bool>(r);
}

/// The api_error of a failed expected<T>; fails the test when it succeeded.
template <class T>
api_error failure(const expected<T>& r) {
  BOOST_REQUIRE_MESSAGE(!r, "expected an error");
  return to_api_error(r.error());
}

/// Checks status, param and code of a failed parse in one line.
template <class T>
void check_error(const expected<T>& r, unsigned status, const std::string& param,
                 const std::string& code) {
  auto e = failure(r);
  BOOST_TEST(e.status == status);
  BOOST_TEST(e.param == param);
  BOOST_TEST(e.code == code);
  BOOST_TEST(!e.message.empty());
}

} // namespace dynamo::openai::test
