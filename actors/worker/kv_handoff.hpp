// A worker's side of disaggregated prefill/decode: the KV transfer objects
// (a receiver over the worker's KV memory on decode workers, a sender on
// prefill workers, created on first use) and the kv_push RPC that a decode
// worker sends to the prefill worker holding a prompt's blocks. Called from
// the worker actor only; completion callbacks run on transport/plane threads.
#pragma once

#include "planes/request/request_plane.hpp"
#include "planes/transfer/kv_staging.hpp"
#include "planes/transfer/kv_transport.hpp"
#include "runtime/engine/executor.hpp"
#include "runtime/protocol/disagg.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace dynamo::actors {

struct kv_handoff_config {
  protocol::kv_transport_kind transport = protocol::kv_transport_kind::automatic;
  std::chrono::milliseconds timeout{10'000};       ///< one transfer, end to end
  double simulated_bandwidth = 64e9;               ///< bytes/s when the executor has no KV bytes (mocker)
  /// Device KV over ucx or tcp goes through this much pinned host memory per
  /// side, in whole blocks (a transfer that finds too few free fails and is
  /// prefilled locally). With 256 slots (94 MB of SmolLM2's 360 KiB blocks),
  /// 16 concurrent 512-token prompts left half the transfers without slots.
  uint64_t staging_bytes = uint64_t{1} << 30;
  std::string bind_host = "127.0.0.1"; ///< tcp: where the decode side's receiver listens
  std::string advertise_host;          ///< tcp: the host its offers name ("": bind_host)
};

class kv_handoff {
public:
  kv_handoff(kv_handoff_config cfg, uint64_t worker_id, std::shared_ptr<planes::request_client> client);
  ~kv_handoff();

  /// Decode side: how the prefill worker reaches this worker's KV memory.
  [[nodiscard]] expected<std::vector<protocol::kv_connection_info>>
  receiver_offers(const engine::kv_memory_view& mem);

  /// Decode side: asks the prefill worker to push `req`'s blocks here; `done`
  /// runs once with an empty error when every block landed.
  void pull(const protocol::kv_prefill_result& source, protocol::kv_push_request req,
            std::function<void(caf::error)> done);

  /// Prefill side: pushes held blocks into a decode worker; `done` once.
  void push(const engine::kv_memory_view& mem, const protocol::kv_push_request& req,
            std::function<void(protocol::kv_transfer_status)> done);

  /// Mocker: how long moving `blocks` blocks of `layout` would take.
  [[nodiscard]] std::chrono::microseconds simulated_time(const protocol::kv_layout& layout,
                                                         size_t blocks) const;

  [[nodiscard]] const kv_handoff_config& config() const noexcept { return cfg_; }

private:
  kv_handoff_config cfg_;
  /// Device KV over a host-only transport (ucx, tcp) is staged through host memory.
  [[nodiscard]] bool staged(const engine::kv_memory_view& mem) const noexcept;
  [[nodiscard]] uint32_t staging_slots(const engine::kv_memory_view& mem) const noexcept;

  uint64_t worker_id_;
  std::shared_ptr<planes::request_client> client_;
  std::shared_ptr<planes::kv_staging_pool> recv_staging_; ///< decode side, when staged
  planes::kv_region recv_device_;                         ///< the device blocks recv_staging_ feeds
  std::shared_ptr<planes::kv_staging_pool> send_staging_; ///< prefill side, when staged
  std::shared_ptr<planes::kv_receiver> receiver_; ///< shared with recv_staging_ when it owns the slots
  std::unique_ptr<planes::kv_sender> sender_;
  uint64_t next_transfer_ = 1;
};

/// A region over an executor's KV memory.
[[nodiscard]] planes::kv_region region_of(const engine::kv_memory_view& mem);

} // namespace dynamo::actors
