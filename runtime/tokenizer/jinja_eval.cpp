// Renderer for the Jinja subset: statement execution and expression
// evaluation over jinja::value. Filters, tests and methods live in
// jinja_builtins.cpp.
#include "runtime/tokenizer/jinja_ast.hpp"
#include "runtime/tokenizer/jinja_builtins.hpp"

#include <cmath>
#include <utility>

namespace dynamo::tok::jinja {

namespace {

constexpr uint64_t max_steps = 1'000'000;           // nodes executed + loop iterations
constexpr size_t max_output = size_t{64} << 20;     // bytes
constexpr size_t max_work = size_t{256} << 20;      // bytes of strings and container slots built or read, all told

// A value's size as the work budget counts it: a string's bytes, a list's or
// dict's slots (their items are shared, as every copy is).
size_t weight(const value& v) {
  if (auto s = v.as_string())
    return s->size();
  if (auto l = v.as_list())
    return l->size() * sizeof(value);
  if (auto d = v.as_dict())
    return d->size() * sizeof(dict::value_type);
  return 0;
}

// What a statement list ends with: run on, or leave the innermost loop's body.
enum class flow { normal, break_loop, continue_loop };

class renderer {
public:
  renderer(const globals& g, const std::optional<std::tm>& now) : now_(now) {
    globals builtins;
    for (auto name : global_function_names())
      builtins.emplace_back(std::string(name), value(function_ref{std::string(name)}));
    scopes_.push_back(std::move(builtins));
    scopes_.push_back(g);
  }
  renderer(const renderer&) = delete;
  renderer& operator=(const renderer&) = delete;
  ~renderer() { release_namespaces(); }

  expected<flow> exec(const std::vector<node>& body, std::string& out);
  expected<value> eval(const expr& e);

private:
  expected<void> exec_for(const node& n, std::string& out);
  expected<value> eval_object(const expr& e); ///< the object of an attribute or subscript: undefined is an error
  expected<void> exec_set(const node& n);
  expected<value> eval_binary(const expr& e);
  expected<value> eval_call(const expr& e);
  expected<value> eval_subscript(const expr& e);
  expected<value> charge(expected<value> v, int line);
  expected<void> spend(size_t bytes, int line);
  expected<void> spend_on(const std::vector<value>& inputs, int line);
  expected<std::vector<value>> eval_args(const expr& e, size_t first, std::vector<std::string>* names);
  [[nodiscard]] value lookup(std::string_view name) const;
  void assign(const std::string& name, value v);
  void release_namespaces();

