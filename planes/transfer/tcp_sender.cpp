// The tcp transport's sender: a poll loop owning one non-blocking connection per
// receiver, writing frames straight from the source blocks (writev, no copies).
#include "planes/transfer/frame.hpp"
#include "planes/transfer/socket_util.hpp"
#include "planes/transfer/tcp_transport.hpp"
#include "planes/transfer/transfer_common.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

class tcp_sender final : public tcp_kv_sender {
public:
  explicit tcp_sender(kv_sender_config c) : config_(std::move(c)) {
    thread_ = std::thread([this] { run(); });
  }

  ~tcp_sender() override {
    {
      std::lock_guard lock{mutex_};
      stop_ = true;
    }
    wake_.signal();
    thread_.join();
  }

  std::string_view transport() const noexcept override { return "tcp"; }

  void send(const protocol::kv_transfer_request& request, std::chrono::milliseconds timeout,
            kv_status_callback done) override {
    auto started = clock::now();
    post([this, request, started, timeout, done = std::move(done)]() mutable {
      start(request, started, started + timeout, std::move(done));
    });
  }

  void notify(const protocol::kv_connection_info& connection, uint64_t transfer_id,
              uint64_t source_worker_id, uint64_t blocks, uint64_t bytes,
              std::chrono::milliseconds timeout, kv_status_callback done) override {
    auto started = clock::now();
    post([=, this, done = std::move(done)]() mutable {
      start_notify(connection, transfer_id, source_worker_id, blocks, bytes, started,
                   started + timeout, std::move(done));
    });
  }

  std::string debug_info() const override {
    std::lock_guard lock{mutex_};
    return fmt::format("tcp sender: {} connections{}", conn_count_,
                       conn_names_.empty() ? "" : " (" + conn_names_ + ")");
  }

private:
  struct transfer {
    uint64_t id = 0;
    uint64_t source = 0;
    kv_status_callback done;
    clock::time_point started;
    clock::time_point deadline;
    std::string conn;
  };
  struct job {
    std::shared_ptr<transfer> owner; // null for the hello
    frame_bytes header{};
    const uint8_t* payload = nullptr;
    uint64_t length = 0;
    uint64_t sent = 0; // of header + payload
  };
  struct connection {
    unique_fd fd;
    bool connected = false;
    std::deque<job> out;
    frame_bytes in{};
    size_t in_got = 0;
    std::map<uint64_t, std::shared_ptr<transfer>> transfers;
  };
  using task = std::function<void()>;

  void post(task t);
  void run();
  void run_tasks();
  void start(const protocol::kv_transfer_request& req, clock::time_point started,
             clock::time_point deadline, kv_status_callback done);
  void start_notify(const protocol::kv_connection_info& info, uint64_t id, uint64_t source,
                    uint64_t blocks, uint64_t bytes, clock::time_point started,
                    clock::time_point deadline, kv_status_callback done);
  expected<std::string> open_connection(const protocol::kv_tcp_descriptor& d);
  std::shared_ptr<transfer> admit(uint64_t id, uint64_t source, clock::time_point started,
                                  clock::time_point deadline, kv_status_callback& done,
                                  const std::string& conn);
  bool service(connection& c, short revents);
  bool write_jobs(connection& c);
  bool read_acks(connection& c);
  void fail_connection(const std::string& name, errc code, const std::string& why);
  void finish(const std::shared_ptr<transfer>& t, const protocol::kv_transfer_status& s);
  void expire_deadlines();
  int poll_timeout_ms() const;
  void refresh_names();

