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

// A JSON value as a template value (objects keep their key order).
expected<jinja::value> to_value(const nlohmann::ordered_json& j, int depth) {
  if (depth > jinja::max_nesting)
    return make_error(errc::invalid_argument, "chat input nested more than " +
                                                  std::to_string(jinja::max_nesting) + " deep");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return jinja::value(jinja::none{});
    case nlohmann::ordered_json::value_t::boolean: return jinja::value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return jinja::value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX))
        return jinja::value(static_cast<double>(u));
      return jinja::value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return jinja::value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return jinja::value(j.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::array: {
      jinja::list l;
      l.reserve(j.size());
      for (const auto& x : j) {
        auto v = to_value(x, depth + 1);
        if (!v)
          return v;
        l.push_back(std::move(*v));
      }
      return jinja::value(std::move(l));
    }
    case nlohmann::ordered_json::value_t::object: {
      jinja::dict d;
      d.reserve(j.size());
      for (const auto& [k, x] : j.items()) {
        auto v = to_value(x, depth + 1);
        if (!v)
          return v;
        d.emplace_back(k, std::move(*v));
      }
      return jinja::value(std::move(d));
    }
    default: return make_error(errc::invalid_argument, "chat input holds a binary or discarded JSON value");
  }
}

void set_global(jinja::globals& g, std::string name, jinja::value v) {
  for (auto& [k, old] : g) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  g.emplace_back(std::move(name), std::move(v));
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
  return render(to_chat_input(messages, add_generation_prompt));
}

expected<std::string> jinja_chat_template::render(const chat_input& in) const {
  if (!in.messages.is_array())
    return make_error(errc::invalid_argument, "messages must be a list");
  if (in.messages.empty())
    return make_error(errc::invalid_argument, "messages must not be empty");
  for (const auto& m : in.messages)
    if (!m.is_object())
      return make_error(errc::invalid_argument, "every message must be an object");
  if (!in.tools.is_null() && !in.tools.is_array())
    return make_error(errc::invalid_argument, "tools must be null or a list");
  if (!in.kwargs.is_object())
    return make_error(errc::invalid_argument, "chat template kwargs must be an object");
  auto messages = to_value(in.messages, 0);
  auto tools = to_value(in.tools, 0);
  if (!messages || !tools)
    return std::move((messages ? tools : messages).error());
  // apply_chat_template's variables: the special tokens, then the kwargs
  // (which may override them), then the fixed arguments.
  jinja::globals g = {{"bos_token", jinja::value(bos_)}, {"eos_token", jinja::value(eos_)}};
  for (const auto& [k, v] : in.kwargs.items()) {
    if (k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt")
      return make_error(errc::invalid_argument, "chat template kwarg '" + k + "' is reserved");
    auto x = to_value(v, 0);
    if (!x)
      return std::move(x.error());
    set_global(g, k, std::move(*x));
  }
  set_global(g, "messages", std::move(*messages));
  set_global(g, "tools", std::move(*tools));
  set_global(g, "documents", jinja::value(jinja::none{}));
  set_global(g, "add_generation_prompt", jinja::value(in.add_generation_prompt));
  return jinja::render(*program_, g, in.now);
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
