// The matcher's inner loop (internal): parser configurations (a state plus a
// persistent stack of return states in an arena), advancing them by one byte,
// and walking a sorted token list so tokens that share a prefix share its
// work. Used by compiled_grammar (per-state mask cache) and matcher (the
// context-dependent tokens). One walker per thread/request: it is scratch.
#pragma once

#include "runtime/grammar/automaton.hpp"
#include "runtime/grammar/token_vocab.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace dynamo::gram::detail {

/// Below the bottom of a real stack: the whole grammar has matched.
inline constexpr uint32_t node_bottom = 0xFFFFFFFFu;
/// Below the base of a cache walk: the context is unknown.
inline constexpr uint32_t node_base = 0xFFFFFFFEu;

struct config {
  uint32_t state;
  uint32_t node; ///< arena index of the caller's return state, or a sentinel
};

struct stack_node {
  uint32_t state;
  uint32_t parent;
};

enum class token_result : uint8_t { rejected, accepted, uncertain };

class walker {
public:
  explicit walker(const automaton& a) : a_(&a) {}

  void reset() { arena_.clear(); }
  [[nodiscard]] uint32_t push(uint32_t state, uint32_t parent) {
    arena_.push_back({state, parent});
    return static_cast<uint32_t>(arena_.size() - 1);
  }
  /// A configuration for the real stack `st` (bottom first, top last).
  [[nodiscard]] config load(std::span<const uint32_t> st);
  /// The stack of `c`, bottom first.
  void unload(config c, std::vector<uint32_t>& out) const;

  /// Appends to `out` every configuration `c` reaches by consuming `b`
  /// (calling into rules and returning from completed ones on the way);
  /// out[out_begin..] holds this step's results so far (kept unique).
  /// Sets `base_pop` when some path completes the base rule of a cache walk
  /// and `b` can follow it in some context.
  void step(config c, uint8_t b, std::vector<config>& out, size_t out_begin, bool& base_pop);

  /// Classifies tokens from the configurations `init`: accepted (some path
  /// consumes all bytes), uncertain (only by leaving the base rule), or
  /// rejected. `list` holds sorted-vocabulary indices in increasing order
  /// (empty: the whole sorted vocabulary). Calls on(index, token_id, result).
  template <class F>
  void walk(const token_vocab& v, std::span<const config> init, std::span<const uint32_t> list, F&& on);

private:
  struct level {
    uint32_t cfg_end;
    uint32_t arena_size;
    bool uncertain;
  };
  const automaton* a_;
  std::vector<stack_node> arena_;
  std::vector<config> cfgs_;
  std::vector<uint32_t> cfg_begin_;
  std::vector<level> levels_;
};

template <class F>
void walker::walk(const token_vocab& v, std::span<const config> init, std::span<const uint32_t> list, F&& on) {
  const automaton& a = *a_;
  cfgs_.assign(init.begin(), init.end());
  // levels_[d]: the configurations after d bytes of the current token are
  // cfgs_[cfg_begin_[d], levels_[d].cfg_end); deeper levels follow them.
  if (levels_.size() < v.max_token_bytes() + 1) levels_.resize(v.max_token_bytes() + 1), cfg_begin_.resize(levels_.size());
  levels_[0] = level{static_cast<uint32_t>(cfgs_.size()), static_cast<uint32_t>(arena_.size()), false};
  cfg_begin_[0] = 0;
  const bool all = list.empty();
  const uint32_t n = all ? v.sorted_count() : static_cast<uint32_t>(list.size());
  constexpr uint32_t none = 0xFFFFFFFFu;
  uint32_t valid = 0, dead = none;
  bool dead_uncertain = false;
  std::string_view prev;
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t idx = all ? k : list[k];
    const std::string_view bytes = v.sorted_bytes(idx);
    uint32_t lcp = 0;
    if (k > 0) {
      if (all) {
        lcp = v.lcp(idx);
      } else {
        const size_t m = std::min(prev.size(), bytes.size());
        while (lcp < m && prev[lcp] == bytes[lcp]) ++lcp;
      }
    }
    prev = bytes;
    if (dead != none && dead <= lcp) {
      on(idx, v.sorted(idx), dead_uncertain ? token_result::uncertain : token_result::rejected);
      continue;
    }
    dead = none;
    uint32_t d = std::min(valid, lcp);
    cfgs_.resize(levels_[d].cfg_end);
    arena_.resize(levels_[d].arena_size);
    while (d < bytes.size()) {
      const uint8_t b = static_cast<uint8_t>(bytes[d]);
      const uint32_t first = cfg_begin_[d], end = levels_[d].cfg_end;
      const uint32_t begin = static_cast<uint32_t>(cfgs_.size());
      bool pop = false;
      if (end - first == 1 && !a.accepting(cfgs_[first].state) && a.calls(cfgs_[first].state).empty()) {
        // The common case: one parse inside a rule, no calls or returns here.
        const config c = cfgs_[first];
        if (const int32_t t = a.next(c.state, b); t >= 0) cfgs_.push_back({static_cast<uint32_t>(t), c.node});
      } else {
        for (uint32_t i = first; i < end; ++i) step(cfgs_[i], b, cfgs_, begin, pop);
      }
      ++d;
      levels_[d] = level{static_cast<uint32_t>(cfgs_.size()), static_cast<uint32_t>(arena_.size()),
                         levels_[d - 1].uncertain || pop};
      cfg_begin_[d] = begin;
      if (levels_[d].cfg_end == begin) {
        dead = d;
        dead_uncertain = levels_[d].uncertain;
        break;
      }
    }
    valid = d;
    if (dead == none)
      on(idx, v.sorted(idx), token_result::accepted);
    else
      on(idx, v.sorted(idx), dead_uncertain ? token_result::uncertain : token_result::rejected);
  }
}

} // namespace dynamo::gram::detail
