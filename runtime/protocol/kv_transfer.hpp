// Wire descriptors of the KV-block hand-off between a prefill and a decode worker
// (research/dynamo.md 4): the KV layout both ends must agree on, the transfer order,
// a receiver's connection offer and the completion status. Used by planes/transfer
// and the workers. Plain values and pure functions; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::protocol {

enum class kv_dtype : uint8_t { f32 = 0, f16 = 1, bf16 = 2 };

[[nodiscard]] std::string_view to_string(kv_dtype d) noexcept;
/// Bytes of one element; 0 for a value outside the enum (a hostile decode).
[[nodiscard]] uint32_t dtype_bytes(kv_dtype d) noexcept;

/// Layout names. Whole blocks are copied, so a name is only an agreement between
/// both ends about the element order inside a block.
inline constexpr std::string_view block_major_layout = "block-major";
/// The CPU engine's host cache (runtime/model/kv_cache.hpp).
inline constexpr std::string_view head_major_layout = "head-major";

/// How a worker stores one KV block; the bytes of one block are contiguous.
///  - "block-major": ordered [layer][K=0,V=1][token in block][kv head][head_dim], so
///    element (l, kv, t, h, d) sits at byte
///      ((((l * 2 + kv) * block_size + t) * num_kv_heads + h) * head_dim + d) * dtype_bytes
///    from the block start (block_major_offset);
///  - "head-major": ordered [layer][K=0,V=1][kv head][token in block][head_dim], so
///      ((((l * 2 + kv) * num_kv_heads + h) * block_size + t) * head_dim + d) * dtype_bytes
///    (head_major_offset).
/// Both have
///   bytes_per_block = num_layers * 2 * block_size * num_kv_heads * head_dim * dtype_bytes.
/// Blocks themselves may sit at any stride >= bytes_per_block in a worker's region.
struct kv_layout {
  uint32_t num_layers = 0;
  uint32_t block_size = 0; ///< tokens per block
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  kv_dtype dtype = kv_dtype::f16;
  uint64_t bytes_per_block = 0;
  std::string name{block_major_layout};
  DYNAMO_MSGPACK_MAP(num_layers, block_size, num_kv_heads, head_dim, dtype, bytes_per_block, name);
  friend bool operator==(const kv_layout&, const kv_layout&) = default;
};

/// A block-major layout with bytes_per_block computed (0 when it overflows).
[[nodiscard]] kv_layout make_block_major_layout(uint32_t num_layers, uint32_t block_size,
                                                uint32_t num_kv_heads, uint32_t head_dim,
                                                kv_dtype dtype);

/// The same for a head-major layout.
[[nodiscard]] kv_layout make_head_major_layout(uint32_t num_layers, uint32_t block_size,
                                               uint32_t num_kv_heads, uint32_t head_dim,
                                               kv_dtype dtype);

/// errc::invalid_argument naming the field: a zero dimension, an unknown dtype or
/// name, or a bytes_per_block that does not match the dimensions.
[[nodiscard]] expected<void> validate(const kv_layout& layout);

/// Both layouts valid and identical; otherwise errc::invalid_argument naming the
/// first differing field ("layout mismatch: num_kv_heads 8 != 4", "layout
/// mismatch: name head-major != block-major"). A mismatch is never a silent
/// reinterpretation of bytes.
[[nodiscard]] expected<void> check_compatible(const kv_layout& local, const kv_layout& remote);

/// Byte offset of element (layer, kv, token, head, dim) inside one block, in
/// block-major order (whatever layout.name says).
[[nodiscard]] uint64_t block_major_offset(const kv_layout& layout, uint32_t layer, uint32_t kv,
                                          uint32_t token, uint32_t head, uint32_t dim) noexcept;

/// The same in head-major order (whatever layout.name says).
[[nodiscard]] uint64_t head_major_offset(const kv_layout& layout, uint32_t layer, uint32_t kv,
                                         uint32_t token, uint32_t head, uint32_t dim) noexcept;

/// The offset in the order layout.name names; nullopt for an unknown name.
[[nodiscard]] std::optional<uint64_t> element_offset(const kv_layout& layout, uint32_t layer,
                                                     uint32_t kv, uint32_t token, uint32_t head,
                                                     uint32_t dim) noexcept;

/// How to reach one receiver over one transport. `descriptor` is that transport's
/// own msgpack record (kv_tcp_descriptor, kv_ucx_descriptor, ...); `host_id`
/// identifies the machine (hostname + boot id) so a sender can tell "same host".
struct kv_connection_info {
  std::string transport; ///< "inproc" | "tcp" | "ucx" | "cuda-ipc"
  std::string host_id;
  std::vector<uint8_t> descriptor;
  DYNAMO_MSGPACK_MAP(transport, host_id, descriptor);
};

