// The grammar representation every structured-output source compiles to: a
// context-free grammar over bytes (rules of expressions: byte sets, sequences,
// alternatives, bounded repeats, rule references). Built by the compilers in
// this directory and by API code composing them; a value type, not thread-safe
// while being built, read-only (shareable) afterwards.
#pragma once

#include "runtime/core/error.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dynamo::gram {

/// A set of bytes (256 bits).
struct byte_set {
  std::array<uint64_t, 4> bits{};
  [[nodiscard]] bool test(uint8_t b) const noexcept { return (bits[b >> 6] >> (b & 63)) & 1; }
  void set(uint8_t b) noexcept { bits[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) noexcept {
    for (unsigned b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  [[nodiscard]] bool empty() const noexcept { return (bits[0] | bits[1] | bits[2] | bits[3]) == 0; }
  byte_set& operator|=(const byte_set& o) noexcept {
    for (int i = 0; i < 4; ++i) bits[i] |= o.bits[i];
    return *this;
  }
  friend bool operator==(const byte_set&, const byte_set&) = default;
};

/// A closed range of Unicode code points.
using cp_range = std::pair<char32_t, char32_t>;

using expr_id = uint32_t;
using rule_id = uint32_t;

enum class expr_kind : uint8_t { empty, bytes, seq, alt, repeat, ref };

struct expr {
  expr_kind kind = expr_kind::empty;
  byte_set bytes;                 ///< kind bytes: one byte from this set
  std::vector<expr_id> children;  ///< seq, alt; repeat has one
  uint32_t min = 0, max = 0;      ///< repeat bounds; max == unbounded for no bound
  rule_id rule = 0;               ///< ref
};

/// A context-free grammar over bytes. Code points are lowered to UTF-8 byte
/// sequences when added, so matching is byte by byte and a token may end in the
/// middle of a character.
class grammar {
public:
  static constexpr uint32_t unbounded = std::numeric_limits<uint32_t>::max();

  /// A new rule named `name` (made unique with a numeric suffix if taken).
  [[nodiscard]] rule_id add_rule(std::string_view name);
  /// The rule called `name`, if any.
  [[nodiscard]] std::optional<rule_id> find_rule(std::string_view name) const;
  void define(rule_id r, expr_id body);
  void set_root(rule_id r) noexcept { root_ = r; }

  [[nodiscard]] expr_id empty();
  [[nodiscard]] expr_id bytes(const byte_set& s);
  [[nodiscard]] expr_id byte_range(uint8_t lo, uint8_t hi);
  /// The exact bytes of `text` (UTF-8 passes through unchanged).
  [[nodiscard]] expr_id literal(std::string_view text);
  /// One code point from `ranges` (or, when `negated`, any valid code point not
  /// in them), as UTF-8. Surrogates D800-DFFF are never produced.
  [[nodiscard]] expr_id code_points(std::vector<cp_range> ranges, bool negated = false);
  [[nodiscard]] expr_id seq(std::vector<expr_id> items);
  [[nodiscard]] expr_id alt(std::vector<expr_id> items);
  [[nodiscard]] expr_id repeat(expr_id e, uint32_t min, uint32_t max);
  [[nodiscard]] expr_id optional(expr_id e) { return repeat(e, 0, 1); }
  [[nodiscard]] expr_id star(expr_id e) { return repeat(e, 0, unbounded); }
  [[nodiscard]] expr_id plus(expr_id e) { return repeat(e, 1, unbounded); }
  [[nodiscard]] expr_id ref(rule_id r);

  [[nodiscard]] const expr& at(expr_id e) const { return exprs_[e]; }
  [[nodiscard]] size_t rule_count() const noexcept { return rules_.size(); }
  [[nodiscard]] size_t expr_count() const noexcept { return exprs_.size(); }
  [[nodiscard]] const std::string& rule_name(rule_id r) const { return rules_[r].name; }
  /// The body of `r`; rules are checked to be defined by check().
  [[nodiscard]] expr_id rule_body(rule_id r) const { return rules_[r].body; }
  [[nodiscard]] rule_id root() const noexcept { return root_; }

  /// errc::invalid_argument naming the first rule that is referenced but never
  /// defined, or when there is no root.
  [[nodiscard]] expected<void> check() const;

  /// A GBNF-like text of the grammar (debugging, error messages, docs).
  [[nodiscard]] std::string to_string() const;

private:
  static constexpr expr_id undefined = std::numeric_limits<expr_id>::max();
  struct rule_entry {
    std::string name;
    expr_id body = undefined;
  };
  std::vector<expr> exprs_;
  std::vector<rule_entry> rules_;
  rule_id root_ = std::numeric_limits<rule_id>::max();
};

/// Appends the UTF-8 encoding of `cp` to `out`.
void append_utf8(std::string& out, char32_t cp);

/// The UTF-8 byte-range sequences that together encode exactly the code
/// points lo..hi (surrogates excluded), each as (lo, hi) per byte position.
[[nodiscard]] std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_sequences(char32_t lo, char32_t hi);

} // namespace dynamo::gram
