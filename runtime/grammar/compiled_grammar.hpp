// A grammar bound to a vocabulary: the automaton plus, per automaton state,
// the tokens that state accepts regardless of what is below it on the stack
// (a bitset or id list) and the few tokens that depend on it. Entries are
// computed on first use and then shared: one compiled_grammar serves every
// request with the same grammar and model; all methods are thread-safe.
#pragma once

#include "runtime/grammar/automaton.hpp"
#include "runtime/grammar/token_vocab.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace dynamo::gram {

namespace detail {
class walker;
}

/// What one automaton state allows, independent of the stack below it.
struct mask_entry {
  std::vector<uint64_t> accepted_bits; ///< dense form (vocab bits), or empty
  std::vector<uint32_t> accepted_ids;  ///< sparse form when accepted_bits is empty
  std::vector<uint32_t> uncertain;     ///< sorted-vocab indices decided by the stack below
};

class compiled_grammar {
public:
  /// Compiles `g` (automaton::build errors) for `vocab`.
  [[nodiscard]] static expected<std::shared_ptr<const compiled_grammar>> compile(
      const grammar& g, std::shared_ptr<const token_vocab> vocab, const automaton_limits& limits = {});
  compiled_grammar(std::shared_ptr<const automaton> a, std::shared_ptr<const token_vocab> v);

  [[nodiscard]] const gram::automaton& rules() const noexcept { return *a_; }
  [[nodiscard]] const token_vocab& vocab() const noexcept { return *v_; }

  /// The entry of `state`, computed with `scratch` on first use.
  [[nodiscard]] const mask_entry& entry(uint32_t state, detail::walker& scratch) const;
  /// Computes every state's entry now (e.g. off the request path).
  void precompute() const;
  /// Entries computed so far and their bytes (for metrics / benchmarks).
  [[nodiscard]] size_t cached_entries() const;
  [[nodiscard]] size_t cached_bytes() const noexcept;

private:
  [[nodiscard]] std::unique_ptr<mask_entry> build_entry(uint32_t state, detail::walker& scratch) const;

  std::shared_ptr<const gram::automaton> a_;
  std::shared_ptr<const token_vocab> v_;
  mutable std::unique_ptr<std::atomic<const mask_entry*>[]> cache_;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<mask_entry>> owned_;
  mutable std::atomic<size_t> bytes_{0};
};

} // namespace dynamo::gram
