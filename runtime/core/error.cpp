#include "runtime/core/error.hpp"

#include <caf/atom.hpp>
#include <caf/deep_to_string.hpp>

namespace dynamo {

std::string_view to_string(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument: return "invalid_argument";
    case errc::malformed_message: return "malformed_message";
    case errc::unsupported: return "unsupported";
    case errc::not_found: return "not_found";
    case errc::io_error: return "io_error";
    case errc::corrupt_file: return "corrupt_file";
    case errc::timeout: return "timeout";
    case errc::cancelled: return "cancelled";
    case errc::closed: return "closed";
    case errc::overloaded: return "overloaded";
    case errc::no_workers: return "no_workers";
    case errc::disconnected: return "disconnected";
    case errc::device_error: return "device_error";
    case errc::config_error: return "config_error";
    case errc::internal: return "internal";
    case errc::context_length_exceeded: return "context_length_exceeded";
  }
  return "unknown";
}

caf::error make_error(errc code, std::string message) {
  return caf::make_error(code, std::move(message));
}

errc code_of(const caf::error& err) noexcept {
  if (err && err.category() == caf::atom("dynamo"))
    return static_cast<errc>(err.code());
  return errc::internal;
}

std::string message_of(const caf::error& err) {
  if (!err)
    return {};
  const auto& ctx = err.context();
  if (ctx.size() == 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  if (ctx.empty())
    return {};
  return caf::deep_to_string(ctx);
}

std::string describe(const caf::error& err) {
  if (!err)
    return "ok";
  std::string out;
  if (err.category() == caf::atom("dynamo"))
    out = std::string{to_string(static_cast<errc>(err.code()))};
  else
    out = caf::to_string(err);
  auto msg = message_of(err);
  if (!msg.empty() && err.category() == caf::atom("dynamo")) {
    out += ": ";
    out += msg;
  }
  return out;
}

} // namespace dynamo
