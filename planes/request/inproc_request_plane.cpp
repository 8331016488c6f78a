// In-process request plane: server and client cores exchange calls through
// their executors. Mirrors zmq_request_server/client behaviour without bytes
// on a wire (so nothing here is ever malformed).
#include "planes/request/inproc_request_plane.hpp"

#include "planes/codec/serial_executor.hpp"
#include "planes/request/stream_state.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <mutex>
#include <unordered_map>

namespace dynamo::planes {
namespace fake_request {

class server_core;
using state_ptr = std::shared_ptr<detail::stream_state>;

struct call_state {
  uint64_t id = 0;
  item_callback on_item;
  end_callback on_end;
  bool ended = false; // client executor only
};
using call_ptr = std::shared_ptr<call_state>;

void end_call(const call_ptr& c, const caf::error& err) {
  if (c->ended)
    return;
  c->ended = true;
  c->on_item = nullptr;
  auto fn = std::move(c->on_end);
  c->on_end = nullptr;
  if (fn)
    fn(err);
}

class client_core : public std::enable_shared_from_this<client_core> {
public:
  client_core(uint64_t key, std::shared_ptr<inproc_request_network> net)
      : key_(key), net_(std::move(net)),
        exec_(std::make_shared<serial_executor>("fake-request-client")) {}

  [[nodiscard]] uint64_t key() const noexcept { return key_; }
  [[nodiscard]] serial_executor& exec() { return *exec_; }
  [[nodiscard]] size_t open() const { return open_.load(); }

  void start(const call_ptr& c, const std::string& address, const std::string& path,
             bytes request); // executor
  void cancel(const call_ptr& c); // executor
  [[nodiscard]] bool post_item(uint64_t id, bytes item);
  void post_end(uint64_t id, caf::error err);
  void close_calls(); // executor

private:
  struct entry {
    call_ptr call;
    std::weak_ptr<server_core> server;
  };
  uint64_t key_;
  std::shared_ptr<inproc_request_network> net_;
  std::shared_ptr<serial_executor> exec_;
  std::unordered_map<uint64_t, entry> calls_; // executor only
  std::atomic<size_t> open_{0};
};
using client_ptr = std::shared_ptr<client_core>;

class server_core : public std::enable_shared_from_this<server_core> {
public:
  explicit server_core(size_t max_bytes)
      : max_bytes_(max_bytes), exec_(std::make_shared<serial_executor>("fake-request-server")) {}

  std::string address;
  [[nodiscard]] serial_executor& exec() { return *exec_; }
  [[nodiscard]] size_t open() const { return open_.load(); }
  [[nodiscard]] expected<void> serve(const std::string& path, request_handler h);
  bool unserve(const std::string& path);

  void open_stream(const client_ptr& client, uint64_t id, std::string path, bytes request);
  void cancel(uint64_t client_key, uint64_t id);
  void cancel_client(uint64_t client_key);
  void finished(uint64_t client_key, uint64_t id, const state_ptr& st);
  void shutdown_streams(); // executor

private:
  void run_handler(const client_ptr& client, uint64_t id, const std::string& path, bytes request);
  struct stream_entry {
    state_ptr state;
    std::weak_ptr<client_core> client;
  };
  using key = std::pair<uint64_t, uint64_t>; // (client key, stream id)

