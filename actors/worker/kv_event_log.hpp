// One worker instance's KV event stream (research/dynamo.md 3.4-3.5): numbers
// events consecutively across engine restarts, publishes them on the event
// plane, remembers them (route::worker_event_buffer) and answers the router's
// resync requests on "<ns>/<component>/kv_resync". The worker actor publishes
// from its thread; resync answers run on the request plane's thread. Thread-safe.
#pragma once

#include "planes/event/event_plane.hpp"
#include "planes/request/request_plane.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/worker_event_buffer.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::actors {

using protocol::kv_events_topic;

class kv_event_log {
public:
  kv_event_log(uint64_t worker_id, std::shared_ptr<planes::event_publisher> publisher);

  /// Renumbers `events` after the last one and publishes them in order.
  void publish(std::vector<protocol::kv_event> events);
  /// A new engine incarnation starts empty: tells routers to drop its blocks.
  void publish_cleared();

  /// The answer to a router's resync request: a range from the ring, or a dump.
  [[nodiscard]] protocol::kv_replay answer(const protocol::kv_resync_request& req) const;

  /// Serves answer() on `server` at `endpoint_path`.
  [[nodiscard]] static expected<void> serve(planes::request_server& server, const std::string& endpoint_path,
                                            std::shared_ptr<kv_event_log> log);

private:
  void publish_locked(protocol::kv_event ev);

  uint64_t worker_id_;
  std::shared_ptr<planes::event_publisher> publisher_;
  mutable std::mutex mtx_;
  route::worker_event_buffer buffer_;
  uint64_t next_id_ = 0;
};

} // namespace dynamo::actors
