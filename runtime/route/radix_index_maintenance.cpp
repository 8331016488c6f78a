// radix_index: whole-worker removal, pruning to the memory bound, dump/restore.
#include "runtime/route/radix_index_impl.hpp"

#include <queue>

namespace dynamo::route {

// Drops every entry of `slot` and frees the nodes left without workers.
size_t radix_index::impl::remove_slot(uint32_t slot) {
  worker_slot& ws = slots[slot];
  size_t removed = ws.lookup.size();
  to_free.clear();
  ws.lookup.for_each([&](uint64_t, uint32_t node) {
    drop(node, slot);
    if (empty(node))
      to_free.push_back(node);
  });
  entries -= removed;
  ws.lookup.clear();
  ws.alias.clear();
  // Worker-free nodes form whole subtrees (a worker holding a node holds its
  // parent); free each from its top, the node whose parent still has workers.
  for (uint32_t id : to_free) {
    if (!alive(id))
      continue;
    uint32_t parent = cold[id].parent;
    if (parent == root_node || !empty(parent))
      free_subtree(id);
  }
  release_slot_if_empty(slot);
  return removed;
}

// Past max_blocks entries, prunes the oldest leaves (deepest first on equal
// age) until the index holds prune_target_ratio * max_blocks entries. Only
// leaves go, so no chain gets a hole.
void radix_index::impl::prune_if_needed() {
  if (options.max_blocks == 0 || entries <= options.max_blocks)
    return;
  auto target = static_cast<size_t>(static_cast<double>(options.max_blocks) *
                                    std::clamp(options.prune_target_ratio, 0.0, 1.0));
  struct leaf {
    uint64_t stamp;
    uint32_t depth;
    uint32_t id;
  };
  auto later = [](const leaf& a, const leaf& b) {
    return a.stamp != b.stamp ? a.stamp > b.stamp : a.depth < b.depth;
  };
  std::vector<leaf> heap;
  for (uint32_t id = 1; id < hot.size(); ++id)
    if (alive(id) && hot[id].first_child == no_node)
      heap.push_back({cold[id].stamp, cold[id].depth, id});
  std::priority_queue<leaf, std::vector<leaf>, decltype(later)> queue(later, std::move(heap));
  std::vector<uint32_t> holders;
  while (entries > target && !queue.empty()) {
    uint32_t id = queue.top().id;
    queue.pop();
    if (!alive(id) || hot[id].first_child != no_node)
      continue;
    uint32_t parent = cold[id].parent;
    holders.clear();
    for_each_slot(id, [&](uint32_t s) { holders.push_back(s); });
    for (uint32_t s : holders) {
      erase_entry(id, s);
      ++pruned;
    }
    free_subtree(id);
    for (uint32_t s : holders)
      release_slot_if_empty(s);
    if (parent != root_node && hot[parent].first_child == no_node)
      queue.push({cold[parent].stamp, cold[parent].depth, parent});
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
  for (uint32_t c = m.hot[root_node].first_child; c != no_node; c = m.hot[c].next_sibling)
    if (m.has(c, slot))
      starts.push_back(c);
  while (!starts.empty()) {
    uint32_t id = starts.back();
    starts.pop_back();
    protocol::kv_event ev;
    ev.event_id = event_id;
    ev.kind = protocol::kv_event_kind::stored;
    ev.dp_rank = worker.dp_rank;
    uint32_t parent = m.cold[id].parent;
    if (parent != root_node)
      ev.parent_hash = m.ext_of(parent, slot);
    while (id != no_node) {
      ev.blocks.push_back({m.ext_of(id, slot), m.hot[id].tokens_hash});
      uint32_t next = no_node;
      for (uint32_t c = m.hot[id].first_child; c != no_node; c = m.hot[c].next_sibling) {
        if (!m.has(c, slot))
          continue;
        if (next == no_node)
          next = c;
        else
          starts.push_back(c);
      }
      id = next;
    }
    out.push_back(std::move(ev));
  }
  return out;
}

} // namespace dynamo::route
