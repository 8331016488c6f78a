// Per-request grammar state for constrained decoding: fills the allowed-token
// bitmask for the next step, accepts the sampled token, and says whether the
// grammar may or must end. Owned by one request (the sampler's caller); not
// thread-safe, but many matchers share one compiled_grammar across threads.
#pragma once

#include "runtime/grammar/compiled_grammar.hpp"
#include "runtime/grammar/token_walk.hpp"

#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace dynamo::gram {

class matcher {
public:
  explicit matcher(std::shared_ptr<const compiled_grammar> g);

  /// Words of the mask fill_next_token_bitmask writes: ceil(vocab / 64).
  [[nodiscard]] size_t mask_words() const noexcept { return g_->vocab().mask_words(); }

  /// Sets bit `id` (word id / 64, bit id % 64) of `mask` for every token that
  /// may come next and clears the others: grammar tokens whose bytes keep the
  /// output a prefix of the grammar's language, and the EOS set exactly when
  /// the grammar can end here. After termination nothing is allowed.
  /// `mask` has at least mask_words() words.
  void fill_next_token_bitmask(std::span<uint64_t> mask);

  /// Advances by token `id`. Errors (errc::invalid_argument, state unchanged):
  /// an id outside the vocabulary, a token the grammar does not allow here
  /// (special tokens never; EOS only when can_terminate()), or any token after
  /// termination.
  [[nodiscard]] expected<void> accept_token(uint32_t id);

  /// Advances by raw bytes (forced text, e.g. a prefix the API inserts).
  /// Errors as accept_token, with the offending byte offset.
  [[nodiscard]] expected<void> accept_bytes(std::string_view bytes);

  /// The output so far is a complete sentence of the grammar (EOS allowed).
  [[nodiscard]] bool can_terminate() const noexcept;
  /// Some byte can still extend the output (false: only EOS remains).
  [[nodiscard]] bool can_continue() const noexcept;
  /// EOS has been accepted.
  [[nodiscard]] bool is_terminated() const noexcept { return terminated_; }

  /// Back to the start of the grammar.
  void reset();

  /// Most stacks a grammar may be ambiguous by at once (accept fails beyond).
  static constexpr size_t max_stacks = 256;

private:
  [[nodiscard]] expected<void> advance(std::string_view bytes, std::string_view what);

  std::shared_ptr<const compiled_grammar> g_;
  detail::walker walker_;
  std::vector<std::vector<uint32_t>> stacks_; ///< live parses, bottom first
  bool terminated_ = false;
  std::vector<detail::config> cur_, next_;
  std::vector<uint32_t> tops_seen_;
};

} // namespace dynamo::gram