  size_t max_bytes_;
  std::shared_ptr<serial_executor> exec_;
  std::mutex handlers_mutex_;
  std::unordered_map<std::string, std::shared_ptr<request_handler>> handlers_;
  std::map<key, stream_entry> streams_; // executor only
  bool closed_ = false;                 // executor only
  std::atomic<size_t> open_{0};
};

class fake_sink final : public detail::stream_sink {
public:
  fake_sink(std::weak_ptr<client_core> client, uint64_t client_key,
            std::shared_ptr<server_core> server, uint64_t id, state_ptr st)
      : client_(std::move(client)), client_key_(client_key), server_(std::move(server)), id_(id),
        state_(std::move(st)) {}
  bool deliver_item(bytes item) override {
    auto c = client_.lock();
    return c && c->post_item(id_, std::move(item));
  }
  void deliver_end(const caf::error& err) override {
    server_->finished(client_key_, id_, state_);
    if (auto c = client_.lock())
      c->post_end(id_, err);
  }

private:
  std::weak_ptr<client_core> client_;
  uint64_t client_key_;
  std::shared_ptr<server_core> server_;
  uint64_t id_;
  state_ptr state_;
};

} // namespace fake_request

class inproc_request_network {
public:
  std::string add(const std::shared_ptr<fake_request::server_core>& s) {
    std::lock_guard lock{mutex_};
    auto address = fmt::format("inproc-fake://request/{}", ++next_);
    servers_.emplace(address, s);
    return address;
  }
  void remove(const std::string& address) {
    std::lock_guard lock{mutex_};
    servers_.erase(address);
  }
  [[nodiscard]] std::shared_ptr<fake_request::server_core> find(const std::string& address) {
    std::lock_guard lock{mutex_};
    auto it = servers_.find(address);
    return it == servers_.end() ? nullptr : it->second.lock();
  }
  [[nodiscard]] uint64_t next_client_key() { return ++next_client_; }

private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::weak_ptr<fake_request::server_core>> servers_;
  uint64_t next_ = 0;
  std::atomic<uint64_t> next_client_{0};
};

namespace fake_request {

void client_core::start(const call_ptr& c, const std::string& address, const std::string& path,
                        bytes request) {
  auto server = net_->find(address);
  if (!server) {
    end_call(c, make_error(errc::disconnected, "cannot connect to " + address));
    return;
  }
  calls_.emplace(c->id, entry{c, server});
  ++open_;
  server->open_stream(shared_from_this(), c->id, path, std::move(request));
}

void client_core::cancel(const call_ptr& c) {
  if (auto it = calls_.find(c->id); it != calls_.end()) {
    if (auto server = it->second.server.lock())
      server->cancel(key_, c->id);
    calls_.erase(it);
    --open_;
  }
  end_call(c, make_error(errc::cancelled, "call cancelled by the caller"));
}

bool client_core::post_item(uint64_t id, bytes item) {
  return exec_->post([self = shared_from_this(), id, i = std::move(item)]() mutable {
    auto it = self->calls_.find(id);
    if (it == self->calls_.end() || !it->second.call->on_item)
      return;
    auto c = it->second.call;
    try {
      c->on_item(std::move(i));
    } catch (const std::exception& e) {
      spdlog::error("fake request client: on_item threw: {}", e.what());
      self->cancel(c);
    }
  });
}

void client_core::post_end(uint64_t id, caf::error err) {
  (void)exec_->post([self = shared_from_this(), id, err = std::move(err)] {
    auto it = self->calls_.find(id);
    if (it == self->calls_.end())
      return;
    auto c = it->second.call;
    self->calls_.erase(it);
    --self->open_;
    end_call(c, err);
  });
}

void client_core::close_calls() {
  auto calls = std::move(calls_);
  calls_.clear();
  open_ -= calls.size();
  for (auto& [id, e] : calls) {
    if (auto server = e.server.lock())
      server->cancel(key_, id);
    end_call(e.call, make_error(errc::closed, "request client closed"));
  }
}

expected<void> server_core::serve(const std::string& path, request_handler h) {
  if (path.empty() || path.size() > 1024 || !h)
    return make_error(errc::invalid_argument, "endpoint path must be 1..1024 bytes with a handler");
  std::lock_guard lock{handlers_mutex_};
  if (!handlers_.try_emplace(path, std::make_shared<request_handler>(std::move(h))).second)
    return make_error(errc::invalid_argument, "endpoint already served: " + path);
  return {};
}

bool server_core::unserve(const std::string& path) {
  std::lock_guard lock{handlers_mutex_};
  return handlers_.erase(path) > 0;
}

void server_core::open_stream(const client_ptr& client, uint64_t id, std::string path,
                              bytes request) {
  bool queued = exec_->post([self = shared_from_this(), client, id, p = std::move(path),
                             r = std::move(request)]() mutable {
    self->run_handler(client, id, p, std::move(r));
  });
  if (!queued)
    client->post_end(id, make_error(errc::disconnected, "server at " + address + " closed"));
}

void server_core::run_handler(const client_ptr& client, uint64_t id, const std::string& path,
                              bytes request) {
  if (closed_) {
    client->post_end(id, make_error(errc::disconnected, "server at " + address + " closed"));
    return;
  }
  std::shared_ptr<request_handler> handler;
  {
    std::lock_guard lock{handlers_mutex_};
    if (auto it = handlers_.find(path); it != handlers_.end())
      handler = it->second;
  }
  if (!handler) {
    client->post_end(id, make_error(errc::not_found, "no endpoint " + path + " at " + address));
    return;
  }
  auto st = std::make_shared<detail::stream_state>();
  streams_.emplace(key{client->key(), id}, stream_entry{st, client});
  ++open_;
  auto stream = std::make_shared<detail::basic_response_stream>(
      st, std::make_unique<fake_sink>(client, client->key(), shared_from_this(), id, st),
      max_bytes_);
  try {
    (*handler)(std::move(request), stream);
  } catch (const std::exception& e) {
    stream->fail(make_error(errc::internal, std::string{"handler threw: "} + e.what()));
  }
}

void server_core::cancel(uint64_t client_key, uint64_t id) {
  (void)exec_->post([self = shared_from_this(), client_key, id] {
    auto it = self->streams_.find(key{client_key, id});
    if (it == self->streams_.end())
      return;
    auto st = it->second.state;
    self->streams_.erase(it);
    --self->open_;
    st->cancel();
  });
}

void server_core::cancel_client(uint64_t client_key) {
  (void)exec_->post([self = shared_from_this(), client_key] {
    auto it = self->streams_.lower_bound(key{client_key, 0});
    while (it != self->streams_.end() && it->first.first == client_key) {
      auto st = it->second.state;
      it = self->streams_.erase(it);
      --self->open_;
      st->cancel();
    }
  });
}

void server_core::finished(uint64_t client_key, uint64_t id, const state_ptr& st) {
  (void)exec_->post([self = shared_from_this(), client_key, id, st] {
    auto it = self->streams_.find(key{client_key, id});
    if (it != self->streams_.end() && it->second.state == st) {
      self->streams_.erase(it);
      --self->open_;
    }
  });
}

void server_core::shutdown_streams() {
  closed_ = true;
  auto streams = std::move(streams_);
  streams_.clear();
  open_ -= streams.size();
  for (auto& [k, e] : streams) {
    e.state->cancel();
    if (auto client = e.client.lock())
      client->post_end(k.second,
                       make_error(errc::disconnected, "server at " + address + " closed"));
  }
}

class server final : public request_server {
public:
  server(std::shared_ptr<inproc_request_network> net, request_plane_timing timing)
      : net_(std::move(net)), core_(std::make_shared<server_core>(timing.max_message_bytes)) {
    core_->address = net_->add(core_);
  }
  ~server() override {
    net_->remove(core_->address);
    (void)core_->exec().post([c = core_] { c->shutdown_streams(); });
    core_->exec().stop();
  }
  [[nodiscard]] expected<void> serve(const std::string& path, request_handler h) override {
    return core_->serve(path, std::move(h));
  }
  bool unserve(const std::string& path) override { return core_->unserve(path); }
  [[nodiscard]] std::string address() const override { return core_->address; }
  [[nodiscard]] uint64_t malformed_count() const override { return 0; }
  [[nodiscard]] size_t open_streams() const override { return core_->open(); }

private:
  std::shared_ptr<inproc_request_network> net_;
  std::shared_ptr<server_core> core_;
};

class control final : public call_handle::control {
public:
  control(std::weak_ptr<client_core> client, call_ptr c)
      : client_(std::move(client)), call_(std::move(c)) {}
  void cancel() override {
    if (auto cl = client_.lock())
      (void)cl->exec().post([cl, c = call_] { cl->cancel(c); });
  }

private:
  std::weak_ptr<client_core> client_;
  call_ptr call_;
};

class client final : public request_client {
public:
  client(std::shared_ptr<inproc_request_network> net, request_plane_timing timing)
      : timing_(timing), core_(std::make_shared<client_core>(net->next_client_key(), net)) {}
  ~client() override {
    (void)core_->exec().post([c = core_] { c->close_calls(); });
    core_->exec().stop();
  }

