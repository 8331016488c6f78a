// Template parser for the Jinja subset (see jinja_ast.hpp): segments -> nodes.
#include "runtime/tokenizer/jinja_parser.hpp"

namespace dynamo::tok::jinja {

namespace {

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
  int loops_ = 0; ///< for-loop bodies being parsed (break/continue need one)
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
    else if (kw == "break" || kw == "continue") {
      if (loops_ == 0)
        return p->error("'{% " + kw + " %}' outside a loop");
      if (auto ok = finish(*p); !ok)
        return std::move(ok.error());
      n = node{kw == "break" ? node_kind::break_loop : node_kind::continue_loop, s.line};
    }
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
  ++loops_;
  auto body = parse_body({"else", "endfor"}, term, depth + 1);
  --loops_;
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