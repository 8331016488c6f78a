// The mocker's "model": the next token is a pure function of (previous token,
// position), printable ASCII (32..126) for tok::byte_tokenizer, so a request
// resumed anywhere (preempted, or migrated with prompt + output so far) goes on
// with the same tokens. Used by mock_executor and tests; pure, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::mocker {

inline constexpr uint32_t first_token = 32; ///< ' '
inline constexpr uint32_t last_token = 126; ///< '~'

/// The token the mocker emits at `position` (0-based index in the sequence it
/// extends) after `prev`.
[[nodiscard]] uint32_t next_token(uint32_t prev, uint32_t position) noexcept;

/// The `n` tokens the mocker generates after `tokens`. REQUIRES: !tokens.empty().
[[nodiscard]] std::vector<uint32_t> continuation(std::span<const uint32_t> tokens, uint32_t n);

} // namespace dynamo::mocker