  std::vector<globals> scopes_;
  std::vector<std::shared_ptr<dict>> namespaces_; ///< every namespace() made, emptied at the end
  uint64_t steps_ = 0;
  size_t work_ = 0; ///< charged by spend(), never refunded
  std::optional<std::tm> now_;
};

// Namespaces are the only mutable values, so only they can form cycles or
// chains deeper than max_nesting. Emptying them all (contents moved out first)
// breaks both, so nothing is destroyed recursively or leaked.
void renderer::release_namespaces() {
  std::vector<dict> graveyard;
  graveyard.reserve(namespaces_.size());
  for (auto& ns : namespaces_)
    graveyard.push_back(std::exchange(*ns, dict{}));
  namespaces_.clear();
  scopes_.clear();
}

value renderer::lookup(std::string_view name) const {
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    for (const auto& [k, v] : *s)
      if (k == name)
        return v;
  return {};
}

void renderer::assign(const std::string& name, value v) {
  for (auto& [k, old] : scopes_.back()) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  scopes_.back().emplace_back(name, std::move(v));
}

expected<flow> renderer::exec(const std::vector<node>& body, std::string& out) {
  for (const node& n : body) {
    if (++steps_ > max_steps)
      return fail(n.line, "template exceeds " + std::to_string(max_steps) + " steps");
    switch (n.kind) {
      case node_kind::text: out += n.text; break;
      case node_kind::output: {
        auto v = eval(*n.e);
        if (!v)
          return std::move(v.error());
        out += v->to_output();
        break;
      }
      case node_kind::if_chain: {
        const std::vector<node>* chosen = &n.else_body;
        for (const auto& [cond, branch] : n.branches) {
          auto c = eval(*cond);
          if (!c)
            return std::move(c.error());
          if (c->truthy()) {
            chosen = &branch;
            break;
          }
        }
        auto f = exec(*chosen, out);
        if (!f || *f != flow::normal)
          return f;
        break;
      }
      case node_kind::for_loop:
        if (auto ok = exec_for(n, out); !ok)
          return std::move(ok.error());
        break;
      case node_kind::set:
        if (auto ok = exec_set(n); !ok)
          return std::move(ok.error());
        break;
      case node_kind::break_loop: return flow::break_loop;
      case node_kind::continue_loop: return flow::continue_loop;
    }
    if (out.size() > max_output)
      return fail(n.line, "output exceeds " + std::to_string(max_output) + " bytes");
  }
  return flow::normal;
}

expected<void> renderer::exec_for(const node& n, std::string& out) {
  auto seq = eval(*n.e);
  if (!seq)
    return std::move(seq.error());
  auto items = iterate(*seq, n.line);
  if (!items)
    return std::move(items.error());
  if (auto ok = spend(items->size() * sizeof(value), n.line); !ok)
    return ok;
  // Bind loop targets to an item (unpacking pairs for `for k, v in d.items()`).
  auto bind = [&](const value& item) -> expected<void> {
    if (n.targets.size() == 1) {
      assign(n.targets[0], item);
      return {};
    }
    const list* parts = item.as_list();
    if (!parts || parts->size() != n.targets.size())
      return fail(n.line, "cannot unpack " + std::string(item.type_name()) + " into " +
                              std::to_string(n.targets.size()) + " loop variables");
    for (size_t i = 0; i < parts->size(); ++i)
      assign(n.targets[i], (*parts)[i]);
    return {};
  };
  const expr* filter = n.branches[0].first.get();
  std::vector<value> kept;
  for (auto& item : *items) {
    if (filter) {
      scopes_.emplace_back();
      auto b = bind(item);
      auto keep = b ? eval(*filter) : expected<value>(std::move(b.error()));
      scopes_.pop_back();
      if (!keep)
        return std::move(keep.error());
      if (!keep->truthy())
        continue;
    }
    kept.push_back(std::move(item));
  }
  const auto len = static_cast<int64_t>(kept.size());
  for (int64_t i = 0; i < len; ++i) {
    if (++steps_ > max_steps)
      return fail(n.line, "template exceeds " + std::to_string(max_steps) + " steps");
    dict loop{{"index", value(i + 1)},         {"index0", value(i)},
              {"revindex", value(len - i)},    {"revindex0", value(len - i - 1)},
              {"first", value(i == 0)},        {"last", value(i + 1 == len)},
              {"length", value(len)},          {"previtem", i > 0 ? kept[i - 1] : value()},
              {"nextitem", i + 1 < len ? kept[i + 1] : value()}};
    scopes_.emplace_back();
    assign("loop", value(std::move(loop)));
    expected<flow> f = flow::normal;
    if (auto ok = bind(kept[i]); !ok)
      f = std::move(ok.error());
    else
      f = exec(n.branches[0].second, out);
    scopes_.pop_back();
    if (!f)
      return std::move(f.error());
    if (*f == flow::break_loop)
      break;
  }
  if (len == 0) {
    auto f = exec(n.else_body, out);
    if (!f)
      return std::move(f.error());
  }
  return {};
}

expected<void> renderer::exec_set(const node& n) {
  auto v = eval(*n.e);
  if (!v)
    return std::move(v.error());
  if (n.targets.size() == 1) {
    assign(n.targets[0], std::move(*v));
    return {};
  }
  // {% set ns.attr = v %}: namespaces are shared dicts, so this is visible outside loops.
  dict* ns = lookup(n.targets[0]).as_dict();
  if (!ns)
    return fail(n.line, "cannot set attribute '" + n.targets[1] + "' of '" + n.targets[0] + "' (not a namespace)");
  if (holds(*v, ns))
    return fail(n.line, "cannot store namespace '" + n.targets[0] + "' inside itself");
  if (nested_deeper_than(*v, max_nesting - 1))
    return fail(n.line, "values nested more than " + std::to_string(max_nesting) + " deep");
  for (auto& [k, old] : *ns) {
    if (k == n.targets[1]) {
      old = std::move(*v);
      return {};
    }
  }
  ns->emplace_back(n.targets[1], std::move(*v));
  return {};
}

expected<value> renderer::eval(const expr& e) {
  switch (e.kind) {
    case expr_kind::literal: return e.literal;
    case expr_kind::name: return lookup(e.name);
    case expr_kind::attr: {
      auto obj = eval_object(*e.args[0]);
      if (!obj)
        return obj;
      return index_value(*obj, value(e.name));
    }
    case expr_kind::index: return eval_subscript(e);
    case expr_kind::slice: return charge(eval_subscript(e), e.line);
    case expr_kind::call: return charge(eval_call(e), e.line);
    case expr_kind::filter: {
      std::vector<std::string> names;
      auto args = eval_args(e, 0, &names);
      if (!args)
        return std::move(args.error());
      if (auto ok = spend_on(*args, e.line); !ok)
        return std::move(ok.error());
      return charge(apply_filter(e.name, *args, names, e.line), e.line);
    }
    case expr_kind::test: {
      auto args = eval_args(e, 0, nullptr);
      if (!args)
        return std::move(args.error());
      const value v = std::move((*args)[0]);
      args->erase(args->begin());
      auto hit = apply_test(e.name, v, *args, e.line);
      if (!hit)
        return std::move(hit.error());
      return value(*hit != e.negate);
    }
    case expr_kind::unary: {
      auto v = eval(*e.args[0]);
      if (!v)
        return v;
      if (e.name == "not")
        return value(!v->truthy());
      return negate_number(*v, e.name == "-", e.line);
    }
    case expr_kind::binary: return charge(eval_binary(e), e.line);
    case expr_kind::ternary: {
      auto c = eval(*e.args[0]);
      if (!c)
        return c;
      return eval(*e.args[c->truthy() ? 1 : 2]);
    }
    case expr_kind::list:
    case expr_kind::dict: {
      auto items = eval_args(e, 0, nullptr);
      if (!items)
        return std::move(items.error());
      for (const auto& item : *items)
        if (nested_deeper_than(item, max_nesting - 1))
          return fail(e.line, "values nested more than " + std::to_string(max_nesting) + " deep");
      if (e.kind == expr_kind::list)
        return charge(value(std::move(*items)), e.line);
      dict d;
      for (size_t i = 0; i + 1 < items->size(); i += 2) {
        const std::string* k = (*items)[i].as_string();
        if (!k)
          return fail(e.line, "dict keys must be strings");
        d.emplace_back(*k, std::move((*items)[i + 1]));
      }
      return charge(value(std::move(d)), e.line);
    }
  }
  return fail(e.line, "unknown expression");
}

expected<std::vector<value>> renderer::eval_args(const expr& e, size_t first, std::vector<std::string>* names) {
  std::vector<value> out;
  for (size_t i = first; i < e.args.size(); ++i) {
    if (!e.args[i]) {
      out.emplace_back();
      continue;
    }
    auto v = eval(*e.args[i]);
    if (!v)
      return std::move(v.error());
    out.push_back(std::move(*v));
  }
  if (names)
    *names = e.kwarg_names;
  return out;
}

expected<value> renderer::eval_binary(const expr& e) {
  auto lhs = eval(*e.args[0]);
  if (!lhs)
    return lhs;
  if (e.name == "and")
    return lhs->truthy() ? eval(*e.args[1]) : lhs;
  if (e.name == "or")
    return lhs->truthy() ? lhs : eval(*e.args[1]);
  auto rhs = eval(*e.args[1]);
  if (!rhs)
    return rhs;
  if (auto ok = spend(weight(*lhs) + weight(*rhs), e.line); !ok)
    return std::move(ok.error());
  return binary_op(e.name, *lhs, *rhs, e.line);
}

// The render's work budget (max_work): what every filter, call, operator and
// slice reads (its inputs, charged before it runs) and builds (its result),
// and every sequence a for loop walks. Builtins take time linear in those,
// so this bounds a render's time as well as its memory (a loop of `s |
// length` over a 16 MB string stops at the 17th call). Results that only
// pass a value on (`a or b`, `| first`) are charged too: an overcount.
expected<void> renderer::spend(size_t bytes, int line) {
  work_ += bytes;
  if (work_ > max_work)
    return fail(line, "template exceeds its budget of " + std::to_string(max_work >> 20) +
                          " MiB of strings and items built or read");
  return {};
}

expected<void> renderer::spend_on(const std::vector<value>& inputs, int line) {
  for (const auto& v : inputs)
    if (auto ok = spend(weight(v), line); !ok)
      return ok;
  return {};
}

expected<value> renderer::charge(expected<value> v, int line) {
  if (!v)
    return v;
  if (auto ok = spend(weight(*v), line); !ok)
    return std::move(ok.error());
  return v;
}

expected<value> renderer::eval_object(const expr& e) {
  auto obj = eval(e);
  if (obj && obj->is_undefined())
    return fail(e.line, (e.kind == expr_kind::name ? "'" + e.name + "'" : std::string("a value")) + " is undefined");
  return obj;
}

expected<value> renderer::eval_subscript(const expr& e) {
  auto obj = eval_object(*e.args[0]);
  if (!obj)
    return obj;
  auto args = eval_args(e, 1, nullptr);
  if (!args)
    return std::move(args.error());
  args->insert(args->begin(), std::move(*obj));
  // A slice copies; a string index walks the characters before it.
  if (e.kind == expr_kind::slice || (*args)[0].is_string())
    if (auto ok = spend(weight((*args)[0]), e.line); !ok)
      return std::move(ok.error());
  if (e.kind == expr_kind::index)
    return index_value((*args)[0], (*args)[1]);
  return slice_value((*args)[0], (*args)[1], (*args)[2], (*args)[3], e.line);
}

expected<value> renderer::eval_call(const expr& e) {
  const expr& callee = *e.args[0];
  std::vector<std::string> names;
  auto args = eval_args(e, 1, &names);
  if (!args)
    return std::move(args.error());
  if (auto ok = spend_on(*args, e.line); !ok)
    return std::move(ok.error());
  if (callee.kind == expr_kind::attr) { // a method: "s".strip(), d.items(), ...
    auto self = eval_object(*callee.args[0]);
    if (!self)
      return self;
    if (auto ok = spend(weight(*self), e.line); !ok)
      return std::move(ok.error());
    return call_method(*self, callee.name, *args, e.line);
  }
  auto f = eval(callee);
  if (!f)
    return f;
  const function_ref* fn = f->as_function();
  if (!fn)
    return fail(e.line, (callee.kind == expr_kind::name ? "'" + callee.name + "'" : std::string("value")) +
                            (f->is_undefined() ? " is undefined" : " is not callable"));
  auto result = call_function(fn->name, *args, names, e.line, now_);
  if (result && fn->name == "namespace") {
    if (nested_deeper_than(*result, max_nesting))
      return fail(e.line, "namespace values nested more than " + std::to_string(max_nesting) + " deep");
    namespaces_.push_back(std::get<std::shared_ptr<dict>>(result->v));
  }
  return result;
}

} // namespace

expected<std::string> render(const program& p, const globals& g, const std::optional<std::tm>& now) {
  renderer r(g, now);
  std::string out;
  if (auto ok = r.exec(p.body, out); !ok)
    return std::move(ok.error());
  return out;
}

} // namespace dynamo::tok::jinja
