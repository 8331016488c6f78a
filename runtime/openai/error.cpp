#include "runtime/openai/error.hpp"

#include "runtime/protocol/output_error.hpp"

#include <nlohmann/json.hpp>

namespace dynamo::openai {

status_mapping map_errc(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument:
    case errc::context_length_exceeded:
    case errc::malformed_message:
    case errc::unsupported: return {400, "invalid_request_error", true};
    case errc::not_found: return {404, "invalid_request_error", true};
    case errc::cancelled: return {499, "request_cancelled", true};
    case errc::overloaded:
    case errc::no_workers:
    case errc::closed:
    case errc::disconnected:
    case errc::device_error: return {503, "service_unavailable", true};
    case errc::timeout: return {504, "timeout", true};
    case errc::internal:
    case errc::io_error:
    case errc::corrupt_file:
    case errc::config_error: return {500, "server_error", false};
  }
  return {500, "server_error", false};
}

caf::error backend_error(const protocol::engine_output& out) {
  const caf::error err = protocol::error_of(out);
  return make_error(code_of(err), "backend error: " + message_of(err));
}

caf::error field_error(errc code, std::string param, std::string_view openai_code,
                       std::string message) {
  return caf::make_error(code, std::move(message), std::move(param), std::string{openai_code});
}

api_error to_api_error(const caf::error& err) {
  api_error out;
  const bool ours = err && err.category() == caf::atom("dynamo");
  auto map = ours ? map_errc(static_cast<errc>(err.code())) : map_errc(errc::internal);
  out.status = map.status;
  out.type = std::string{map.type};
  if (!map.public_message) {
    out.message = "The server had an error while processing your request.";
    return out;
  }
  const auto& ctx = err.context();
  auto str = [&](size_t i) -> std::string {
    return ctx.size() > i && ctx.match_element<std::string>(i) ? ctx.get_as<std::string>(i)
                                                                : std::string{};
  };
  out.message = str(0);
  out.param = str(1);
  out.code = str(2);
  if (out.message.empty())
    out.message = std::string{to_string(static_cast<errc>(err.code()))};
  if (out.code.empty() && static_cast<errc>(err.code()) == errc::context_length_exceeded)
    out.code = std::string{codes::context_length_exceeded}; // a worker's refusal names no field
  return out;
}

namespace {

nlohmann::ordered_json nullable(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
}

} // namespace

std::string error_body(const api_error& e) {
  nlohmann::ordered_json j = {{"error",
                       {{"message", e.message},
                        {"type", e.type},
                        {"param", nullable(e.param)},
                        {"code", nullable(e.code)}}}};
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string status_error_body(unsigned status, std::string_view message) {
  api_error e;
  e.status = status;
  e.message = std::string{message};
  if (status >= 400 && status < 500)
    e.type = "invalid_request_error";
  else if (status == 503)
    e.type = "service_unavailable";
  else
    e.type = "server_error";
  return error_body(e);
}

} // namespace dynamo::openai
