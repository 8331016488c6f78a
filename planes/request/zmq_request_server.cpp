// The ZeroMQ request-plane server: one ROUTER socket owned by an I/O loop.
// Streams are keyed by (client routing id, stream id); a client silent for
// longer than timing.peer_timeout has its streams cancelled.
#include "planes/codec/zmq_curve.hpp"
#include "planes/codec/zmq_io_loop.hpp"
#include "planes/request/request_wire.hpp"
#include "planes/request/stream_state.hpp"
#include "planes/request/zmq_request_plane.hpp"
#include "runtime/core/host.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <unordered_map>
#include <unordered_set>

namespace dynamo::planes {
namespace {

namespace rw = request_wire;
using steady = std::chrono::steady_clock;
using state_ptr = std::shared_ptr<detail::stream_state>;

struct client_entry {
  steady::time_point last_rx;
  std::unordered_map<uint64_t, state_ptr> streams;
};

class zmq_server final : public request_server {
public:
  explicit zmq_server(zmq_request_server_options opts)
      : opts_(std::move(opts)),
        loop_(std::make_shared<zmq_io_loop>("request-server", opts_.timing.tick)) {}
  ~zmq_server() override;

  [[nodiscard]] expected<void> start();

  [[nodiscard]] expected<void> serve(const std::string& path, request_handler handler) override;
  bool unserve(const std::string& path) override;
  [[nodiscard]] std::string address() const override { return address_; }
  [[nodiscard]] uint64_t malformed_count() const override { return malformed_.load(); }
  [[nodiscard]] size_t open_streams() const override { return open_.load(); }

  // I/O thread only (called by sinks through posted tasks).
  void send_item(const std::string& client, uint64_t id, const state_ptr& st, const bytes& item);
  void send_end(const std::string& client, uint64_t id, const state_ptr& st,
                const caf::error& err);

private:
  void on_readable();
  void handle(std::vector<zmq::message_t>& parts);
  void handle_request(const std::string& client, uint64_t id, std::vector<zmq::message_t>& parts);
  void handle_cancel(const std::string& client, uint64_t id);
  void handle_ping(const std::string& client, const zmq::message_t& ids_frame);
  void on_tick();
  void drop_client(const std::string& client, const char* why);
  void shutdown_streams();
  void send_error(const std::string& client, uint64_t id, const caf::error& err);
  [[nodiscard]] bool send_to(const std::string& client, std::span<const zmq::const_buffer> parts);
  [[nodiscard]] state_ptr find_stream(const std::string& client, uint64_t id, const state_ptr& st);
  void erase_stream(const std::string& client, uint64_t id);

  zmq_request_server_options opts_;
  std::shared_ptr<zmq_io_loop> loop_;
  zap_handle zap_; // CURVE: admits the clients
  zmq::socket_t router_;
  std::string address_;
  mutable std::mutex handlers_mutex_;
  std::unordered_map<std::string, std::shared_ptr<request_handler>> handlers_;
  std::unordered_map<std::string, client_entry> clients_; // I/O thread only
  std::atomic<uint64_t> malformed_{0};
  std::atomic<size_t> open_{0};
};

/// Forwards a response_stream's output to the server's I/O thread.
class zmq_sink final : public detail::stream_sink {
public:
  zmq_sink(std::shared_ptr<zmq_io_loop> loop, zmq_server* server, std::string client, uint64_t id,
           state_ptr st)
      : loop_(std::move(loop)), server_(server), client_(std::move(client)), id_(id),
        state_(std::move(st)) {}

