// Locates the SmolLM2 GGUF for tests: $DYNAMO_MODEL_PATH first, then
// ~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf. Tests that need it
// skip with a clear message when neither exists. Header-only, test code only.
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace dynamo::testing {

inline std::optional<std::string> smollm2_path() {
  if (const char* p = std::getenv("DYNAMO_MODEL_PATH"); p && *p && std::filesystem::is_regular_file(p))
    return std::string(p);
  if (const char* home = std::getenv("HOME"); home && *home) {
    auto p = std::filesystem::path(home) / ".cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf";
    if (std::filesystem::is_regular_file(p))
      return p.string();
  }
  return std::nullopt;
}

/// Boost.Test precondition: skips the case when the model file is absent.
/// Use as `*boost::unit_test::precondition(&dynamo::testing::model_available)`.
inline boost::test_tools::assertion_result model_available(boost::unit_test::test_unit_id) {
  boost::test_tools::assertion_result r(smollm2_path().has_value());
  if (!r)
    r.message() << "SmolLM2-135M-Instruct.Q4_1.gguf not found (set DYNAMO_MODEL_PATH or put it in "
                   "~/.cache/dynamo/models/)";
  return r;
}

} // namespace dynamo::testing
