// OpenAI response bodies as JSON text: chat.completion and its streamed
// chat.completion.chunk form, text_completion (whole and streamed), usage,
// model objects and lists, and request ids. Field order follows OpenAI's.
// Pure functions; any thread.
#pragma once

#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <optional>
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

/// "stop", "length", "cancelled", "error"; "" for none (rendered as null).
[[nodiscard]] std::string_view finish_reason_text(protocol::finish_reason r) noexcept;

/// 32 random hex digits (128 bits), for "chatcmpl-..", "cmpl-.." and request ids.
[[nodiscard]] std::string random_hex_id();

// -- /v1/chat/completions -----------------------------------------------------

/// Whole response (stream=false).
[[nodiscard]] std::string chat_completion_body(const response_meta& meta, std::string_view content,
                                               protocol::finish_reason finish,
                                               const usage_counts& usage);

/// Streamed chunks. With `usage_null` (stream_options.include_usage) every
/// chunk carries "usage":null, as OpenAI sends them; the last one has the usage.
[[nodiscard]] std::string chat_role_chunk(const response_meta& meta, bool usage_null);
[[nodiscard]] std::string chat_content_chunk(const response_meta& meta, std::string_view text,
                                             bool usage_null);
[[nodiscard]] std::string chat_finish_chunk(const response_meta& meta,
                                            protocol::finish_reason finish, bool usage_null);
[[nodiscard]] std::string chat_usage_chunk(const response_meta& meta, const usage_counts& usage);

// -- /v1/completions ----------------------------------------------------------

[[nodiscard]] std::string completion_body(const response_meta& meta, std::string_view text,
                                          protocol::finish_reason finish,
                                          const usage_counts& usage);
/// A streamed piece; `finish` none means "more to come".
[[nodiscard]] std::string completion_chunk(const response_meta& meta, std::string_view text,
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
