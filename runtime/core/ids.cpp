#include "runtime/core/ids.hpp"

#include <fmt/format.h>

#include <random>

namespace dynamo {

bool is_valid_name(std::string_view name) noexcept {
  if (name.empty())
    return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  return true;
}

std::string endpoint_id::path() const {
  return fmt::format("{}/{}/{}", namespace_name, component_name, endpoint_name);
}

expected<endpoint_id> endpoint_id::parse(std::string_view text) {
  char sep = '/';
  if (text.starts_with("dyn://")) {
    text.remove_prefix(6);
    sep = '.';
  }
  endpoint_id out;
  std::string* parts[] = {&out.namespace_name, &out.component_name, &out.endpoint_name};
  for (size_t i = 0; i < 3; ++i) {
    auto pos = i < 2 ? text.find(sep) : std::string_view::npos;
    if (i < 2 && pos == std::string_view::npos)
      return make_error(errc::invalid_argument,
                        fmt::format("endpoint '{}' is not ns{}component{}endpoint", text, sep, sep));
    *parts[i] = std::string{text.substr(0, pos)};
    if (!is_valid_name(*parts[i]))
      return make_error(errc::invalid_argument,
                        fmt::format("name '{}' must match [a-z0-9_-]+", *parts[i]));
    if (pos != std::string_view::npos)
      text.remove_prefix(pos + 1);
  }
  return out;
}

std::string instance_path(const endpoint_id& ep, instance_id id) {
  return fmt::format("{}/{}", ep.path(), to_hex(id));
}

instance_id new_instance_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  instance_id id = 0;
  while (id == 0)
    id = rng();
  return id;
}

std::string to_hex(instance_id id) {
  return fmt::format("{:016x}", id);
}

} // namespace dynamo
