// Shared by the runtime/config test files: the message of a config that must
// not parse (checking it is a config_error), "" when it parses.
#pragma once

#include "runtime/config/cluster_config.hpp"

#include <boost/test/unit_test.hpp>

#include <string>
#include <string_view>

namespace dynamo::config::test {

inline std::string error_of(std::string_view yaml) {
  auto c = parse_cluster_config(yaml);
  if (c)
    return "";
  BOOST_TEST(static_cast<int>(code_of(c.error())) == static_cast<int>(errc::config_error));
  return message_of(c.error());
}

} // namespace dynamo::config::test
