// The expression parser of the Jinja subset (one tag's tokens -> expr tree),
// shared by the template parser. Internal to jinja_parser.cpp and
// jinja_expr_parser.cpp; an instance parses one tag on one thread.
#pragma once

#include "runtime/tokenizer/jinja_ast.hpp"
#include "runtime/tokenizer/jinja_lexer.hpp"

#include <algorithm>
#include <initializer_list>

namespace dynamo::tok::jinja {

inline constexpr int max_depth = 64;          // nesting of parentheses, lists, unary operators and blocks
inline constexpr size_t max_tag_tokens = 4096; // bounds every expression tree (and its recursive teardown)

// Parses the expression tokens of one tag.
class expr_parser {
public:
  expr_parser(std::vector<token> toks, int line) : t_(std::move(toks)), line_(line) {}

  [[nodiscard]] expected<expr_ptr> expression() { return checked(ternary()); }
  /// An expression without a trailing `if ... else` (for-loop iterables, whose `if` filters).
  [[nodiscard]] expected<expr_ptr> condition_free_expression() { return checked(or_expr()); }
  [[nodiscard]] const token& peek(size_t ahead = 0) const { return t_[std::min(p_ + ahead, t_.size() - 1)]; }
  [[nodiscard]] bool at_end() const { return peek().k == token::kind::end; }
  [[nodiscard]] bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).k == token::kind::op && peek(ahead).text == op;
  }
  [[nodiscard]] bool is_name(std::string_view n, size_t ahead = 0) const {
    return peek(ahead).k == token::kind::name && peek(ahead).text == n;
  }
  token next() { return t_[std::min(p_++, t_.size() - 1)]; }
  [[nodiscard]] caf::error error(const std::string& what) const {
    return make_error(errc::invalid_argument, "chat template line " + std::to_string(line_) + ": " + what);
  }
  [[nodiscard]] caf::error unsupported(const std::string& what) const {
    return make_error(errc::unsupported, "chat template line " + std::to_string(line_) + ": " + what);
  }
  [[nodiscard]] expected<void> expect_op(std::string_view op) {
    if (!is_op(op))
      return error("expected '" + std::string(op) + "' but found '" + peek().text + "'");
    ++p_;
    return {};
  }
  [[nodiscard]] expr_ptr make(expr_kind k, std::string name = {}) const {
    auto e = std::make_unique<expr>();
    e->kind = k;
    e->line = line_;
    e->name = std::move(name);
    return e;
  }

private:
  using binary_level = expected<expr_ptr> (expr_parser::*)();

  expected<expr_ptr> checked(expected<expr_ptr> e) const; ///< rejects trees too deep to evaluate

  expected<expr_ptr> binary(binary_level operand, std::initializer_list<std::string_view> ops, bool names) {
    auto lhs = (this->*operand)();
    while (lhs) {
      const auto& tk = peek();
      const bool hit = (names ? tk.k == token::kind::name : tk.k == token::kind::op) &&
                       std::find(ops.begin(), ops.end(), tk.text) != ops.end();
      if (!hit)
        break;
      auto e = make(expr_kind::binary, next().text);
      auto rhs = (this->*operand)();
      if (!rhs)
        return rhs;
      e->args.push_back(std::move(*lhs));
      e->args.push_back(std::move(*rhs));
      lhs = std::move(e);
    }
    return lhs;
  }

  expected<expr_ptr> ternary();
  expected<expr_ptr> or_expr() { return binary(&expr_parser::and_expr, {"or"}, true); }
  expected<expr_ptr> and_expr() { return binary(&expr_parser::not_expr, {"and"}, true); }
  expected<expr_ptr> not_expr();
  expected<expr_ptr> compare();
  expected<expr_ptr> add() { return binary(&expr_parser::concat, {"+", "-"}, false); }
  expected<expr_ptr> concat() { return binary(&expr_parser::mul, {"~"}, false); }
  expected<expr_ptr> mul() { return binary(&expr_parser::unary, {"*", "/", "//", "%"}, false); }
  expected<expr_ptr> unary();
  expected<expr_ptr> filters(expr_ptr e);
  expected<expr_ptr> postfix(expr_ptr e);
  expected<expr_ptr> primary();
  expected<void> call_args(expr& call);
  expected<expr_ptr> subscript(expr_ptr e);
  // A test's single argument without parentheses (jinja2's rule): a literal,
  // list, dict or a name other than else/or/and/is.
  [[nodiscard]] bool test_argument_follows() const {
    const token& t = peek();
    if (t.k == token::kind::string || t.k == token::kind::integer || t.k == token::kind::real)
      return true;
    if (is_op("[") || is_op("{"))
      return true;
    static constexpr std::string_view words[] = {"and", "or", "else", "is"};
    return t.k == token::kind::name && std::find(std::begin(words), std::end(words), t.text) == std::end(words);
  }

  std::vector<token> t_;
  size_t p_ = 0;
  int line_;
  int depth_ = 0;
};

} // namespace dynamo::tok::jinja
