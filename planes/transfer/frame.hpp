// The fixed 40-byte frame header of the tcp stream and of the ucx active messages,
// little-endian: magic "DKV1" | kind u8 | pad u8 | code u16 | transfer_id u64 |
// source_worker u64 | block u64 | length u64; ucx data messages append landing runs.
// Called by planes/transfer only. Pure functions; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::planes::transfer_detail {

enum class frame_kind : uint8_t {
  hello = 1,    ///< sender -> receiver first: block = expected receiver id, length = bytes_per_block
  data = 2,     ///< block = first destination block, length = payload bytes (whole blocks)
  done = 3,     ///< every data frame sent: block = blocks in the transfer, length = bytes
  done_rma = 4, ///< as done, the bytes were written out of band (RMA put, CUDA IPC)
  ack = 5,      ///< receiver -> sender: block = blocks landed, length = bytes, code = errc or 0
  cancel = 6,   ///< sender gave up (timeout): the receiver abandons the transfer
};

inline constexpr size_t frame_header_bytes = 40;

struct frame_header {
  frame_kind kind = frame_kind::data;
  uint16_t code = 0;
  uint64_t transfer_id = 0;
  uint64_t source_worker = 0;
  uint64_t block = 0;
  uint64_t length = 0;
};

using frame_bytes = std::array<uint8_t, frame_header_bytes>;

/// A run of destination blocks a batched data message lands in (ucx active messages:
/// the frame's `block` counts the runs, which follow the header as 8-byte entries
/// dst_block u32 | blocks u32, little-endian; the payload is their bytes in order).
struct landing_run {
  uint32_t dst_block = 0;
  uint32_t blocks = 0;
};

inline constexpr size_t landing_run_bytes = 8;

[[nodiscard]] frame_bytes encode_frame(const frame_header& h) noexcept;

/// errc::malformed_message for a wrong size, magic or kind.
[[nodiscard]] expected<frame_header> decode_frame(std::span<const uint8_t> in);

/// Appends the runs' 8-byte entries to `out`.
void append_runs(std::vector<uint8_t>& out, std::span<const landing_run> runs);

/// Exactly `count` runs from `in` (errc::malformed_message when the size differs).
[[nodiscard]] expected<std::vector<landing_run>> decode_runs(std::span<const uint8_t> in,
                                                             uint64_t count);

} // namespace dynamo::planes::transfer_detail
