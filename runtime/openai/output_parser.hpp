// Splits one choice's generated text into reasoning (<think>...</think>),
// content and tool calls (output_format.hpp names the formats), incrementally:
// text pieces in, deltas out, the same result whatever the split points.
// Text that may still be the start of a marker is held back. A call is
// released (a header delta with id and name) once its name and the opening of
// its arguments object are read; its arguments then stream as written. Text
// that fails to become a call before that stays content.
// One per choice, owned by the response_assembler; not thread-safe.
#pragma once

#include "runtime/openai/output_format.hpp"
#include "runtime/openai/tool_call_scanner.hpp"

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
  std::string arguments; ///< a JSON object as the model wrote it, whitespace between tokens dropped
};

/// A streamed piece of a tool call, as OpenAI's delta.tool_calls[i].
struct tool_call_delta {
  uint32_t index = 0;
  std::optional<std::string> id;   ///< first delta of the call only (with type "function")
  std::optional<std::string> name; ///< first delta of the call only
  std::string arguments;           ///< "" in the first delta, then the next fragment
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
    /// Calls after which the output ends (0: no limit); parallel_tool_calls
    /// false makes it 1.
    uint32_t max_calls = 0;
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
  /// max_calls calls are complete: the output is over (later text is dropped).
  [[nodiscard]] bool stopped() const noexcept { return phase_ == phase::stopped; }

private:
  enum class phase : uint8_t { think_start, thinking, content, call, stopped };
  /// Where in a format's calls the call phase is.
  enum class frame : uint8_t {
    hermes_body, hermes_close,                          // <tool_call>{..}</tool_call>
    llama3_body, llama3_next,                           // [<|python_tag|>]{..}[; {..}]
    mistral_open, mistral_item, mistral_next,           // [TOOL_CALLS][{..}, {..}]
    mistral_name, mistral_args_open, mistral_args,      // [TOOL_CALLS]name[ARGS]{..}
  };
  enum class fed : uint8_t { more, done, failed };
  void step(output_delta& d, bool at_end);
  [[nodiscard]] bool step_think_start(bool at_end);
  [[nodiscard]] bool step_thinking(output_delta& d, bool at_end);
  [[nodiscard]] bool step_content(output_delta& d, bool at_end);
  [[nodiscard]] bool step_call(output_delta& d, bool at_end);
  [[nodiscard]] bool step_hermes(output_delta& d, bool at_end);
  [[nodiscard]] bool step_llama3(output_delta& d, bool at_end);
  [[nodiscard]] bool step_mistral(output_delta& d, bool at_end);
  [[nodiscard]] bool step_mistral_name(output_delta& d, bool at_end);
  /// Starts a call in `f` with `raw` (its marker) already read.
  void begin_call(frame f, std::string_view raw);
  /// A format's call-object frame: feeds the scanner; once the object is
  /// done, goes on to `next` (or stops at max_calls).
  [[nodiscard]] bool step_object(output_delta& d, bool at_end, frame next);
  /// Feeds buf_ to the scanner, releasing the call and its arguments.
  [[nodiscard]] fed feed_call(output_delta& d, bool at_end);
  /// A call that did not become one: its text is content, and so is what follows.
  [[nodiscard]] bool fail_call(output_delta& d);
  /// A call is complete: true (and the output is over) at max_calls.
  [[nodiscard]] bool stop_at_max();
  void emit_content(output_delta& d, std::string_view text);
  void emit_call(output_delta& d, std::string name);
  void emit_arguments(output_delta& d, std::string_view text);

  options opts_;
  id_source ids_;
  phase phase_;
  frame frame_ = frame::hermes_body;
  std::string buf_;        ///< text not yet decided
  std::string held_ws_;    ///< whitespace after the last content (dropped before a call)
  bool content_started_ = false; ///< leading whitespace of the content is dropped
  std::string raw_;        ///< the call's text while it may still turn out to be content
  bool released_ = false;  ///< the current call's header is out
  call_scanner scanner_;   ///< the current call object
  json_minifier args_;     ///< Mistral's name[ARGS]{..}: the arguments object
  std::string name_;       ///< Mistral's name[ARGS]{..}: the name so far
  std::vector<tool_call> calls_;
};

} // namespace dynamo::openai
