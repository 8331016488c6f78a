// Recursive-descent parser for the Jinja subset (see jinja_ast.hpp).
#include "runtime/tokenizer/jinja_ast.hpp"
#include "runtime/tokenizer/jinja_lexer.hpp"

#include <algorithm>
#include <initializer_list>

namespace dynamo::tok::jinja {

namespace {

constexpr int max_depth = 64;          // nesting of parentheses, lists, unary operators and blocks
constexpr size_t max_tag_tokens = 4096; // bounds every expression tree (and its recursive teardown)
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

constexpr std::string_view known_filters[] = {"trim",  "upper", "lower", "length", "count", "default", "d",
                                              "join",  "string", "first", "last",  "capitalize", "list",
                                              "tojson", "int",   "float", "replace", "title"};
constexpr std::string_view known_tests[] = {"defined", "undefined", "none",  "string", "number", "mapping",
                                            "iterable", "sequence",  "even",  "odd",    "true",   "false",
                                            "boolean", "integer",   "float"};

bool known(std::string_view name, const auto& table) {
  return std::find(std::begin(table), std::end(table), name) != std::end(table);
}

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

  expected<expr_ptr> checked(expected<expr_ptr> e) const {
    if (e && tree_depth(**e) > max_tree_depth)
      return error("expression nested too deeply");
    return e;
  }

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

  std::vector<token> t_;
  size_t p_ = 0;
  int line_;
  int depth_ = 0;
};

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
    auto inner = ternary();
    if (!inner)
      return inner;
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

// Builds the node tree from segments: text, {{ }}, and block tags.
class template_parser {
public:
  explicit template_parser(std::vector<segment> segs) : segs_(std::move(segs)) {}

  expected<std::vector<node>> run() {
    std::string term;
    auto body = parse_body({}, term, 0);
    if (body && !term.empty())
      return make_error(errc::invalid_argument, "chat template line " + std::to_string(segs_[k_].line) +
                                                    ": unexpected '{% " + term + " %}'");
    return body;
  }

private:
  // Parses nodes until one of `terms` (left in `found`, k_ at that tag) or the end.
  expected<std::vector<node>> parse_body(std::initializer_list<std::string_view> terms, std::string& found, int depth);
  expected<node> parse_if(expr_parser& p, int line, int depth);
  expected<node> parse_for(expr_parser& p, int line, int depth);
  expected<node> parse_set(expr_parser& p, int line);
  expected<expr_parser> tag_parser(size_t k) {
    auto toks = tokenize(segs_[k].content, segs_[k].line);
    if (!toks)
      return std::move(toks.error());
    if (toks->size() > max_tag_tokens)
      return make_error(errc::invalid_argument, "chat template line " + std::to_string(segs_[k].line) +
                                                    ": tag has more than " + std::to_string(max_tag_tokens) +
                                                    " tokens");
    return expr_parser(std::move(*toks), segs_[k].line);
  }
  // Expects the whole tag consumed.
  static expected<void> finish(const expr_parser& p) {
    if (!p.at_end())
      return p.error("unexpected '" + p.peek().text + "'");
    return {};
  }