  [[nodiscard]] call_handle call(const std::string& address, const std::string& path,
                                 bytes request, item_callback on_item,
                                 end_callback on_end) override {
    auto c = std::make_shared<call_state>();
    c->id = next_id_++;
    c->on_item = std::move(on_item);
    c->on_end = std::move(on_end);
    call_handle handle{c->id, std::make_shared<control>(core_, c)};
    caf::error refused;
    if (request.size() > timing_.max_message_bytes)
      refused = make_error(errc::invalid_argument,
                           fmt::format("request of {} bytes exceeds the {} byte limit",
                                       request.size(), timing_.max_message_bytes));
    else if (path.empty() || path.size() > 1024)
      refused = make_error(errc::invalid_argument, "endpoint path must be 1..1024 bytes");
    bool queued = refused ? core_->exec().post([c, refused] { end_call(c, refused); })
                          : core_->exec().post([core = core_, c, address, path,
                                                r = std::move(request)]() mutable {
                              core->start(c, address, path, std::move(r));
                            });
    if (!queued)
      end_call(c, make_error(errc::closed, "request client is shut down"));
    return handle;
  }
  [[nodiscard]] uint64_t malformed_count() const override { return 0; }
  [[nodiscard]] size_t open_calls() const override { return core_->open(); }

private:
  request_plane_timing timing_;
  std::shared_ptr<client_core> core_;
  std::atomic<uint64_t> next_id_{1};
};

} // namespace fake_request

std::shared_ptr<inproc_request_network> make_inproc_request_network() {
  return std::make_shared<inproc_request_network>();
}

std::unique_ptr<request_server>
make_inproc_request_server(std::shared_ptr<inproc_request_network> network,
                           request_plane_timing timing) {
  return std::make_unique<fake_request::server>(std::move(network), timing);
}

std::unique_ptr<request_client>
make_inproc_request_client(std::shared_ptr<inproc_request_network> network,
                           request_plane_timing timing) {
  return std::make_unique<fake_request::client>(std::move(network), timing);
}

} // namespace dynamo::planes
