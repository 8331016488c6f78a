// The current incarnation of a supervised actor: the supervisor's on_spawn
// callback sets it after every (re)start, and senders read it for each
// message, so they reach the new actor after a restart. Thread-safe.
#pragma once

#include <caf/actor.hpp>

#include <mutex>

namespace dynamo::actors {

class actor_handle {
public:
  actor_handle() = default;
  explicit actor_handle(caf::actor a) : actor_(std::move(a)) {}

  void set(caf::actor a) {
    std::lock_guard lk{mtx_};
    actor_ = std::move(a);
  }
  [[nodiscard]] caf::actor get() const {
    std::lock_guard lk{mtx_};
    return actor_;
  }

private:
  mutable std::mutex mtx_;
  caf::actor actor_;
};

} // namespace dynamo::actors
