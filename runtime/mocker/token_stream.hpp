// The mocker's "model": the next token is a pure function of (previous token,
// position, stream), printable ASCII (32..126) for tok::byte_tokenizer, so a
// request resumed anywhere (preempted, or migrated with prompt + output so
// far) goes on with the same tokens. The stream makes the seed matter: an
// unseeded request's choice 0 uses stream 0 (the historical sequence), a
// seeded one stream_of(seed), so equal seeds give equal outputs and different
// seeds differ. Used by mock_executor and tests; pure, thread-safe.
#pragma once

#include "runtime/protocol/llm.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dynamo::mocker {

inline constexpr uint32_t first_token = 32; ///< ' '
inline constexpr uint32_t last_token = 126; ///< '~'

/// The stream of a sequence: 0 for an unseeded choice 0; a mix of the seed
/// when seeded (choice c of an n > 1 request has seed + c already); a mix of
/// the choice for the other unseeded choices, so that they differ too.
[[nodiscard]] uint64_t stream_of(std::optional<uint64_t> seed, uint32_t choice) noexcept;

/// The token the mocker emits at `position` (0-based index in the sequence it
/// extends) after `prev`, in `stream`.
[[nodiscard]] uint32_t next_token(uint32_t prev, uint32_t position, uint64_t stream = 0) noexcept;

/// Scripted replies, for deterministic API tests (tool calls, reasoning): when
/// `tokens` (byte tokens) hold "<mock_reply>TEXT</mock_reply>", the last such
/// TEXT's bytes, which the sequence then emits instead of its pseudo-random
/// stream (and then EOS); nullopt otherwise.
[[nodiscard]] std::optional<std::vector<uint32_t>> scripted_reply(std::span<const uint32_t> tokens);

/// Width of the mocker's embeddings.
inline constexpr uint32_t embedding_size = 64;

/// The mocker's "hidden state" of the token `last` at `position` (the last
/// prompt token of an embed request): embedding_size values in [-1, 1), a
/// pure function of both, so equal prompt endings give equal embeddings.
[[nodiscard]] std::vector<float> embedding(uint32_t last, uint32_t position);

/// The mocker's logprob of prompt token `target` at `position` (>= 1): a
/// pure function of both in [-5, -0.1], with `target` as its one
/// alternative when k > 0 (well-formed, not a distribution).
[[nodiscard]] protocol::token_logprob prompt_logprob(uint32_t target, uint32_t position, uint32_t k);

/// The `n` tokens the mocker generates after `tokens` in `stream`.
/// REQUIRES: !tokens.empty().
[[nodiscard]] std::vector<uint32_t> continuation(std::span<const uint32_t> tokens, uint32_t n,
                                                 uint64_t stream = 0);

} // namespace dynamo::mocker
