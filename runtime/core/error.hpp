// The one error vocabulary of the project: `dynamo::errc` plus helpers that
// turn it into `caf::error` values with a human-readable context string.
// Every fallible function returns `dynamo::expected<T>`; nothing throws across
// a module, actor or plane boundary. Pure values: safe from any thread.
#pragma once

#include <caf/error.hpp>
#include <caf/expected.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace dynamo {

/// Error codes. 0 is reserved by CAF for "no error".
enum class errc : uint8_t {
  invalid_argument = 1, ///< bad input from a caller or client (HTTP 400)
  malformed_message,    ///< bytes on a plane that do not decode (never a crash)
  unsupported,          ///< a valid request for a feature we do not have
  not_found,            ///< unknown model, endpoint, instance or file
  io_error,             ///< the OS said no (open, read, bind, connect)
  corrupt_file,         ///< a file that exists but is not what it claims (GGUF)
  timeout,              ///< a deadline passed
  cancelled,            ///< the client went away or asked to stop
  closed,               ///< the peer or plane is shut down
  overloaded,           ///< no capacity now; retry later (HTTP 503)
  no_workers,           ///< nobody serves this model right now (HTTP 503)
  disconnected,         ///< a worker vanished mid-stream (migratable)
  device_error,         ///< GPU failure: the worker marks itself unhealthy
  config_error,         ///< a bad configuration value (names the field)
  internal,             ///< a bug on our side (HTTP 500)
  /// The prompt (plus the output asked for) does not fit a context length: a
  /// client error (HTTP 400, OpenAI code context_length_exceeded). Last: the
  /// values above travel on the wire (engine_output::error_code).
  context_length_exceeded,
};

/// Stable snake_case name of a code, e.g. "invalid_argument".
[[nodiscard]] std::string_view to_string(errc code) noexcept;

template <class T>
using expected = caf::expected<T>;

/// Builds an error carrying `code` and a context message.
[[nodiscard]] caf::error make_error(errc code, std::string message);

/// The dynamo code of `err`, or errc::internal when it is a foreign error.
[[nodiscard]] errc code_of(const caf::error& err) noexcept;

/// The context message of `err` (empty when none), without CAF decoration.
[[nodiscard]] std::string message_of(const caf::error& err);

/// "code: message" for logs and error bodies.
[[nodiscard]] std::string describe(const caf::error& err);

} // namespace dynamo

CAF_ERROR_CODE_ENUM(dynamo::errc, "dynamo")
