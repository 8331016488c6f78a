// The SSE wire format of one event (text/event-stream): what
// http_responder::send_event writes, and what fuzz/fuzz_sse.cpp checks. Its own
// library (dynamo_http_sse), free of the server's coroutine code, so the fuzz
// target links without it. Pure function; safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace dynamo::http {

/// Formats one SSE event: "event: <name>\n" when `event` is not empty (cut at its
/// first CR or LF), one "data: " line per line of `data` (split at CR, LF and
/// CRLF), then an empty line.
[[nodiscard]] std::string format_sse_event(std::string_view data, std::string_view event = {});

} // namespace dynamo::http
