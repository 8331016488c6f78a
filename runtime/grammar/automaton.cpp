#include "runtime/grammar/automaton.hpp"

#include <algorithm>
#include <map>

namespace dynamo::gram {

namespace {

struct nfa {
  struct byte_edge {
    byte_set set;
    uint32_t to;
  };
  std::vector<std::vector<uint32_t>> eps;
  std::vector<std::vector<byte_edge>> bytes;
  std::vector<std::vector<call_edge>> calls;

  uint32_t add() {
    eps.emplace_back();
    bytes.emplace_back();
    calls.emplace_back();
    return static_cast<uint32_t>(eps.size() - 1);
  }
};

struct dstate {
  std::vector<int32_t> next;
  std::vector<call_edge> calls; ///< ret is local to the rule until layout
  bool accepting = false;
};

} // namespace

class automaton_builder {
public:
  automaton_builder(const grammar& g, const automaton_limits& l) : g_(g), limits_(l) {}

  expected<std::shared_ptr<const automaton>> run() {
    if (auto ok = g_.check(); !ok) return ok.error();
    a_ = std::make_shared<automaton>();
    compute_nullable();
    compute_classes();
    std::vector<std::vector<dstate>> rules(g_.rule_count());
    size_t total = 0;
    for (rule_id r = 0; r < g_.rule_count(); ++r) {
      auto d = determinize(r);
      if (!d) return d.error();
      total += d->size();
      if (total > limits_.max_states)
        return make_error(errc::invalid_argument, "grammar too large: more than " +
                                                      std::to_string(limits_.max_states) + " states (at rule '" +
                                                      g_.rule_name(r) + "')");
      rules[r] = std::move(*d);
    }
    layout(rules);
    if (auto ok = check_left_recursion(); !ok) return ok.error();
    if (auto ok = prune(); !ok) return ok.error();
    compute_first_follow();
    return std::shared_ptr<const automaton>(std::move(a_));
  }

private:
  const grammar& g_;
  automaton_limits limits_;
  std::shared_ptr<automaton> a_;
  std::vector<uint8_t> nullable_;
  std::array<uint8_t, 256> rep_{}; ///< class -> a byte of it

  // Expressions only refer to older ones, so one pass in id order per round.
  void compute_nullable() {
    nullable_.assign(g_.rule_count(), 0);
    std::vector<uint8_t> en(g_.expr_count(), 0);
    for (bool changed = true; changed;) {
      changed = false;
      for (expr_id id = 0; id < en.size(); ++id) {
        const expr& e = g_.at(id);
        bool v = false;
        switch (e.kind) {
        case expr_kind::empty: v = true; break;
        case expr_kind::bytes: v = false; break;
        case expr_kind::seq:
          v = std::all_of(e.children.begin(), e.children.end(), [&](expr_id c) { return en[c] != 0; });
          break;
        case expr_kind::alt:
          v = std::any_of(e.children.begin(), e.children.end(), [&](expr_id c) { return en[c] != 0; });
          break;
        case expr_kind::repeat: v = e.min == 0 || en[e.children[0]] != 0; break;
        case expr_kind::ref: v = nullable_[e.rule] != 0; break;
        }
        en[id] = v;
      }
      for (rule_id r = 0; r < g_.rule_count(); ++r) {
        if (!nullable_[r] && en[g_.rule_body(r)]) nullable_[r] = 1, changed = true;
      }
    }
  }

  void collect_sets(expr_id id, std::vector<byte_set>& out, std::vector<uint8_t>& seen) const {
    if (seen[id]) return;
    seen[id] = 1;
    const expr& e = g_.at(id);
    if (e.kind == expr_kind::bytes) out.push_back(e.bytes);
    for (expr_id c : e.children) collect_sets(c, out, seen);
  }