  kv_sender_config config_;
  wake_fd wake_;
  mutable std::mutex mutex_;
  std::vector<task> tasks_;
  std::string conn_names_;
  size_t conn_count_ = 0;
  std::map<std::string, connection> conns_;
  std::map<uint64_t, std::shared_ptr<transfer>> in_flight_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Queues a task for the loop; once stopping, runs it here (it sees stop_ and cancels).
void tcp_sender::post(task t) {
  {
    std::lock_guard lock{mutex_};
    if (!stop_) {
      tasks_.push_back(std::move(t));
      wake_.signal();
      return;
    }
  }
  t();
}

void tcp_sender::run() {
  while (!stop_) {
    run_tasks();
    std::vector<pollfd> fds{{wake_.fd(), POLLIN, 0}};
    std::vector<std::string> names;
    for (auto& [name, c] : conns_) {
      short ev = POLLIN;
      if (!c.connected || !c.out.empty())
        ev |= POLLOUT;
      fds.push_back({c.fd.get(), ev, 0});
      names.push_back(name);
    }
    int rc = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (rc < 0 && errno != EINTR)
      spdlog::error("kv tcp sender: poll: {}", errno_text(errno));
    if (fds[0].revents)
      wake_.drain();
    for (size_t i = 1; i < fds.size(); ++i) {
      auto it = conns_.find(names[i - 1]);
      if (it != conns_.end() && fds[i].revents && !service(it->second, fds[i].revents))
        fail_connection(names[i - 1], errc::disconnected, "kv receiver connection lost");
    }
    expire_deadlines();
  }
  // Shutting down: every transfer and queued task ends as cancelled.
  std::vector<task> left;
  {
    std::lock_guard lock{mutex_};
    left.swap(tasks_);
  }
  for (auto& t : left)
    t(); // start() sees stop_ and cancels
  std::vector<std::string> names;
  for (auto& [name, c] : conns_)
    names.push_back(name);
  for (auto& name : names)
    fail_connection(name, errc::cancelled, "kv sender destroyed");
}

void tcp_sender::run_tasks() {
  std::vector<task> batch;
  {
    std::lock_guard lock{mutex_};
    batch.swap(tasks_);
  }
  for (auto& t : batch)
    t();
}

std::shared_ptr<tcp_sender::transfer> tcp_sender::admit(uint64_t id, uint64_t source,
                                                        clock::time_point started,
                                                        clock::time_point deadline,
                                                        kv_status_callback& done,
                                                        const std::string& conn) {
  auto t = std::make_shared<transfer>();
  t->id = id;
  t->source = source;
  t->done = std::move(done);
  t->started = started;
  t->deadline = deadline;
  t->conn = conn;
  in_flight_[id] = t;
  conns_.at(conn).transfers[id] = t;
  return t;
}

void tcp_sender::start(const protocol::kv_transfer_request& req, clock::time_point started,
                       clock::time_point deadline, kv_status_callback done) {
  auto fail = [&](errc code, const std::string& why) {
    done(error_status(req.transfer_id, req.source_worker_id, code, why, started));
  };
  if (stop_)
    return fail(errc::cancelled, "kv sender destroyed");
  auto desc = decode_descriptor<protocol::kv_tcp_descriptor>(req.connection, "tcp");
  if (!desc)
    return fail(code_of(desc.error()), message_of(desc.error()));
  if (auto ok = check_request(req, config_.layout, config_.region, desc->geometry); !ok)
    return fail(code_of(ok.error()), message_of(ok.error()));
  if (in_flight_.count(req.transfer_id))
    return fail(errc::invalid_argument, fmt::format("kv transfer {} is already in flight",
                                                    req.transfer_id));
  auto conn = open_connection(*desc);
  if (!conn)
    return fail(code_of(conn.error()), message_of(conn.error()));
  auto t = admit(req.transfer_id, req.source_worker_id, started, deadline, done, *conn);
  auto& c = conns_.at(*conn);
  const auto bpb = config_.layout.bytes_per_block;
  auto runs = plan_runs(req.source_block_ids, req.destination_block_ids, config_.region.block_stride,
                        desc->geometry.block_stride, bpb);
  auto* base = static_cast<const uint8_t*>(config_.region.base);
  uint64_t bytes = 0;
  for (const auto& r : runs) {
    frame_header h{frame_kind::data, 0, req.transfer_id, req.source_worker_id, r.dst_block, r.length};
    c.out.push_back({t, encode_frame(h), base + r.src_offset, r.length, 0});
    bytes += r.length;
  }
  frame_header h{frame_kind::done, 0, req.transfer_id, req.source_worker_id,
                 req.source_block_ids.size(), bytes};
  c.out.push_back({t, encode_frame(h), nullptr, 0, 0});
}

void tcp_sender::start_notify(const protocol::kv_connection_info& info, uint64_t id,
                              uint64_t source, uint64_t blocks, uint64_t bytes,
                              clock::time_point started, clock::time_point deadline,
                              kv_status_callback done) {
  auto fail = [&](errc code, const std::string& why) {
    done(error_status(id, source, code, why, started));
  };
  if (stop_)
    return fail(errc::cancelled, "kv sender destroyed");
  auto desc = decode_descriptor<protocol::kv_tcp_descriptor>(info, "tcp");
  if (!desc)
    return fail(code_of(desc.error()), message_of(desc.error()));
  if (in_flight_.count(id))
    return fail(errc::invalid_argument, fmt::format("kv transfer {} is already in flight", id));
  auto conn = open_connection(*desc);
  if (!conn)
    return fail(code_of(conn.error()), message_of(conn.error()));
  auto t = admit(id, source, started, deadline, done, *conn);
  frame_header h{frame_kind::done_rma, 0, id, source, blocks, bytes};
  conns_.at(*conn).out.push_back({t, encode_frame(h), nullptr, 0, 0});
}

expected<std::string> tcp_sender::open_connection(const protocol::kv_tcp_descriptor& d) {
  auto name = fmt::format("{}:{}/{:016x}", d.host, d.port, d.receiver_id);
  if (conns_.count(name))
    return name;
  auto fd = connect_tcp(d.host, d.port);
  if (!fd)
    return fd.error();
  tune_socket(fd->get(), config_.options.tcp.socket_buffer_bytes);
  auto& c = conns_[name];
  c.fd = std::move(*fd);
  frame_header hello{frame_kind::hello, 0, 0, 0, d.receiver_id, d.geometry.layout.bytes_per_block};
  c.out.push_back({nullptr, encode_frame(hello), nullptr, 0, 0});
  refresh_names();
  return name;
}

// False: the connection failed.
bool tcp_sender::service(connection& c, short revents) {
  if (!c.connected) {
    if (!(revents & (POLLOUT | POLLERR | POLLHUP)))
      return true;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      spdlog::debug("kv tcp sender: connect failed: {}", errno_text(err));
      return false;
    }
    c.connected = true;
  }
  if ((revents & (POLLIN | POLLHUP | POLLERR)) && !read_acks(c))
    return false;
  if (revents & POLLOUT)
    return write_jobs(c);
  return true;
}

