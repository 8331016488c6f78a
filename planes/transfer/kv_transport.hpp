// The KV-block transfer plane: a decode worker's kv_receiver exposes its KV region and
// publishes offers; a prefill worker's kv_sender writes (source, destination) block
// pairs into it asynchronously on its own thread. Thread rules: methods are thread-safe;
// callbacks run on a transport thread and must not block or destroy their caller.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_transfer.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::planes {

enum class kv_memory : uint8_t { host, cuda_device };

/// A worker's KV blocks: block i is [base + i * block_stride, + bytes_per_block).
/// The memory is the caller's and must outlive every receiver/sender using it.
struct kv_region {
  void* base = nullptr;
  uint64_t num_blocks = 0;
  uint64_t block_stride = 0; ///< >= layout.bytes_per_block
  kv_memory memory = kv_memory::host;
  int device = 0; ///< CUDA device ordinal when memory == cuda_device (base from cudaMalloc)
};

/// Runs once per transfer: on the sender when it ends (ok: every byte is in the
/// receiver's memory and the receiver knows), on the receiver when a transfer landed
/// or was abandoned.
///
/// The sender's verdict is the one workers act on. A transfer the sender reports as
/// failed may still have written some destination blocks, and bytes already on their
/// way (a socket buffer, a rendezvous in progress) may land later. So the decode worker
/// recomputes those blocks locally and does not hand them to another request until
/// its receiver reports that transfer through on_received or `stale_after` has passed.
using kv_status_callback = std::function<void(const protocol::kv_transfer_status&)>;

/// How UCX moves blocks. `am`: active messages, each carrying up to `batch_runs` runs
/// of blocks (gathered with an iov, landed with an iov); a single-run message is
/// contiguous, which UCX 1.13 moves on one host by a rendezvous the receiver completes
/// with one CMA copy (process_vm_readv); multi-run (iov) messages need fewer round trips
/// but UCX 1.13 moves them without CMA (no process_vm_readv under strace).
/// `put`: RMA put into the receiver's mapped region, a flush, then a notification.
/// Debian's UCX 1.13 has no RDMA-capable RMA lane for shared memory or TCP, so `put`
/// is emulated in software there (research/deps.md 4; measured in the benchmark).
enum class ucx_method : uint8_t { am, put };

/// UCX endpoint error handling. `none` lets UCX 1.13 pick shared memory + CMA on one
/// host, but a dead receiver is then noticed only by the transfer's deadline and its
/// endpoint cannot be force-closed (it is kept until the sender is destroyed). `peer`
/// reports a dying peer through UCX and force-closes, but makes UCX pick TCP or, with
/// mm_error_handling, shared-memory copy-in without CMA (slower; see the benchmark).
enum class ucx_error_mode : uint8_t { none, peer };

struct ucx_transport_options {
  ucx_method method = ucx_method::am;
  /// `peer` by default: it notices a dead peer and, measured on the 2-core VM
  /// (docs/BENCHMARKS.md), its shared-memory copy-in ran 1.4-2.5x faster than
  /// `none`'s CMA rendezvous for 4-256 MiB hand-offs (6-8 GB/s against 3-5).
  ucx_error_mode error_mode = ucx_error_mode::peer;
  bool mm_error_handling = true; ///< UCX_MM_ERROR_HANDLING for this context (peer mode)
  std::string tls;               ///< UCX_TLS for this context only; "" = UCX's default
  /// `am`: most runs in one message (1..256). 1 (the default) keeps every message
  /// contiguous so one host uses CMA; on this 2-core VM the iov pipeline measured
  /// slower and far noisier (see dynamo-transfer-bench, path ucx-shm-iov16).
  uint32_t batch_runs = 1;
  /// The progress thread keeps polling this long after the last event before it
  /// sleeps on the worker's event fd (0: sleep at once; lowest CPU, more wake-ups).
  std::chrono::microseconds progress_spin{0};
  /// Sender: a receiver on this host whose region UCX allocated in shared memory
  /// (kv_receiver_config::allocate_region) is mapped here with ucp_rkey_ptr and
  /// written directly, one memcpy per byte, by this many copy threads (transfers up
  /// to 8 MiB by the progress thread itself); then the receiver is told by a done
  /// message. 0: active messages for every receiver.
  /// The mapping lasts until the endpoint fails (error mode peer) or the sender
  /// goes; a dead receiver's memory stays mapped here until then.
  uint32_t copy_threads = 2;
};

struct tcp_transport_options {
  std::string bind_host = "127.0.0.1"; ///< receiver: where to listen
  std::string advertise_host;          ///< receiver: host in the offer ("" = bind_host)
  uint16_t port = 0;                   ///< receiver: 0 = any free port
  int socket_buffer_bytes = 4 << 20;   ///< SO_SNDBUF / SO_RCVBUF
};

