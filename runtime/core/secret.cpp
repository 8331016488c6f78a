#include "runtime/core/secret.hpp"

#include <cstdlib>

namespace dynamo {

bool is_env_secret(std::string_view spec) noexcept { return spec.substr(0, 4) == "env:"; }

expected<std::string> resolve_secret(std::string_view spec, std::string_view field) {
  std::string value{spec};
  if (is_env_secret(spec)) {
    std::string name{spec.substr(4)};
    const char* env = name.empty() ? nullptr : std::getenv(name.c_str());
    if (env == nullptr || *env == '\0')
      return make_error(errc::config_error, std::string{field} + ": environment variable '" + name +
                                              "' is unset or empty");
    value = env;
  }
  for (char c : value)
    if (c < 0x21 || c > 0x7e)
      return make_error(errc::config_error,
                        std::string{field} + ": the value must be visible ASCII (no spaces)");
  return value;
}

bool is_z85_key(std::string_view text) noexcept {
  static constexpr std::string_view alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (text.size() != curve_key_z85_chars)
    return false;
  for (char c : text)
    if (alphabet.find(c) == std::string_view::npos)
      return false;
  return true;
}

} // namespace dynamo