  // Bytes that no byte set tells apart share a class.
  void compute_classes() {
    std::vector<byte_set> sets;
    std::vector<uint8_t> seen;
    seen.assign(g_.expr_count(), 0);
    for (rule_id r = 0; r < g_.rule_count(); ++r) collect_sets(g_.rule_body(r), sets, seen);
    std::array<uint32_t, 256> cls{};
    uint32_t n = 1;
    for (const byte_set& s : sets) {
      std::map<std::pair<uint32_t, bool>, uint32_t> remap;
      for (unsigned b = 0; b < 256; ++b) {
        auto key = std::make_pair(cls[b], s.test(uint8_t(b)));
        auto it = remap.try_emplace(key, static_cast<uint32_t>(remap.size())).first;
        cls[b] = it->second;
      }
      n = static_cast<uint32_t>(remap.size());
    }
    a_->n_classes_ = n;
    for (unsigned b = 0; b < 256; ++b) {
      a_->class_[b] = static_cast<uint8_t>(cls[b]);
      rep_[cls[b]] = static_cast<uint8_t>(b);
    }
  }

  // Thompson construction: returns the state after `id` matched from `from`.
  expected<uint32_t> build(nfa& n, expr_id id, uint32_t from) const {
    if (n.eps.size() > limits_.max_nfa_states)
      return make_error(errc::invalid_argument, "grammar rule too large (more than " +
                                                    std::to_string(limits_.max_nfa_states) + " automaton states)");
    const expr& e = g_.at(id);
    switch (e.kind) {
    case expr_kind::empty: return from;
    case expr_kind::bytes: {
      const uint32_t t = n.add();
      n.bytes[from].push_back({e.bytes, t});
      return t;
    }
    case expr_kind::seq: {
      uint32_t cur = from;
      for (expr_id c : e.children) {
        auto r = build(n, c, cur);
        if (!r) return r;
        cur = *r;
      }
      return cur;
    }
    case expr_kind::alt: {
      const uint32_t end = n.add();
      for (expr_id c : e.children) {
        const uint32_t s = n.add();
        n.eps[from].push_back(s);
        auto r = build(n, c, s);
        if (!r) return r;
        n.eps[*r].push_back(end);
      }
      return end;
    }
    case expr_kind::repeat: {
      uint32_t cur = from;
      for (uint32_t i = 0; i < e.min; ++i) {
        auto r = build(n, e.children[0], cur);
        if (!r) return r;
        cur = *r;
      }
      if (e.max == grammar::unbounded) {
        const uint32_t s = n.add();
        n.eps[cur].push_back(s);
        auto r = build(n, e.children[0], s);
        if (!r) return r;
        n.eps[*r].push_back(s);
        return s;
      }
      const uint32_t end = n.add();
      n.eps[cur].push_back(end);
      for (uint32_t i = e.min; i < e.max; ++i) {
        auto r = build(n, e.children[0], cur);
        if (!r) return r;
        cur = *r;
        n.eps[cur].push_back(end);
      }
      return end;
    }
    case expr_kind::ref: {
      const uint32_t t = n.add();
      n.calls[from].push_back({e.rule, t});
      if (nullable_[e.rule]) n.eps[from].push_back(t);
      return t;
    }
    }
    return from;
  }

  static void closure(const nfa& n, std::vector<uint32_t>& set) {
    std::vector<uint8_t> in(n.eps.size(), 0);
    for (uint32_t s : set) in[s] = 1;
    for (size_t i = 0; i < set.size(); ++i) {
      for (uint32_t t : n.eps[set[i]]) {
        if (!in[t]) in[t] = 1, set.push_back(t);
      }
    }
    std::sort(set.begin(), set.end());
  }

