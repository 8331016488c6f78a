// Servers started as child processes by the tools that measure a real cluster
// (dynamo-disagg-bench's dynamo-run, dynamo-profile --handoff's dynamo-launch):
// a free loopback port, whether a child still runs, waiting for its /health,
// and a binary next to this one. Main threads only, as process_set.
#pragma once

#include "apps/dynamo-launch/process_set.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/core/error.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace dynamo::apps {

/// A loopback port that was free a moment ago (bind port 0, read it, close).
[[nodiscard]] expected<uint16_t> free_loopback_port();

/// errc::closed when the child `name` has exited (one-shot children only).
[[nodiscard]] expected<void> still_running(process_set& ps, const std::string& name);

/// Waits until `client`'s server answers GET /health with 200 (a model is
/// registered); errc::closed when the child exits first, timeout after `timeout`.
[[nodiscard]] expected<void> wait_healthy(process_set& ps, const std::string& name, http::http_client& client,
                                          std::chrono::seconds timeout);

/// `name` in this executable's directory (just `name` when that is unknown).
[[nodiscard]] std::string sibling_binary(const std::string& name);

} // namespace dynamo::apps
