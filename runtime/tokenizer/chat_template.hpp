// Chat templates: turn OpenAI chat messages into the prompt text a model was
// trained on. Implementations are immutable after construction (thread-safe).
// `simple_chat_template` is the mocker's "role: content" format.
#pragma once

#include "runtime/core/error.hpp"

#include <nlohmann/json.hpp>

#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::tok {

struct chat_message {
  std::string role;    ///< "system", "user", "assistant", "tool"
  std::string content; ///< text content (multi-part text is joined by the frontend)
};

/// A chat as Hugging Face's apply_chat_template takes it (the OpenAI request
/// shape), passed to the template as given. JSON keeps key order
/// (ordered_json): templates print tool schemas and arguments with tojson,
/// and Python prints keys in the order they came.
struct chat_input {
  /// Message objects: role; content (a string, null, or a list of parts such
  /// as {"type": "text", "text": "..."}); optionally tool_calls (with
  /// function.arguments as an object or a JSON string, as the template
  /// expects), tool_call_id, name, reasoning_content.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  /// Tool schemas ({"type": "function", "function": {...}}); null: no tools.
  nlohmann::ordered_json tools;
  bool add_generation_prompt = true;
  /// Extra template variables (OpenAI chat_template_kwargs: enable_thinking,
  /// ...); they may override bos_token / eos_token, not the variables above.
  nlohmann::ordered_json kwargs = nlohmann::ordered_json::object();
  /// The time strftime_now() formats; unset: the current local time.
  std::optional<std::tm> now;
};

/// `messages` as chat_input messages (role and string content).
[[nodiscard]] chat_input to_chat_input(const std::vector<chat_message>& messages, bool add_generation_prompt);

class chat_template {
public:
  virtual ~chat_template() = default;
  /// The prompt text (special tokens included as text; encode with parse_special).
  [[nodiscard]] virtual expected<std::string> render(const std::vector<chat_message>& messages,
                                                     bool add_generation_prompt) const = 0;
  /// The same from structured input. Errors (errc::invalid_argument): no
  /// messages, malformed input (messages not a list of objects, tools
  /// neither null nor a list, kwargs not an object or naming a reserved
  /// variable), or what the template raises.
  [[nodiscard]] virtual expected<std::string> render(const chat_input& input) const = 0;
};

/// "role: content\n" per message (text parts joined), then "assistant: " when asked.
class simple_chat_template final : public chat_template {
public:
  [[nodiscard]] expected<std::string> render(const std::vector<chat_message>& messages,
                                             bool add_generation_prompt) const override;
  [[nodiscard]] expected<std::string> render(const chat_input& input) const override;
};

} // namespace dynamo::tok