/// Largest number of blocks in one transfer.
inline constexpr size_t max_transfer_blocks = size_t{1} << 20;

/// Copy source_block_ids[i] of worker source_worker_id into destination_block_ids[i]
/// of the receiver reached through `connection`.
struct kv_transfer_request {
  uint64_t transfer_id = 0;
  uint64_t source_worker_id = 0;
  std::vector<uint32_t> source_block_ids;
  std::vector<uint32_t> destination_block_ids;
  kv_layout layout;
  kv_connection_info connection;
  DYNAMO_MSGPACK_MAP(transfer_id, source_worker_id, source_block_ids, destination_block_ids,
                     layout, connection);
};

/// errc::invalid_argument when the id lists differ in length, exceed
/// max_transfer_blocks or name a destination twice, or the layout is invalid.
[[nodiscard]] expected<void> validate(const kv_transfer_request& request);

/// The outcome of one transfer, as reported to the sender (its callback) and to
/// the receiver (its on_received), and as forwarded on the request plane.
struct kv_transfer_status {
  uint64_t transfer_id = 0;
  uint64_t source_worker_id = 0;
  uint8_t code = 0;     ///< 0 = every block landed; otherwise a dynamo::errc value
  std::string message;  ///< why it failed (empty on success)
  uint64_t blocks = 0;  ///< blocks that landed
  uint64_t bytes = 0;   ///< bytes that landed
  uint64_t elapsed_us = 0;
  DYNAMO_MSGPACK_MAP(transfer_id, source_worker_id, code, message, blocks, bytes, elapsed_us);

  [[nodiscard]] bool ok() const noexcept { return code == 0; }
};

/// The status as an error value: empty (default) caf::error when ok.
[[nodiscard]] caf::error status_error(const kv_transfer_status& status);

/// A failed status carrying `err`'s code and message.
[[nodiscard]] kv_transfer_status failed_status(uint64_t transfer_id, uint64_t source_worker_id,
                                               const caf::error& err);

/// FNV-1a 64 of `bytes` (integrity of opaque blobs inside descriptors).
[[nodiscard]] uint64_t fingerprint(const std::vector<uint8_t>& bytes) noexcept;

// Transport descriptors (kv_connection_info::descriptor). Each repeats the
// receiver's geometry so a sender checks ids and layout before writing a byte.

/// A receiver's memory as seen from outside: blocks 0..num_blocks-1 at block_stride.
struct kv_region_geometry {
  uint64_t num_blocks = 0;
  uint64_t block_stride = 0;
  kv_layout layout;
  DYNAMO_MSGPACK_MAP(num_blocks, block_stride, layout);
};

struct kv_inproc_descriptor {
  uint64_t receiver_id = 0;
  kv_region_geometry geometry;
  DYNAMO_MSGPACK_MAP(receiver_id, geometry);
};

struct kv_tcp_descriptor {
  uint64_t receiver_id = 0; ///< checked in the connection hello (a reused port is refused)
  std::string host;
  uint16_t port = 0;
  kv_region_geometry geometry;
  DYNAMO_MSGPACK_MAP(receiver_id, host, port, geometry);
};

struct kv_ucx_descriptor {
  uint64_t receiver_id = 0;
  std::vector<uint8_t> worker_address; ///< ucp_worker_get_address
  uint64_t remote_base = 0;            ///< address of block 0 in the receiver
  std::vector<uint8_t> rkey;           ///< ucp_rkey_pack of the mapped region
  kv_region_geometry geometry;
  /// fingerprint(worker_address) ^ fingerprint(rkey): UCX does not validate what it
  /// unpacks, so a damaged address or rkey is refused before it reaches UCX.
  uint64_t check = 0;
  DYNAMO_MSGPACK_MAP(receiver_id, worker_address, remote_base, rkey, geometry, check);
};

struct kv_cuda_ipc_descriptor {
  uint64_t receiver_id = 0;
  std::vector<uint8_t> ipc_handle; ///< cudaIpcMemHandle_t of the region's allocation
  std::string pci_bus_id;          ///< the receiver's GPU ("0000:3b:00.0")
  uint64_t pid = 0;                ///< the receiver's process (same-process IPC is refused)
  kv_region_geometry geometry;
  std::vector<uint8_t> control;    ///< kv_tcp_descriptor of the completion channel
  DYNAMO_MSGPACK_MAP(receiver_id, ipc_handle, pci_bus_id, pid, geometry, control);
};

} // namespace dynamo::protocol

MSGPACK_ADD_ENUM(dynamo::protocol::kv_dtype);
