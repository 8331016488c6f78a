// The mocker's "model": the next token is a pure function of the previous
// token and the position it takes, always printable ASCII (32..126), so text
// reads through tok::byte_tokenizer and a request resumed anywhere (after
// preemption, or migrated to another worker with prompt + output so far)
// continues with exactly the same tokens. Pure functions; safe from any thread.
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
