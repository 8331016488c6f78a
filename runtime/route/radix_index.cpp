#include "runtime/route/radix_index_impl.hpp"

#include <fmt/format.h>

#include <algorithm>

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

uint32_t overlap_scores::lower_blocks_of(const worker_key& w) const noexcept {
  for (const entry& e : scores)
    if (e.worker == w)
      return std::max(e.blocks, e.lower_blocks);
  return 0;
}

// ---------------------------------------------------------------------------
// impl: membership, slots, entries

radix_index::impl::impl(radix_index_options o) : options(o) {
  segs.emplace_back(); // the root: no blocks, no workers
}

bool radix_index::impl::only(uint32_t s, uint32_t slot) const noexcept {
  const segment& seg = segs[s];
  if (slot < 64)
    return seg.mask == uint64_t{1} << slot && !seg.more;
  return seg.mask == 0 && seg.more && seg.more->size() == 1 && seg.more->front() == slot;
}

bool radix_index::impl::same_workers(uint32_t a, uint32_t b) const noexcept {
  const segment& x = segs[a];
  const segment& y = segs[b];
  if (x.mask != y.mask || bool(x.more) != bool(y.more))
    return false;
  return !x.more || *x.more == *y.more;
}

void radix_index::impl::add(uint32_t s, uint32_t slot) {
  if (slot < 64) {
    segs[s].mask |= uint64_t{1} << slot;
    return;
  }
  auto& more = segs[s].more;
  if (!more)
    more = std::make_unique<std::vector<uint32_t>>();
  auto it = std::lower_bound(more->begin(), more->end(), slot);
  if (it == more->end() || *it != slot)
    more->insert(it, slot);
}

