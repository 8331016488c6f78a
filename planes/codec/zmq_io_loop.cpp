#include "planes/codec/zmq_io_loop.hpp"

#include <spdlog/spdlog.h>

#include <atomic>
#include <cstring>

namespace dynamo::planes {

std::shared_ptr<zmq::context_t> shared_zmq_context() {
  static std::mutex mutex;
  static std::weak_ptr<zmq::context_t> current;
  std::lock_guard lock{mutex};
  if (auto ctx = current.lock())
    return ctx;
  auto ctx = std::make_shared<zmq::context_t>(1);
  current = ctx;
  return ctx;
}

std::string unique_inproc_endpoint(const char* what) {
  static std::atomic<uint64_t> counter{0};
  return std::string{"inproc://dynamo-"} + what + "-" + std::to_string(++counter);
}

zmq_io_loop::zmq_io_loop(std::string name, std::chrono::milliseconds tick)
    : name_(std::move(name)), tick_(tick), ctx_(shared_zmq_context()),
      wake_rx_(*ctx_, zmq::socket_type::pair), wake_tx_(*ctx_, zmq::socket_type::pair) {
  auto endpoint = unique_inproc_endpoint("wake");
  wake_rx_.set(zmq::sockopt::linger, 0);
  wake_tx_.set(zmq::sockopt::linger, 0);
  wake_rx_.bind(endpoint);
  wake_tx_.connect(endpoint);
}

zmq_io_loop::~zmq_io_loop() {
  stop();
  // Sockets must close before the context reference is dropped.
  wake_tx_.close();
  wake_rx_.close();
}

void zmq_io_loop::start() {
  thread_ = std::thread([this] { run(); });
}

bool zmq_io_loop::post(task fn) {
  std::lock_guard lock{mutex_};
  if (closed_)
    return false;
  queue_.push_back(std::move(fn));
  if (!wake_pending_) {
    wake_pending_ = true;
    try {
      (void)wake_tx_.send(zmq::const_buffer{}, zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      spdlog::error("{}: wake-up send failed: {}", name_, e.what());
    }
  }
  return true;
}

void zmq_io_loop::stop() {
  {
    std::lock_guard lock{mutex_};
    if (stop_requested_ && !thread_.joinable())
      return;
    stop_requested_ = true;
  }
  if (thread_.joinable()) {
    (void)post([] {}); // wake the poll
    thread_.join();
  } else {
    std::lock_guard lock{mutex_};
    closed_ = true; // never started
  }
}

bool zmq_io_loop::in_loop() const noexcept {
  return std::this_thread::get_id() == loop_id_.load();
}

void zmq_io_loop::watch(zmq::socket_t& s, std::function<void()> on_readable) {
  watched_.push_back({next_watch_id_++, &s, std::move(on_readable)});
}

void zmq_io_loop::unwatch(zmq::socket_t& s) {
  std::erase_if(watched_, [&](const watched& w) { return w.socket == &s; });
}

void zmq_io_loop::guarded(const char* what, const std::string& name, const task& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    spdlog::error("{}: {} threw: {}", name, what, e.what());
  } catch (...) {
    spdlog::error("{}: {} threw a non-standard exception", name, what);
  }
}

void zmq_io_loop::run() {
  loop_id_ = std::this_thread::get_id();
  using clock = std::chrono::steady_clock;
  auto next_tick = clock::now() + tick_;
  for (;;) {
    {
      std::lock_guard lock{mutex_};
      if (stop_requested_)
        break;
    }
    auto now = clock::now();
    if (now >= next_tick) {
      if (tick_fn_)
        guarded("tick", name_, tick_fn_);
      next_tick = now + tick_;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - clock::now());
    poll_once(std::max(wait, std::chrono::milliseconds{0}));
  }
  {
    std::lock_guard lock{mutex_};
    closed_ = true;
  }
  run_tasks(); // what was queued before closing still runs (final frames)
  if (stop_fn_)
    guarded("on_stop", name_, stop_fn_);
  watched_.clear();
}

void zmq_io_loop::poll_once(std::chrono::milliseconds timeout) {
  std::vector<zmq::pollitem_t> items;
  items.reserve(watched_.size() + 1);
  items.push_back({wake_rx_.handle(), 0, ZMQ_POLLIN, 0});
  for (auto& w : watched_)
    items.push_back({w.socket->handle(), 0, ZMQ_POLLIN, 0});
  try {
    zmq::poll(items.data(), items.size(), timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR)
      spdlog::error("{}: poll failed: {}", name_, e.what());
    return;
  }
  std::vector<uint64_t> ready;
  for (size_t i = 1; i < items.size(); ++i)
    if (items[i].revents & ZMQ_POLLIN)
      ready.push_back(watched_[i - 1].id);
  if (items[0].revents & ZMQ_POLLIN) {
    drain_wake();
    run_tasks();
  }
  for (auto id : ready) {
    auto it = std::find_if(watched_.begin(), watched_.end(),
                           [&](const watched& w) { return w.id == id; });
    if (it == watched_.end())
      continue; // unwatched by an earlier callback
    auto fn = it->on_readable; // a copy: the callback may unwatch itself
    guarded("socket callback", name_, fn);
  }
}

void zmq_io_loop::drain_wake() {
  zmq::message_t msg;
  try {
    while (wake_rx_.recv(msg, zmq::recv_flags::dontwait)) {
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("{}: wake-up receive failed: {}", name_, e.what());
  }
}

void zmq_io_loop::run_tasks() {
  std::vector<task> tasks;
  {
    std::lock_guard lock{mutex_};
    wake_pending_ = false;
    tasks.swap(queue_);
  }
  for (auto& t : tasks)
    guarded("task", name_, t);
}

send_status send_parts(zmq::socket_t& s, std::span<const zmq::const_buffer> parts) {
  try {
    for (size_t i = 0; i < parts.size(); ++i) {
      auto flags = zmq::send_flags::dontwait;
      if (i + 1 < parts.size())
        flags = flags | zmq::send_flags::sndmore;
      if (!s.send(parts[i], flags))
        return send_status::would_block; // only the first part can block
    }
    return send_status::sent;
  } catch (const zmq::error_t& e) {
    if (e.num() != EHOSTUNREACH)
      spdlog::warn("plane send failed: {}", e.what());
    return send_status::unreachable;
  }
}

bool recv_parts(zmq::socket_t& s, std::vector<zmq::message_t>& out, size_t max_parts,
                bool& overflow) {
  out.clear();
  overflow = false;
  try {
    zmq::message_t part;
    if (!s.recv(part, zmq::recv_flags::dontwait))
      return false;
    for (;;) {
      bool more = part.more();
      if (out.size() < max_parts)
        out.push_back(std::move(part));
      else
        overflow = true;
      if (!more)
        return true;
      part = zmq::message_t{};
      (void)s.recv(part, zmq::recv_flags::none); // the rest of a message is already here
    }
  } catch (const zmq::error_t& e) {
    spdlog::warn("plane receive failed: {}", e.what());
    return false;
  }
}

expected<zmq::socket_t> start_monitor(zmq::context_t& ctx, zmq::socket_t& target, int events) {
  auto endpoint = unique_inproc_endpoint("monitor");
  if (zmq_socket_monitor(target.handle(), endpoint.c_str(), events) != 0)
    return make_error(errc::io_error, std::string{"zmq_socket_monitor: "} + zmq_strerror(errno));
  try {
    zmq::socket_t mon{ctx, zmq::socket_type::pair};
    mon.set(zmq::sockopt::linger, 0);
    mon.connect(endpoint);
    return mon;
  } catch (const zmq::error_t& e) {
    stop_monitor(target);
    return make_error(errc::io_error, std::string{"monitor socket: "} + e.what());
  }
}

std::optional<monitor_event> read_monitor_event(zmq::socket_t& monitor) {
  std::vector<zmq::message_t> parts;
  bool overflow = false;
  if (!recv_parts(monitor, parts, 2, overflow) || overflow || parts.size() != 2 ||
      parts[0].size() < 6)
    return std::nullopt;
  monitor_event ev;
  std::memcpy(&ev.event, parts[0].data(), 2); // native byte order, by libzmq's contract
  std::memcpy(&ev.value, static_cast<const char*>(parts[0].data()) + 2, 4);
  ev.address = parts[1].to_string();
  return ev;
}

void stop_monitor(zmq::socket_t& target) noexcept {
  if (target.handle() != nullptr)
    (void)zmq_socket_monitor(target.handle(), nullptr, 0);
}

} // namespace dynamo::planes
