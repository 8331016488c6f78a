#include "runtime/grammar/guided.hpp"

#include "runtime/grammar/automaton.hpp"
#include "runtime/grammar/gbnf.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/regex.hpp"

#include <nlohmann/json.hpp>

namespace dynamo::gram {

namespace {

using json = nlohmann::json;
using protocol::guided_kind;

expected<grammar> choices_of(const std::string& spec) {
  const json j = json::parse(spec, nullptr, false);
  if (j.is_discarded() || !j.is_array())
    return make_error(errc::invalid_argument, "guided_choice: expected a JSON array of strings");
  std::vector<std::string> choices;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string())
      return make_error(errc::invalid_argument, "guided_choice: item " + std::to_string(i) + " is not a string");
    choices.push_back(j[i].get<std::string>());
    if (choices.back().empty())
      return make_error(errc::invalid_argument, "guided_choice: item " + std::to_string(i) + " is empty");
  }
  return choice_grammar(choices);
}

expected<std::string> string_field(const json& j, const char* name, std::string fallback) {
  const auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_string()) return make_error(errc::invalid_argument, std::string("tool calls: '") + name + "' is not a string");
  return it->get<std::string>();
}

/// The tool_calls spec (runtime/protocol/llm.hpp): each call, or one array of
/// calls, between `begin` and `end`; separate calls joined by `separator`.
expected<grammar> tool_calls_of(const std::string& spec) {
  const json j = json::parse(spec, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return make_error(errc::invalid_argument, "tool calls: spec is not a JSON object");
  const auto fns_it = j.find("functions");
  if (fns_it == j.end() || !fns_it->is_array() || fns_it->empty())
    return make_error(errc::invalid_argument, "tool calls: 'functions' must be a non-empty array");
  std::vector<tool_function> fns;
  for (const json& f : *fns_it) {
    if (!f.is_object() || !f.contains("name") || !f["name"].is_string())
      return make_error(errc::invalid_argument, "tool calls: every function needs a string 'name'");
    tool_function t{f["name"].get<std::string>(), "{}"};
    if (const auto p = f.find("parameters"); p != f.end() && !p->is_null()) {
      if (!p->is_object())
        return make_error(errc::invalid_argument, "tool calls: the parameters of '" + t.name + "' are not an object");
      t.parameters_json = p->dump();
    }
    fns.push_back(std::move(t));
  }
  auto begin = string_field(j, "begin", "");
  auto end = string_field(j, "end", "");
  auto separator = string_field(j, "separator", "");
  auto key = string_field(j, "arguments_key", "arguments");
  for (auto* e : {&begin, &end, &separator, &key})
    if (!*e) return e->error();
  uint32_t max_calls = 1;
  if (const auto m = j.find("max_calls"); m != j.end() && !m->is_null()) {
    if (!m->is_number_unsigned() || m->get<uint64_t>() > 1024)
      return make_error(errc::invalid_argument, "tool calls: 'max_calls' must be an integer in [0, 1024]");
    max_calls = static_cast<uint32_t>(m->get<uint64_t>());
  }
  const bool array = j.value("array", false);
  grammar g;
  const rule_id root = g.add_rule("root");
  if (array) {
    auto calls = add_tool_call_array(g, fns, {}, max_calls == 0 ? grammar::unbounded : max_calls, *key);
    if (!calls) return calls.error();
    g.define(root, g.seq({g.literal(*begin), g.ref(*calls), g.literal(*end)}));
  } else {
    auto call = add_tool_call(g, fns, {}, *key);
    if (!call) return call.error();
    const expr_id one = g.seq({g.literal(*begin), g.ref(*call), g.literal(*end)});
    const uint32_t more = max_calls == 0 ? grammar::unbounded : max_calls - 1;
    g.define(root, g.seq({one, g.repeat(g.seq({g.literal(*separator), one}), 0, more)}));
  }
  g.set_root(root);
  return g;
}

} // namespace

expected<grammar> grammar_of(const protocol::guided_decoding& g) {
  switch (g.kind) {
    case guided_kind::none: return make_error(errc::invalid_argument, "guided decoding: no grammar requested");
    case guided_kind::json_object: return json_object_grammar();
    case guided_kind::json_schema: return json_schema_grammar(g.spec);
    case guided_kind::regex: return regex_grammar(g.spec);
    case guided_kind::choice: return choices_of(g.spec);
    case guided_kind::grammar: return gbnf_grammar(g.spec);
    case guided_kind::tool_calls: return tool_calls_of(g.spec);
  }
  return make_error(errc::invalid_argument,
                    "guided decoding: unknown kind " + std::to_string(static_cast<int>(g.kind)));
}

expected<void> validate(const protocol::guided_decoding& g) {
  auto gr = grammar_of(g);
  if (!gr) return gr.error();
  auto a = automaton::build(*gr);
  if (!a) return a.error();
  return {};
}

grammar_cache::grammar_cache(std::shared_ptr<const token_vocab> vocab, size_t capacity)
    : vocab_(std::move(vocab)), capacity_(capacity == 0 ? 1 : capacity) {}

size_t grammar_cache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

expected<std::shared_ptr<const compiled_grammar>> grammar_cache::get(const protocol::guided_decoding& g) {
  std::string key(1, static_cast<char>(g.kind));
  key += g.spec;
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compiled outside the lock: two threads may both compile a new format; the
  // first one in wins and the other's copy is dropped.
  auto gr = grammar_of(g);
  if (!gr) return gr.error();
  auto cg = compiled_grammar::compile(*gr, vocab_);
  if (!cg) return cg.error();
  std::lock_guard lock(mutex_);
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second->second;
  lru_.emplace_front(key, *cg);
  by_key_.emplace(std::move(key), lru_.begin());
  while (lru_.size() > capacity_) {
    by_key_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return *cg;
}

} // namespace dynamo::gram
