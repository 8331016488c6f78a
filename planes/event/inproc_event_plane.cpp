// In-process event plane: publishers hand envelopes to every subscriber core
// on the bus that is connected to their address and subscribed to a matching
// prefix; each subscriber runs the same sequence tracking as the ZeroMQ one.
#include "planes/event/inproc_event_plane.hpp"

#include "planes/codec/serial_executor.hpp"
#include "planes/event/envelope.hpp"
#include "runtime/core/ids.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

namespace dynamo::planes {
namespace fake_event {

class subscriber_core : public std::enable_shared_from_this<subscriber_core> {
public:
  explicit subscriber_core(event_subscriber_callbacks cb)
      : callbacks_(std::move(cb)), exec_(std::make_shared<serial_executor>("fake-event-sub")) {}

  serial_executor& exec() { return *exec_; }

  void offer(const std::string& address, const event_envelope& env) {
    {
      std::lock_guard lock{mutex_};
      if (!addresses_.contains(address))
        return;
      bool match = false;
      for (auto& p : prefixes_)
        match = match || env.topic.starts_with(p);
      if (!match)
        return;
    }
    (void)exec_->post([self = shared_from_this(), env] { self->handle(env); });
  }

  expected<void> connect(const std::string& address) {
    if (!address.starts_with("inproc-fake://event/"))
      return make_error(errc::invalid_argument, "not a fake event address: " + address);
    std::lock_guard lock{mutex_};
    addresses_.insert(address);
    return {};
  }
  expected<void> disconnect(const std::string& address) {
    std::lock_guard lock{mutex_};
    if (addresses_.erase(address) == 0)
      return make_error(errc::not_found, "not connected to " + address);
    return {};
  }
  expected<void> subscribe(const std::string& prefix) {
    std::lock_guard lock{mutex_};
    prefixes_.insert(prefix);
    return {};
  }
  expected<void> unsubscribe(const std::string& prefix) {
    std::lock_guard lock{mutex_};
    if (prefixes_.erase(prefix) == 0)
      return make_error(errc::not_found, "not subscribed to '" + prefix + "'");
    return {};
  }
  [[nodiscard]] subscriber_stats stats() const {
    return {received_.load(), 0, gaps_.load(), stale_.load()};
  }

private:
  void handle(const event_envelope& env) {
    auto seen = tracker_.observe(env);
    if (seen.kind == sequence_tracker::verdict::stale) {
      ++stale_;
      return;
    }
    if (seen.kind == sequence_tracker::verdict::gap) {
      ++gaps_;
      if (callbacks_.on_gap)
        callbacks_.on_gap(event_gap{env.publisher_id, env.topic, seen.expected, env.sequence});
    }
    ++received_;
    if (callbacks_.on_event)
      callbacks_.on_event(env);
  }

  event_subscriber_callbacks callbacks_;
  std::shared_ptr<serial_executor> exec_;
  mutable std::mutex mutex_;
  std::set<std::string> addresses_;
  std::set<std::string> prefixes_;
  sequence_tracker tracker_; // executor only
  std::atomic<uint64_t> received_{0}, gaps_{0}, stale_{0};
};

} // namespace fake_event

class inproc_event_bus {
public:
  std::string new_address() { return fmt::format("inproc-fake://event/{}", ++next_); }
  void add(const std::shared_ptr<fake_event::subscriber_core>& s) {
    std::lock_guard lock{mutex_};
    std::erase_if(subscribers_, [](auto& w) { return w.expired(); });
    subscribers_.push_back(s);
  }
  void deliver(const std::string& address, const event_envelope& env) {
    std::vector<std::shared_ptr<fake_event::subscriber_core>> subs;
    {
      std::lock_guard lock{mutex_};
      for (auto& w : subscribers_)
        if (auto s = w.lock())
          subs.push_back(std::move(s));
    }
    for (auto& s : subs)
      s->offer(address, env);
  }

private:
  std::atomic<uint64_t> next_{0};
  std::mutex mutex_;
  std::vector<std::weak_ptr<fake_event::subscriber_core>> subscribers_;
};

namespace fake_event {

class publisher final : public event_publisher {
public:
  publisher(std::shared_ptr<inproc_event_bus> bus, uint64_t id, size_t max_bytes)
      : bus_(std::move(bus)), id_(id != 0 ? id : new_instance_id()), max_bytes_(max_bytes),
        address_(bus_->new_address()) {}

  [[nodiscard]] expected<void> publish(std::string_view topic, bytes payload) override {
    if (topic.empty() || topic.size() > max_topic_bytes)
      return make_error(errc::invalid_argument, "topic must be 1..256 bytes");
    std::lock_guard lock{mutex_}; // held while delivering: keeps the order
    auto& seq = sequences_[std::string{topic}];
    event_envelope env{id_, seq + 1, std::string{topic}, wall_clock_ms(), std::move(payload)};
    if (auto size = encode_envelope(env).size(); size > max_bytes_)
      return make_error(errc::invalid_argument,
                        fmt::format("event of {} bytes exceeds the {} byte limit", size,
                                    max_bytes_));
    ++seq;
    bus_->deliver(address_, env);
    return {};
  }
  [[nodiscard]] std::string address() const override { return address_; }
  [[nodiscard]] uint64_t publisher_id() const override { return id_; }
  void skip_sequences(std::string_view topic, uint64_t count) override {
    std::lock_guard lock{mutex_};
    sequences_[std::string{topic}] += count;
  }

private:
  std::shared_ptr<inproc_event_bus> bus_;
  uint64_t id_;
  size_t max_bytes_;
  std::string address_;
  std::mutex mutex_;
  std::unordered_map<std::string, uint64_t> sequences_;
};

class subscriber final : public event_subscriber {
public:
  subscriber(const std::shared_ptr<inproc_event_bus>& bus, event_subscriber_callbacks cb)
      : core_(std::make_shared<subscriber_core>(std::move(cb))) {
    bus->add(core_);
  }
  ~subscriber() override { core_->exec().stop(); }

  [[nodiscard]] expected<void> connect(const std::string& a) override { return core_->connect(a); }
  [[nodiscard]] expected<void> disconnect(const std::string& a) override {
    return core_->disconnect(a);
  }
  [[nodiscard]] expected<void> subscribe(const std::string& p) override {
    return core_->subscribe(p);
  }
  [[nodiscard]] expected<void> unsubscribe(const std::string& p) override {
    return core_->unsubscribe(p);
  }
  [[nodiscard]] subscriber_stats stats() const override { return core_->stats(); }

private:
  std::shared_ptr<subscriber_core> core_;
};

} // namespace fake_event

std::shared_ptr<inproc_event_bus> make_inproc_event_bus() {
  return std::make_shared<inproc_event_bus>();
}

std::unique_ptr<event_publisher> make_inproc_event_publisher(std::shared_ptr<inproc_event_bus> bus,
                                                             uint64_t publisher_id,
                                                             size_t max_message_bytes) {
  return std::make_unique<fake_event::publisher>(std::move(bus), publisher_id, max_message_bytes);
}

std::unique_ptr<event_subscriber>
make_inproc_event_subscriber(std::shared_ptr<inproc_event_bus> bus,
                             event_subscriber_callbacks callbacks) {
  return std::make_unique<fake_event::subscriber>(bus, std::move(callbacks));
}

} // namespace dynamo::planes
