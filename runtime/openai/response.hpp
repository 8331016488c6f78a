// OpenAI response bodies as JSON text: chat.completion and its streamed
// chat.completion.chunk form, text_completion (whole and streamed), choices
// (n of them, each with its index), logprobs in both endpoints' shapes, usage,
// model objects and lists, and request ids. Field order follows OpenAI's.
// Pure functions; any thread.
#pragma once

#include "runtime/openai/output_parser.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <optional>
#include <vector>
#include <span>
#include <string>
#include <string_view>

namespace dynamo::openai {

/// What every chunk and response of one request repeats.
struct response_meta {
  std::string id;      ///< "chatcmpl-<hex>" or "cmpl-<hex>"
  int64_t created = 0; ///< unix seconds
  std::string model;
};

struct usage_counts {
  uint32_t prompt_tokens = 0;
  uint32_t completion_tokens = 0;
  uint32_t cached_tokens = 0; ///< prompt_tokens_details.cached_tokens
};

/// One alternative of a token's logprobs, as the client sees it.
struct logprob_alt {
  std::string bytes;    ///< the token's raw bytes (may be a partial UTF-8 sequence)
  float logprob = 0.0f; ///< -inf is written as -9999.0 (JSON has no infinity), as vLLM
};

/// One generated token's logprobs: the token, its alternatives (most likely
/// first) and where its text starts in the choice's text (Unicode code
/// points; legacy completions' text_offset).
struct logprob_entry {
  std::string bytes;
  float logprob = 0.0f;
  std::vector<logprob_alt> top;
  uint32_t text_offset = 0;
  /// An echoed prompt's first token: no distribution predicts it, so its
  /// logprob and top_logprobs are null (legacy completions only).
  bool no_logprob = false;
};

/// The `token` string of raw token bytes: the bytes when they are valid UTF-8,
/// else "bytes:" and each byte as \xNN (OpenAI's form for partial tokens);
/// the exact bytes always go in the `bytes` field.
[[nodiscard]] std::string token_text(std::string_view bytes);

/// One finished choice of a whole (non-streamed) response.
struct choice_result {
  uint32_t index = 0;
  std::string text;      ///< chat: the content outside reasoning and tool calls
  protocol::finish_reason finish = protocol::finish_reason::none;
  std::optional<std::vector<logprob_entry>> logprobs; ///< set when they were asked for
  std::string reasoning; ///< chat: reasoning_content (omitted when empty)
  std::vector<tool_call> tool_calls; ///< chat: message.tool_calls (omitted when empty)
  /// chat: content is null when empty (a parser was active: the text went to
  /// reasoning or tool calls); else "" stays "".
  bool null_empty_content = false;
};

/// "stop", "length", "cancelled", "error"; "" for none (rendered as null).
[[nodiscard]] std::string_view finish_reason_text(protocol::finish_reason r) noexcept;

/// 32 random hex digits (128 bits), for "chatcmpl-..", "cmpl-.." and request ids.
[[nodiscard]] std::string random_hex_id();

// -- /v1/chat/completions -----------------------------------------------------

/// Whole response (stream=false): message {role, content, refusal: null,
/// [reasoning_content], [tool_calls]}, logprobs {content: [...], refusal:
/// null} or null; finish_reason "tool_calls" when a choice that stopped made calls.
[[nodiscard]] std::string chat_completion_body(const response_meta& meta,
                                               std::span<const choice_result> choices,
                                               const usage_counts& usage);

/// Streamed chunks, one choice each. With `usage_null`
/// (stream_options.include_usage) every chunk carries "usage":null, as OpenAI
/// sends them; the last one has the usage. `logprobs` (may be null): the
/// tokens behind this chunk's text.
[[nodiscard]] std::string chat_role_chunk(const response_meta& meta, uint32_t index, bool usage_null);
[[nodiscard]] std::string chat_content_chunk(const response_meta& meta, uint32_t index,
                                             std::string_view text,
                                             const std::vector<logprob_entry>* logprobs,
                                             bool usage_null);
/// A parsed piece: one chunk per kind (reasoning_content, content, each
/// tool_calls delta, in that order); `logprobs` go on the first. Empty
/// `d` with logprobs: one chunk with content "".
[[nodiscard]] std::vector<std::string> chat_delta_chunks(const response_meta& meta, uint32_t index,
                                                         const output_delta& d,
                                                         const std::vector<logprob_entry>* logprobs,
                                                         bool usage_null);
/// `tool_calls`: the choice made calls, so a stop is reported as "tool_calls".
[[nodiscard]] std::string chat_finish_chunk(const response_meta& meta, uint32_t index,
                                            protocol::finish_reason finish, bool usage_null,
                                            bool tool_calls = false);
[[nodiscard]] std::string chat_usage_chunk(const response_meta& meta, const usage_counts& usage);

// -- /v1/completions ----------------------------------------------------------

/// logprobs {tokens, token_logprobs, top_logprobs (the top alternatives
/// and the chosen token, by token string), text_offset} or null.
[[nodiscard]] std::string completion_body(const response_meta& meta,
                                          std::span<const choice_result> choices,
                                          const usage_counts& usage);
/// A streamed piece of one choice; `finish` none means "more to come".
[[nodiscard]] std::string completion_chunk(const response_meta& meta, uint32_t index,
                                           std::string_view text,
                                           const std::vector<logprob_entry>* logprobs,
                                           protocol::finish_reason finish, bool usage_null);
[[nodiscard]] std::string completion_usage_chunk(const response_meta& meta,
                                                 const usage_counts& usage);

// -- /v1/models ---------------------------------------------------------------

struct model_info {
  std::string id;
  int64_t created = 0;
  std::string owned_by = "dynamo";
};

[[nodiscard]] std::string model_body(const model_info& m);
/// {"object":"list","data":[...]}
[[nodiscard]] std::string model_list_body(std::span<const model_info> models);

} // namespace dynamo::openai
