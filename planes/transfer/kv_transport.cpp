// The transport factory: make_kv_receiver / make_kv_sender by name or "auto", the
// "auto" composites, and select_offer.
#include "planes/transfer/kv_transport.hpp"

#include "planes/transfer/inproc_transport.hpp"
#include "planes/transfer/task_thread.hpp"
#include "planes/transfer/tcp_transport.hpp"
#include "planes/transfer/transfer_common.hpp"
#include "planes/transfer/ucx_transport.hpp"
#if DYNAMO_TRANSFER_HAVE_CUDA
#include "planes/transfer/cuda_ipc_transport.hpp"
#endif

#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

// Several receivers over one region; senders pick one of their offers.
class auto_receiver final : public kv_receiver {
public:
  explicit auto_receiver(std::vector<std::unique_ptr<kv_receiver>> parts) : parts_(std::move(parts)) {}
  std::string_view transport() const noexcept override { return "auto"; }
  std::vector<protocol::kv_connection_info> offers() const override {
    std::vector<protocol::kv_connection_info> all;
    for (const auto& p : parts_)
      for (auto& o : p->offers())
        all.push_back(std::move(o));
    return all;
  }
  std::string debug_info() const override {
    std::string all;
    for (const auto& p : parts_)
      all += p->debug_info() + "\n";
    return all;
  }

private:
  std::vector<std::unique_ptr<kv_receiver>> parts_;
};

// Forwards each request to the sender of the transport its connection names.
class auto_sender final : public kv_sender {
public:
  explicit auto_sender(std::map<std::string, std::unique_ptr<kv_sender>> parts)
      : parts_(std::move(parts)) {}
  std::string_view transport() const noexcept override { return "auto"; }
  void send(const protocol::kv_transfer_request& request, std::chrono::milliseconds timeout,
            kv_status_callback done) override {
    if (auto it = parts_.find(request.connection.transport); it != parts_.end())
      return it->second->send(request, timeout, std::move(done));
    auto started = clock::now();
    errors_.post([request, started, done = std::move(done)](bool) {
      done(error_status(request.transfer_id, request.source_worker_id, errc::unsupported,
                        fmt::format("no '{}' transport in this sender", request.connection.transport),
                        started));
    });
  }
  std::string debug_info() const override {
    std::string all;
    for (const auto& [name, p] : parts_)
      all += p->debug_info() + "\n";
    return all;
  }

private:
  std::map<std::string, std::unique_ptr<kv_sender>> parts_;
  task_thread errors_; // delivers "no such transport" off the caller's thread
};

std::vector<std::string> transports_for(kv_memory memory) {
  if (memory == kv_memory::cuda_device)
    return {"cuda-ipc"};
  return {"ucx", "tcp"};
}

expected<std::unique_ptr<kv_receiver>> make_auto_receiver(const kv_receiver_config& config) {
  std::vector<std::unique_ptr<kv_receiver>> parts;
  std::string why;
  for (const auto& name : transports_for(config.region.memory)) {
    auto r = make_kv_receiver(name, config);
    if (r) {
      parts.push_back(std::move(*r));
      continue;
    }
    spdlog::warn("kv transfer: no {} receiver: {}", name, describe(r.error()));
    why += (why.empty() ? "" : "; ") + name + ": " + describe(r.error());
  }
  if (parts.empty())
    return make_error(errc::unsupported, "kv transfer: no transport can serve this region: " + why);
  return std::unique_ptr<kv_receiver>{new auto_receiver{std::move(parts)}};
}

expected<std::unique_ptr<kv_sender>> make_auto_sender(const kv_sender_config& config) {
  std::map<std::string, std::unique_ptr<kv_sender>> parts;
  std::string why;
  for (const auto& name : transports_for(config.region.memory)) {
    auto s = make_kv_sender(name, config);
    if (s) {
      parts[name] = std::move(*s);
      continue;
    }
    spdlog::warn("kv transfer: no {} sender: {}", name, describe(s.error()));
    why += (why.empty() ? "" : "; ") + name + ": " + describe(s.error());
  }
  if (parts.empty())
    return make_error(errc::unsupported, "kv transfer: no transport can serve this region: " + why);
  return std::unique_ptr<kv_sender>{new auto_sender{std::move(parts)}};
}

} // namespace

