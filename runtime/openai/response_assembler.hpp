// Assembles one request's OpenAI response from its engine_output chunks: one
// text_stream per choice (n of them, chunks routed by engine_output::index),
// the streamed payloads (chat role chunks, content with logprobs, each
// choice's finish, usage) or the whole body, and usage over all choices (the
// prompt counted once). Chat choices go through an output_parser when one is
// active (reasoning_content, tool_calls; finish_reason "tool_calls"; a
// parser that reached max_calls ends its choice, and the generation with it);
// completions' echo puts the prompt first.
// Owned by one request actor; not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/openai/output_parser.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/openai/response.hpp"
#include "runtime/openai/text_stream.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::openai {

class response_assembler {
public:
  struct options {
    bool chat = true;
    bool stream = false;
    bool include_usage = false;          ///< stream_options.include_usage
    uint32_t n = 1;                      ///< choices
    bool logprobs = false;               ///< the request asked for logprobs
    std::vector<std::string> stop;       ///< stop strings
    std::vector<uint32_t> stop_token_ids; ///< the request's stop_conditions (see text_stream)
    uint32_t prompt_tokens = 0;
    /// Control tokens' text stays in the text (tool-call markers that are
    /// control tokens: Mistral's [TOOL_CALLS], Llama's <|python_tag|>).
    bool include_special = false;
    output_parser::options parse;        ///< chat: reasoning / tool-call parsing (each choice alone)
    /// /v1/completions echo (n = 1): the choice starts with the prompt
    /// (text_stream::echo; streamed as its own chunk), its logprobs from the
    /// first chunk's prompt_logprobs.
    struct echo_prompt {
      std::vector<uint32_t> tokens; ///< the prompt's ids
      std::string text;             ///< the prompt as sent; empty: the detokenized ids
      /// max_tokens 0: the token the worker had to generate is dropped and
      /// the choice ends with "length".
      bool drop_output = false;
    };
    std::optional<echo_prompt> echo;
  };

  /// `tk` must outlive this object.
  response_assembler(const tok::tokenizer& tk, response_meta meta, options o);

  /// What one chunk changed.
  struct update {
    std::vector<std::string> events; ///< SSE payloads to send now, in order (stream)
    uint32_t tokens = 0;             ///< tokens the chunk carried (metrics)
    bool done = false;               ///< every choice is complete
    /// Every choice is complete while the backend still runs (stop strings):
    /// cancel the generation.
    bool cancel_backend = false;
  };

  /// The payloads that open a stream: chat sends a role chunk per choice.
  [[nodiscard]] std::vector<std::string> opening() const;

  /// Feeds one chunk. REQUIRES: out.finish is none, stop or length (errors
  /// and cancellation end the request elsewhere). The stream's last chunk
  /// (finish set) also completes any choice still open. errc::internal when
  /// out.index is not a choice of this request.
  [[nodiscard]] expected<update> push(const protocol::engine_output& out);

  /// Stream: the payloads after the last choice's finish (the usage chunk
  /// when asked), [DONE] excluded.
  [[nodiscard]] std::vector<std::string> closing() const;
  /// Unary: the whole body. REQUIRES: done().
  [[nodiscard]] std::string body() const;

  [[nodiscard]] bool done() const noexcept { return open_ == 0; }
  [[nodiscard]] usage_counts usage() const;

private:
  /// Applies one choice's step: payloads (stream) or accumulation (unary).
  void apply(uint32_t index, text_stream::step s, update& u);
  /// apply() for a chat choice whose text goes through its output_parser.
  void apply_parsed(uint32_t index, text_stream::step& s, update& u);

  response_meta meta_;
  options opts_;
  std::vector<text_stream> texts_;
  std::vector<output_parser> parsers_; ///< one per choice (chat)
  std::vector<choice_result> results_; ///< unary: the choices so far
  uint32_t open_ = 0;                  ///< choices not complete
  bool echoed_ = false;                ///< the echoed prompt has been applied
};

/// The echo option of a completion request (nullopt without echo): its
/// prompt as preprocessed into `pre`.
[[nodiscard]] std::optional<response_assembler::options::echo_prompt>
echo_prompt_of(const completion_request& req, const protocol::preprocessed_request& pre);

} // namespace dynamo::openai
