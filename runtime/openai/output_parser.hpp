// Splits one choice's generated text into reasoning (<think>...</think>),
// content and tool calls (output_format.hpp names the formats), incrementally:
// text pieces in, deltas out, the same result whatever the split points.
// Text that may still be the start of a marker is held back; each tool call
// is released whole once it has parsed (a header delta with id and name,
// then its arguments), so a "call" that does not parse stays content.
// One per choice, owned by the response_assembler; not thread-safe.
#pragma once

#include "runtime/openai/output_format.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::openai {

/// One complete tool call.
struct tool_call {
  std::string id;        ///< "call_" + 24 hex digits (Mistral: 9 hex digits, as its templates want)
  std::string name;
  std::string arguments; ///< a JSON object as compact text
};

/// A streamed piece of a tool call, as OpenAI's delta.tool_calls[i].
struct tool_call_delta {
  uint32_t index = 0;
  std::optional<std::string> id;   ///< first delta of the call only (with type "function")
  std::optional<std::string> name; ///< first delta of the call only
  std::string arguments;           ///< "" in the first delta
};

/// What one push released, in output order: reasoning, then content, then calls.
struct output_delta {
  std::string reasoning;
  std::string content;
  std::vector<tool_call_delta> calls;
  [[nodiscard]] bool empty() const noexcept {
    return reasoning.empty() && content.empty() && calls.empty();
  }
};

class output_parser {
public:
  struct options {
    tool_format tools = tool_format::none; ///< none: no tool parsing (no tools in the request)
    bool reasoning = false;                ///< parse <think>...</think>
    /// The prompt ends inside <think> (DeepSeek-R1 templates): the output
    /// starts as reasoning.
    bool starts_in_reasoning = false;
  };
  using id_source = std::function<std::string()>;

  /// `ids` makes call ids (default: random, see tool_call::id).
  explicit output_parser(options o, id_source ids = {});

  /// True when the parser changes anything (else text passes through as content).
  [[nodiscard]] bool active() const noexcept { return opts_.tools != tool_format::none || opts_.reasoning; }

  [[nodiscard]] output_delta push(std::string_view text);
  /// End of the output: releases or resolves whatever is held back.
  [[nodiscard]] output_delta finish();

  [[nodiscard]] const std::vector<tool_call>& calls() const noexcept { return calls_; }

private:
  enum class phase : uint8_t { think_start, thinking, content, call, tail };
  void step(output_delta& d, bool at_end);
  [[nodiscard]] bool step_think_start(bool at_end);
  [[nodiscard]] bool step_thinking(output_delta& d, bool at_end);
  [[nodiscard]] bool step_content(output_delta& d, bool at_end);
  [[nodiscard]] bool step_call(output_delta& d, bool at_end);
  void emit_content(output_delta& d, std::string_view text);
  void emit_call(output_delta& d, std::string name, std::string arguments);
  /// Parses a finished block into calls (all or nothing) and emits them.
  [[nodiscard]] bool emit_block(output_delta& d, std::string_view block);

  options opts_;
  id_source ids_;
  phase phase_;
  std::string buf_;        ///< text not yet decided
  std::string held_ws_;    ///< whitespace after the last content (dropped before a call)
  bool content_started_ = false; ///< leading whitespace of the content is dropped
  bool in_block_ = false;  ///< tail phase: a call block (else plain content)
  std::vector<tool_call> calls_;
};

/// Parses `block` (the text after a format's call marker, markers included as
/// the format writes them) into calls; nullopt unless every call parses with a
/// string name and object arguments. Exposed for tests.
[[nodiscard]] std::optional<std::vector<std::pair<std::string, std::string>>>
parse_tool_block(tool_format f, std::string_view block);

} // namespace dynamo::openai
