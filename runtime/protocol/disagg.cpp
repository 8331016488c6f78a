#include "runtime/protocol/disagg.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

namespace dynamo::protocol {

namespace {

constexpr std::array<std::pair<std::string_view, disagg_role>, 3> role_names{{
    {"aggregated", disagg_role::aggregated},
    {"prefill", disagg_role::prefill},
    {"decode", disagg_role::decode},
}};

constexpr std::array<std::pair<std::string_view, kv_transport_kind>, 5> transport_names{{
    {"auto", kv_transport_kind::automatic},
    {"inproc", kv_transport_kind::inproc},
    {"tcp", kv_transport_kind::tcp},
    {"ucx", kv_transport_kind::ucx},
    {"cuda-ipc", kv_transport_kind::cuda_ipc},
}};

template <class E, size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, E>, N>& names, E value) noexcept {
  for (const auto& [name, v] : names)
    if (v == value)
      return name;
  return "unknown";
}

template <class E, size_t N>
expected<E> value_of(const std::array<std::pair<std::string_view, E>, N>& names, std::string_view text) {
  std::string all;
  for (const auto& [name, v] : names) {
    if (name == text)
      return v;
    all += (all.empty() ? "" : "|") + std::string{name};
  }
  return make_error(errc::config_error, fmt::format("'{}' is not one of {}", text, all));
}

} // namespace

std::string_view to_string(disagg_role r) noexcept { return name_of(role_names, r); }

expected<disagg_role> parse_disagg_role(std::string_view text) {
  if (text == "agg")
    return disagg_role::aggregated;
  return value_of(role_names, text);
}

std::string_view to_string(kv_transport_kind t) noexcept { return name_of(transport_names, t); }

expected<kv_transport_kind> parse_kv_transport(std::string_view text) {
  return value_of(transport_names, text);
}

} // namespace dynamo::protocol