struct kv_transport_options {
  ucx_transport_options ucx;
  tcp_transport_options tcp;
  /// Receiver: a transfer that started but never completed is abandoned (reported
  /// through on_received as errc::timeout) after this long.
  std::chrono::milliseconds stale_after{60'000};
};

struct kv_receiver_config {
  protocol::kv_layout layout;
  /// With allocate_region, base must be null: the transport allocates
  /// num_blocks * block_stride bytes of host memory itself (see region()).
  kv_region region;
  kv_status_callback on_received; ///< may be empty
  kv_transport_options options;
  /// ucx only: the receiver allocates its region with UCX in shared memory, so a
  /// sender on the same host copies blocks straight into it (copy_threads). For
  /// staging slots; an engine's own KV memory cannot be moved there.
  bool allocate_region = false;
};

struct kv_sender_config {
  protocol::kv_layout layout;
  kv_region region; ///< the sender's own blocks (source ids index it)
  kv_transport_options options;
};

class kv_receiver {
public:
  virtual ~kv_receiver() = default;
  /// "inproc", "tcp", "ucx", "cuda-ipc" or "auto" (several transports at once).
  [[nodiscard]] virtual std::string_view transport() const noexcept = 0;
  /// How senders reach this receiver, best first: publish them (discovery record,
  /// prefill request). A sender picks one with select_offer().
  [[nodiscard]] virtual std::vector<protocol::kv_connection_info> offers() const = 0;
  /// Human-readable transport details for debugging (UCX: lanes per sender).
  [[nodiscard]] virtual std::string debug_info() const = 0;
  /// The memory it allocated with allocate_region (valid while the receiver
  /// lives); an empty region when it lands into the caller's memory.
  [[nodiscard]] virtual kv_region region() const { return {}; }
};

class kv_sender {
public:
  virtual ~kv_sender() = default;
  [[nodiscard]] virtual std::string_view transport() const noexcept = 0;
  /// Copies request.source_block_ids[i] -> destination_block_ids[i] of the receiver
  /// named by request.connection. Returns at once; `done` runs exactly once on the
  /// sender's thread, with errc::invalid_argument (layout mismatch, ids out of range),
  /// malformed_message (bad descriptor), unsupported (wrong transport or memory),
  /// timeout (`timeout` passed), disconnected (receiver gone) or cancelled (sender
  /// destroyed). After a failure the caller falls back to local prefill.
  virtual void send(const protocol::kv_transfer_request& request,
                    std::chrono::milliseconds timeout, kv_status_callback done) = 0;
  /// Human-readable transport details for debugging (UCX: ucp_ep_print_info).
  [[nodiscard]] virtual std::string debug_info() const = 0;
};

/// Transports this build has: "inproc", "tcp", "ucx" and, with CUDA, "cuda-ipc".
[[nodiscard]] std::vector<std::string> available_transports();

/// A receiver for `transport`, or "auto": every transport that fits the region
/// (device memory: cuda-ipc; host memory: ucx then tcp). Errors: invalid_argument
/// (bad layout or region), unsupported (unknown transport, memory it cannot serve),
/// io_error (sockets, UCX), device_error (CUDA).
[[nodiscard]] expected<std::unique_ptr<kv_receiver>> make_kv_receiver(protocol::kv_transport_kind transport,
                                                                       kv_receiver_config config);
/// The same by name (protocol::parse_kv_transport; unsupported for an unknown name).
[[nodiscard]] expected<std::unique_ptr<kv_receiver>> make_kv_receiver(std::string_view transport,
                                                                       kv_receiver_config config);

/// A sender for `transport`, or "auto": one that serves any request by the
/// transport its connection names.
[[nodiscard]] expected<std::unique_ptr<kv_sender>> make_kv_sender(protocol::kv_transport_kind transport,
                                                                   kv_sender_config config);
/// The same by name (protocol::parse_kv_transport; unsupported for an unknown name).
[[nodiscard]] expected<std::unique_ptr<kv_sender>> make_kv_sender(std::string_view transport,
                                                                   kv_sender_config config);

/// Picks the offer to use. A sender with CUDA device memory: cuda-ipc on this host,
/// else inproc on this host (same process), else none (actors/worker/kv_handoff
/// stages device blocks through host memory for ucx or tcp, and passes host). Host memory: ucx, else tcp,
/// else inproc when on this host.
/// errc::unsupported when none fits.
[[nodiscard]] expected<protocol::kv_connection_info>
select_offer(const std::vector<protocol::kv_connection_info>& offers, std::string_view local_host_id,
             kv_memory local_memory);

/// This machine's identity for "same host" checks: hostname + kernel boot id.
[[nodiscard]] const std::string& local_host_id();

} // namespace dynamo::planes