  bool deliver_item(bytes item) override {
    return loop_->post([s = server_, c = client_, id = id_, st = state_, i = std::move(item)] {
      s->send_item(c, id, st, i);
    });
  }
  void deliver_end(const caf::error& err) override {
    (void)loop_->post(
        [s = server_, c = client_, id = id_, st = state_, err] { s->send_end(c, id, st, err); });
  }

private:
  std::shared_ptr<zmq_io_loop> loop_;
  zmq_server* server_; // only dereferenced by tasks, which run while the server lives
  std::string client_;
  uint64_t id_;
  state_ptr state_;
};

zmq_server::~zmq_server() {
  (void)loop_->post([this] { shutdown_streams(); });
  loop_->stop();
}

expected<void> zmq_server::start() {
  try {
    router_ = zmq::socket_t{loop_->context(), zmq::socket_type::router};
    router_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::router_mandatory, 1);
    router_.set(zmq::sockopt::sndhwm, 100000);
    router_.set(zmq::sockopt::rcvhwm, 100000);
    router_.set(zmq::sockopt::maxmsgsize,
                static_cast<int64_t>(opts_.timing.max_message_bytes + rw::max_path_bytes));
    if (opts_.curve) {
      auto zap = curve_server(loop_->context(), router_, *opts_.curve);
      if (!zap)
        return std::move(zap.error());
      zap_ = std::move(*zap);
    } else if (auto ok = null_server(router_); !ok) {
      return ok;
    }
    router_.bind(opts_.bind_address);
    address_ = with_host(router_.get(zmq::sockopt::last_endpoint), opts_.advertise_host);
  } catch (const zmq::error_t& e) {
    return make_error(errc::io_error,
                      fmt::format("request server bind {}: {}", opts_.bind_address, e.what()));
  }
  loop_->watch(router_, [this] { on_readable(); });
  loop_->set_tick([this] { on_tick(); });
  loop_->set_on_stop([this] { router_.close(); });
  loop_->start();
  spdlog::debug("request server listening on {}", address_);
  return {};
}

expected<void> zmq_server::serve(const std::string& path, request_handler handler) {
  if (path.empty() || path.size() > rw::max_path_bytes || !handler)
    return make_error(errc::invalid_argument, "endpoint path must be 1..1024 bytes with a handler");
  std::lock_guard lock{handlers_mutex_};
  auto [it, inserted] =
      handlers_.try_emplace(path, std::make_shared<request_handler>(std::move(handler)));
  if (!inserted)
    return make_error(errc::invalid_argument, "endpoint already served: " + path);
  return {};
}

bool zmq_server::unserve(const std::string& path) {
  std::lock_guard lock{handlers_mutex_};
  return handlers_.erase(path) > 0;
}

void zmq_server::on_readable() {
  std::vector<zmq::message_t> parts;
  for (int i = 0; i < 256; ++i) {
    bool overflow = false;
    if (!recv_parts(router_, parts, 8, overflow))
      return;
    if (overflow) {
      ++malformed_;
      continue;
    }
    handle(parts);
  }
}

void zmq_server::handle(std::vector<zmq::message_t>& parts) {
  auto frame = [&](size_t i) {
    return std::span<const uint8_t>{parts[i].data<uint8_t>(), parts[i].size()};
  };
  if (parts.size() < 2) {
    ++malformed_;
    return;
  }
  auto hdr = rw::decode_header(frame(1));
  if (!hdr || !rw::is_client_kind(hdr->kind) || parts.size() != 2 + rw::body_frames(hdr->kind) ||
      (hdr->kind == rw::kind::request && hdr->stream_id == 0)) {
    ++malformed_;
    return;
  }
  auto client = parts[0].to_string();
  clients_[client].last_rx = steady::now();
  switch (hdr->kind) {
    case rw::kind::request: handle_request(client, hdr->stream_id, parts); break;
    case rw::kind::cancel: handle_cancel(client, hdr->stream_id); break;
    case rw::kind::ping: handle_ping(client, parts[2]); break;
    default: break;
  }
}

void zmq_server::handle_request(const std::string& client, uint64_t id,
                                std::vector<zmq::message_t>& parts) {
  auto path = parts[2].to_string();
  if (path.size() > rw::max_path_bytes || clients_[client].streams.contains(id)) {
    ++malformed_;
    return;
  }
  std::shared_ptr<request_handler> handler;
  {
    std::lock_guard lock{handlers_mutex_};
    if (auto it = handlers_.find(path); it != handlers_.end())
      handler = it->second;
  }
  if (!handler) {
    send_error(client, id, make_error(errc::not_found, "no endpoint " + path + " at " + address_));
    return;
  }
  auto st = std::make_shared<detail::stream_state>();
  clients_[client].streams.emplace(id, st);
  ++open_;
  auto stream = std::make_shared<detail::basic_response_stream>(
      st, std::make_unique<zmq_sink>(loop_, this, client, id, st), opts_.timing.max_message_bytes);
  bytes request{parts[3].data<uint8_t>(), parts[3].data<uint8_t>() + parts[3].size()};
  try {
    (*handler)(std::move(request), stream);
  } catch (const std::exception& e) {
    stream->fail(make_error(errc::internal, std::string{"handler threw: "} + e.what()));
  }
}

void zmq_server::handle_cancel(const std::string& client, uint64_t id) {
  auto& streams = clients_[client].streams;
  auto it = streams.find(id);
  if (it == streams.end())
    return; // already ended on our side
  auto st = it->second;
  erase_stream(client, id);
  st->cancel();
}

void zmq_server::handle_ping(const std::string& client, const zmq::message_t& ids_frame) {
  auto ids = rw::decode_ids({ids_frame.data<uint8_t>(), ids_frame.size()});
  if (!ids) {
    ++malformed_;
    return;
  }
  auto& streams = clients_[client].streams;
  std::unordered_set<uint64_t> listed(ids->begin(), ids->end());
  std::vector<uint64_t> unknown;
  for (auto id : *ids)
    if (!streams.contains(id))
      unknown.push_back(id);
  // A stream the client no longer lists is orphaned (its cancel was lost): cancel
  // it. Pings follow requests in FIFO order, so a live stream is always listed,
  // unless the list hit its cap.
  std::vector<uint64_t> orphans;
  for (auto& [id, st] : streams)
    if (!listed.contains(id) && ids->size() < rw::max_ids)
      orphans.push_back(id);
  for (auto id : orphans)
    handle_cancel(client, id);
  auto hdr = rw::encode_header(rw::kind::pong, 0);
  auto body = rw::encode_ids(unknown);
  std::array<zmq::const_buffer, 3> parts{view(client), view(hdr), view(body)};
  (void)send_to(client, parts);
}

void zmq_server::on_tick() {
  auto now = steady::now();
  std::vector<std::string> silent;
  for (auto& [client, entry] : clients_)
    if (now - entry.last_rx > opts_.timing.peer_timeout)
      silent.push_back(client);
  for (auto& client : silent)
    drop_client(client, "no heartbeat");
}

void zmq_server::drop_client(const std::string& client, const char* why) {
  auto it = clients_.find(client);
  if (it == clients_.end())
    return;
  auto streams = std::move(it->second.streams);
  clients_.erase(it);
  if (!streams.empty())
    spdlog::info("request server: client gone ({}); cancelling {} stream(s)", why, streams.size());
  open_ -= streams.size();
  for (auto& [id, st] : streams)
    st->cancel();
}

void zmq_server::shutdown_streams() {
  auto clients = std::move(clients_);
  clients_.clear();
  for (auto& [client, entry] : clients) {
    for (auto& [id, st] : entry.streams) {
      --open_;
      st->cancel();
      auto err = make_error(errc::disconnected, "server at " + address_ + " closed");
      auto hdr = rw::encode_header(rw::kind::error, id);
      auto body = rw::encode_error(err);
      std::array<zmq::const_buffer, 3> parts{view(client), view(hdr), view(body)};
      (void)send_parts(router_, parts);
    }
  }
  router_.set(zmq::sockopt::linger, 200); // let the final error frames leave
}

void zmq_server::send_error(const std::string& client, uint64_t id, const caf::error& err) {
  auto hdr = rw::encode_header(rw::kind::error, id);
  auto body = rw::encode_error(err);
  std::array<zmq::const_buffer, 3> parts{view(client), view(hdr), view(body)};
  (void)send_to(client, parts);
}

bool zmq_server::send_to(const std::string& client, std::span<const zmq::const_buffer> parts) {
  switch (send_parts(router_, parts)) {
    case send_status::sent: return true;
    case send_status::unreachable: drop_client(client, "unreachable"); return false;
    case send_status::would_block:
      spdlog::warn("request server: client not reading (send queue full)");
      return false;
  }
  return false;
}

state_ptr zmq_server::find_stream(const std::string& client, uint64_t id, const state_ptr& st) {
  auto cit = clients_.find(client);
  if (cit == clients_.end())
    return nullptr;
  auto sit = cit->second.streams.find(id);
  if (sit == cit->second.streams.end() || sit->second != st)
    return nullptr;
  return sit->second;
}

void zmq_server::erase_stream(const std::string& client, uint64_t id) {
  if (auto cit = clients_.find(client); cit != clients_.end() && cit->second.streams.erase(id))
    --open_;
}

void zmq_server::send_item(const std::string& client, uint64_t id, const state_ptr& st,
                           const bytes& item) {
  if (!find_stream(client, id, st))
    return; // cancelled meanwhile
  auto hdr = rw::encode_header(rw::kind::item, id);
  std::array<zmq::const_buffer, 3> parts{view(client), view(hdr), view(item)};
  if (!send_to(client, parts) && find_stream(client, id, st)) {
    erase_stream(client, id); // the client learns through its next pong
    st->cancel();
  }
}

void zmq_server::send_end(const std::string& client, uint64_t id, const state_ptr& st,
                          const caf::error& err) {
  if (!find_stream(client, id, st))
    return;
  erase_stream(client, id);
  auto hdr = rw::encode_header(err ? rw::kind::error : rw::kind::end, id);
  bytes body = err ? rw::encode_error(err) : bytes{};
  if (err) {
    std::array<zmq::const_buffer, 3> parts{view(client), view(hdr), view(body)};
    (void)send_to(client, parts);
  } else {
    std::array<zmq::const_buffer, 2> parts{view(client), view(hdr)};
    (void)send_to(client, parts);
  }
}

} // namespace

expected<std::unique_ptr<request_server>>
make_zmq_request_server(zmq_request_server_options options) {
  auto server = std::make_unique<zmq_server>(std::move(options));
  if (auto started = server->start(); !started)
    return std::move(started.error());
  return std::unique_ptr<request_server>{std::move(server)};
}

} // namespace dynamo::planes
