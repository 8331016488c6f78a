// How discovery records are stored: a msgpack map per record under the key
// "ns/component/endpoint/<instance hex>", and how path prefixes are parsed and
// matched. Shared by the file and in-memory stores. Pure functions; any thread.
#pragma once

#include "planes/discovery/discovery_plane.hpp"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::planes::discovery_codec {

/// Largest stored record accepted (payload included).
inline constexpr size_t max_record_bytes = size_t{4} << 20;

[[nodiscard]] bytes encode(const instance_record& rec);

/// Decodes and validates a record stored under `key`: errc::malformed_message
/// when the bytes do not parse, names are invalid or the key does not match.
[[nodiscard]] expected<instance_record> decode(std::string_view key, std::span<const uint8_t> data);

/// Splits "ns/component/endpoint/hex" prefixes into at most 4 validated
/// segments ("" -> none). errc::invalid_argument for anything else.
[[nodiscard]] expected<std::vector<std::string>> parse_prefix(std::string_view prefix);

/// True when the first segments of `key` equal `prefix`.
[[nodiscard]] bool key_matches(std::string_view key, const std::vector<std::string>& prefix);

/// True once renewed_at + ttl lies before `now_ms`.
[[nodiscard]] bool expired(const instance_record& rec, int64_t now_ms) noexcept;

} // namespace dynamo::planes::discovery_codec
