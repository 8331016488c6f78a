// The ZeroMQ request-plane client: one DEALER (plus its socket monitor) per
// remote address, all owned by one I/O loop; calls are multiplexed by stream id.
// A server is declared gone on ZMQ_EVENT_DISCONNECTED, on a refused connect, or
// when it answers no ping for timing.peer_timeout.
#include "planes/codec/zmq_curve.hpp"
#include "planes/codec/zmq_io_loop.hpp"
#include "planes/request/request_wire.hpp"
#include "planes/request/zmq_request_plane.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <optional>
#include <unordered_map>

namespace dynamo::planes {
namespace {

namespace rw = request_wire;
using steady = std::chrono::steady_clock;

struct call_state {
  uint64_t id = 0;
  std::string address;
  item_callback on_item;
  end_callback on_end;
  bool ended = false; // I/O thread only (or the caller's, once the loop is gone)
};
using call_ptr = std::shared_ptr<call_state>;

constexpr int handshake_failed_events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                        ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

struct connection {
  std::string address;
  zmq::socket_t dealer;
  zmq::socket_t monitor;
  bool connected = false;
  steady::time_point created;
  steady::time_point last_ping;
  steady::time_point last_used;
  std::optional<steady::time_point> awaiting_since; ///< oldest unanswered ping
  std::map<uint64_t, call_ptr> calls;
};

/// Ends a call once: drops its callbacks, then runs on_end.
void end_call(const call_ptr& c, const caf::error& err) {
  if (c->ended)
    return;
  c->ended = true;
  c->on_item = nullptr;
  auto fn = std::move(c->on_end);
  c->on_end = nullptr;
  if (!fn)
    return;
  try {
    fn(err);
  } catch (const std::exception& e) {
    spdlog::error("request client: on_end threw: {}", e.what());
  }
}

class zmq_client final : public request_client {
public:
  explicit zmq_client(zmq_request_client_options opts);
  ~zmq_client() override;

  [[nodiscard]] call_handle call(const std::string& address, const std::string& path,
                                 bytes request, item_callback on_item,
                                 end_callback on_end) override;
  [[nodiscard]] uint64_t malformed_count() const override { return malformed_.load(); }
  [[nodiscard]] size_t open_calls() const override { return open_.load(); }

  // I/O thread only.
  void cancel_call(const call_ptr& c);

private:
  void start_call(const call_ptr& c, const std::string& path, const bytes& request);
  [[nodiscard]] expected<connection*> connection_for(const std::string& address);
  void on_dealer(connection* conn);
  void on_monitor(connection* conn);
  void handle(connection* conn, std::vector<zmq::message_t>& parts);
  void deliver_item(connection* conn, uint64_t id, const zmq::message_t& frame);
  void finish_call(connection* conn, uint64_t id, const caf::error& err);
  void on_tick();
  void ping(connection* conn, steady::time_point now);
  void fail_connection(const std::string& address, const caf::error& err);
  void close_connection(std::unique_ptr<connection> conn, int linger_ms);
  void close_all();

