// Base64 (RFC 4648 section 4: standard alphabet, '=' padding), the encoding of
// bytes in JSON APIs such as etcd's v3 gateway. Decoding is strict and bounded.
// Pure functions; any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo {

[[nodiscard]] std::string base64_encode(std::span<const uint8_t> data);
[[nodiscard]] std::string base64_encode(std::string_view data);

/// errc::malformed_message for a length that is not a multiple of 4, a
/// character outside the alphabet or misplaced padding; errc::invalid_argument
/// when the decoded bytes would exceed `max_bytes` (checked before allocating).
[[nodiscard]] expected<std::vector<uint8_t>> base64_decode(std::string_view text, size_t max_bytes);

} // namespace dynamo
