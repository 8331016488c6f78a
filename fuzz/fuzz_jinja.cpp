// libFuzzer target: a chat template is a program from a downloaded file. The
// input is "template \0 messages-json": the lexer, parser and evaluator must
// answer every template with output or an error, within their step, depth and
// output limits (never a hang, a crash or an unbounded allocation).
#include "runtime/tokenizer/jinja_chat_template.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto cut = in.find('\0');
  std::string_view source = in.substr(0, cut);
  auto tmpl = dynamo::tok::jinja_chat_template::parse(source, "<s>", "</s>");
  if (!tmpl)
    return 0;
  dynamo::tok::chat_input input;
  if (cut != std::string_view::npos) {
    auto j = nlohmann::ordered_json::parse(in.substr(cut + 1), nullptr, false);
    if (!j.is_discarded() && j.is_array())
      input.messages = std::move(j);
  }
  if (input.messages.empty())
    input.messages = nlohmann::ordered_json::parse(
        R"([{"role":"system","content":"s"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}])");
  input.now = std::tm{};
  (void)(*tmpl)->render(input);
  return 0;
}
