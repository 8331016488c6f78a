#include "runtime/tokenizer/chat_template.hpp"

namespace dynamo::tok {

chat_input to_chat_input(const std::vector<chat_message>& messages, bool add_generation_prompt) {
  chat_input in;
  for (const auto& m : messages)
    in.messages.push_back({{"role", m.role}, {"content", m.content}});
  in.add_generation_prompt = add_generation_prompt;
  return in;
}

expected<std::string> simple_chat_template::render(const std::vector<chat_message>& messages,
                                                   bool add_generation_prompt) const {
  return render(to_chat_input(messages, add_generation_prompt));
}

expected<std::string> simple_chat_template::render(const chat_input& input) const {
  if (!input.messages.is_array() || input.messages.empty())
    return make_error(errc::invalid_argument, "messages must not be empty");
  std::string out;
  for (const auto& m : input.messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      return make_error(errc::invalid_argument, "every message needs a string role");
    out += m["role"].get_ref<const std::string&>();
    out += ": ";
    if (auto c = m.find("content"); c != m.end()) {
      if (c->is_string())
        out += c->get_ref<const std::string&>();
      else if (c->is_array())
        for (const auto& part : *c)
          if (part.is_object() && part.contains("text") && part["text"].is_string())
            out += part["text"].get_ref<const std::string&>();
    }
    out += '\n';
  }
  if (input.add_generation_prompt)
    out += "assistant: ";
  return out;
}

} // namespace dynamo::tok
