// A fresh directory for one test ("<tmp>/<prefix>-XXXXXX"), removed with
// everything in it when the test ends. Header-only; used by any suite that
// writes files (model files, KVBM disk tiers, cluster configs). One per test.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace dynamo::test {

struct temp_dir {
  std::filesystem::path path;
  explicit temp_dir(const std::string& prefix = "dynamo-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    BOOST_REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

} // namespace dynamo::test
