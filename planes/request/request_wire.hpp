// The ZeroMQ request plane's frames (documented in planes/README.md): a 10-byte
// header {version u8 = 1, kind u8, stream id u64 BE} followed by a fixed number
// of body frames per kind. Decoders never trust input: anything off returns
// nullopt and the caller counts a malformed frame. Pure functions; any thread.
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"

#include <array>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dynamo::planes::request_wire {

inline constexpr uint8_t version = 1;
inline constexpr size_t header_size = 10;
/// Most stream ids one ping or pong may carry.
inline constexpr size_t max_ids = 1u << 16;
/// Longest endpoint path accepted.
inline constexpr size_t max_path_bytes = 1024;

enum class kind : uint8_t {
  // client -> server
  request = 1, ///< + [endpoint path, payload]
  cancel = 2,  ///< (no body)
  ping = 3,    ///< + [open stream ids, u64 BE each]; stream id 0
  // server -> client
  item = 16,   ///< + [payload]
  end = 17,    ///< (no body)
  error = 18,  ///< + [errc u8, utf-8 message]
  pong = 19,   ///< + [stream ids the server does not know]; stream id 0
};

struct header {
  enum kind kind = kind::request;
  uint64_t stream_id = 0;
};

[[nodiscard]] std::array<uint8_t, header_size> encode_header(kind k, uint64_t stream_id) noexcept;
/// nullopt: wrong size, version or kind.
[[nodiscard]] std::optional<header> decode_header(std::span<const uint8_t> frame) noexcept;
/// Body frames that follow a header of kind `k`.
[[nodiscard]] size_t body_frames(kind k) noexcept;
/// True for kinds a client sends (request, cancel, ping).
[[nodiscard]] bool is_client_kind(kind k) noexcept;

[[nodiscard]] bytes encode_ids(std::span<const uint64_t> ids);
/// nullopt: length not a multiple of 8, or more than max_ids ids.
[[nodiscard]] std::optional<std::vector<uint64_t>> decode_ids(std::span<const uint8_t> frame);

[[nodiscard]] bytes encode_error(const caf::error& err);
/// nullopt: empty frame or code 0.
[[nodiscard]] std::optional<caf::error> decode_error(std::span<const uint8_t> frame);

} // namespace dynamo::planes::request_wire
