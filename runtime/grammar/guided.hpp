// The one home that turns a protocol::guided_decoding (the API's structured
// output or forced tool call, as the frontend resolved it) into a grammar, and
// the per-model cache of compiled grammars the worker's engine shares across
// requests. grammar_of/validate are pure (the frontend calls validate before
// routing); grammar_cache is thread-safe (one per model vocabulary).
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/grammar/compiled_grammar.hpp"
#include "runtime/grammar/grammar.hpp"
#include "runtime/protocol/llm.hpp"

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dynamo::gram {

/// The grammar of `g` (REQUIRES: g.kind != none). Errors are values whose
/// message is fit for an HTTP 400: errc::invalid_argument for a malformed spec
/// (bad JSON, schema, regex or GBNF, naming the place), errc::unsupported
/// naming the keyword or construct that is not supported.
[[nodiscard]] expected<grammar> grammar_of(const protocol::guided_decoding& g);

/// grammar_of plus the automaton build (undefined rules, left recursion, a
/// grammar that matches nothing, size limits); no token masks are computed.
/// What the frontend runs before routing.
[[nodiscard]] expected<void> validate(const protocol::guided_decoding& g);

/// Compiled grammars of one vocabulary keyed by (kind, spec), least recently
/// used dropped beyond `capacity`. A compiled_grammar is immutable and keeps
/// its per-state mask entries, so a second request with the same format pays
/// neither the compile nor the first vocabulary walks.
class grammar_cache {
public:
  explicit grammar_cache(std::shared_ptr<const token_vocab> vocab, size_t capacity = 64);

  /// The compiled grammar of `g` (grammar_of's and automaton::build's errors).
  [[nodiscard]] expected<std::shared_ptr<const compiled_grammar>> get(const protocol::guided_decoding& g);

  [[nodiscard]] const token_vocab& vocab() const noexcept { return *vocab_; }
  [[nodiscard]] size_t size() const;
  [[nodiscard]] size_t capacity() const noexcept { return capacity_; }

private:
  using entry = std::pair<std::string, std::shared_ptr<const compiled_grammar>>;
  std::shared_ptr<const token_vocab> vocab_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<entry> lru_; ///< most recently used first
  std::unordered_map<std::string, std::list<entry>::iterator> by_key_;
};

} // namespace dynamo::gram
