// The tcp transport's receiver: a poll loop over the listener and one connection
// per sender, reading frames and receiving data straight into the region.
#include "planes/transfer/frame.hpp"
#include "planes/transfer/receive_ledger.hpp"
#include "planes/transfer/socket_util.hpp"
#include "planes/transfer/tcp_transport.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <list>
#include <mutex>
#include <set>
#include <thread>

#include <poll.h>
#include <sys/socket.h>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

constexpr int tick_ms = 100; // ledger expiry granularity

class tcp_receiver final : public kv_receiver {
public:
  tcp_receiver(kv_receiver_config c, unique_fd listener, uint16_t port)
      : config_(std::move(c)), geometry_(geometry_of(config_.region, config_.layout)),
        ledger_(config_.options.stale_after), listener_(std::move(listener)), port_(port) {
    thread_ = std::thread([this] { run(); });
  }

  ~tcp_receiver() override {
    stop_ = true;
    wake_.signal();
    thread_.join();
  }

  std::string_view transport() const noexcept override { return "tcp"; }

  std::vector<protocol::kv_connection_info> offers() const override {
    const auto& tcp = config_.options.tcp;
    protocol::kv_tcp_descriptor d{id_, tcp.advertise_host.empty() ? tcp.bind_host : tcp.advertise_host,
                                  port_, geometry_};
    return {{"tcp", local_host_id(), protocol::encode(d)}};
  }

  std::string debug_info() const override {
    return fmt::format("tcp receiver {:016x} on {}:{}: {} connections, {} transfers landed", id_,
                       config_.options.tcp.bind_host, port_, connections_.load(), landed_.load());
  }

private:
  struct connection {
    unique_fd fd;
    frame_bytes header{};
    size_t header_got = 0;
    frame_header frame;
    uint8_t* body = nullptr; // destination of the current data frame (null: discard)
    uint64_t body_left = 0;
    uint64_t body_blocks = 0;
    bool hello = false;
    std::set<receive_ledger::key> keys;
    std::string out; // pending ack bytes
  };

  void run();
  void accept_all();
  bool on_readable(connection& c);
  bool read_body(connection& c);
  bool on_frame(connection& c);
  bool on_data_frame(connection& c);
  bool on_done_frame(connection& c);
  bool flush(connection& c);
  void finish(connection& c, const protocol::kv_transfer_status& s, bool ack);
  void drop(connection& c, const std::string& why);
  void notify(const protocol::kv_transfer_status& s);

  kv_receiver_config config_;
  protocol::kv_region_geometry geometry_;
  receive_ledger ledger_;
  unique_fd listener_;
  uint16_t port_;
  uint64_t id_ = new_receiver_id();
  wake_fd wake_;
  std::list<connection> conns_;
  std::vector<uint8_t> scratch_ = std::vector<uint8_t>(64 << 10);
  std::atomic<bool> stop_{false};
  std::atomic<size_t> connections_{0};
  std::atomic<uint64_t> landed_{0};
  std::thread thread_;
};