std::vector<std::string> available_transports() {
  std::vector<std::string> names{"inproc", "tcp", "ucx"};
#if DYNAMO_TRANSFER_HAVE_CUDA
  names.push_back("cuda-ipc");
#endif
  return names;
}

namespace {

caf::error unknown_transport(std::string_view transport) {
  return make_error(errc::unsupported, fmt::format("unknown kv transport '{}' (this build has: {})",
                                                   transport, fmt::join(available_transports(), ", ")));
}

} // namespace

expected<std::unique_ptr<kv_receiver>> make_kv_receiver(protocol::kv_transport_kind transport,
                                                        kv_receiver_config config) {
  using protocol::kv_transport_kind;
  if (config.allocate_region && transport != kv_transport_kind::ucx)
    return make_error(errc::unsupported, fmt::format("kv transport '{}' cannot allocate its region (only ucx can)",
                                                     protocol::to_string(transport)));
  switch (transport) {
    case kv_transport_kind::automatic:
      return make_auto_receiver(config);
    case kv_transport_kind::inproc: {
      auto r = make_inproc_receiver(std::move(config));
      if (!r)
        return r.error();
      return std::unique_ptr<kv_receiver>{std::move(*r)};
    }
    case kv_transport_kind::tcp:
      return make_tcp_receiver(std::move(config));
    case kv_transport_kind::ucx:
      return make_ucx_receiver(std::move(config));
    case kv_transport_kind::cuda_ipc:
#if DYNAMO_TRANSFER_HAVE_CUDA
      return make_cuda_ipc_receiver(std::move(config));
#else
      break;
#endif
  }
  return unknown_transport(protocol::to_string(transport));
}

expected<std::unique_ptr<kv_receiver>> make_kv_receiver(std::string_view transport,
                                                        kv_receiver_config config) {
  auto kind = protocol::parse_kv_transport(transport);
  if (!kind) {
    if (config.allocate_region)
      return make_error(errc::unsupported,
                        fmt::format("kv transport '{}' cannot allocate its region (only ucx can)", transport));
    return unknown_transport(transport);
  }
  return make_kv_receiver(*kind, std::move(config));
}

expected<std::unique_ptr<kv_sender>> make_kv_sender(protocol::kv_transport_kind transport,
                                                    kv_sender_config config) {
  using protocol::kv_transport_kind;
  switch (transport) {
    case kv_transport_kind::automatic:
      return make_auto_sender(config);
    case kv_transport_kind::inproc:
      return make_inproc_sender(std::move(config));
    case kv_transport_kind::tcp: {
      auto s = make_tcp_sender(std::move(config));
      if (!s)
        return s.error();
      return std::unique_ptr<kv_sender>{std::move(*s)};
    }
    case kv_transport_kind::ucx:
      return make_ucx_sender(std::move(config));
    case kv_transport_kind::cuda_ipc:
#if DYNAMO_TRANSFER_HAVE_CUDA
      return make_cuda_ipc_sender(std::move(config));
#else
      break;
#endif
  }
  return unknown_transport(protocol::to_string(transport));
}

expected<std::unique_ptr<kv_sender>> make_kv_sender(std::string_view transport, kv_sender_config config) {
  auto kind = protocol::parse_kv_transport(transport);
  if (!kind)
    return unknown_transport(transport);
  return make_kv_sender(*kind, std::move(config));
}

expected<protocol::kv_connection_info>
select_offer(const std::vector<protocol::kv_connection_info>& offers, std::string_view host_id,
             kv_memory local_memory) {
  auto find = [&](std::string_view name, bool same_host) -> const protocol::kv_connection_info* {
    for (const auto& o : offers) {
      if (o.transport == name && (!same_host || o.host_id == host_id))
        return &o;
    }
    return nullptr;
  };
  if (local_memory == kv_memory::cuda_device) {
    // cuda-ipc across processes on this host; inproc (cudaMemcpy) inside this process.
    for (auto* o : {find("cuda-ipc", true), find("inproc", true)}) {
      if (o)
        return *o;
    }
    return make_error(errc::unsupported,
                      "kv transfer: device blocks need a cuda-ipc or inproc receiver on this host (the "
                      "worker stages them through host memory for ucx or tcp)");
  }
  for (auto* o : {find("ucx", false), find("tcp", false), find("inproc", true)}) {
    if (o)
      return *o;
  }
  return make_error(errc::unsupported, "kv transfer: no offer this sender can use");
}

} // namespace dynamo::planes
