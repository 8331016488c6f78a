// KV events on their way from the event plane's I/O thread to one router actor.
// The writer appends and wakes the router only when the inbox was empty; the
// router takes everything in one message, so a burst costs one actor message
// instead of one per event. Written by model_watcher, drained by router_actor;
// thread-safe.
#pragma once

#include "runtime/protocol/kv_event.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace dynamo::actors {

class kv_event_inbox {
public:
  /// Past `capacity` events waiting, new ones are dropped (and counted): the
  /// router's sequencer then sees a gap and asks the worker for the range.
  explicit kv_event_inbox(size_t capacity = size_t{1} << 18) : capacity_(capacity) {}

  /// Appends `event`. True when the inbox was empty: the caller must then wake
  /// the router (kv_events_atom).
  [[nodiscard]] bool push(protocol::router_event event) {
    std::lock_guard lk{mtx_};
    if (events_.size() >= capacity_) {
      ++dropped_;
      return false;
    }
    events_.push_back(std::move(event));
    return events_.size() == 1;
  }

  /// Everything waiting, oldest first; the inbox is empty afterwards.
  [[nodiscard]] std::vector<protocol::router_event> take() {
    std::vector<protocol::router_event> out;
    std::lock_guard lk{mtx_};
    std::swap(out, events_);
    return out;
  }

  [[nodiscard]] uint64_t dropped() const {
    std::lock_guard lk{mtx_};
    return dropped_;
  }

private:
  mutable std::mutex mtx_;
  std::vector<protocol::router_event> events_;
  size_t capacity_;
  uint64_t dropped_ = 0;
};

using kv_event_inbox_ptr = std::shared_ptr<kv_event_inbox>;

} // namespace dynamo::actors
