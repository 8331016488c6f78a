// Chat templates from GGUF metadata (tokenizer.chat_template, Jinja) rendered
// by a small Jinja-subset interpreter, plus the built-in ChatML fallback.
// Called by the frontend/worker setup (load) and per request (render).
// Immutable after construction: render is safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/tokenizer/chat_template.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace dynamo::tok {

namespace jinja {
struct program;
}

/// A Jinja chat template as HF's apply_chat_template renders it (trim_blocks,
/// lstrip_blocks, loop controls, HF's tojson, raise_exception, strftime_now),
/// with the variables messages, tools (None without tools), documents (None),
/// add_generation_prompt, bos_token, eos_token and the extra kwargs.
class jinja_chat_template final : public chat_template {
public:
  /// Parses `source`. Errors: errc::invalid_argument (syntax) or
  /// errc::unsupported (valid Jinja beyond the subset), naming the line.
  [[nodiscard]] static expected<std::shared_ptr<jinja_chat_template>> parse(std::string_view source,
                                                                            std::string bos_token,
                                                                            std::string eos_token);

  /// Errors (errc::invalid_argument): empty messages, raise_exception() in the
  /// template (e.g. roles that do not alternate), or a type error.
  [[nodiscard]] expected<std::string> render(const std::vector<chat_message>& messages,
                                             bool add_generation_prompt) const override;
  [[nodiscard]] expected<std::string> render(const chat_input& input) const override;

  [[nodiscard]] const std::string& source() const noexcept { return source_; }

private:
  jinja_chat_template() = default;
  std::shared_ptr<const jinja::program> program_;
  std::string source_;
  std::string bos_;
  std::string eos_;
};

/// ChatML (Qwen-style): <|im_start|>{role}\n{content}<|im_end|>\n per message.
[[nodiscard]] std::string_view chatml_template_source() noexcept;

/// A model's chat template and where it came from.
struct loaded_chat_template {
  std::shared_ptr<const chat_template> tmpl;
  bool fallback = false; ///< true: the built-in ChatML template is in use
  std::string reason;    ///< why the fallback was taken (empty otherwise)
};

/// The template in `f`'s tokenizer.chat_template, with bos/eos texts from its
/// vocabulary. When the key is absent or the template does not parse, logs a
/// warning and falls back to ChatML.
[[nodiscard]] loaded_chat_template load_chat_template(const gguf::file& f);

} // namespace dynamo::tok
