// A grammar compiled for matching: each rule becomes a deterministic
// automaton over byte classes with "call" edges into other rules (a recursive
// transition network), plus the first/follow byte sets the matcher prunes
// with. Built once per distinct grammar by compiled_grammar; immutable after
// build, so one instance is shared by every request and thread using it.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/grammar/grammar.hpp"

#include <memory>
#include <span>
#include <vector>

namespace dynamo::gram {

struct call_edge {
  rule_id callee = 0;
  uint32_t ret = 0; ///< the caller's state once the callee has matched
};

struct automaton_limits {
  uint32_t max_states = 200000; ///< DFA states over all rules
  uint32_t max_nfa_states = 400000; ///< per rule, before determinization
};

class automaton {
public:
  /// Compiles `g`. Errors (errc::invalid_argument): undefined rules, left
  /// recursion (naming the rules), a grammar that matches nothing, or more
  /// states than `limits` allow (naming the rule).
  [[nodiscard]] static expected<std::shared_ptr<const automaton>> build(const grammar& g,
                                                                         const automaton_limits& limits = {});

  /// The state after byte `b` in the same rule, or -1.
  [[nodiscard]] int32_t next(uint32_t s, uint8_t b) const noexcept { return next_[s * n_classes_ + class_[b]]; }
  [[nodiscard]] bool accepting(uint32_t s) const noexcept { return accepting_[s] != 0; }
  [[nodiscard]] std::span<const call_edge> calls(uint32_t s) const noexcept {
    return {calls_.data() + call_begin_[s], calls_.data() + call_begin_[s + 1]};
  }
  /// Bytes that can be consumed from `s` without leaving its rule (directly or
  /// by calling another rule).
  [[nodiscard]] const byte_set& first(uint32_t s) const noexcept { return first_[s]; }
  /// Bytes that start one of the calls of `s`.
  [[nodiscard]] const byte_set& call_first(uint32_t s) const noexcept { return call_first_[s]; }
  /// Bytes that can follow a completed `r` in some context.
  [[nodiscard]] const byte_set& follow(rule_id r) const noexcept { return follow_[r]; }

  [[nodiscard]] rule_id rule_of(uint32_t s) const noexcept { return state_rule_[s]; }
  /// The state a call of `r` starts in; never accepting (a call matches >= 1 byte).
  [[nodiscard]] uint32_t entry(rule_id r) const noexcept { return entry_[r]; }
  /// The start state of the whole grammar (accepting when it matches "").
  [[nodiscard]] uint32_t start() const noexcept { return start_; }
  [[nodiscard]] rule_id root() const noexcept { return root_; }
  [[nodiscard]] uint32_t state_count() const noexcept { return static_cast<uint32_t>(accepting_.size()); }
  [[nodiscard]] size_t rule_count() const noexcept { return names_.size(); }
  [[nodiscard]] const std::string& rule_name(rule_id r) const { return names_[r]; }

private:
  friend class automaton_builder;
  uint32_t n_classes_ = 1;
  std::array<uint8_t, 256> class_{};
  std::vector<int32_t> next_;
  std::vector<uint8_t> accepting_;
  std::vector<uint32_t> call_begin_;
  std::vector<call_edge> calls_;
  std::vector<byte_set> first_, call_first_;
  std::vector<rule_id> state_rule_;
  std::vector<uint32_t> entry_;
  std::vector<byte_set> follow_;
  std::vector<std::string> names_;
  uint32_t start_ = 0;
  rule_id root_ = 0;
};

} // namespace dynamo::gram
