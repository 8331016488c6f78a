// Secrets in configuration: a value given literally or as "env:NAME" (read
// from the environment when resolved), and the ZeroMQ CURVE keypair type
// (Z85 text). Used by the admin token, the CURVE keys and etcd credentials.
// Pure functions (resolve_secret reads the environment); safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <string>
#include <string_view>

namespace dynamo {

/// The secret as configured: "" (none), a literal, or "env:NAME" read from the
/// environment now. errc::config_error (naming `field`) when NAME is unset or
/// empty, or when the value has characters outside visible ASCII.
[[nodiscard]] expected<std::string> resolve_secret(std::string_view spec, std::string_view field);

/// True when `spec` names an environment variable ("env:NAME").
[[nodiscard]] bool is_env_secret(std::string_view spec) noexcept;

/// A CURVE keypair as ZeroMQ prints it: 40 Z85 characters each (32 bytes).
struct curve_keypair {
  std::string public_key;
  std::string secret_key;
  bool operator==(const curve_keypair&) const = default;
};

inline constexpr size_t curve_key_z85_chars = 40;

/// True for 40 characters of the Z85 alphabet (ZeroMQ RFC 32).
[[nodiscard]] bool is_z85_key(std::string_view text) noexcept;

} // namespace dynamo
