// Shared by the admin tests: how Boost.Test prints an errc.
#pragma once

#include "runtime/core/error.hpp"

#include <ostream>

namespace dynamo {
inline std::ostream& boost_test_print_type(std::ostream& os, errc code) {
  return os << to_string(code);
}
} // namespace dynamo