void radix_index::impl::drop(uint32_t s, uint32_t slot) noexcept {
  if (slot < 64) {
    segs[s].mask &= ~(uint64_t{1} << slot);
    return;
  }
  auto& more = segs[s].more;
  if (!more)
    return;
  auto it = std::lower_bound(more->begin(), more->end(), slot);
  if (it != more->end() && *it == slot)
    more->erase(it);
  if (more->empty())
    more.reset();
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

uint64_t radix_index::impl::ext_of(uint32_t block, uint32_t slot) const noexcept {
  if (const uint64_t* a = slots[slot].alias.find(block))
    return *a;
  return blocks[block].ext_hash;
}

bool radix_index::impl::set_entry(uint32_t block, uint32_t slot, uint64_t ext, bool held) {
  worker_slot& ws = slots[slot];
  auto [mapped, inserted] = ws.lookup.insert(ext, block);
  if (!inserted)
    return *mapped == block; // already recorded, or `ext` names another block
  if (held)
    ws.lookup.erase(ext_of(block, slot)); // the engine renamed this block
  else
    ++entries;
  if (ext == blocks[block].ext_hash)
    ws.alias.erase(block);
  else
    ws.alias.assign(block, ext);
  return true;
}

void radix_index::impl::erase_entry(uint32_t block, uint32_t slot) {
  worker_slot& ws = slots[slot];
  ws.lookup.erase(ext_of(block, slot));
  if (!ws.alias.empty())
    ws.alias.erase(block);
  --entries;
}

void radix_index::impl::leave(uint32_t s, uint32_t slot) {
  for (const seg_entry& e : segs[s].entries)
    erase_entry(e.block, slot);
  drop(s, slot);
}

// ---------------------------------------------------------------------------
// impl: events

void radix_index::impl::join(uint32_t s, uint32_t n, uint32_t slot) {
  if (n < segs[s].size())
    (void)split(s, n);
  add(s, slot);
  try_merge(segs[s].parent); // `s` may now have its parent's workers
}

// Walks the event's chain from its parent block. The walk is at the first `n`
// blocks of segment `s`; `joining` while the worker is not one of `s`'s workers
// (it entered `s` at its first block), so `s` takes it once the walk leaves.
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

  uint32_t s = root_seg;
  uint32_t n = 0;
  if (ev.parent_hash) {
    const uint32_t* p = ws.lookup.find(*ev.parent_hash);
    if (p == nullptr)
      return apply_status::parent_block_not_found;
    s = blocks[*p].seg;
    n = blocks[*p].off + 1;
  }
  ++clock;
  bool joining = false;
  apply_status status = apply_status::ok;
  for (const auto& b : ev.blocks) {
    uint32_t at = no_id; // the block already at the chain's next position
    if (n < segs[s].size() && segs[s].entries[n].tokens_hash == b.tokens_hash) {
      at = segs[s].entries[n].block;
    } else {
      if (joining) {
        const uint32_t last = segs[s].entries[n - 1].block;
        join(s, n, slot); // may merge `s` into its parent
        s = blocks[last].seg;
        n = blocks[last].off + 1;
      }
      joining = false;
      if (n == segs[s].size()) {
        if (uint32_t c = find_child(s, b.tokens_hash); c != no_id) {
          joining = !has(c, slot);
          s = c;
          n = 0;
          at = segs[c].entries[0].block;
        }
      }
    }
    if (at != no_id) {
      if (!set_entry(at, slot, b.block_hash, !joining)) { // the same block hash at two places
        status = apply_status::invalid_block;
        break;
      }
    } else {
      auto [entry, fresh] = ws.lookup.insert(b.block_hash, no_id); // filled in below
      if (!fresh) { // the worker uses this hash for another block
        status = apply_status::invalid_block;
        break;
      }
      if (n < segs[s].size())
        (void)split(s, n); // the chain branches off inside `s`
      if (s == root_seg || segs[s].first_child != no_id || !only(s, slot)) {
        uint32_t c = new_segment(s);
        segs[c].first_token = b.tokens_hash;
        add(c, slot);
        link_child(s, c);
        s = c;
        n = 0;
      }
      at = new_block(s, b.tokens_hash, b.block_hash); // appends to `s`
      *entry = at; // a new block has no alias: freed blocks leave none behind
      ++entries;
    }
    blocks[at].stamp = clock;
    ++n;
  }
  if (joining && n > 0)
    join(s, n, slot);
  return status;
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
    const uint32_t* b = ws.lookup.find(h);
    if (b == nullptr)
      status = apply_status::block_not_found;
    else
      order.emplace_back(depth_of(*b), *b);
  }
  std::sort(order.begin(), order.end(), std::greater<>{});
  for (const auto& [depth, id] : order) {
    const auto b = static_cast<uint32_t>(id);
    if (!block_alive(b) || !has(blocks[b].seg, slot)) {
      status = apply_status::block_not_found; // listed twice
      continue;
    }
    const uint32_t s = blocks[b].seg;
    const uint32_t off = blocks[b].off;
    remove_from_subtree(off > 0 ? split(s, off) : s, slot);
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
  // A device index: blocks in a KV block manager's lower tiers are not the
  // worker's prefix cache (kv_indexer keeps them apart).
  if (ev.medium != protocol::storage_tier::device && ev.kind != protocol::kv_event_kind::cleared)
    return status;
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
  uint32_t s = root_seg;
  const auto q = static_cast<uint32_t>(local_hashes.size());
  uint32_t d = 0; // blocks matched
  while (d < q) {
    const uint32_t c = m.find_child(s, local_hashes[d]);
    if (c == no_id)
      break;
    const segment& seg = m.segs[c];
    if (d == 0) {
      cand = seg.mask;
      if (seg.more)
        more.assign(seg.more->begin(), seg.more->end());
    } else {
      for (uint64_t gone = cand & ~seg.mask; gone != 0; gone &= gone - 1)
        record(static_cast<uint32_t>(std::countr_zero(gone)), d);
      cand &= seg.mask;
      if (!more.empty()) {
        size_t keep = 0;
        for (uint32_t x : more) {
          if (m.has(c, x))
            more[keep++] = x;
          else
            record(x, d);
        }
        more.resize(keep);
      }
    }
    if (cand == 0 && more.empty())
      return;
    // Every candidate holds the whole segment: match along it.
    const uint32_t len = std::min(seg.size(), q - d);
    uint32_t k = 1;
    while (k < len && seg.entries[k].tokens_hash == local_hashes[d + k])
      ++k;
    d += k;
    if (k < seg.size())
      break;
    s = c;
    if (early_exit && std::popcount(cand) + more.size() == 1)
      break;
  }
  for (uint64_t left = cand; left != 0; left &= left - 1)
    record(static_cast<uint32_t>(std::countr_zero(left)), d);
  for (uint32_t x : more)
    record(x, d);
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

size_t radix_index::node_count() const noexcept { return impl_->live_blocks; }
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