  zmq_request_client_options opts_;
  std::shared_ptr<zmq_io_loop> loop_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> malformed_{0};
  std::atomic<size_t> open_{0};
  std::unordered_map<std::string, std::unique_ptr<connection>> connections_; // I/O thread
};

class zmq_call_control final : public call_handle::control {
public:
  zmq_call_control(std::shared_ptr<zmq_io_loop> loop, zmq_client* client, call_ptr c)
      : loop_(std::move(loop)), client_(client), call_(std::move(c)) {}
  void cancel() override {
    (void)loop_->post([cl = client_, c = call_] { cl->cancel_call(c); });
  }

private:
  std::shared_ptr<zmq_io_loop> loop_;
  zmq_client* client_; // only dereferenced by tasks, which run while the client lives
  call_ptr call_;
};

zmq_client::zmq_client(zmq_request_client_options opts)
    : opts_(std::move(opts)),
      loop_(std::make_shared<zmq_io_loop>("request-client", opts_.timing.tick)) {
  loop_->set_tick([this] { on_tick(); });
  loop_->set_on_stop([this] { close_all(); });
  loop_->start();
}

zmq_client::~zmq_client() {
  (void)loop_->post([this] { close_all(); });
  loop_->stop();
}

call_handle zmq_client::call(const std::string& address, const std::string& path, bytes request,
                             item_callback on_item, end_callback on_end) {
  auto c = std::make_shared<call_state>();
  c->id = next_id_++;
  c->address = address;
  c->on_item = std::move(on_item);
  c->on_end = std::move(on_end);
  call_handle handle{c->id, std::make_shared<zmq_call_control>(loop_, this, c)};
  caf::error refused;
  if (request.size() > opts_.timing.max_message_bytes)
    refused = make_error(errc::invalid_argument,
                         fmt::format("request of {} bytes exceeds the {} byte limit",
                                     request.size(), opts_.timing.max_message_bytes));
  else if (path.empty() || path.size() > rw::max_path_bytes)
    refused = make_error(errc::invalid_argument, "endpoint path must be 1..1024 bytes");
  bool queued = refused ? loop_->post([c, refused] { end_call(c, refused); })
                        : loop_->post([this, c, path, r = std::move(request)] {
                            start_call(c, path, r);
                          });
  if (!queued)
    end_call(c, make_error(errc::closed, "request client is shut down"));
  return handle;
}

void zmq_client::start_call(const call_ptr& c, const std::string& path, const bytes& request) {
  if (c->ended)
    return;
  auto conn = connection_for(c->address);
  if (!conn) {
    end_call(c, conn.error());
    return;
  }
  auto hdr = rw::encode_header(rw::kind::request, c->id);
  std::array<zmq::const_buffer, 3> parts{view(hdr), view(path), view(request)};
  switch (send_parts((*conn)->dealer, parts)) {
    case send_status::sent:
      (*conn)->calls.emplace(c->id, c);
      (*conn)->last_used = steady::now();
      ++open_;
      return;
    case send_status::would_block:
      end_call(c, make_error(errc::overloaded, "send queue to " + c->address + " is full"));
      return;
    case send_status::unreachable:
      end_call(c, make_error(errc::disconnected, "cannot send to " + c->address));
      return;
  }
}

expected<connection*> zmq_client::connection_for(const std::string& address) {
  if (auto it = connections_.find(address); it != connections_.end())
    return it->second.get();
  auto conn = std::make_unique<connection>();
  conn->address = address;
  try {
    conn->dealer = zmq::socket_t{loop_->context(), zmq::socket_type::dealer};
    conn->dealer.set(zmq::sockopt::linger, 0);
    conn->dealer.set(zmq::sockopt::sndhwm, 100000);
    conn->dealer.set(zmq::sockopt::rcvhwm, 100000);
    conn->dealer.set(zmq::sockopt::maxmsgsize,
                     static_cast<int64_t>(opts_.timing.max_message_bytes + rw::max_path_bytes));
    if (opts_.curve)
      if (auto ok = curve_client(conn->dealer, *opts_.curve); !ok)
        return std::move(ok.error());
    auto mon = start_monitor(loop_->context(), conn->dealer,
                             ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED |
                                 ZMQ_EVENT_CONNECT_RETRIED |
                                 (opts_.curve ? handshake_failed_events : 0)); // off: as before
    if (!mon)
      return std::move(mon.error());
    conn->monitor = std::move(*mon);
    conn->dealer.connect(address);
  } catch (const zmq::error_t& e) {
    stop_monitor(conn->dealer);
    return make_error(errc::invalid_argument, fmt::format("cannot connect to {}: {}", address,
                                                          e.what()));
  }
  conn->created = conn->last_ping = conn->last_used = steady::now();
  auto* raw = conn.get();
  loop_->watch(raw->dealer, [this, raw] { on_dealer(raw); });
  loop_->watch(raw->monitor, [this, raw] { on_monitor(raw); });
  connections_.emplace(address, std::move(conn));
  return raw;
}

void zmq_client::on_dealer(connection* conn) {
  std::vector<zmq::message_t> parts;
  for (int i = 0; i < 256; ++i) {
    bool overflow = false;
    if (!recv_parts(conn->dealer, parts, 4, overflow))
      return;
    if (overflow) {
      ++malformed_;
      continue;
    }
    handle(conn, parts);
  }
}

void zmq_client::handle(connection* conn, std::vector<zmq::message_t>& parts) {
  auto hdr = parts.empty() ? std::nullopt
                           : rw::decode_header({parts[0].data<uint8_t>(), parts[0].size()});
  if (!hdr || rw::is_client_kind(hdr->kind) || parts.size() != 1 + rw::body_frames(hdr->kind)) {
    ++malformed_;
    return;
  }
  conn->awaiting_since.reset(); // any frame proves the server alive...
  conn->connected = true;       // ...and connected, even if a monitor event went missing
  conn->last_used = steady::now();
  switch (hdr->kind) {
    case rw::kind::item: deliver_item(conn, hdr->stream_id, parts[1]); break;
    case rw::kind::end: finish_call(conn, hdr->stream_id, caf::error{}); break;
    case rw::kind::error: {
      auto err = rw::decode_error({parts[1].data<uint8_t>(), parts[1].size()});
      if (!err) {
        ++malformed_; // the server already dropped the stream: the next pong ends it
        return;
      }
      finish_call(conn, hdr->stream_id, *err);
      break;
    }
    case rw::kind::pong: {
      auto ids = rw::decode_ids({parts[1].data<uint8_t>(), parts[1].size()});
      if (!ids) {
        ++malformed_;
        return;
      }
      for (auto id : *ids)
        finish_call(conn, id,
                    make_error(errc::disconnected, "server at " + conn->address +
                                                       " no longer has the stream"));
      break;
    }
    default: break;
  }
}

void zmq_client::deliver_item(connection* conn, uint64_t id, const zmq::message_t& frame) {
  auto it = conn->calls.find(id);
  if (it == conn->calls.end())
    return; // cancelled locally; the server learns from the cancel frame
  auto c = it->second;
  if (!c->on_item)
    return;
  try {
    c->on_item(bytes{frame.data<uint8_t>(), frame.data<uint8_t>() + frame.size()});
  } catch (const std::exception& e) {
    spdlog::error("request client: on_item threw: {}", e.what());
    cancel_call(c);
  }
}

void zmq_client::finish_call(connection* conn, uint64_t id, const caf::error& err) {
  auto it = conn->calls.find(id);
  if (it == conn->calls.end())
    return;
  auto c = it->second;
  conn->calls.erase(it);
  --open_;
  end_call(c, err);
}

void zmq_client::cancel_call(const call_ptr& c) {
  if (c->ended)
    return;
  if (auto it = connections_.find(c->address); it != connections_.end()) {
    auto& conn = *it->second;
    if (conn.calls.erase(c->id)) {
      --open_;
      auto hdr = rw::encode_header(rw::kind::cancel, c->id);
      std::array<zmq::const_buffer, 1> parts{view(hdr)};
      (void)send_parts(conn.dealer, parts); // lost? the next ping omits the id: same effect
    }
  }
  end_call(c, make_error(errc::cancelled, "call cancelled by the caller"));
}

void zmq_client::on_monitor(connection* conn) {
  while (auto ev = read_monitor_event(conn->monitor)) {
    if (ev->event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      conn->connected = true;
    } else if (ev->event == ZMQ_EVENT_DISCONNECTED) {
      fail_connection(conn->address,
                      make_error(errc::disconnected, "connection to " + conn->address + " lost"));
      return; // conn is gone
    } else if ((ev->event & handshake_failed_events) != 0) {
      // Another mechanism or other CURVE keys: retrying will not help.
      fail_connection(conn->address, make_error(errc::disconnected,
                                                "handshake with " + conn->address +
                                                  " failed (security.curve keys differ?)"));
      return;
    } else if (ev->event == ZMQ_EVENT_CONNECT_RETRIED && !conn->connected) {
      fail_connection(conn->address, make_error(errc::disconnected,
                                                "cannot connect to " + conn->address));
      return;
    }
  }
}

void zmq_client::on_tick() {
  auto now = steady::now();
  std::vector<std::pair<std::string, caf::error>> failed;
  std::vector<std::string> idle;
  for (auto& [address, conn] : connections_) {
    if (conn->calls.empty()) {
      if (now - conn->last_used > opts_.timing.idle_timeout)
        idle.push_back(address);
    } else if (!conn->connected && now - conn->created > opts_.timing.connect_timeout) {
      failed.emplace_back(address, make_error(errc::disconnected,
                                              "no connection to " + address + " in time"));
    } else if (conn->awaiting_since && now - *conn->awaiting_since > opts_.timing.peer_timeout) {
      failed.emplace_back(address,
                          make_error(errc::disconnected, "server at " + address + " went silent"));
    } else if (conn->connected && now - conn->last_ping >= opts_.timing.heartbeat_interval) {
      ping(conn.get(), now);
    }
  }
  for (auto& [address, err] : failed)
    fail_connection(address, err);
  for (auto& address : idle) {
    auto node = connections_.extract(address);
    close_connection(std::move(node.mapped()), 0);
  }
}

void zmq_client::ping(connection* conn, steady::time_point now) {
  std::vector<uint64_t> ids;
  ids.reserve(conn->calls.size());
  for (auto& [id, c] : conn->calls)
    ids.push_back(id);
  if (ids.size() > rw::max_ids)
    ids.resize(rw::max_ids); // a full list: the server then skips its orphan check
  auto hdr = rw::encode_header(rw::kind::ping, 0);
  auto body = rw::encode_ids(ids);
  std::array<zmq::const_buffer, 2> parts{view(hdr), view(body)};
  if (send_parts(conn->dealer, parts) == send_status::sent) {
    conn->last_ping = now;
    if (!conn->awaiting_since)
      conn->awaiting_since = now;
  }
}

void zmq_client::fail_connection(const std::string& address, const caf::error& err) {
  auto node = connections_.extract(address);
  if (node.empty())
    return;
  auto calls = std::move(node.mapped()->calls);
  close_connection(std::move(node.mapped()), 0);
  if (!calls.empty())
    spdlog::info("request client: {}; failing {} call(s)", describe(err), calls.size());
  open_ -= calls.size();
  for (auto& [id, c] : calls)
    end_call(c, err);
}

void zmq_client::close_connection(std::unique_ptr<connection> conn, int linger_ms) {
  loop_->unwatch(conn->dealer);
  loop_->unwatch(conn->monitor);
  stop_monitor(conn->dealer);
  conn->monitor.close();
  conn->dealer.set(zmq::sockopt::linger, linger_ms);
  conn->dealer.close();
}

void zmq_client::close_all() {
  auto conns = std::move(connections_);
  connections_.clear();
  for (auto& [address, conn] : conns) {
    auto calls = std::move(conn->calls);
    for (auto& [id, c] : calls) {
      auto hdr = rw::encode_header(rw::kind::cancel, id);
      std::array<zmq::const_buffer, 1> parts{view(hdr)};
      (void)send_parts(conn->dealer, parts);
    }
    close_connection(std::move(conn), calls.empty() ? 0 : 200);
    open_ -= calls.size();
    for (auto& [id, c] : calls)
      end_call(c, make_error(errc::closed, "request client closed"));
  }
}

} // namespace

std::unique_ptr<request_client> make_zmq_request_client(zmq_request_client_options options) {
  return std::make_unique<zmq_client>(std::move(options));
}

} // namespace dynamo::planes
