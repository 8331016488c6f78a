// The hand-written OpenAPI 3 document served at GET /openapi.json: the
// frontend's routes and exactly the request fields the parsers understand
// (a unit test keeps the two in step). Immutable; any thread.
#pragma once

#include <string_view>

namespace dynamo::openai {

/// The document as JSON text.
[[nodiscard]] std::string_view openapi_json() noexcept;

} // namespace dynamo::openai
