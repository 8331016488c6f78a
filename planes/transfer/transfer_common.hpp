// Pieces every KV transport shares: region and request checks against a receiver's
// geometry, the plan of contiguous copy runs, offer decoding and status helpers.
// Called by the transports in planes/transfer (never by workers directly).
// Pure functions; safe from any thread.
#pragma once

#include "planes/transfer/kv_transport.hpp"
#include "runtime/protocol/codec.hpp"

#include <chrono>
#include <cstdint>
#include <string_view>
#include <vector>

namespace dynamo::planes::transfer_detail {

using clock = std::chrono::steady_clock;

/// One contiguous copy: `length` bytes from source offset to destination offset,
/// covering `blocks` whole blocks starting at destination block `dst_block`.
struct copy_run {
  uint64_t src_offset = 0;
  uint64_t dst_offset = 0;
  uint64_t length = 0;
  uint64_t dst_block = 0;
  uint64_t blocks = 0;
};

/// Largest run the planner merges consecutive blocks into.
inline constexpr uint64_t max_run_bytes = uint64_t{16} << 20;

/// The copies for `src_ids[i] -> dst_ids[i]`. Consecutive pairs whose source and
/// destination ids both ascend by one merge into one run when the side's stride
/// equals bytes_per_block (blocks touch), up to max_run_bytes.
[[nodiscard]] std::vector<copy_run> plan_runs(const std::vector<uint32_t>& src_ids,
                                              const std::vector<uint32_t>& dst_ids,
                                              uint64_t src_stride, uint64_t dst_stride,
                                              uint64_t bytes_per_block,
                                              uint64_t max_run = max_run_bytes);

/// errc::invalid_argument unless the layout is valid and the region holds it:
/// base set when there are blocks (null, in host memory, when the transport is
/// to `allocate` it), stride >= bytes_per_block, no size overflow.
[[nodiscard]] expected<void> check_region(const kv_region& region,
                                          const protocol::kv_layout& layout, bool allocate = false);

/// The geometry a receiver advertises for `region`.
[[nodiscard]] protocol::kv_region_geometry geometry_of(const kv_region& region,
                                                       const protocol::kv_layout& layout);

/// Everything a sender checks before moving a byte: the request is valid, its layout
/// matches the sender's and the receiver's, the source ids fit the sender's region
/// and the destination ids fit the receiver's geometry. errc::invalid_argument.
[[nodiscard]] expected<void> check_request(const protocol::kv_transfer_request& request,
                                           const protocol::kv_layout& local_layout,
                                           const kv_region& local_region,
                                           const protocol::kv_region_geometry& remote);

/// Decodes request.connection.descriptor as T after checking the transport name:
/// errc::unsupported for another transport, malformed_message for bad bytes.
template <class T>
[[nodiscard]] expected<T> decode_descriptor(const protocol::kv_connection_info& info,
                                            std::string_view transport) {
  if (info.transport != transport)
    return make_error(errc::unsupported, "a " + std::string{transport} + " sender got an offer for '" +
                                             info.transport + "'");
  protocol::unpack_limits lim;
  lim.bin = 1 << 20; // descriptors are small: a UCX worker address is a few hundred bytes
  return protocol::decode<T>(info.descriptor, lim);
}

/// A successful status.
[[nodiscard]] protocol::kv_transfer_status ok_status(uint64_t transfer_id, uint64_t source_worker_id,
                                                     uint64_t blocks, uint64_t bytes,
                                                     clock::time_point started);

/// A failed status with code and message.
[[nodiscard]] protocol::kv_transfer_status error_status(uint64_t transfer_id,
                                                        uint64_t source_worker_id, errc code,
                                                        std::string message,
                                                        clock::time_point started);

/// A random non-zero id for a receiver.
[[nodiscard]] uint64_t new_receiver_id();

} // namespace dynamo::planes::transfer_detail
