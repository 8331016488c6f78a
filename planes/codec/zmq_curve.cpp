#include "planes/codec/zmq_curve.hpp"

#include "planes/codec/zmq_io_loop.hpp"

#include <spdlog/spdlog.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace dynamo::planes {

namespace {

constexpr const char* zap_endpoint = "inproc://zeromq.zap.01";

bool has_curve() { return zmq_has("curve") == 1; }

// The handler of the shared context. A new one may bind only once the last
// one has closed its socket: `alive` counts handlers not yet closed.
std::mutex handler_mutex;
std::condition_variable handler_closed;
int handlers_alive = 0;

std::string z85(const uint8_t* key32) {
  std::array<char, curve_key_z85_chars + 1> text{};
  if (zmq_z85_encode(text.data(), key32, 32) == nullptr)
    return {};
  return text.data();
}

} // namespace

/// Answers ZAP requests (RFC 27) on its own thread: [version, request id,
/// domain, address, routing id, mechanism, credentials...] -> [version,
/// request id, status, text, user id, metadata].
class zap_handler {
public:
  explicit zap_handler(std::shared_ptr<zmq::context_t> ctx)
      : ctx_(std::move(ctx)), rep_(*ctx_, zmq::socket_type::rep) {
    rep_.set(zmq::sockopt::linger, 0);
    rep_.bind(zap_endpoint);
    ++handlers_alive; // under handler_mutex (curve_server)
    thread_ = std::thread([this] { run(); });
  }
  ~zap_handler() {
    stop_ = true;
    thread_.join();
    std::lock_guard lock{handler_mutex};
    rep_.close();
    --handlers_alive;
    handler_closed.notify_all();
  }
  zap_handler(const zap_handler&) = delete;
  zap_handler& operator=(const zap_handler&) = delete;

private:
  void run() {
    while (!stop_) {
      std::array<zmq::pollitem_t, 1> items{{{rep_.handle(), 0, ZMQ_POLLIN, 0}}};
      try {
        if (zmq::poll(items.data(), items.size(), std::chrono::milliseconds{100}) > 0)
          answer();
      } catch (const zmq::error_t& e) {
        spdlog::error("zap handler: {}", e.what());
        return;
      }
    }
  }

  void answer() {
    std::vector<zmq::message_t> parts;
    for (;;) {
      auto& m = parts.emplace_back();
      if (!rep_.recv(m, zmq::recv_flags::dontwait))
        return;
      if (!m.more())
        break;
    }
    const bool null_peer = parts.size() == 6 && parts[0].to_string_view() == "1.0" &&
                           parts[5].to_string_view() == "NULL" &&
                           parts[2].to_string_view() == null_zap_domain;
    bool ok = null_peer || (parts.size() == 7 && parts[0].to_string_view() == "1.0" &&
                            parts[5].to_string_view() == "CURVE" && parts[6].size() == 32 &&
                            z85(parts[6].data<uint8_t>()) == parts[2].to_string_view());
    std::string request_id = parts.size() > 1 ? parts[1].to_string() : std::string{};
    std::array<std::string, 6> reply{"1.0", request_id, ok ? "200" : "400",
                                     ok ? "OK" : "not a key of this cluster", "", ""};
    for (size_t i = 0; i < reply.size(); ++i)
      (void)rep_.send(zmq::buffer(reply[i]), i + 1 < reply.size() ? zmq::send_flags::sndmore
                                                                  : zmq::send_flags::none);
    if (!ok)
      spdlog::warn("plane connection from {} refused: its CURVE key is not the cluster's",
                   parts.size() > 3 ? parts[3].to_string() : std::string{"?"});
  }

  std::shared_ptr<zmq::context_t> ctx_; // outlives rep_
  zmq::socket_t rep_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

expected<curve_keypair> generate_curve_keypair() {
  if (!has_curve())
    return make_error(errc::unsupported, "this libzmq was built without CURVE");
  std::array<char, curve_key_z85_chars + 1> pub{}, sec{};
  if (zmq_curve_keypair(pub.data(), sec.data()) != 0)
    return make_error(errc::internal, std::string{"zmq_curve_keypair: "} + zmq_strerror(zmq_errno()));
  return curve_keypair{pub.data(), sec.data()};
}

expected<void> check_curve_keypair(const curve_keypair& keys) {
  if (!has_curve())
    return make_error(errc::unsupported, "security.curve: this libzmq was built without CURVE");
  if (!is_z85_key(keys.public_key) || !is_z85_key(keys.secret_key))
    return make_error(errc::config_error, "security.curve: keys must be 40 Z85 characters");
  std::array<char, curve_key_z85_chars + 1> derived{};
  if (zmq_curve_public(derived.data(), keys.secret_key.c_str()) != 0 ||
      std::string_view{derived.data()} != keys.public_key)
    return make_error(errc::config_error,
                      "security.curve: public_key is not the public key of secret_key");
  return {};
}

expected<zap_handle> curve_server(zmq::context_t& ctx, zmq::socket_t& s, const curve_keypair& keys) {
  if (auto ok = check_curve_keypair(keys); !ok)
    return std::move(ok.error());
  auto shared = shared_zmq_context();
  if (&ctx != shared.get()) // another context has no ZAP handler: libzmq would admit anyone
    return make_error(errc::internal, "CURVE server socket outside the shared ZeroMQ context");
  // One handler for the context, alive while a server socket holds it.
  static std::weak_ptr<zap_handler> current;
  zap_handle zap;
  try {
    std::unique_lock lock{handler_mutex};
    zap = current.lock();
    if (!zap) {
      handler_closed.wait(lock, [] { return handlers_alive == 0; });
      zap = std::make_shared<zap_handler>(std::move(shared));
      current = zap;
    }
    s.set(zmq::sockopt::zap_domain, keys.public_key);
    s.set(zmq::sockopt::curve_server, 1);
    s.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  } catch (const zmq::error_t& e) {
    return make_error(errc::io_error, std::string{"CURVE server socket: "} + e.what());
  }
  return zap;
}

expected<void> null_server(zmq::socket_t& s) {
  try {
    s.set(zmq::sockopt::zap_domain, null_zap_domain);
  } catch (const zmq::error_t& e) {
    return make_error(errc::io_error, std::string{"plane server socket: "} + e.what());
  }
  return {};
}

expected<void> curve_client(zmq::socket_t& s, const curve_keypair& keys) {
  if (auto ok = check_curve_keypair(keys); !ok)
    return ok;
  try {
    s.set(zmq::sockopt::curve_serverkey, keys.public_key);
    s.set(zmq::sockopt::curve_publickey, keys.public_key);
    s.set(zmq::sockopt::curve_secretkey, keys.secret_key);
  } catch (const zmq::error_t& e) {
    return make_error(errc::io_error, std::string{"CURVE client socket: "} + e.what());
  }
  return {};
}

} // namespace dynamo::planes
