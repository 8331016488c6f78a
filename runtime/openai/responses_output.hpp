// Internal to runtime/openai: the Responses API's chat_dialect (chat output ->
// response object / typed stream events), built from the parsed request whose
// settings the response object echoes. Used by responses_request.cpp and the
// tests; one per request, not thread-safe.
#pragma once

#include "runtime/openai/chat_dialect.hpp"

#include <nlohmann/json.hpp>

#include <memory>

namespace dynamo::openai {

[[nodiscard]] std::unique_ptr<chat_dialect> make_responses_dialect(const nlohmann::json& request);

} // namespace dynamo::openai
