// Dynamo's addressing model: a namespace groups components, a component hosts
// endpoints, and each running process serving an endpoint is an instance with
// a unique 64-bit id, printed "ns/component/endpoint/instance-hex".
// Names match [a-z0-9_-]+. Pure values; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace dynamo {

using instance_id = uint64_t;

/// True when `name` is non-empty and only has [a-z0-9_-].
[[nodiscard]] bool is_valid_name(std::string_view name) noexcept;

struct endpoint_id {
  std::string namespace_name;
  std::string component_name;
  std::string endpoint_name;

  /// "ns/component/endpoint".
  [[nodiscard]] std::string path() const;
  /// Parses "ns/component/endpoint" (or "dyn://ns.component.endpoint").
  [[nodiscard]] static expected<endpoint_id> parse(std::string_view text);
  friend bool operator==(const endpoint_id&, const endpoint_id&) = default;
};

/// "ns/component/endpoint/<16 hex digits>".
[[nodiscard]] std::string instance_path(const endpoint_id& ep, instance_id id);

/// A random non-zero instance id (from std::random_device).
[[nodiscard]] instance_id new_instance_id();

/// 16 lower-case hex digits.
[[nodiscard]] std::string to_hex(instance_id id);

} // namespace dynamo
