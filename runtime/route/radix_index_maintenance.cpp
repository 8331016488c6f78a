// radix_index: whole-worker removal, pruning to the memory bound, dump/restore.
#include "runtime/route/radix_index_impl.hpp"

#include <fmt/format.h>

#include <queue>

namespace dynamo::route {

// Drops every entry of `slot`, frees the segments left without workers and
// merges the ones whose worker sets became equal.
size_t radix_index::impl::remove_slot(uint32_t slot) {
  worker_slot& ws = slots[slot];
  const size_t removed = ws.lookup.size();
  touched.clear();
  ws.lookup.for_each([&](uint64_t, uint32_t b) {
    const uint32_t s = blocks[b].seg;
    if (has(s, slot)) {
      drop(s, slot);
      touched.push_back(s);
    }
  });
  entries -= removed;
  ws.lookup.clear();
  ws.alias.clear();
  settle_touched();
  release_slot_if_empty(slot);
  return removed;
}

// Past max_blocks entries, prunes the oldest leaf blocks (deepest first on
// equal age) until the index holds prune_target_ratio * max_blocks entries.
// Only leaves go, so no chain gets a hole.
void radix_index::impl::prune_if_needed() {
  if (options.max_blocks == 0 || entries <= options.max_blocks)
    return;
  auto target = static_cast<size_t>(static_cast<double>(options.max_blocks) *
                                    std::clamp(options.prune_target_ratio, 0.0, 1.0));
  struct leaf {
    uint64_t stamp;
    uint32_t depth;
    uint32_t block;
  };
  auto later = [](const leaf& a, const leaf& b) {
    return a.stamp != b.stamp ? a.stamp > b.stamp : a.depth < b.depth;
  };
  auto leaf_of = [&](uint32_t s) {
    const uint32_t b = segs[s].entries.back().block;
    return leaf{blocks[b].stamp, depth_of(b), b};
  };
  std::vector<leaf> heap;
  for (uint32_t s = 1; s < segs.size(); ++s)
    if (seg_alive(s) && segs[s].first_child == no_id)
      heap.push_back(leaf_of(s));
  std::priority_queue<leaf, std::vector<leaf>, decltype(later)> queue(later, std::move(heap));
  std::vector<uint32_t> holders;
  while (entries > target && !queue.empty()) {
    const uint32_t b = queue.top().block;
    queue.pop();
    if (!block_alive(b))
      continue;
    const uint32_t s = blocks[b].seg;
    if (blocks[b].off + 1 != segs[s].size() || segs[s].first_child != no_id)
      continue; // not a leaf any more
    holders.clear();
    for_each_slot(s, [&](uint32_t x) { holders.push_back(x); });
    for (uint32_t x : holders) {
      erase_entry(b, x);
      ++pruned;
    }
    if (segs[s].size() > 1) {
      segs[s].entries.pop_back();
      blocks[b].seg = no_id;
      free_blocks.push_back(b);
      --live_blocks;
      queue.push(leaf_of(s));
    } else {
      const uint32_t parent = segs[s].parent;
      for (uint32_t x : holders)
        drop(s, x);
      free_subtree(s); // may merge `parent` with its last child
      if (parent != root_seg && segs[parent].first_child == no_id)
        queue.push(leaf_of(parent));
    }
    for (uint32_t x : holders)
      release_slot_if_empty(x);
  }
}

size_t radix_index::remove_worker(const worker_key& worker) {
  const uint32_t* slot = impl_->find_slot(worker);
  return slot ? impl_->remove_slot(*slot) : 0;
}

size_t radix_index::remove_worker(uint64_t worker_id) {
  size_t removed = 0;
  for (const worker_key& w : workers())
    if (w.worker_id == worker_id)
      removed += remove_worker(w);
  return removed;
}

apply_status radix_index::replace_worker(const worker_key& worker,
                                         std::span<const protocol::kv_event> dump) {
  (void)remove_worker(worker);
  apply_status first = apply_status::ok;
  for (const protocol::kv_event& ev : dump) {
    protocol::router_event re{worker.worker_id, ev};
    re.event.dp_rank = worker.dp_rank;
    apply_status s = apply(re);
    if (first == apply_status::ok)
      first = s;
  }
  return first;
}

std::vector<protocol::kv_event> radix_index::dump_worker(const worker_key& worker,
                                                         uint64_t event_id) const {
  std::vector<protocol::kv_event> out;
  const impl& m = *impl_;
  const uint32_t* found = m.find_slot(worker);
  if (found == nullptr)
    return out;
  const uint32_t slot = *found;
  // Each event is a chain that follows the first held child; other held
  // children start later events whose parent is already dumped.
  std::vector<uint32_t> starts;
  for (uint32_t c = m.segs[root_seg].first_child; c != no_id; c = m.segs[c].next_sibling)
    if (m.has(c, slot))
      starts.push_back(c);
  while (!starts.empty()) {
    uint32_t s = starts.back();
    starts.pop_back();
    protocol::kv_event ev;
    ev.event_id = event_id;
    ev.kind = protocol::kv_event_kind::stored;
    ev.dp_rank = worker.dp_rank;
    if (const uint32_t parent = m.segs[s].parent; parent != root_seg)
      ev.parent_hash = m.ext_of(m.segs[parent].entries.back().block, slot);
    while (s != no_id) {
      for (const seg_entry& e : m.segs[s].entries)
        ev.blocks.push_back({m.ext_of(e.block, slot), e.tokens_hash});
      uint32_t next = no_id;
      for (uint32_t c = m.segs[s].first_child; c != no_id; c = m.segs[c].next_sibling) {
        if (!m.has(c, slot))
          continue;
        if (next == no_id)
          next = c;
        else
          starts.push_back(c);
      }
      s = next;
    }
    out.push_back(std::move(ev));
  }
  return out;
}

std::string radix_index::check_invariants() const {
  const impl& m = *impl_;
  std::vector<size_t> held(m.slots.size(), 0); // blocks per slot, from the segments
  size_t blocks = 0;
  for (uint32_t s = 0; s < m.segs.size(); ++s) {
    if (!m.seg_alive(s))
      continue;
    const segment& seg = m.segs[s];
    uint32_t count = 0;
    for (uint32_t c = seg.first_child; c != no_id; c = m.segs[c].next_sibling, ++count) {
      const segment& child = m.segs[c];
      if (child.parent != s)
        return fmt::format("segment {}: child {} names parent {}", s, c, child.parent);
      if (seg.child_count > sibling_walk_limit &&
          m.children.find(child_key{child.first_token, s}) == nullptr)
        return fmt::format("segment {}: child {} missing from the children map", s, c);
    }
    if (count != seg.child_count)
      return fmt::format("segment {}: {} children listed, {} counted", s, count, seg.child_count);
    if (s == root_seg)
      continue;
    if (seg.entries.empty() || m.empty(s))
      return fmt::format("segment {}: no blocks or no workers", s);
    if (seg.first_token != seg.entries.front().tokens_hash)
      return fmt::format("segment {}: stale first token", s);
    const segment& parent = m.segs[seg.parent];
    if (seg.depth != (seg.parent == root_seg ? 1 : parent.depth + parent.size()))
      return fmt::format("segment {}: depth {}", s, seg.depth);
    std::string bad;
    m.for_each_slot(s, [&](uint32_t x) {
      held[x] += seg.size();
      if (seg.parent != root_seg && !m.has(seg.parent, x))
        bad = fmt::format("segment {}: worker slot {} not in the parent", s, x);
    });
    if (!bad.empty())
      return bad;
    if (seg.child_count == 1 && m.same_workers(s, seg.first_child))
      return fmt::format("segment {}: not merged with its only child", s);
    for (uint32_t i = 0; i < seg.size(); ++i) {
      const block_info& b = m.blocks[seg.entries[i].block];
      if (b.seg != s || b.off != i)
        return fmt::format("segment {}: block {} says it is at {}/{}", s, i, b.seg, b.off);
    }
    blocks += seg.size();
  }
  if (blocks != m.live_blocks)
    return fmt::format("{} blocks in segments, {} counted", blocks, m.live_blocks);
  size_t entries = 0;
  for (uint32_t x = 0; x < m.slots.size(); ++x) {
    const worker_slot& ws = m.slots[x];
    entries += ws.lookup.size();
    if (ws.lookup.size() != held[x])
      return fmt::format("slot {}: {} lookup entries, {} held blocks", x, ws.lookup.size(), held[x]);
    std::string bad;
    ws.lookup.for_each([&](uint64_t ext, uint32_t b) {
      if (bad.empty() && (!m.block_alive(b) || !m.has(m.blocks[b].seg, x) || m.ext_of(b, x) != ext))
        bad = fmt::format("slot {}: lookup entry {:x} -> block {} is stale", x, ext, b);
    });
    if (!bad.empty())
      return bad;
  }
  if (entries != m.entries)
    return fmt::format("{} lookup entries, {} counted", entries, m.entries);
  return {};
}

} // namespace dynamo::route
