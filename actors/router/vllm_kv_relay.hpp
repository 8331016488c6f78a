// One external engine's vLLM-format KV events relayed into a router: a
// planes::vllm_event_source (SUB + replay socket) feeding a route::vllm_relay
// (sequencing, gaps, conversion), whose router events go to the sink and whose
// memory answers the router's resync requests for that worker. model_watcher
// makes one per instance that advertises protocol::zmq_kv_events_key. The sink
// runs on the source's I/O thread and must not block; answer() from any thread.
#pragma once

#include "planes/event/zmq_vllm_source.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/route/vllm_relay.hpp"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::actors {

struct vllm_kv_relay_config {
  std::string endpoint;        ///< the engine's PUB address
  std::string replay_endpoint; ///< its replay ROUTER ("": gaps clear the worker's blocks)
  std::string topic;
  route::vllm_relay_options relay; ///< worker id, dp rank, block size (replay is set from above)
  std::chrono::milliseconds replay_timeout{2000};

  [[nodiscard]] bool operator==(const vllm_kv_relay_config&) const = default;
};

/// The relay an instance's discovery metadata asks for (protocol::zmq_kv_*):
/// nullopt when it names no endpoint; errc::config_error for a bad dp rank.
[[nodiscard]] expected<std::optional<vllm_kv_relay_config>>
vllm_kv_relay_config_of(const std::map<std::string, std::string>& metadata, uint64_t worker_id,
                        uint32_t kv_block_size);

class vllm_kv_relay {
public:
  using sink = std::function<void(std::vector<protocol::router_event>)>;

  /// Connects to the engine; errc::invalid_argument for an endpoint ZeroMQ rejects.
  [[nodiscard]] static expected<std::unique_ptr<vllm_kv_relay>> start(vllm_kv_relay_config config,
                                                                      sink to_router);
  ~vllm_kv_relay();

  /// The router's resync request for this worker, answered from the relay's memory.
  [[nodiscard]] protocol::kv_replay answer(const protocol::kv_resync_request& request) const;
  [[nodiscard]] route::vllm_relay_stats stats() const;
  [[nodiscard]] planes::vllm_source_stats source_stats() const;
  [[nodiscard]] const vllm_kv_relay_config& config() const noexcept { return config_; }

private:
  vllm_kv_relay(vllm_kv_relay_config config, sink to_router);
  void deliver(route::vllm_relay_step step); ///< REQUIRES: mtx_ held, on the I/O thread

  vllm_kv_relay_config config_;
  sink sink_;
  mutable std::mutex mtx_;
  route::vllm_relay relay_;
  std::unique_ptr<planes::vllm_event_source> source_; ///< last: stopped first
};

} // namespace dynamo::actors
