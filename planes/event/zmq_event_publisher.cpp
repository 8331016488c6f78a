// The ZeroMQ event publisher. PUB sends never block, so publish() sends from
// the caller's thread under a mutex (which also orders the sequence numbers).
// A reaper thread makes the socket process its commands every reap_interval:
// libzmq frees a disconnected peer's session, buffers and subscriptions only
// when the owning socket is used, so an idle publisher would keep every dead
// peer (issue 18: ~9 KB per garbage connection, never returned).
#include "planes/codec/zmq_curve.hpp"
#include "planes/codec/zmq_io_loop.hpp"
#include "planes/event/envelope.hpp"
#include "planes/event/zmq_event_plane.hpp"
#include "runtime/core/host.hpp"
#include "runtime/core/ids.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>
#include <unordered_map>

namespace dynamo::planes {
namespace {

class zmq_publisher final : public event_publisher {
public:
  explicit zmq_publisher(zmq_event_publisher_options opts)
      : opts_(std::move(opts)), ctx_(shared_zmq_context()),
        id_(opts_.publisher_id != 0 ? opts_.publisher_id : new_instance_id()) {}
  ~zmq_publisher() override {
    if (reaper_.joinable()) {
      reaper_.request_stop();
      reaper_.join();
    }
    std::lock_guard lock{mutex_};
    pub_.close();
  }

  [[nodiscard]] expected<void> start() {
    if (opts_.send_hwm < 0)
      return make_error(errc::invalid_argument, "send_hwm must be >= 0");
    if (opts_.reap_interval <= std::chrono::milliseconds{0})
      return make_error(errc::invalid_argument, "reap_interval must be > 0");
    try {
      pub_ = zmq::socket_t{*ctx_, zmq::socket_type::pub};
      pub_.set(zmq::sockopt::linger, 0);
      pub_.set(zmq::sockopt::sndhwm, opts_.send_hwm);
      // Peers only send subscriptions (a topic prefix): a bigger frame is
      // hostile. CURVE's handshake commands (INITIATE: ~300 bytes) pass the same check.
      pub_.set(zmq::sockopt::maxmsgsize,
               static_cast<int64_t>(opts_.curve ? max_curve_frame : max_subscription_frame));
      if (opts_.curve) {
        auto zap = curve_server(*ctx_, pub_, *opts_.curve);
        if (!zap)
          return std::move(zap.error());
        zap_ = std::move(*zap);
      } else if (auto ok = null_server(pub_); !ok) {
        return ok;
      }
      pub_.bind(opts_.bind_address);
      address_ = with_host(pub_.get(zmq::sockopt::last_endpoint), opts_.advertise_host);
    } catch (const zmq::error_t& e) {
      return make_error(errc::io_error,
                        fmt::format("event publisher bind {}: {}", opts_.bind_address, e.what()));
    }
    reaper_ = std::jthread([this](std::stop_token stop) { reap(stop); });
    return {};
  }

  [[nodiscard]] expected<void> publish(std::string_view topic, bytes payload) override {
    if (topic.empty() || topic.size() > max_topic_bytes)
      return make_error(errc::invalid_argument, "topic must be 1..256 bytes");
    std::lock_guard lock{mutex_};
    auto& seq = sequences_[std::string{topic}];
    event_envelope env{id_, seq + 1, std::string{topic}, wall_clock_ms(), std::move(payload)};
    auto encoded = encode_envelope(env);
    if (encoded.size() > opts_.max_message_bytes)
      return make_error(errc::invalid_argument,
                        fmt::format("event of {} bytes exceeds the {} byte limit", encoded.size(),
                                    opts_.max_message_bytes));
    ++seq;
    std::array<zmq::const_buffer, 2> parts{view(env.topic), view(encoded)};
    (void)send_parts(pub_, parts); // PUB drops above the HWM; subscribers see a gap
    return {};
  }

  [[nodiscard]] std::string address() const override { return address_; }
  [[nodiscard]] uint64_t publisher_id() const override { return id_; }

  void skip_sequences(std::string_view topic, uint64_t count) override {
    std::lock_guard lock{mutex_};
    sequences_[std::string{topic}] += count;
  }

private:
  // A subscription frame: one command byte (or ZMTP 3.1's "\x09SUBSCRIBE") and the prefix.
  static constexpr size_t max_subscription_frame = max_topic_bytes + 16;
  static constexpr size_t max_curve_frame = 1024;

  void reap(std::stop_token stop) {
    std::mutex wait_mutex;
    std::condition_variable_any wake;
    std::unique_lock wait_lock{wait_mutex};
    for (;;) {
      (void)wake.wait_for(wait_lock, stop, opts_.reap_interval, [] { return false; });
      if (stop.stop_requested())
        return;
      std::lock_guard lock{mutex_};
      try {
        (void)pub_.get(zmq::sockopt::events); // runs the socket's pending commands
      } catch (const zmq::error_t&) {
        return; // closed or the context is terminating
      }
    }
  }

  zmq_event_publisher_options opts_;
  std::shared_ptr<zmq::context_t> ctx_;
  zap_handle zap_; // CURVE: admits the subscribers; closed before ctx_ is released
  uint64_t id_;
  std::string address_;
  std::mutex mutex_; // guards pub_ and sequences_
  zmq::socket_t pub_;
  std::unordered_map<std::string, uint64_t> sequences_;
  std::jthread reaper_; // last: stopped first
};

} // namespace

expected<std::unique_ptr<event_publisher>>
make_zmq_event_publisher(zmq_event_publisher_options options) {
  auto pub = std::make_unique<zmq_publisher>(std::move(options));
  if (auto started = pub->start(); !started)
    return std::move(started.error());
  return std::unique_ptr<event_publisher>{std::move(pub)};
}

} // namespace dynamo::planes
