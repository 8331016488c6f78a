// Test support for the worker actor suites: collects one request-plane call's
// engine_output chunks and its end, for the test thread to wait on. Filled on
// the plane's I/O thread, read by the test under its mutex.
#pragma once

#include "planes/request/request_plane.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/llm.hpp"

#include <caf/error.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dynamo::test {

struct collected {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<uint32_t> tokens;
  std::vector<protocol::engine_output> chunks;
  bool ended = false;
  caf::error end_error;

  bool wait(std::chrono::milliseconds t = std::chrono::seconds(5)) {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, t, [&] { return ended; });
  }
  bool wait_tokens(size_t n, std::chrono::milliseconds t = std::chrono::seconds(5)) {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, t, [&] { return tokens.size() >= n || ended; });
  }
};

/// Starts a call of `endpoint` at `address` whose chunks and end land in `out`.
inline planes::call_handle collect_call(planes::request_client& client, const std::string& address,
                                        const std::string& endpoint, std::vector<uint8_t> payload,
                                        std::shared_ptr<collected> out) {
  return client.call(
    address, endpoint, std::move(payload),
    [out](planes::bytes item) {
      auto chunk = protocol::decode<protocol::engine_output>(item);
      std::lock_guard lk{out->mtx};
      if (chunk) {
        out->tokens.insert(out->tokens.end(), chunk->token_ids.begin(), chunk->token_ids.end());
        out->chunks.push_back(*chunk);
      }
      out->cv.notify_all();
    },
    [out](const caf::error& err) {
      std::lock_guard lk{out->mtx};
      out->ended = true;
      out->end_error = err;
      out->cv.notify_all();
    });
}

} // namespace dynamo::test
