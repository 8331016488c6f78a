// The ZeroMQ vLLM event source: SUB + replay DEALER owned by one I/O loop.
#include "planes/event/zmq_vllm_source.hpp"

#include "planes/codec/zmq_io_loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <optional>
#include <vector>

namespace dynamo::planes {
namespace {

constexpr uint64_t end_marker = ~uint64_t{0}; // (-1).to_bytes(8, "big", signed=True)
using clock = std::chrono::steady_clock;

class zmq_vllm_source final : public vllm_event_source {
public:
  explicit zmq_vllm_source(zmq_vllm_source_options opts)
      : opts_(std::move(opts)),
        loop_(std::make_shared<zmq_io_loop>("vllm-events", std::chrono::milliseconds{50})),
        sub_(loop_->context(), zmq::socket_type::sub) {}

  ~zmq_vllm_source() override { loop_->stop(); }

  expected<void> start() {
    try {
      sub_.set(zmq::sockopt::linger, 0);
      sub_.set(zmq::sockopt::rcvhwm, opts_.receive_hwm);
      sub_.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(opts_.max_message_bytes + 1024));
      sub_.set(zmq::sockopt::subscribe, opts_.topic);
      sub_.connect(opts_.endpoint);
      if (!opts_.replay_endpoint.empty())
        open_dealer();
    } catch (const zmq::error_t& e) {
      return make_error(errc::invalid_argument,
                        fmt::format("vllm events: cannot connect to {} / '{}': {}", opts_.endpoint,
                                    opts_.replay_endpoint, e.what()));
    }
    loop_->watch(sub_, [this] { on_sub_readable(); });
    loop_->set_tick([this] { check_replay_timeout(); });
    loop_->set_on_stop([this] {
      close_dealer();
      sub_.close();
    });
    loop_->start();
    return {};
  }

  [[nodiscard]] expected<void> request_replay(uint64_t from_sequence) override {
    if (opts_.replay_endpoint.empty())
      return make_error(errc::invalid_argument, "vllm events: no replay endpoint");
    return loop_->call<void>([this, from_sequence]() -> expected<void> {
      if (replay_deadline_) {
        // Abandon the replay in progress: a fresh socket drops its late answers.
        close_dealer();
        open_dealer();
      }
      bytes seq(8);
      put_u64_be(seq.data(), from_sequence);
      bytes empty;
      std::array<zmq::const_buffer, 2> parts{view(empty), view(seq)};
      if (send_parts(*dealer_, parts) != send_status::sent)
        return make_error(errc::io_error, "vllm events: replay request not sent");
      ++replays_;
      replay_deadline_ = clock::now() + opts_.replay_timeout;
      return {};
    });
  }

  [[nodiscard]] vllm_source_stats stats() const override {
    return {received_.load(), malformed_.load(), replays_.load(), timeouts_.load()};
  }

private:
  void open_dealer() {
    dealer_ = std::make_unique<zmq::socket_t>(loop_->context(), zmq::socket_type::dealer);
    dealer_->set(zmq::sockopt::linger, 0);
    dealer_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(opts_.max_message_bytes + 1024));
    dealer_->connect(opts_.replay_endpoint);
    loop_->watch(*dealer_, [this] { on_dealer_readable(); });
  }

  void close_dealer() {
    if (!dealer_)
      return;
    loop_->unwatch(*dealer_);
    dealer_->close();
    dealer_.reset();
  }

  void on_sub_readable() {
    for (int i = 0; i < 1024; ++i) {
      bool overflow = false;
      if (!recv_parts(sub_, parts_, 4, overflow))
        return;
      if (overflow) {
        ++malformed_;
        continue;
      }
      spans_.clear();
      for (auto& p : parts_)
        spans_.emplace_back(p.data<uint8_t>(), p.size());
      ++received_;
      if (opts_.callbacks.on_message)
        opts_.callbacks.on_message(spans_);
    }
  }

  void on_dealer_readable() {
    for (int i = 0; i < 1024 && dealer_; ++i) {
      bool overflow = false;
      if (!recv_parts(*dealer_, parts_, 4, overflow))
        return;
      // [empty delimiter, sequence u64 BE, batch]
      if (overflow || parts_.size() != 3 || parts_[0].size() != 0 || parts_[1].size() != 8) {
        ++malformed_;
        continue;
      }
      if (!replay_deadline_)
        continue; // no replay asked: a stray answer
      uint64_t seq = get_u64_be(parts_[1].data<uint8_t>());
      if (seq == end_marker) {
        replay_deadline_.reset();
        if (opts_.callbacks.on_replay_end)
          opts_.callbacks.on_replay_end(true);
        continue;
      }
      replay_deadline_ = clock::now() + opts_.replay_timeout;
      if (opts_.callbacks.on_replay_batch)
        opts_.callbacks.on_replay_batch(seq, {parts_[2].data<uint8_t>(), parts_[2].size()});
    }
  }

  void check_replay_timeout() {
    if (!replay_deadline_ || clock::now() < *replay_deadline_)
      return;
    spdlog::warn("vllm events: replay from {} timed out after {} ms", opts_.replay_endpoint,
                 opts_.replay_timeout.count());
    ++timeouts_;
    replay_deadline_.reset();
    close_dealer();
    open_dealer();
    if (opts_.callbacks.on_replay_end)
      opts_.callbacks.on_replay_end(false);
  }

  zmq_vllm_source_options opts_;
  std::shared_ptr<zmq_io_loop> loop_;
  zmq::socket_t sub_;
  std::unique_ptr<zmq::socket_t> dealer_;             // loop thread only (after start)
  std::optional<clock::time_point> replay_deadline_;  // loop thread only: a replay runs
  std::vector<zmq::message_t> parts_;                 // loop thread only: scratch
  std::vector<std::span<const uint8_t>> spans_;       // loop thread only: scratch
  std::atomic<uint64_t> received_{0}, malformed_{0}, replays_{0}, timeouts_{0};
};

} // namespace

expected<std::unique_ptr<vllm_event_source>> make_zmq_vllm_source(zmq_vllm_source_options options) {
  auto source = std::make_unique<zmq_vllm_source>(std::move(options));
  if (auto ok = source->start(); !ok)
    return ok.error();
  return std::unique_ptr<vllm_event_source>{std::move(source)};
}

} // namespace dynamo::planes
