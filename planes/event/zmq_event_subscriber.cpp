// The ZeroMQ event subscriber: one SUB socket owned by an I/O loop. connect,
// subscribe and friends run on the loop through zmq_io_loop::call.
#include "planes/codec/zmq_curve.hpp"
#include "planes/codec/zmq_io_loop.hpp"
#include "planes/event/envelope.hpp"
#include "planes/event/zmq_event_plane.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <set>

namespace dynamo::planes {
namespace {

class zmq_subscriber final : public event_subscriber {
public:
  explicit zmq_subscriber(zmq_event_subscriber_options opts)
      : opts_(std::move(opts)), loop_(std::make_shared<zmq_io_loop>("event-sub", opts_.tick)),
        sub_(loop_->context(), zmq::socket_type::sub) {
    sub_.set(zmq::sockopt::linger, 0);
    sub_.set(zmq::sockopt::rcvhwm, opts_.receive_hwm);
    sub_.set(zmq::sockopt::maxmsgsize,
             static_cast<int64_t>(opts_.max_message_bytes + max_topic_bytes + 64));
    if (opts_.curve)
      curve_ = curve_client(sub_, *opts_.curve);
    loop_->watch(sub_, [this] { on_readable(); });
    loop_->set_on_stop([this] { sub_.close(); });
    loop_->start();
  }
  ~zmq_subscriber() override { loop_->stop(); }

  [[nodiscard]] expected<void> connect(const std::string& address) override {
    return loop_->call<void>([this, address]() -> expected<void> {
      if (!curve_)
        return curve_;
      if (connected_.contains(address))
        return {};
      try {
        sub_.connect(address);
      } catch (const zmq::error_t& e) {
        return make_error(errc::invalid_argument,
                          fmt::format("cannot connect to {}: {}", address, e.what()));
      }
      connected_.insert(address);
      return {};
    });
  }

  [[nodiscard]] expected<void> disconnect(const std::string& address) override {
    return loop_->call<void>([this, address]() -> expected<void> {
      if (connected_.erase(address) == 0)
        return make_error(errc::not_found, "not connected to " + address);
      try {
        sub_.disconnect(address);
      } catch (const zmq::error_t& e) {
        spdlog::warn("event subscriber: disconnect {}: {}", address, e.what());
      }
      return {};
    });
  }

  [[nodiscard]] expected<void> subscribe(const std::string& prefix) override {
    return loop_->call<void>([this, prefix]() -> expected<void> {
      if (prefixes_.insert(prefix).second)
        sub_.set(zmq::sockopt::subscribe, prefix);
      return {};
    });
  }

  [[nodiscard]] expected<void> unsubscribe(const std::string& prefix) override {
    return loop_->call<void>([this, prefix]() -> expected<void> {
      if (prefixes_.erase(prefix) == 0)
        return make_error(errc::not_found, "not subscribed to '" + prefix + "'");
      sub_.set(zmq::sockopt::unsubscribe, prefix);
      return {};
    });
  }

  [[nodiscard]] subscriber_stats stats() const override {
    return {received_.load(), malformed_.load(), gaps_.load(), stale_.load()};
  }

private:
  void on_readable() {
    std::vector<zmq::message_t> parts;
    for (int i = 0; i < 1024; ++i) {
      bool overflow = false;
      if (!recv_parts(sub_, parts, 2, overflow))
        return;
      if (overflow || parts.size() != 2) {
        ++malformed_;
        continue;
      }
      handle(parts[0], parts[1]);
    }
  }

  void handle(const zmq::message_t& topic, const zmq::message_t& body) {
    auto env = decode_envelope({body.data<uint8_t>(), body.size()}, opts_.max_message_bytes);
    if (!env || env->topic != topic.to_string_view()) {
      ++malformed_;
      return;
    }
    auto seen = tracker_.observe(*env);
    if (seen.kind == sequence_tracker::verdict::stale) {
      ++stale_;
      return;
    }
    try {
      if (seen.kind == sequence_tracker::verdict::gap) {
        ++gaps_;
        if (opts_.callbacks.on_gap)
          opts_.callbacks.on_gap(event_gap{env->publisher_id, env->topic, seen.expected,
                                           env->sequence});
      }
      ++received_;
      if (opts_.callbacks.on_event)
        opts_.callbacks.on_event(*env);
    } catch (const std::exception& e) {
      spdlog::error("event subscriber: callback threw: {}", e.what());
    }
  }

  zmq_event_subscriber_options opts_;
  std::shared_ptr<zmq_io_loop> loop_;
  zmq::socket_t sub_;
  expected<void> curve_{}; // an error: the CURVE keys were refused, connect() fails
  std::set<std::string> connected_; // loop thread only
  std::set<std::string> prefixes_;  // loop thread only
  sequence_tracker tracker_;        // loop thread only
  std::atomic<uint64_t> received_{0}, malformed_{0}, gaps_{0}, stale_{0};
};

} // namespace

std::unique_ptr<event_subscriber> make_zmq_event_subscriber(zmq_event_subscriber_options options) {
  return std::make_unique<zmq_subscriber>(std::move(options));
}

} // namespace dynamo::planes
