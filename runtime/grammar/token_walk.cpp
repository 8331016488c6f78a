#include "runtime/grammar/token_walk.hpp"

#include <algorithm>

namespace dynamo::gram::detail {

config walker::load(std::span<const uint32_t> st) {
  uint32_t node = node_bottom;
  for (size_t i = 0; i + 1 < st.size(); ++i) node = push(st[i], node);
  return {st.back(), node};
}

void walker::unload(config c, std::vector<uint32_t>& out) const {
  out.clear();
  out.push_back(c.state);
  for (uint32_t n = c.node; n != node_bottom && n != node_base; n = arena_[n].parent) out.push_back(arena_[n].state);
  std::reverse(out.begin(), out.end());
}

void walker::step(config c, uint8_t b, std::vector<config>& out, size_t out_begin, bool& base_pop) {
  const automaton& a = *a_;
  // A configuration can be reached twice through different call paths;
  // identical (state, node) pairs are only kept once.
  if (const int32_t t = a.next(c.state, b); t >= 0) {
    const config n{static_cast<uint32_t>(t), c.node};
    if (std::none_of(out.begin() + static_cast<ptrdiff_t>(out_begin), out.end(),
                     [&](const config& o) { return o.state == n.state && o.node == n.node; }))
      out.push_back(n);
  }
  if (a.call_first(c.state).test(b)) {
    for (const call_edge& ce : a.calls(c.state)) {
      const uint32_t e = a.entry(ce.callee);
      if (!a.first(e).test(b)) continue;
      const uint32_t node = push(ce.ret, c.node);
      step({e, node}, b, out, out_begin, base_pop);
    }
  }
  if (a.accepting(c.state)) {
    if (c.node == node_base) {
      if (a.follow(a.rule_of(c.state)).test(b)) base_pop = true;
    } else if (c.node != node_bottom) {
      const stack_node up = arena_[c.node];
      step({up.state, up.parent}, b, out, out_begin, base_pop);
    }
  }
}

} // namespace dynamo::gram::detail
