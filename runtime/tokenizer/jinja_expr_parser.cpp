// Recursive-descent expression parser for the Jinja subset (see jinja_parser.hpp).
#include "runtime/tokenizer/jinja_parser.hpp"

namespace dynamo::tok::jinja {

namespace {

constexpr int max_tree_depth = 256;     // operator chains such as a + b + ... (evaluation recursion)

// Depth of an expression tree, without recursion.
int tree_depth(const expr& root) {
  int deepest = 0;
  std::vector<std::pair<const expr*, int>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [e, d] = stack.back();
    stack.pop_back();
    deepest = std::max(deepest, d);
    for (const auto& child : e->args)
      if (child)
        stack.emplace_back(child.get(), d + 1);
  }
  return deepest;
}

constexpr std::string_view known_filters[] = {
    "trim", "upper", "lower", "length", "count", "default", "d", "join", "string", "first", "last", "capitalize",
    "list", "tojson", "int", "float", "replace", "title", "items", "select", "reject", "selectattr", "rejectattr",
    "map", "safe"};
constexpr std::string_view known_tests[] = {
    "defined", "undefined", "none",     "string",  "number",   "mapping", "iterable", "sequence", "even",
    "odd",     "true",      "false",    "boolean", "integer",  "float",   "callable", "lower",    "upper",
    "divisibleby", "sameas", "equalto", "eq",      "ne",       "lt",      "le",       "gt",       "ge",
    "lessthan", "greaterthan", "in"};

bool known(std::string_view name, const auto& table) {
  return std::find(std::begin(table), std::end(table), name) != std::end(table);
}

} // namespace

expected<expr_ptr> expr_parser::checked(expected<expr_ptr> e) const {
  if (e && tree_depth(**e) > max_tree_depth)
    return error("expression nested too deeply");
  return e;
}

expected<expr_ptr> expr_parser::ternary() {
  if (++depth_ > max_depth)
    return error("expression nested too deeply");
  auto body = or_expr();
  if (body && is_name("if")) {
    ++p_;
    auto cond = or_expr();
    if (!cond)
      return cond;
    auto e = make(expr_kind::ternary);
    e->args.push_back(std::move(*cond));
    e->args.push_back(std::move(*body));
    if (is_name("else")) {
      ++p_;
      auto other = ternary();
      if (!other)
        return other;
      e->args.push_back(std::move(*other));
    } else {
      e->args.push_back(make(expr_kind::literal)); // undefined
    }
    body = std::move(e);
  }
  --depth_;
  return body;
}

expected<expr_ptr> expr_parser::not_expr() {
  if (!is_name("not"))
    return compare();
  ++p_;
  if (++depth_ > max_depth)
    return error("expression nested too deeply");
  auto operand = not_expr();
  --depth_;
  if (!operand)
    return operand;
  auto e = make(expr_kind::unary, "not");
  e->args.push_back(std::move(*operand));
  return e;
}

expected<expr_ptr> expr_parser::compare() {
  static constexpr std::string_view ops[] = {"==", "!=", "<", ">", "<=", ">="};
  auto lhs = add();
  while (lhs) {
    std::string op;
    if (peek().k == token::kind::op && std::find(std::begin(ops), std::end(ops), peek().text) != std::end(ops))
      op = next().text;
    else if (is_name("in"))
      op = next().text;
    else if (is_name("not") && is_name("in", 1)) {
      p_ += 2;
      op = "not in";
    } else
      break;
    auto rhs = add();
    if (!rhs)
      return rhs;
    auto e = make(expr_kind::binary, op);
    e->args.push_back(std::move(*lhs));
    e->args.push_back(std::move(*rhs));
    lhs = std::move(e);
  }
  return lhs;
}

expected<expr_ptr> expr_parser::unary() {
  if (is_op("-") || is_op("+")) {
    auto e = make(expr_kind::unary, next().text);
    if (++depth_ > max_depth)
      return error("expression nested too deeply");
    auto operand = unary();
    --depth_;
    if (!operand)
      return operand;
    e->args.push_back(std::move(*operand));
    return e;
  }
  auto p = primary();
  if (!p)
    return p;
  auto post = postfix(std::move(*p));
  if (!post)
    return post;
  return filters(std::move(*post));
}

expected<expr_ptr> expr_parser::filters(expr_ptr e) {
  for (;;) {
    if (is_op("|")) {
      ++p_;
      if (peek().k != token::kind::name)
        return error("expected a filter name after '|'");
      const std::string name = next().text;
      if (!known(name, known_filters))
        return unsupported("unknown filter '" + name + "'");
      auto f = make(expr_kind::filter, name);
      f->args.push_back(std::move(e));
      f->kwarg_names.clear();
      if (is_op("("))
        if (auto ok = call_args(*f); !ok)
          return std::move(ok.error());
      e = std::move(f);
    } else if (is_name("is")) {
      ++p_;
      bool negate = false;
      if (is_name("not")) {
        ++p_;
        negate = true;
      }
      if (peek().k != token::kind::name)
        return error("expected a test name after 'is'");
      const std::string name = next().text;
      if (!known(name, known_tests))
        return unsupported("unknown test '" + name + "'");
      auto t = make(expr_kind::test, name);
      t->negate = negate;
      t->args.push_back(std::move(e));
      if (is_op("(")) { // is divisibleby(3)
        if (auto ok = call_args(*t); !ok)
          return std::move(ok.error());
      } else if (test_argument_follows()) { // is divisibleby 3, is sameas none
        auto arg = primary();
        if (!arg)
          return arg;
        auto post = postfix(std::move(*arg));
        if (!post)
          return post;
        t->args.push_back(std::move(*post));
      }
      e = std::move(t);
    } else {
      return e;
    }
  }
}