  expected<std::vector<dstate>> determinize(rule_id r) const {
    nfa n;
    const uint32_t start = n.add();
    auto fin = build(n, g_.rule_body(r), start);
    if (!fin) return make_error(errc::invalid_argument, message_of(fin.error()) + " at rule '" + g_.rule_name(r) + "'");
    std::map<std::vector<uint32_t>, int32_t> ids;
    std::vector<std::vector<uint32_t>> sets;
    std::vector<dstate> out;
    auto intern = [&](std::vector<uint32_t> set) -> int32_t {
      if (set.empty()) return -1;
      closure(n, set);
      auto [it, fresh] = ids.try_emplace(set, static_cast<int32_t>(sets.size()));
      if (fresh) sets.push_back(std::move(set));
      return it->second;
    };
    intern({start});
    const uint32_t nc = a_->n_classes_;
    for (size_t i = 0; i < sets.size(); ++i) {
      if (sets.size() > limits_.max_states)
        return make_error(errc::invalid_argument, "grammar rule '" + g_.rule_name(r) + "' has more than " +
                                                      std::to_string(limits_.max_states) + " states");
      dstate d;
      d.next.assign(nc, -1);
      const std::vector<uint32_t> cur = sets[i];
      for (uint32_t c = 0; c < nc; ++c) {
        std::vector<uint32_t> to;
        for (uint32_t s : cur)
          for (const auto& be : n.bytes[s])
            if (be.set.test(rep_[c])) to.push_back(be.to);
        d.next[c] = intern(std::move(to));
      }
      std::map<rule_id, std::vector<uint32_t>> by_callee;
      for (uint32_t s : cur)
        for (const call_edge& ce : n.calls[s]) by_callee[ce.callee].push_back(ce.ret);
      for (auto& [callee, to] : by_callee) d.calls.push_back({callee, static_cast<uint32_t>(intern(std::move(to)))});
      d.accepting = std::binary_search(cur.begin(), cur.end(), *fin);
      out.push_back(std::move(d));
    }
    return out;
  }

  // Global state ids: each rule's states in order, then a non-accepting copy of
  // every accepting start state (what calls enter, so a call matches >= 1 byte).
  void layout(const std::vector<std::vector<dstate>>& rules) {
    automaton& a = *a_;
    const uint32_t nc = a.n_classes_;
    std::vector<uint32_t> offset(rules.size() + 1, 0);
    for (size_t r = 0; r < rules.size(); ++r) offset[r + 1] = offset[r] + static_cast<uint32_t>(rules[r].size());
    std::vector<const dstate*> all;
    std::vector<uint8_t> accepting;
    std::vector<rule_id> owner;
    for (size_t r = 0; r < rules.size(); ++r)
      for (const dstate& d : rules[r]) all.push_back(&d), accepting.push_back(d.accepting), owner.push_back(rule_id(r));
    a.entry_.resize(rules.size());
    for (size_t r = 0; r < rules.size(); ++r) {
      a.entry_[r] = offset[r];
      if (rules[r][0].accepting) {
        a.entry_[r] = static_cast<uint32_t>(all.size());
        all.push_back(&rules[r][0]);
        accepting.push_back(0);
        owner.push_back(rule_id(r));
      }
    }
    a.next_.assign(all.size() * nc, -1);
    a.call_begin_.assign(all.size() + 1, 0);
    for (size_t s = 0; s < all.size(); ++s) {
      const uint32_t base = offset[owner[s]];
      for (uint32_t c = 0; c < nc; ++c) {
        const int32_t t = all[s]->next[c];
        a.next_[s * nc + c] = t < 0 ? -1 : static_cast<int32_t>(base + uint32_t(t));
      }
      for (const call_edge& ce : all[s]->calls) a.calls_.push_back({ce.callee, base + ce.ret});
      a.call_begin_[s + 1] = static_cast<uint32_t>(a.calls_.size());
    }
    a.accepting_ = std::move(accepting);
    a.state_rule_ = std::move(owner);
    a.root_ = g_.root();
    a.start_ = offset[g_.root()];
    for (rule_id r = 0; r < g_.rule_count(); ++r) a.names_.push_back(g_.rule_name(r));
  }