  std::vector<segment> segs_;
  size_t k_ = 0;
};

expected<std::vector<node>> template_parser::parse_body(std::initializer_list<std::string_view> terms,
                                                        std::string& found, int depth) {
  if (depth > max_depth)
    return make_error(errc::invalid_argument, "chat template: blocks nested too deeply");
  std::vector<node> body;
  for (; k_ < segs_.size(); ++k_) {
    const segment& s = segs_[k_];
    if (s.k == segment::kind::text) {
      if (!s.content.empty())
        body.push_back({node_kind::text, s.line, s.content});
      continue;
    }
    if (s.k == segment::kind::comment)
      continue;
    auto p = tag_parser(k_);
    if (!p)
      return std::move(p.error());
    if (s.k == segment::kind::output) {
      auto e = p->expression();
      if (!e)
        return std::move(e.error());
      if (auto ok = finish(*p); !ok)
        return std::move(ok.error());
      node n{node_kind::output, s.line};
      n.e = std::move(*e);
      body.push_back(std::move(n));
      continue;
    }
    if (p->peek().k != token::kind::name)
      return p->error("expected a tag name");
    const std::string kw = p->peek().text;
    if (std::find(terms.begin(), terms.end(), kw) != terms.end()) {
      found = kw;
      return body;
    }
    p->next();
    expected<node> n = make_error(errc::internal, "");
    if (kw == "if")
      n = parse_if(*p, s.line, depth);
    else if (kw == "for")
      n = parse_for(*p, s.line, depth);
    else if (kw == "set")
      n = parse_set(*p, s.line);
    else if (kw == "elif" || kw == "else" || kw.starts_with("end"))
      return p->error("unexpected '{% " + kw + " %}'");
    else
      return p->unsupported("tag '{% " + kw + " %}' is not supported");
    if (!n)
      return std::move(n.error());
    body.push_back(std::move(*n));
  }
  if (terms.size() != 0)
    return make_error(errc::invalid_argument, "chat template: missing '{% " + std::string(*(terms.end() - 1)) +
                                                  " %}' at end of template");
  return body;
}

expected<node> template_parser::parse_if(expr_parser& p, int line, int depth) {
  node n{node_kind::if_chain, line};
  for (;;) {
    auto cond = p.expression();
    if (!cond)
      return std::move(cond.error());
    if (auto ok = finish(p); !ok)
      return std::move(ok.error());
    ++k_;
    std::string term;
    auto body = parse_body({"elif", "else", "endif"}, term, depth + 1);
    if (!body)
      return std::move(body.error());
    n.branches.emplace_back(std::move(*cond), std::move(*body));
    auto tag = tag_parser(k_);
    if (!tag)
      return std::move(tag.error());
    tag->next();
    if (term == "elif") {
      p = std::move(*tag);
      continue;
    }
    if (term == "else") {
      if (auto ok = finish(*tag); !ok)
        return std::move(ok.error());
      ++k_;
      auto other = parse_body({"endif"}, term, depth + 1);
      if (!other)
        return std::move(other.error());
      n.else_body = std::move(*other);
      tag = tag_parser(k_);
      if (!tag)
        return std::move(tag.error());
      tag->next();
    }
    if (auto ok = finish(*tag); !ok)
      return std::move(ok.error());
    return n;
  }
}

expected<node> template_parser::parse_for(expr_parser& p, int line, int depth) {
  node n{node_kind::for_loop, line};
  do {
    if (p.peek().k != token::kind::name)
      return p.error("expected a loop variable");
    n.targets.push_back(p.next().text);
  } while (p.is_op(",") && (p.next(), true));
  if (!p.is_name("in"))
    return p.error("expected 'in' in for loop");
  p.next();
  auto iter = p.condition_free_expression();
  if (!iter)
    return std::move(iter.error());
  expr_ptr filter;
  if (p.is_name("if")) {
    p.next();
    auto cond = p.condition_free_expression();
    if (!cond)
      return std::move(cond.error());
    filter = std::move(*cond);
  }
  if (p.is_name("recursive"))
    return p.unsupported("recursive loops are not supported");
  if (auto ok = finish(p); !ok)
    return std::move(ok.error());
  n.e = std::move(*iter);
  ++k_;
  std::string term;
  auto body = parse_body({"else", "endfor"}, term, depth + 1);
  if (!body)
    return std::move(body.error());
  n.branches.emplace_back(std::move(filter), std::move(*body));
  if (term == "else") {
    ++k_;
    auto other = parse_body({"endfor"}, term, depth + 1);
    if (!other)
      return std::move(other.error());
    n.else_body = std::move(*other);
  }
  auto tag = tag_parser(k_);
  if (!tag)
    return std::move(tag.error());
  tag->next();
  if (auto ok = finish(*tag); !ok)
    return std::move(ok.error());
  return n;
}

expected<node> template_parser::parse_set(expr_parser& p, int line) {
  node n{node_kind::set, line};
  if (p.peek().k != token::kind::name)
    return p.error("expected a variable name after 'set'");
  n.targets.push_back(p.next().text);
  if (p.is_op(".")) {
    p.next();
    if (p.peek().k != token::kind::name)
      return p.error("expected an attribute name");
    n.targets.push_back(p.next().text);
  }
  if (!p.is_op("="))
    return p.unsupported("only '{% set name = value %}' is supported");
  p.next();
  auto v = p.expression();
  if (!v)
    return std::move(v.error());
  if (auto ok = finish(p); !ok)
    return std::move(ok.error());
  n.e = std::move(*v);
  return n;
}

} // namespace

expected<std::shared_ptr<const program>> parse(std::string_view source) {
  auto segs = split_segments(source);
  if (!segs)
    return std::move(segs.error());
  template_parser tp(std::move(*segs));
  auto body = tp.run();
  if (!body)
    return std::move(body.error());
  auto prog = std::make_shared<program>();
  prog->body = std::move(*body);
  return std::shared_ptr<const program>(std::move(prog));
}

} // namespace dynamo::tok::jinja