void tcp_receiver::run() {
  auto next_tick = clock::now();
  while (!stop_) {
    std::vector<pollfd> fds{{wake_.fd(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    for (auto& c : conns_)
      fds.push_back({c.fd.get(), static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
    int rc = ::poll(fds.data(), fds.size(), tick_ms);
    if (rc < 0 && errno != EINTR) {
      spdlog::error("kv tcp receiver: poll: {}", errno_text(errno));
      break;
    }
    if (fds[0].revents)
      wake_.drain();
    if (fds[1].revents & POLLIN)
      accept_all();
    size_t i = 2;
    for (auto it = conns_.begin(); it != conns_.end() && i < fds.size(); ++i) {
      bool keep = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
        keep = on_readable(*it);
      if (keep && (fds[i].revents & POLLOUT))
        keep = flush(*it);
      if (keep)
        ++it;
      else
        it = conns_.erase(it);
    }
    connections_ = conns_.size();
    if (auto now = clock::now(); now >= next_tick) {
      next_tick = now + std::chrono::milliseconds{tick_ms};
      for (const auto& s : ledger_.expire(now))
        notify(s);
    }
  }
}

void tcp_receiver::accept_all() {
  for (;;) {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    tune_socket(fd, config_.options.tcp.socket_buffer_bytes);
    conns_.emplace_back();
    conns_.back().fd = unique_fd{fd};
  }
}

// Reads what is there: header bytes, then body bytes. False: drop the connection.
bool tcp_receiver::on_readable(connection& c) {
  for (int rounds = 0; rounds < 64; ++rounds) {
    if (c.body_left > 0) {
      if (!read_body(c))
        return false;
      if (c.body_left > 0)
        return true; // would block
      continue;
    }
    auto n = ::recv(c.fd.get(), c.header.data() + c.header_got, frame_header_bytes - c.header_got, 0);
    if (n == 0) {
      drop(c, "sender closed the connection");
      return false;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return true;
      drop(c, "recv: " + errno_text(errno));
      return false;
    }
    c.header_got += static_cast<size_t>(n);
    if (c.header_got < frame_header_bytes)
      continue;
    c.header_got = 0;
    auto h = decode_frame(c.header);
    if (!h) {
      drop(c, message_of(h.error()));
      return false;
    }
    c.frame = *h;
    if (!on_frame(c))
      return false;
  }
  return true;
}

bool tcp_receiver::read_body(connection& c) {
  uint8_t* into = c.body ? c.body : scratch_.data();
  size_t want = c.body ? c.body_left : std::min<uint64_t>(c.body_left, scratch_.size());
  auto n = ::recv(c.fd.get(), into, want, 0);
  if (n == 0) {
    drop(c, "sender closed the connection mid-block");
    return false;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
      return true;
    drop(c, "recv: " + errno_text(errno));
    return false;
  }
  c.body_left -= static_cast<uint64_t>(n);
  if (c.body)
    c.body += n;
  if (c.body_left == 0 && c.body) {
    receive_ledger::key k{c.frame.source_worker, c.frame.transfer_id};
    if (auto s = ledger_.on_data(k, c.body_blocks, c.frame.length, clock::now()))
      finish(c, *s, true);
  }
  return true;
}

bool tcp_receiver::on_frame(connection& c) {
  const auto& f = c.frame;
  if (f.kind == frame_kind::hello) {
    if (f.block != id_ || f.length != config_.layout.bytes_per_block) {
      drop(c, fmt::format("hello for receiver {:016x} / {} bytes per block, this is {:016x} / {}",
                          f.block, f.length, id_, config_.layout.bytes_per_block));
      return false;
    }
    c.hello = true;
    return true;
  }
  if (!c.hello) {
    drop(c, "frame before hello");
    return false;
  }
  if (f.kind == frame_kind::data)
    return on_data_frame(c);
  if (f.kind == frame_kind::done || f.kind == frame_kind::done_rma)
    return on_done_frame(c);
  if (f.kind == frame_kind::cancel) {
    receive_ledger::key k{f.source_worker, f.transfer_id};
    if (ledger_.is_open(k))
      notify(ledger_.fail(k, errc::timeout, "the sender gave up", clock::now()));
    return true;
  }
  drop(c, "unexpected frame kind from a sender");
  return false;
}

bool tcp_receiver::on_data_frame(connection& c) {
  const auto& f = c.frame;
  receive_ledger::key k{f.source_worker, f.transfer_id};
  auto blocks = check_landing(geometry_, f.block, f.length);
  if (!blocks) {
    notify(ledger_.fail(k, errc::malformed_message, message_of(blocks.error()), clock::now()));
    drop(c, message_of(blocks.error()));
    return false;
  }
  c.keys.insert(k);
  c.body_left = f.length;
  c.body_blocks = *blocks;
  // An abandoned transfer's bytes are read and thrown away, never written.
  c.body = ledger_.is_dead(k) ? nullptr
                              : static_cast<uint8_t*>(config_.region.base) + f.block * geometry_.block_stride;
  return true;
}

bool tcp_receiver::on_done_frame(connection& c) {
  const auto& f = c.frame;
  receive_ledger::key k{f.source_worker, f.transfer_id};
  c.keys.insert(k);
  if (ledger_.is_dead(k)) {
    auto s = error_status(k.second, k.first, errc::timeout, "transfer was abandoned", clock::now());
    finish(c, s, true);
    return true;
  }
  auto s = ledger_.on_done(k, f.block, f.length, f.kind == frame_kind::done_rma, clock::now());
  if (s)
    finish(c, *s, true);
  return true;
}

void tcp_receiver::finish(connection& c, const protocol::kv_transfer_status& s, bool ack) {
  c.keys.erase({s.source_worker_id, s.transfer_id});
  if (ack) {
    frame_header h{frame_kind::ack, s.code, s.transfer_id, s.source_worker_id, s.blocks, s.bytes};
    auto bytes = encode_frame(h);
    c.out.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    flush(c);
  }
  if (s.ok())
    ++landed_;
  notify(s);
}

bool tcp_receiver::flush(connection& c) {
  while (!c.out.empty()) {
    auto n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.out.erase(0, static_cast<size_t>(n));
  }
  return true;
}

void tcp_receiver::drop(connection& c, const std::string& why) {
  spdlog::debug("kv tcp receiver: dropping a connection: {}", why);
  auto now = clock::now();
  for (const auto& k : c.keys) {
    if (ledger_.is_open(k))
      notify(ledger_.fail(k, errc::disconnected, "sender connection lost: " + why, now));
  }
  c.keys.clear();
}

void tcp_receiver::notify(const protocol::kv_transfer_status& s) {
  if (config_.on_received)
    config_.on_received(s);
}

} // namespace

expected<std::unique_ptr<kv_receiver>> make_tcp_receiver(kv_receiver_config config) {
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (config.region.memory != kv_memory::host)
    return make_error(errc::unsupported, "tcp transport: host memory only (stage device blocks)");
  uint16_t port = 0;
  auto fd = listen_tcp(config.options.tcp.bind_host, config.options.tcp.port, port);
  if (!fd)
    return fd.error();
  return std::unique_ptr<kv_receiver>{new tcp_receiver{std::move(config), std::move(*fd), port}};
}

} // namespace dynamo::planes