  expected<void> check_left_recursion() const {
    const automaton& a = *a_;
    const size_t n = a.names_.size();
    std::vector<uint8_t> color(n, 0);
    std::vector<rule_id> path;
    auto dfs = [&](auto&& self, rule_id r) -> std::optional<std::string> {
      color[r] = 1;
      path.push_back(r);
      for (const call_edge& ce : a.calls(a.entry_[r])) {
        if (color[ce.callee] == 1) {
          std::string msg = "left recursion in grammar: ";
          auto it = std::find(path.begin(), path.end(), ce.callee);
          for (; it != path.end(); ++it) msg += "'" + a.names_[*it] + "' -> ";
          return msg + "'" + a.names_[ce.callee] + "'";
        }
        if (color[ce.callee] == 0)
          if (auto m = self(self, ce.callee)) return m;
      }
      path.pop_back();
      color[r] = 2;
      return std::nullopt;
    };
    for (rule_id r = 0; r < n; ++r)
      if (color[r] == 0)
        if (auto m = dfs(dfs, r)) return make_error(errc::invalid_argument, *m);
    return {};
  }

  // Drops transitions into states that can never complete their rule and calls
  // of rules that match nothing, so the matcher never enters a dead end.
  expected<void> prune() {
    automaton& a = *a_;
    const uint32_t ns = a.state_count(), nc = a.n_classes_;
    std::vector<uint8_t> live(ns, 0);
    for (uint32_t s = 0; s < ns; ++s) live[s] = a.accepting_[s];
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t s = 0; s < ns; ++s) {
        if (live[s]) continue;
        bool l = false;
        for (uint32_t c = 0; c < nc && !l; ++c) {
          const int32_t t = a.next_[s * nc + c];
          l = t >= 0 && live[uint32_t(t)];
        }
        for (const call_edge& ce : a.calls(s)) l = l || (live[a.entry_[ce.callee]] && live[ce.ret]);
        if (l) live[s] = 1, changed = true;
      }
    }
    if (!live[a.start_]) return make_error(errc::invalid_argument, "grammar matches no string");
    std::vector<call_edge> calls;
    std::vector<uint32_t> begin(ns + 1, 0);
    for (uint32_t s = 0; s < ns; ++s) {
      for (uint32_t c = 0; c < nc; ++c) {
        int32_t& t = a.next_[s * nc + c];
        if (t >= 0 && !live[uint32_t(t)]) t = -1;
      }
      for (const call_edge& ce : a.calls(s))
        if (live[a.entry_[ce.callee]] && live[ce.ret]) calls.push_back(ce);
      begin[s + 1] = static_cast<uint32_t>(calls.size());
    }
    a.calls_ = std::move(calls);
    a.call_begin_ = std::move(begin);
    return {};
  }

  void compute_first_follow() {
    automaton& a = *a_;
    const uint32_t ns = a.state_count(), nc = a.n_classes_;
    a.first_.assign(ns, byte_set{});
    a.call_first_.assign(ns, byte_set{});
    for (uint32_t s = 0; s < ns; ++s)
      for (unsigned b = 0; b < 256; ++b)
        if (a.next_[s * nc + a.class_[b]] >= 0) a.first_[s].set(uint8_t(b));
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t s = 0; s < ns; ++s) {
        byte_set f = a.first_[s], cf = a.call_first_[s];
        for (const call_edge& ce : a.calls(s)) cf |= a.first_[a.entry_[ce.callee]];
        f |= cf;
        if (!(f == a.first_[s]) || !(cf == a.call_first_[s])) {
          a.first_[s] = f, a.call_first_[s] = cf;
          changed = true;
        }
      }
    }
    a.follow_.assign(a.names_.size(), byte_set{});
    for (bool changed = true; changed;) {
      changed = false;
      for (uint32_t s = 0; s < ns; ++s) {
        for (const call_edge& ce : a.calls(s)) {
          byte_set f = a.follow_[ce.callee];
          f |= a.first_[ce.ret];
          if (a.accepting_[ce.ret]) f |= a.follow_[a.state_rule_[ce.ret]];
          if (!(f == a.follow_[ce.callee])) a.follow_[ce.callee] = f, changed = true;
        }
      }
    }
  }
};

expected<std::shared_ptr<const automaton>> automaton::build(const grammar& g, const automaton_limits& limits) {
  return automaton_builder(g, limits).run();
}

} // namespace dynamo::gram
