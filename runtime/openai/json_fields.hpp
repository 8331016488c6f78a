// Internal to runtime/openai (included only by its .cpp files): nlohmann/json
// field readers that turn every type or range problem into a field_error
// naming the field. Absent and null fields leave the output untouched, as
// OpenAI treats null as "not given". Pure functions; any thread.
#pragma once

#include "runtime/openai/error.hpp"
#include "runtime/openai/request.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dynamo::openai::detail {

using json = nlohmann::json;

/// JSON type name as OpenAI's messages spell it ("string", "integer", ...).
/// `j` as compact JSON text, invalid UTF-8 replaced (never thrown on): how
/// every response body and stream event is written.
[[nodiscard]] std::string dump(const json& j);
[[nodiscard]] std::string dump(const nlohmann::ordered_json& j);

[[nodiscard]] std::string_view type_name(const json& j);

[[nodiscard]] caf::error type_error(std::string param, std::string_view expected, const json& got);
[[nodiscard]] caf::error value_error(std::string param, std::string message);
[[nodiscard]] caf::error unsupported_error(std::string param, std::string message);
[[nodiscard]] caf::error missing_error(std::string param);

/// Deepest nesting of arrays/objects in `text` (strings are skipped).
[[nodiscard]] size_t nesting_depth(std::string_view text) noexcept;

/// Parses a request body that must be a JSON object.
[[nodiscard]] expected<json> parse_object(std::string_view body);

/// The field, or nullptr when absent or null.
[[nodiscard]] const json* field(const json& obj, const char* name);

[[nodiscard]] caf::error read_number(const json& obj, const char* name, double lo, double hi,
                                     std::optional<double>& out);
[[nodiscard]] caf::error read_integer(const json& obj, const char* name, int64_t lo, int64_t hi,
                                      std::optional<int64_t>& out);
[[nodiscard]] caf::error read_bool(const json& obj, const char* name, std::optional<bool>& out);
[[nodiscard]] caf::error read_string(const json& obj, const char* name,
                                     std::optional<std::string>& out);

/// `obj.name`, a required string; errors name it "<param>.<name>" (or
/// "<name>" when `param` is empty).
[[nodiscard]] caf::error read_required_string(const json& obj, const std::string& param,
                                              const char* name, std::string& out);

/// A known OpenAI container we do not implement: must be empty (or absent).
[[nodiscard]] caf::error check_empty(const json& obj, const char* name, json::value_t type);

/// Every field both endpoints share (see request.hpp for the policy).
/// `min_max_tokens`: the smallest max_tokens allowed (0: completions with echo).
[[nodiscard]] caf::error read_common(const json& obj, generation_params& out,
                                     int64_t min_max_tokens = 1);

/// Structured outputs: response_format and the guided_* extensions (top level
/// or under nvext), at most one of them, validated by building the grammar
/// (guided_request.cpp). Absent or response_format text: `out` untouched.
[[nodiscard]] caf::error read_guided(const json& obj, protocol::guided_decoding& out);

/// min_tokens must not exceed max_tokens (when both are set).
[[nodiscard]] caf::error check_min_tokens(const generation_params& p);

/// `model`: a required, non-empty string.
[[nodiscard]] caf::error read_model(const json& obj, std::string& out);

} // namespace dynamo::openai::detail
