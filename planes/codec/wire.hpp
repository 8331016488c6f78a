// Byte-level helpers shared by the planes' wire formats: big-endian integers,
// the default message-size limit and the wall clock used in envelopes/leases.
// Called by planes/request, planes/event and planes/discovery (never by actors).
// Pure functions; safe from any thread. No ZeroMQ here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::planes {

using bytes = std::vector<uint8_t>;

/// Largest message a plane accepts or sends (DYN_TCP_MAX_MESSAGE_SIZE in Dynamo).
inline constexpr size_t default_max_message_bytes = size_t{32} << 20;

/// Writes `v` big-endian into out[0..8).
void put_u64_be(uint8_t* out, uint64_t v) noexcept;

/// Reads a big-endian u64 from in[0..8).
[[nodiscard]] uint64_t get_u64_be(const uint8_t* in) noexcept;

/// Appends `v` big-endian to `out`.
void append_u64_be(bytes& out, uint64_t v);

/// Copies a span into an owned byte vector.
[[nodiscard]] bytes to_bytes(std::span<const uint8_t> data);

/// Milliseconds since the Unix epoch (std::chrono::system_clock).
[[nodiscard]] int64_t wall_clock_ms() noexcept;

} // namespace dynamo::planes
