#include "runtime/tokenizer/chat_template.hpp"

namespace dynamo::tok {

expected<std::string> simple_chat_template::render(const std::vector<chat_message>& messages,
                                                   bool add_generation_prompt) const {
  if (messages.empty())
    return make_error(errc::invalid_argument, "messages must not be empty");
  std::string out;
  for (const auto& m : messages) {
    out += m.role;
    out += ": ";
    out += m.content;
    out += '\n';
  }
  if (add_generation_prompt)
    out += "assistant: ";
  return out;
}

} // namespace dynamo::tok
