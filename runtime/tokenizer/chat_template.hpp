// Chat templates: turn OpenAI chat messages into the prompt text a model was
// trained on. Implementations are immutable after construction (thread-safe).
// `simple_chat_template` is the mocker's "role: content" format.
#pragma once

#include "runtime/core/error.hpp"

#include <string>
#include <vector>

namespace dynamo::tok {

struct chat_message {
  std::string role;    ///< "system", "user", "assistant", "tool"
  std::string content; ///< text content (multi-part text is joined by the frontend)
};

class chat_template {
public:
  virtual ~chat_template() = default;
  /// The prompt text (special tokens included as text; encode with parse_special).
  [[nodiscard]] virtual expected<std::string> render(const std::vector<chat_message>& messages,
                                                     bool add_generation_prompt) const = 0;
};

/// "role: content\n" per message, then "assistant: " when asked.
class simple_chat_template final : public chat_template {
public:
  [[nodiscard]] expected<std::string> render(const std::vector<chat_message>& messages,
                                             bool add_generation_prompt) const override;
};

} // namespace dynamo::tok