bool tcp_sender::write_jobs(connection& c) {
  while (!c.out.empty()) {
    auto& j = c.out.front();
    iovec iov[2];
    int n_iov = 0;
    if (j.sent < frame_header_bytes)
      iov[n_iov++] = {j.header.data() + j.sent, frame_header_bytes - j.sent};
    uint64_t body_sent = j.sent > frame_header_bytes ? j.sent - frame_header_bytes : 0;
    if (j.length > body_sent)
      iov[n_iov++] = {const_cast<uint8_t*>(j.payload + body_sent), j.length - body_sent};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n_iov);
    auto n = ::sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    j.sent += static_cast<uint64_t>(n);
    if (j.sent == frame_header_bytes + j.length)
      c.out.pop_front();
  }
  return true;
}

bool tcp_sender::read_acks(connection& c) {
  for (;;) {
    auto n = ::recv(c.fd.get(), c.in.data() + c.in_got, frame_header_bytes - c.in_got, MSG_DONTWAIT);
    if (n == 0)
      return false;
    if (n < 0)
      return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.in_got += static_cast<size_t>(n);
    if (c.in_got < frame_header_bytes)
      continue;
    c.in_got = 0;
    auto h = decode_frame(c.in);
    if (!h || h->kind != frame_kind::ack)
      return false;
    auto it = c.transfers.find(h->transfer_id);
    if (it == c.transfers.end())
      continue; // already timed out
    auto t = it->second;
    if (h->code == 0)
      finish(t, ok_status(t->id, t->source, h->block, h->length, t->started));
    else
      finish(t, error_status(t->id, t->source, static_cast<errc>(h->code),
                             "kv receiver refused the transfer", t->started));
  }
}

void tcp_sender::finish(const std::shared_ptr<transfer>& t, const protocol::kv_transfer_status& s) {
  in_flight_.erase(t->id);
  if (auto it = conns_.find(t->conn); it != conns_.end())
    it->second.transfers.erase(t->id);
  auto done = std::move(t->done);
  if (done)
    done(s);
}

void tcp_sender::fail_connection(const std::string& name, errc code, const std::string& why) {
  auto it = conns_.find(name);
  if (it == conns_.end())
    return;
  auto transfers = std::move(it->second.transfers);
  conns_.erase(it); // closes the socket: no byte of these transfers is read again
  refresh_names();
  for (auto& [id, t] : transfers)
    finish(t, error_status(t->id, t->source, code, why, t->started));
}

void tcp_sender::expire_deadlines() {
  auto now = clock::now();
  std::vector<std::shared_ptr<transfer>> expired;
  for (auto& [id, t] : in_flight_) {
    if (now >= t->deadline)
      expired.push_back(t);
  }
  for (auto& t : expired) {
    if (!in_flight_.count(t->id))
      continue; // failed with its connection already
    auto conn = t->conn;
    finish(t, error_status(t->id, t->source, errc::timeout,
                           fmt::format("kv transfer {} timed out", t->id), t->started));
    // The stream may stop mid-frame: the connection cannot carry anything else.
    fail_connection(conn, errc::disconnected,
                    fmt::format("connection reset after kv transfer {} timed out", t->id));
  }
}

int tcp_sender::poll_timeout_ms() const {
  auto now = clock::now();
  auto wait = std::chrono::milliseconds{1000};
  for (auto& [id, t] : in_flight_) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(t->deadline - now);
    wait = std::min(wait, std::max(left, std::chrono::milliseconds{0}));
  }
  return static_cast<int>(wait.count());
}

void tcp_sender::refresh_names() {
  std::string names;
  for (auto& [name, c] : conns_)
    names += (names.empty() ? "" : ", ") + name;
  std::lock_guard lock{mutex_};
  conn_names_ = names;
  conn_count_ = conns_.size();
}

} // namespace

expected<std::unique_ptr<tcp_kv_sender>> make_tcp_sender(kv_sender_config config) {
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (config.region.memory != kv_memory::host)
    return make_error(errc::unsupported, "tcp transport: host memory only (stage device blocks)");
  return std::unique_ptr<tcp_kv_sender>{new tcp_sender{std::move(config)}};
}

} // namespace dynamo::planes