expected<void> expr_parser::call_args(expr& call) {
  if (auto ok = expect_op("("); !ok)
    return ok;
  while (!is_op(")")) {
    std::string kw;
    if (peek().k == token::kind::name && is_op("=", 1)) {
      kw = next().text;
      ++p_;
    }
    auto arg = ternary();
    if (!arg)
      return std::move(arg.error());
    call.args.push_back(std::move(*arg));
    call.kwarg_names.push_back(std::move(kw));
    if (!is_op(","))
      break;
    ++p_;
  }
  return expect_op(")");
}

expected<expr_ptr> expr_parser::subscript(expr_ptr e) {
  ++p_; // '['
  std::vector<expr_ptr> parts;
  bool slice = false;
  for (int k = 0; k < 3; ++k) {
    if (is_op(":") || is_op("]")) {
      parts.push_back(nullptr);
    } else {
      auto x = ternary();
      if (!x)
        return x;
      parts.push_back(std::move(*x));
    }
    if (!is_op(":"))
      break;
    slice = true;
    ++p_;
  }
  if (auto ok = expect_op("]"); !ok)
    return std::move(ok.error());
  auto s = make(slice ? expr_kind::slice : expr_kind::index);
  if (!slice && !parts[0])
    return error("empty subscript");
  s->args.push_back(std::move(e));
  for (auto& x : parts)
    s->args.push_back(std::move(x));
  while (slice && s->args.size() < 4)
    s->args.push_back(nullptr);
  return s;
}

expected<expr_ptr> expr_parser::postfix(expr_ptr e) {
  for (;;) {
    if (is_op(".")) {
      ++p_;
      if (peek().k != token::kind::name)
        return error("expected an attribute name after '.'");
      auto a = make(expr_kind::attr, next().text);
      a->args.push_back(std::move(e));
      e = std::move(a);
    } else if (is_op("[")) {
      auto s = subscript(std::move(e));
      if (!s)
        return s;
      e = std::move(*s);
    } else if (is_op("(")) {
      auto c = make(expr_kind::call);
      c->args.push_back(std::move(e));
      c->kwarg_names.clear();
      if (auto ok = call_args(*c); !ok)
        return std::move(ok.error());
      e = std::move(c);
    } else {
      return e;
    }
  }
}

expected<expr_ptr> expr_parser::primary() {
  const token tk = next();
  switch (tk.k) {
    case token::kind::string: {
      auto e = make(expr_kind::literal);
      e->literal = value(tk.text);
      // Adjacent string literals concatenate, as in Python.
      while (peek().k == token::kind::string)
        e->literal = value(*e->literal.as_string() + next().text);
      return e;
    }
    case token::kind::integer: {
      auto e = make(expr_kind::literal);
      e->literal = value(tk.integer);
      return e;
    }
    case token::kind::real: {
      auto e = make(expr_kind::literal);
      e->literal = value(tk.real);
      return e;
    }
    case token::kind::name: {
      auto e = make(expr_kind::literal);
      if (tk.text == "true" || tk.text == "True")
        e->literal = value(true);
      else if (tk.text == "false" || tk.text == "False")
        e->literal = value(false);
      else if (tk.text == "none" || tk.text == "None")
        e->literal = value(none{});
      else
        e = make(expr_kind::name, tk.text);
      return e;
    }
    case token::kind::op: break;
    case token::kind::end: return error("unexpected end of expression");
  }
  if (tk.text == "(") {
    if (is_op(")")) { // () : the empty tuple
      ++p_;
      return make(expr_kind::list);
    }
    auto inner = ternary();
    if (!inner)
      return inner;
    if (is_op(",")) { // (a, b) and (a,): tuples, held as lists
      auto t = make(expr_kind::list);
      t->args.push_back(std::move(*inner));
      while (is_op(",")) {
        ++p_;
        if (is_op(")"))
          break;
        auto item = ternary();
        if (!item)
          return item;
        t->args.push_back(std::move(*item));
      }
      inner = std::move(t);
    }
    if (auto ok = expect_op(")"); !ok)
      return std::move(ok.error());
    return inner;
  }
  if (tk.text == "[" || tk.text == "{") {
    const bool is_list = tk.text == "[";
    auto e = make(is_list ? expr_kind::list : expr_kind::dict);
    const std::string close = is_list ? "]" : "}";
    while (!is_op(close)) {
      auto item = ternary();
      if (!item)
        return item;
      e->args.push_back(std::move(*item));
      if (!is_list) {
        if (auto ok = expect_op(":"); !ok)
          return std::move(ok.error());
        auto v = ternary();
        if (!v)
          return v;
        e->args.push_back(std::move(*v));
      }
      if (!is_op(","))
        break;
      ++p_;
    }
    if (auto ok = expect_op(close); !ok)
      return std::move(ok.error());
    return e;
  }
  return error("unexpected '" + tk.text + "'");
}

} // namespace dynamo::tok::jinja
