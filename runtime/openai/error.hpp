// The OpenAI error boundary: the one table that maps dynamo::errc to an HTTP
// status and OpenAI error `type`, errors that name the offending request field
// (`param`) and an OpenAI `code`, and the wrapped error body
// {"error":{"message","type","param","code"}}. Pure functions; any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <string>
#include <string_view>

namespace dynamo::protocol {
struct engine_output;
} // namespace dynamo::protocol

namespace dynamo::openai {

/// HTTP status and OpenAI error type of one errc.
struct status_mapping {
  unsigned status;       ///< HTTP status code
  std::string_view type; ///< OpenAI error "type"
  bool public_message;   ///< false: the message is replaced by a generic text (5xx internals)
};

/// The exhaustive errc table:
///
/// | errc                                   | status | type                  |
/// |----------------------------------------|--------|-----------------------|
/// | invalid_argument, malformed_message,   | 400    | invalid_request_error |
/// |   context_length_exceeded              |        |                       |
/// | unsupported                            | 400    | invalid_request_error |
/// | not_found                              | 404    | invalid_request_error |
/// | cancelled                              | 499    | request_cancelled     |
/// | overloaded, no_workers, closed,        | 503    | service_unavailable   |
/// |   disconnected, device_error           |        |                       |
/// | timeout                                | 504    | timeout               |
/// | internal, io_error, corrupt_file,      | 500    | server_error          |
/// |   config_error, non-dynamo errors      |        |                       |
[[nodiscard]] status_mapping map_errc(errc code) noexcept;

/// The error of a generation a worker ended with finish_reason::error:
/// protocol::error_of(out) (the worker's code, else internal), its message
/// prefixed with "backend error: ".
[[nodiscard]] caf::error backend_error(const protocol::engine_output& out);

/// A client-facing error, ready to serialize.
struct api_error {
  unsigned status = 500;
  std::string type;
  std::string message;
  std::string param; ///< request field at fault, e.g. "messages[0].content"; "" -> null
  std::string code;  ///< OpenAI code, e.g. "invalid_type"; "" -> null
};

/// OpenAI `code` values this project emits.
namespace codes {
inline constexpr std::string_view invalid_json = "invalid_json";
inline constexpr std::string_view invalid_type = "invalid_type";
inline constexpr std::string_view invalid_value = "invalid_value";
inline constexpr std::string_view missing_required_parameter = "missing_required_parameter";
inline constexpr std::string_view unsupported_parameter = "unsupported_parameter";
inline constexpr std::string_view unsupported_value = "unsupported_value";
inline constexpr std::string_view model_not_found = "model_not_found";
inline constexpr std::string_view context_length_exceeded = "context_length_exceeded";
} // namespace codes

/// An error about one request field. Its context holds (message, param, code),
/// read back by `to_api_error` (and shown together by `describe()` in logs).
[[nodiscard]] caf::error field_error(errc code, std::string param, std::string_view openai_code,
                                     std::string message);

/// The client-facing form of any error. Messages of 5xx internal errors are
/// replaced by a generic text (details belong in the server log).
[[nodiscard]] api_error to_api_error(const caf::error& err);

/// {"error":{"message":..,"type":..,"param":..|null,"code":..|null}}
[[nodiscard]] std::string error_body(const api_error& e);

/// A body for a bare HTTP status (404 route, 405, 413, ...), typed by status.
[[nodiscard]] std::string status_error_body(unsigned status, std::string_view message);

} // namespace dynamo::openai
