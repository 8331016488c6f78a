#include "runtime/tokenizer/jinja_chat_template.hpp"

#include "runtime/tokenizer/jinja_ast.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::tok {

namespace {

constexpr std::string_view chatml =
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// The text of the token whose id is stored under `key`, or "".
std::string special_text(const gguf::file& f, std::string_view key) {
  auto id = f.get_u32(key);
  auto tokens = f.get_array("tokenizer.ggml.tokens");
  if (!id || !tokens || *id >= (*tokens)->items.size())
    return {};
  auto s = (*tokens)->items[*id].to_string();
  return s ? std::string(*s) : std::string();
}

} // namespace

std::string_view chatml_template_source() noexcept { return chatml; }

expected<std::shared_ptr<jinja_chat_template>> jinja_chat_template::parse(std::string_view source,
                                                                          std::string bos_token,
                                                                          std::string eos_token) {
  auto prog = jinja::parse(source);
  if (!prog)
    return std::move(prog.error());
  std::shared_ptr<jinja_chat_template> t(new jinja_chat_template());
  t->program_ = std::move(*prog);
  t->source_ = std::string(source);
  t->bos_ = std::move(bos_token);
  t->eos_ = std::move(eos_token);
  return t;
}

expected<std::string> jinja_chat_template::render(const std::vector<chat_message>& messages,
                                                  bool add_generation_prompt) const {
  if (messages.empty())
    return make_error(errc::invalid_argument, "messages must not be empty");
  jinja::list msgs;
  msgs.reserve(messages.size());
  for (const auto& m : messages)
    msgs.emplace_back(jinja::dict{{"role", jinja::value(m.role)}, {"content", jinja::value(m.content)}});
  const jinja::globals g = {{"messages", jinja::value(std::move(msgs))},
                            {"add_generation_prompt", jinja::value(add_generation_prompt)},
                            {"bos_token", jinja::value(bos_)},
                            {"eos_token", jinja::value(eos_)}};
  return jinja::render(*program_, g);
}

loaded_chat_template load_chat_template(const gguf::file& f) {
  std::string bos = special_text(f, "tokenizer.ggml.bos_token_id");
  std::string eos = special_text(f, "tokenizer.ggml.eos_token_id");
  std::string reason;
  if (auto src = f.get_string("tokenizer.chat_template")) {
    auto t = jinja_chat_template::parse(*src, bos, eos);
    if (t)
      return {std::move(*t), false, {}};
    reason = "its chat template does not parse (" + describe(t.error()) + ")";
  } else {
    reason = "it has no usable tokenizer.chat_template (" + describe(src.error()) + ")";
  }
  spdlog::warn("{}: {}; using the built-in ChatML template", f.path(), reason);
  auto t = jinja_chat_template::parse(chatml, std::move(bos), std::move(eos));
  return {std::move(*t), true, std::move(reason)};
}

} // namespace dynamo::tok
