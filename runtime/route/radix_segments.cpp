// radix_index: the segment tree's structural operations (create, link, split,
// merge, free) and worker removal from a subtree. See radix_index_impl.hpp.
#include "runtime/route/radix_index_impl.hpp"

namespace dynamo::route {

namespace {

// A free id from `free`, else a new element at the end of `items`.
template <class T>
uint32_t take_id(std::vector<uint32_t>& free, std::vector<T>& items) {
  if (free.empty()) {
    items.emplace_back();
    return static_cast<uint32_t>(items.size() - 1);
  }
  const uint32_t id = free.back();
  free.pop_back();
  return id;
}

} // namespace

uint32_t radix_index::impl::new_segment(uint32_t parent) {
  const uint32_t s = take_id(free_segs, segs);
  const segment& p = segs[parent];
  segs[s].depth = parent == root_seg ? 1 : p.depth + p.size();
  return s;
}

uint32_t radix_index::impl::new_block(uint32_t s, uint64_t tokens_hash, uint64_t ext) {
  const uint32_t b = take_id(free_blocks, blocks);
  segment& seg = segs[s];
  blocks[b] = block_info{ext, clock, s, seg.size()};
  if (seg.entries.empty())
    seg.first_token = tokens_hash;
  seg.entries.push_back({tokens_hash, b});
  ++live_blocks;
  return b;
}

// Adds `c` (with its first block) to the front of `parent`'s children.
void radix_index::impl::link_child(uint32_t parent, uint32_t c) {
  segment& p = segs[parent];
  segment& n = segs[c];
  n.parent = parent;
  n.prev_sibling = no_id;
  n.next_sibling = p.first_child;
  if (p.first_child != no_id)
    segs[p.first_child].prev_sibling = c;
  p.first_child = c;
  ++p.child_count;
  if (p.child_count == sibling_walk_limit + 1) {
    for (uint32_t k = p.first_child; k != no_id; k = segs[k].next_sibling)
      children.insert(child_key{segs[k].first_token, parent}, k);
  } else if (p.child_count > sibling_walk_limit + 1) {
    children.insert(child_key{n.first_token, parent}, c);
  }
}

// Detaches `c` from its parent's child list (and the children map).
void radix_index::impl::unlink(uint32_t c) {
  segment& n = segs[c];
  const uint32_t parent = n.parent;
  segment& p = segs[parent];
  if (p.child_count > sibling_walk_limit)
    children.erase(child_key{n.first_token, parent});
  if (n.prev_sibling != no_id)
    segs[n.prev_sibling].next_sibling = n.next_sibling;
  else
    p.first_child = n.next_sibling;
  if (n.next_sibling != no_id)
    segs[n.next_sibling].prev_sibling = n.prev_sibling;
  n.prev_sibling = n.next_sibling = no_id;
  if (--p.child_count == sibling_walk_limit)
    for (uint32_t k = p.first_child; k != no_id; k = segs[k].next_sibling)
      children.erase(child_key{segs[k].first_token, parent});
}

// Hands every child of `from` to `to`, which has none.
void radix_index::impl::move_children(uint32_t from, uint32_t to) {
  segment& f = segs[from];
  segment& t = segs[to];
  const bool mapped = f.child_count > sibling_walk_limit;
  for (uint32_t k = f.first_child; k != no_id; k = segs[k].next_sibling) {
    segs[k].parent = to;
    if (mapped) {
      children.erase(child_key{segs[k].first_token, from});
      children.insert(child_key{segs[k].first_token, to}, k);
    }
  }
  t.first_child = f.first_child;
  t.child_count = f.child_count;
  f.first_child = no_id;
  f.child_count = 0;
}

uint32_t radix_index::impl::split(uint32_t s, uint32_t n) {
  const uint32_t t = new_segment(root_seg); // depth set below; may grow segs
  segment& head = segs[s];
  segment& tail = segs[t];
  tail.entries.assign(head.entries.begin() + n, head.entries.end());
  head.entries.resize(n);
  tail.first_token = tail.entries.front().tokens_hash;
  tail.depth = head.depth + n;
  tail.mask = head.mask;
  if (head.more)
    tail.more = std::make_unique<std::vector<uint32_t>>(*head.more);
  for (uint32_t i = 0; i < tail.size(); ++i) {
    blocks[tail.entries[i].block].seg = t;
    blocks[tail.entries[i].block].off = i;
  }
  move_children(s, t);
  link_child(s, t);
  return t;
}

void radix_index::impl::try_merge(uint32_t s) {
  while (s != root_seg && seg_alive(s) && segs[s].child_count == 1 &&
         same_workers(s, segs[s].first_child)) {
    const uint32_t c = segs[s].first_child;
    unlink(c);
    segment& head = segs[s];
    segment& tail = segs[c];
    const auto base = head.size();
    for (uint32_t i = 0; i < tail.size(); ++i) {
      blocks[tail.entries[i].block].seg = s;
      blocks[tail.entries[i].block].off = base + i;
    }
    head.entries.insert(head.entries.end(), tail.entries.begin(), tail.entries.end());
    move_children(c, s);
    release_segment(c);
  }
}

// Returns a segment (unlinked, childless) to the free list; its blocks are
// either freed or moved elsewhere by the caller.
void radix_index::impl::release_segment(uint32_t s) {
  segment& seg = segs[s];
  seg.entries.clear();
  seg.more.reset();
  seg.mask = 0;
  seg.parent = no_id;
  seg.first_child = seg.next_sibling = seg.prev_sibling = no_id;
  seg.child_count = 0;
  free_segs.push_back(s);
}

void radix_index::impl::free_subtree(uint32_t top) {
  const uint32_t parent = segs[top].parent;
  unlink(top);
  stack.clear();
  stack.push_back(top);
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    segment& seg = segs[s];
    const bool mapped = seg.child_count > sibling_walk_limit;
    for (uint32_t k = seg.first_child; k != no_id; k = segs[k].next_sibling) {
      stack.push_back(k);
      if (mapped)
        children.erase(child_key{segs[k].first_token, s});
    }
    for (const seg_entry& e : seg.entries) {
      blocks[e.block].seg = no_id;
      free_blocks.push_back(e.block);
    }
    live_blocks -= seg.size();
    seg.first_child = no_id; // children are handled through the stack
    seg.child_count = 0;
    release_segment(s);
  }
  try_merge(parent);
}

// Removes worker `slot` from `top` and every descendant it holds; frees the
// segments left without workers and merges what their removal made mergeable.
void radix_index::impl::remove_from_subtree(uint32_t top, uint32_t slot) {
  touched.clear();
  stack.clear();
  stack.push_back(top);
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    leave(s, slot);
    touched.push_back(s);
    for (uint32_t c = segs[s].first_child; c != no_id; c = segs[c].next_sibling)
      if (has(c, slot))
        stack.push_back(c);
  }
  settle_touched();
}

// Worker-free segments form whole subtrees (a worker of a segment is one of its
// parent's): frees each from its top, whose parent still has workers, then
// merges the survivors whose worker sets now agree with their only child's.
void radix_index::impl::settle_touched() {
  for (uint32_t s : touched) {
    if (!seg_alive(s) || !empty(s))
      continue;
    const uint32_t parent = segs[s].parent;
    if (parent == root_seg || !empty(parent))
      free_subtree(s);
  }
  for (uint32_t s : touched)
    if (seg_alive(s))
      try_merge(s);
}

} // namespace dynamo::route
