// The two event-plane implementations under one shape for the contract suite,
// plus a thread-safe recorder and the readiness handshake that beats the
// slow-joiner problem without sleeps.
#pragma once

#include "planes/event/inproc_event_plane.hpp"
#include "planes/event/zmq_event_plane.hpp"

#include "../support/support.hpp"

#include <boost/test/unit_test.hpp>

#include <tuple>

namespace dynamo::planes::testing {

/// Records envelopes and gaps; callbacks keep the record alive.
class event_recorder {
public:
  [[nodiscard]] event_subscriber_callbacks callbacks() {
    return {[r = r_](const event_envelope& e) {
              std::lock_guard lock{r->mutex};
              r->events.push_back(e);
              r->log.push_back("event " + e.topic + " " + std::to_string(e.sequence));
            },
            [r = r_](const event_gap& g) {
              std::lock_guard lock{r->mutex};
              r->gaps.push_back(g);
              r->log.push_back("gap " + g.topic + " " + std::to_string(g.expected) + ".." +
                               std::to_string(g.got));
            }};
  }
  /// Events whose topic starts with `prefix`.
  [[nodiscard]] std::vector<event_envelope> events(const std::string& prefix = "") const {
    std::lock_guard lock{r_->mutex};
    std::vector<event_envelope> out;
    for (auto& e : r_->events)
      if (e.topic.starts_with(prefix))
        out.push_back(e);
    return out;
  }
  [[nodiscard]] std::vector<event_gap> gaps(const std::string& prefix = "") const {
    std::lock_guard lock{r_->mutex};
    std::vector<event_gap> out;
    for (auto& g : r_->gaps)
      if (g.topic.starts_with(prefix))
        out.push_back(g);
    return out;
  }
  /// "event <topic> <seq>" / "gap <topic> <expected>..<got>" lines in arrival order.
  [[nodiscard]] std::vector<std::string> log(const std::string& topic_prefix) const {
    std::lock_guard lock{r_->mutex};
    std::vector<std::string> out;
    for (auto& l : r_->log) {
      auto topic = l.substr(l.find(' ') + 1);
      if (topic.starts_with(topic_prefix))
        out.push_back(l);
    }
    return out;
  }
  [[nodiscard]] bool wait_events(const std::string& prefix, size_t n) const {
    return wait_until([&] { return events(prefix).size() >= n; });
  }

private:
  struct record {
    mutable std::mutex mutex;
    std::vector<event_envelope> events;
    std::vector<event_gap> gaps;
    std::vector<std::string> log;
  };
  std::shared_ptr<record> r_ = std::make_shared<record>();
};

/// Publishes on topic "probe" until the subscriber (subscribed to "probe")
/// receives one from `pub` published after this call began: from then on the
/// subscription is known to be in effect.
inline bool await_subscription(event_publisher& pub, const event_recorder& rec) {
  auto seen_from_pub = [&] {
    size_t n = 0;
    for (auto& e : rec.events("probe"))
      n += e.publisher_id == pub.publisher_id() ? 1 : 0;
    return n;
  };
  auto before = seen_from_pub();
  for (int i = 0; i < 500; ++i) {
    if (!pub.publish("probe", bytes{}))
      return false;
    if (wait_until([&] { return seen_from_pub() > before; }, std::chrono::milliseconds{20}))
      return true;
  }
  return false;
}

struct zmq_event_backend {
  std::unique_ptr<event_publisher> publisher(uint64_t id = 0, size_t max_bytes = 32u << 20) {
    zmq_event_publisher_options o;
    o.publisher_id = id;
    o.max_message_bytes = max_bytes;
    auto p = make_zmq_event_publisher(o);
    BOOST_REQUIRE_MESSAGE(p, "bind failed");
    return std::move(*p);
  }
  std::unique_ptr<event_subscriber> subscriber(event_subscriber_callbacks cb) {
    zmq_event_subscriber_options o;
    o.callbacks = std::move(cb);
    return make_zmq_event_subscriber(std::move(o));
  }
};

struct fake_event_backend {
  std::shared_ptr<inproc_event_bus> bus = make_inproc_event_bus();
  std::unique_ptr<event_publisher> publisher(uint64_t id = 0, size_t max_bytes = 32u << 20) {
    return make_inproc_event_publisher(bus, id, max_bytes);
  }
  std::unique_ptr<event_subscriber> subscriber(event_subscriber_callbacks cb) {
    return make_inproc_event_subscriber(bus, std::move(cb));
  }
};

using event_backends = std::tuple<zmq_event_backend, fake_event_backend>;

} // namespace dynamo::planes::testing
