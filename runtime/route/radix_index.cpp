#include "runtime/route/radix_index_impl.hpp"

#include <fmt/format.h>

namespace dynamo::route {

std::string to_string(const worker_key& w) {
  return fmt::format("{:016x}/{}", w.worker_id, w.dp_rank);
}

std::string_view to_string(apply_status s) noexcept {
  switch (s) {
  case apply_status::ok:
    return "ok";
  case apply_status::parent_block_not_found:
    return "parent_block_not_found";
  case apply_status::block_not_found:
    return "block_not_found";
  case apply_status::invalid_block:
    return "invalid_block";
  }
  return "unknown";
}

uint32_t overlap_scores::blocks_of(const worker_key& w) const noexcept {
  for (const entry& e : scores)
    if (e.worker == w)
      return e.blocks;
  return 0;
}

// ---------------------------------------------------------------------------
// impl: membership, slots, nodes

radix_index::impl::impl(radix_index_options o) : options(o) {
  hot.emplace_back(); // the root
  cold.emplace_back();
}

void radix_index::impl::add(uint32_t id, uint32_t slot) {
  if (slot < 64) {
    hot[id].mask |= uint64_t{1} << slot;
    return;
  }
  auto& more = cold[id].more;
  if (!more)
    more = std::make_unique<std::vector<uint32_t>>();
  auto it = std::lower_bound(more->begin(), more->end(), slot);
  if (it == more->end() || *it != slot)
    more->insert(it, slot);
  hot[id].has_more = 1;
}

void radix_index::impl::drop(uint32_t id, uint32_t slot) noexcept {
  if (slot < 64) {
    hot[id].mask &= ~(uint64_t{1} << slot);
    return;
  }
  auto& more = cold[id].more;
  if (!more)
    return;
  auto it = std::lower_bound(more->begin(), more->end(), slot);
  if (it != more->end() && *it == slot)
    more->erase(it);
  if (more->empty()) {
    more.reset();
    hot[id].has_more = 0;
  }
}

uint32_t radix_index::impl::acquire_slot(const worker_key& w) {
  if (const uint32_t* s = slot_of.find(w))
    return *s;
  // Lowest free slot, so that small fleets stay inside the 64-bit mask.
  uint32_t slot = 0;
  while (slot < slots.size() && slots[slot].live)
    ++slot;
  if (slot == slots.size())
    slots.emplace_back();
  slots[slot].key = w;
  slots[slot].live = true;
  slot_of.insert(w, slot);
  return slot;
}

void radix_index::impl::release_slot_if_empty(uint32_t slot) {
  worker_slot& ws = slots[slot];
  if (!ws.live || !ws.lookup.empty())
    return;
  slot_of.erase(ws.key);
  ws.lookup.clear();
  ws.alias.clear();
  ws.live = false;
}

uint64_t radix_index::impl::ext_of(uint32_t node, uint32_t slot) const noexcept {
  if (const uint64_t* a = slots[slot].alias.find(node))
    return *a;
  return cold[node].ext_hash;
}

bool radix_index::impl::set_entry(uint32_t node, uint32_t slot, uint64_t ext) {
  worker_slot& ws = slots[slot];
  auto [mapped, inserted] = ws.lookup.insert(ext, node);
  if (!inserted)
    return *mapped == node; // already recorded, or `ext` names another block
  if (has(node, slot)) {
    ws.lookup.erase(ext_of(node, slot)); // the engine renamed this block
  } else {
    add(node, slot);
    ++entries;
  }
  if (ext == cold[node].ext_hash)
    ws.alias.erase(node);
  else
    ws.alias.assign(node, ext);
  return true;
}

void radix_index::impl::erase_entry(uint32_t node, uint32_t slot) {
  worker_slot& ws = slots[slot];
  ws.lookup.erase(ext_of(node, slot));
  ws.alias.erase(node);
  drop(node, slot);
  --entries;
}

uint32_t radix_index::impl::take_free_id(uint32_t near) {
  if (free_count == 0)
    return no_node;
  constexpr size_t window = 64; // words searched after `near`: 4096 ids, 128 KiB of hot nodes
  const size_t words = free_bits.size();
  size_t w = near / 64;
  if (w < words) {
    uint64_t bits = free_bits[w] & (~uint64_t{0} << (near % 64));
    for (size_t k = 0; bits == 0 && k < window && ++w < words; ++k)
      bits = free_bits[w];
    if (bits != 0) {
      const auto id = static_cast<uint32_t>(w * 64 + std::countr_zero(bits));
      free_bits[w] &= ~(uint64_t{1} << (id % 64));
      --free_count;
      return id;
    }
  }
  for (size_t n = 0; n < words; ++n, ++free_scan) {
    if (free_scan >= words)
      free_scan = 0;
    if (uint64_t bits = free_bits[free_scan]; bits != 0) {
      const auto id = static_cast<uint32_t>(free_scan * 64 + std::countr_zero(bits));
      free_bits[free_scan] &= bits - 1;
      --free_count;
      return id;
    }
  }
  return no_node;
}

void radix_index::impl::release_id(uint32_t id) {
  if (id / 64 >= free_bits.size())
    free_bits.resize(id / 64 + 1, 0);
  free_bits[id / 64] |= uint64_t{1} << (id % 64);
  ++free_count;
}

uint32_t radix_index::impl::create_child(uint32_t parent, uint64_t tokens_hash, uint64_t ext) {
  uint32_t id = take_free_id(parent + 1);
  if (id == no_node) {
    id = static_cast<uint32_t>(hot.size());
    hot.emplace_back();
    cold.emplace_back();
  }
  node_hot& p = hot[parent];
  hot[id] = node_hot{tokens_hash, 0, no_node, p.first_child, 0, 0};
  node_cold& c = cold[id];
  c.ext_hash = ext;
  c.stamp = 0;
  c.more.reset();
  c.parent = parent;
  c.prev_sibling = no_node;
  c.depth = cold[parent].depth + 1;
  if (p.first_child != no_node)
    cold[p.first_child].prev_sibling = id;
  p.first_child = id;
  ++p.child_count;
  if (p.child_count == sibling_walk_limit + 1) {
    for (uint32_t k = p.first_child; k != no_node; k = hot[k].next_sibling)
      children.insert(child_key{hot[k].tokens_hash, parent}, k);
  } else if (p.child_count > sibling_walk_limit + 1) {
    children.insert(child_key{tokens_hash, parent}, id);
  }
  ++live_nodes;
  return id;
}

// Detaches `id` from its parent's child list (and the children map).
void radix_index::impl::unlink(uint32_t id) {
  const uint32_t parent = cold[id].parent;
  const uint32_t prev = cold[id].prev_sibling;
  const uint32_t next = hot[id].next_sibling;
  node_hot& p = hot[parent];
  if (p.child_count > sibling_walk_limit)
    children.erase(child_key{hot[id].tokens_hash, parent});
  if (prev != no_node)
    hot[prev].next_sibling = next;
  else
    p.first_child = next;
  if (next != no_node)
    cold[next].prev_sibling = prev;
  if (--p.child_count == sibling_walk_limit)
    for (uint32_t k = p.first_child; k != no_node; k = hot[k].next_sibling)
      children.erase(child_key{hot[k].tokens_hash, parent});
}

// Frees `top` and its descendants. REQUIRES: none of them holds a worker.
void radix_index::impl::free_subtree(uint32_t top) {
  unlink(top);
  stack.clear();
  stack.push_back(top);
  while (!stack.empty()) {
    uint32_t id = stack.back();
    stack.pop_back();
    node_hot& n = hot[id];
    bool mapped = n.child_count > sibling_walk_limit;
    for (uint32_t k = n.first_child; k != no_node; k = hot[k].next_sibling) {
      stack.push_back(k);
      if (mapped)
        children.erase(child_key{hot[k].tokens_hash, id});
    }
    n = node_hot{};
    cold[id].parent = no_node;
    cold[id].prev_sibling = no_node;
    cold[id].more.reset();
    release_id(id);
    --live_nodes;
  }
}

// Removes worker `slot` from `top` and every descendant it holds; frees the
// nodes left without workers (their whole subtrees are then worker-free).
void radix_index::impl::remove_from_subtree(uint32_t top, uint32_t slot) {
  to_free.clear();
  stack.clear();
  stack.push_back(top);
  while (!stack.empty()) {
    uint32_t id = stack.back();
    stack.pop_back();
    erase_entry(id, slot);
    if (empty(id))
      to_free.push_back(id);
    for (uint32_t c = hot[id].first_child; c != no_node; c = hot[c].next_sibling)
      if (has(c, slot))
        stack.push_back(c);
  }
  for (uint32_t id : to_free) // free_subtree reuses `stack`, now empty
    if (alive(id))
      free_subtree(id); // pre-order: ancestors are freed first, descendants skipped
}

// ---------------------------------------------------------------------------
// impl: events

apply_status radix_index::impl::store(uint32_t slot, const protocol::kv_event& ev) {
  // A block listed twice, or equal to its parent, would make a cycle.
  order.clear();
  worker_slot& ws = slots[slot];
  for (const auto& b : ev.blocks) {
    order.emplace_back(0, b.block_hash);
    ws.lookup.prefetch(b.block_hash); // overlap the cache misses of the loop below
  }
  if (ev.parent_hash)
    order.emplace_back(0, *ev.parent_hash);
  std::sort(order.begin(), order.end());
  if (std::adjacent_find(order.begin(), order.end()) != order.end())
    return apply_status::invalid_block;

  uint32_t parent = root_node;
  if (ev.parent_hash) {
    const uint32_t* p = ws.lookup.find(*ev.parent_hash);
    if (p == nullptr)
      return apply_status::parent_block_not_found;
    parent = *p;
  }
  ++clock;
  for (const auto& b : ev.blocks) {
    uint32_t child = find_child(parent, b.tokens_hash);
    bool created = child == no_node;
    if (created)
      child = create_child(parent, b.tokens_hash, b.block_hash);
    if (!set_entry(child, slot, b.block_hash)) { // the same block hash at two places
      if (created)
        free_subtree(child);
      return apply_status::invalid_block;
    }
    cold[child].stamp = clock;
    parent = child;
  }
  return apply_status::ok;
}

apply_status radix_index::impl::remove(uint32_t slot, const protocol::kv_event& ev) {
  // Deepest first, so a listed descendant is removed before its listed
  // ancestor's cascade would make it look unknown.
  order.clear();
  worker_slot& ws = slots[slot];
  for (uint64_t h : ev.removed_hashes)
    ws.lookup.prefetch(h);
  apply_status status = apply_status::ok;
  for (uint64_t h : ev.removed_hashes) {
    const uint32_t* n = ws.lookup.find(h);
    if (n == nullptr)
      status = apply_status::block_not_found;
    else
      order.emplace_back(cold[*n].depth, *n);
  }
  std::sort(order.begin(), order.end(), std::greater<>{});
  for (const auto& [depth, node] : order) {
    if (!alive(static_cast<uint32_t>(node)) || !has(static_cast<uint32_t>(node), slot)) {
      status = apply_status::block_not_found; // listed twice
      continue;
    }
    remove_from_subtree(static_cast<uint32_t>(node), slot);
  }
  return status;
}

// ---------------------------------------------------------------------------
// radix_index

radix_index::radix_index(radix_index_options options)
    : impl_(std::make_unique<impl>(options)) {}
radix_index::~radix_index() = default;
radix_index::radix_index(radix_index&&) noexcept = default;
radix_index& radix_index::operator=(radix_index&&) noexcept = default;

apply_status radix_index::apply(const protocol::router_event& event) {
  impl& m = *impl_;
  const protocol::kv_event& ev = event.event;
  worker_key w{event.worker_id, ev.dp_rank};
  apply_status status = apply_status::ok;
  switch (ev.kind) {
  case protocol::kv_event_kind::stored: {
    uint32_t slot = m.acquire_slot(w);
    status = m.store(slot, ev);
    m.release_slot_if_empty(slot);
    m.prune_if_needed();
    break;
  }
  case protocol::kv_event_kind::removed:
    if (const uint32_t* slot = m.find_slot(w)) {
      uint32_t s = *slot;
      status = m.remove(s, ev);
      m.release_slot_if_empty(s);
    } else if (!ev.removed_hashes.empty()) {
      status = apply_status::block_not_found;
    }
    break;
  case protocol::kv_event_kind::cleared:
    (void)remove_worker(w);
    break;
  }
  auto kind = static_cast<size_t>(ev.kind);
  if (kind < m.counters.size())
    ++m.counters[kind][static_cast<size_t>(status)];
  return status;
}

expected<void> radix_index::apply_event(const protocol::router_event& event) {
  apply_status s = apply(event);
  if (s == apply_status::ok)
    return {};
  auto msg = fmt::format("{}: {} event {} of worker {}", to_string(s),
                         protocol::to_string(event.event.kind), event.event.event_id,
                         to_string(worker_key{event.worker_id, event.event.dp_rank}));
  return make_error(s == apply_status::invalid_block ? errc::invalid_argument : errc::not_found,
                    std::move(msg));
}

void radix_index::find_matches(std::span<const uint64_t> local_hashes, bool early_exit,
                               overlap_scores& out) const {
  const impl& m = *impl_;
  out.scores.clear();
  out.scratch.clear();
  auto record = [&](uint32_t slot, uint32_t blocks) {
    const worker_slot& ws = m.slots[slot];
    out.scores.push_back({ws.key, blocks, ws.lookup.size()});
  };
  uint64_t cand = 0;
  std::vector<uint32_t>& more = out.scratch; // candidates in slots >= 64
  uint32_t parent = root_node;
  uint32_t matched = 0;
  for (uint32_t d = 0; d < local_hashes.size(); ++d) {
    uint32_t c = m.find_child(parent, local_hashes[d]);
    if (c == no_node)
      break;
    const node_hot& n = m.hot[c];
    if (d == 0) {
      cand = n.mask;
      if (n.has_more)
        more.assign(m.cold[c].more->begin(), m.cold[c].more->end());
    } else {
      for (uint64_t gone = cand & ~n.mask; gone != 0; gone &= gone - 1)
        record(static_cast<uint32_t>(std::countr_zero(gone)), d);
      cand &= n.mask;
      if (!more.empty()) {
        size_t keep = 0;
        for (uint32_t s : more) {
          if (m.has(c, s))
            more[keep++] = s;
          else
            record(s, d);
        }
        more.resize(keep);
      }
    }
    if (cand == 0 && more.empty())
      return;
    matched = d + 1;
    parent = c;
    if (early_exit && std::popcount(cand) + more.size() == 1)
      break;
  }
  for (uint64_t left = cand; left != 0; left &= left - 1)
    record(static_cast<uint32_t>(std::countr_zero(left)), matched);
  for (uint32_t s : more)
    record(s, matched);
}

overlap_scores radix_index::find_matches(std::span<const uint64_t> local_hashes,
                                         bool early_exit) const {
  overlap_scores out;
  find_matches(local_hashes, early_exit, out);
  return out;
}

size_t radix_index::tree_size(const worker_key& worker) const noexcept {
  const uint32_t* s = impl_->find_slot(worker);
  return s ? impl_->slots[*s].lookup.size() : 0;
}

bool radix_index::holds(const worker_key& worker, uint64_t block_hash) const noexcept {
  const uint32_t* s = impl_->find_slot(worker);
  return s && impl_->slots[*s].lookup.contains(block_hash);
}

size_t radix_index::node_count() const noexcept { return impl_->live_nodes; }
size_t radix_index::entry_count() const noexcept { return impl_->entries; }
uint64_t radix_index::pruned_entries() const noexcept { return impl_->pruned; }

uint64_t radix_index::applied(protocol::kv_event_kind kind, apply_status status) const noexcept {
  auto k = static_cast<size_t>(kind);
  return k < impl_->counters.size() ? impl_->counters[k][static_cast<size_t>(status)] : 0;
}

std::vector<worker_key> radix_index::workers() const {
  std::vector<worker_key> out;
  for (const worker_slot& ws : impl_->slots)
    if (ws.live)
      out.push_back(ws.key);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace dynamo::route
