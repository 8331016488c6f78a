// Internal to runtime/openai: the Anthropic Messages chat_dialect (chat output
// -> message object / Anthropic stream events). Used by anthropic_request.cpp
// and the tests; one per request, not thread-safe.
#pragma once

#include "runtime/openai/chat_dialect.hpp"

#include <memory>

namespace dynamo::openai {

[[nodiscard]] std::unique_ptr<chat_dialect> make_anthropic_dialect();

} // namespace dynamo::openai
