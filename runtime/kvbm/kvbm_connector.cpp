#include "runtime/kvbm/kvbm_connector.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace dynamo::kvbm {

using registered_block = kv::block_pool::registered_block;

expected<std::unique_ptr<kvbm_connector>> kvbm_connector::create(kv::kv_cache_manager& kv, kvbm_config cfg,
                                                                 std::optional<g1_view> g1, uint64_t block_bytes,
                                                                 clock_fn clock) {
  if (auto ok = validate(cfg, g1.has_value()); !ok)
    return ok.error();
  if (block_bytes == 0)
    return make_error(errc::config_error, "kvbm: a KV block of 0 bytes");
  if (g1 && (g1->base == nullptr || g1->block_bytes != block_bytes))
    return make_error(errc::config_error, "kvbm: the engine's KV memory view does not match its block size");
  std::optional<disk_store> disk;
  if (cfg.disk_bytes > 0) {
    const std::string identity = cfg.disk_tag + "/" + std::to_string(kv.block_size());
    auto d = disk_store::open({.path = g1 ? cfg.disk_path : std::string{},
                               .capacity_blocks = cfg.disk_bytes / block_bytes,
                               .min_free_bytes = cfg.disk_min_free_bytes,
                               .segment_bytes = cfg.disk_segment_bytes,
                               .tag = segment_tag(identity, block_bytes),
                               .async_compaction = cfg.async_loads});
    if (!d)
      return d.error();
    disk.emplace(std::move(*d));
  }
  return std::unique_ptr<kvbm_connector>(
      new kvbm_connector(kv, std::move(cfg), g1, block_bytes, std::move(disk), std::move(clock)));
}

kvbm_connector::kvbm_connector(kv::kv_cache_manager& kv, kvbm_config cfg, std::optional<g1_view> g1,
                               uint64_t block_bytes, std::optional<disk_store> disk, clock_fn clock)
    : kv_(kv), cfg_(std::move(cfg)), g1_(g1), block_bytes_(block_bytes), clock_(std::move(clock)),
      host_(cfg_.host_bytes / block_bytes), disk_(std::move(disk)), filter_(cfg_.disk_filter),
      onboard_(g1, cfg_.async_loads, disk_ && disk_->has_files() ? cfg_.disk_readers : 1, cfg_.disk_read_bytes) {
  kv_.track_registrations(true);
  if (disk_ && !disk_->restored().empty()) { // blocks of an earlier run: announced as they are now
    for (const restored_block& b : disk_->restored())
      emit_stored(protocol::storage_tier::disk, registered_block{0, b.sequence_hash, b.tokens_hash, b.parent});
    flush_events();
    spdlog::info("KVBM: {} disk blocks of an earlier run found under {}", disk_->restored().size(),
                 disk_->directory());
  }
}

kvbm_connector::~kvbm_connector() { onboard_.drain(); }

void kvbm_connector::on_request(const std::string& request_id, std::vector<uint64_t> sequence_hashes,
                                std::span<const uint64_t> local_hashes) {
  // The prompt's blocks become the most recent in G2/G3, its root last, so a
  // shared prefix outlives the suffixes that hang off it.
  for (auto h = sequence_hashes.rbegin(); h != sequence_hashes.rend(); ++h) {
    (void)host_.touch(*h);
    if (disk_)
      (void)disk_->touch(*h);
  }
  if (disk_) { // hits, from the root while they last, are offers to G3
    const std::vector<uint32_t> in_g1 = kv_.pool().lookup_prefix(sequence_hashes);
    const size_t n = std::min(sequence_hashes.size(), local_hashes.size());
    for (size_t i = 0; i < n; ++i) {
      const uint64_t h = sequence_hashes[i];
      const bool g1 = i < in_g1.size();
      if (!g1 && !host_.contains(h) && !disk_->contains(h))
        break;
      const registered_block b{g1 ? in_g1[i] : 0, h, local_hashes[i],
                               i == 0 ? std::nullopt : std::optional{sequence_hashes[i - 1]}};
      block_bytes slab;
      if (host_.contains(h)) {
        slab = host_.bytes(h);
      } else if (g1 && g1_ && !disk_->contains(h)) {
        const std::span<const std::byte> src = g1_->block(b.id); // registered: immutable until evicted
        slab = std::make_shared<const std::vector<std::byte>>(src.begin(), src.end());
      }
      offer_to_disk(b, slab);
    }
    flush_events();
  }
  requests_[request_id] = request_state{std::move(sequence_hashes), {}, false, false, {}};
}

kvbm_connector::match kvbm_connector::find(const request_state& r, uint32_t num_prompt,
                                           uint32_t num_computed) const {
  const uint32_t bs = kv_.block_size();
  // Whole blocks before the prompt's last token (the step that computes it samples).
  const auto max_blocks =
      static_cast<uint32_t>(std::min<size_t>(r.hashes.size(), num_prompt > 0 ? (num_prompt - 1) / bs : 0));
  const auto in_g1 = static_cast<uint32_t>(
      kv_.pool().lookup_prefix(std::span<const uint64_t>{r.hashes}.first(max_blocks)).size());
  match m;
  m.first_block = std::max(num_computed / bs, in_g1);
  m.looked_up = max_blocks > m.first_block ? max_blocks - m.first_block : 0;
  for (uint32_t i = m.first_block; i < max_blocks; ++i) {
    const uint64_t h = r.hashes[i];
    if (!host_.contains(h) && !(disk_ && disk_->contains(h)))
      break;
    ++m.num_blocks;
  }
  return m;
}

uint32_t kvbm_connector::get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                    uint32_t num_computed) {
  auto it = requests_.find(std::string{request_id});
  if (it == requests_.end() || it->second.loading)
    return 0;
  it->second.last = find(it->second, num_prompt, num_computed);
  const match& m = it->second.last;
  const uint32_t end = (m.first_block + m.num_blocks) * kv_.block_size();
  return m.num_blocks > 0 && end > num_computed ? end - num_computed : 0;
}

void kvbm_connector::count_lookup(request_state& r, uint32_t host_hits, uint32_t disk_hits) {
  if (r.counted)
    return;
  r.counted = true;
  counters_.lookup_blocks += r.last.looked_up;
  counters_.host_hit_blocks += host_hits;
  counters_.disk_hit_blocks += disk_hits;
  counters_.matched_tokens += uint64_t{host_hits + disk_hits} * kv_.block_size();
}

void kvbm_connector::update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                              size_t first_block) {
  auto it = requests_.find(std::string{request_id});
  if (it == requests_.end())
    return;
  request_state& r = it->second;
  onboard_job job{it->first, {}};
  uint32_t host_hits = 0;
  uint32_t disk_hits = 0;
  bool missing = false;
  for (size_t i = first_block; i < block_table.size(); ++i) {
    const uint64_t h = i < r.hashes.size() ? r.hashes[i] : 0;
    if (i < r.hashes.size() && host_.contains(h)) {
      (void)host_.touch(h);
      job.items.push_back(onboard_item{block_table[i], h, host_.bytes(h), {}});
      ++host_hits;
    } else if (i < r.hashes.size() && disk_ && disk_->contains(h)) {
      (void)disk_->touch(h);
      job.items.push_back(onboard_item{block_table[i], h, nullptr, disk_->locate(h).value_or(disk_location{})});
      ++disk_hits;
    } else { // unreachable: find() said every block is there
      missing = true;
    }
  }
  count_lookup(r, host_hits, disk_hits);
  if (missing) {
    ++counters_.loads_failed;
    early_.push_back(kv::finished_load{it->first, false, std::nullopt, true});
    return;
  }
  r.loading = true;
  r.job = onboard_tally{host_hits, disk_hits};
  pending_.push_back(std::move(job));
}

void kvbm_connector::start_loads() {
  for (onboard_job& j : pending_)
    onboard_.submit(std::move(j));
  pending_.clear();
}

std::optional<kv::finished_load> kvbm_connector::finish(const onboard_done& d) {
  for (const auto& [hash, status] : d.disk_failures) {
    switch (status) {
      case read_status::missing: ++counters_.disk_read_missing; break;
      case read_status::truncated: ++counters_.disk_read_truncated; break;
      default: ++counters_.disk_read_corrupt; break;
    }
    spdlog::warn("kvbm: disk block {:016x} is {}; recomputing", hash, to_string(status));
    if (disk_ && disk_->erase(hash)) {
      emit_removed(protocol::storage_tier::disk, {hash});
      disk_dropped({hash});
    }
  }
  counters_.disk_read_bytes += d.disk_bytes;
  counters_.disk_read_seconds += d.disk_seconds;
  if (auto q = quarantined_.find(d.request_id); q != quarantined_.end()) {
    kv_.free_detached(q->second); // nothing writes into them any more
    quarantined_.erase(q);
    return std::nullopt;
  }
  auto it = requests_.find(d.request_id);
  if (it == requests_.end() || !it->second.loading)
    return std::nullopt;
  it->second.loading = false;
  if (d.ok) {
    counters_.onboard_blocks_h2d += it->second.job.host_blocks;
    counters_.onboard_blocks_d2d += it->second.job.disk_blocks;
    tally_.host_blocks += it->second.job.host_blocks;
    tally_.disk_blocks += it->second.job.disk_blocks;
  } else {
    ++counters_.loads_failed;
  }
  return kv::finished_load{d.request_id, d.ok, std::nullopt, true};
}

std::vector<kv::finished_load> kvbm_connector::get_finished() {
  std::vector<kv::finished_load> out = std::exchange(early_, {});
  for (const onboard_done& d : onboard_.poll())
    if (auto f = finish(d))
      out.push_back(std::move(*f));
  flush_events();
  return out;
}

kv::release_action kvbm_connector::on_release(std::string_view request_id, bool) {
  auto it = requests_.find(std::string{request_id});
  if (it == requests_.end())
    return kv::release_action::free;
  count_lookup(it->second, 0, 0);
  const bool loading = it->second.loading;
  requests_.erase(it);
  if (!loading)
    return kv::release_action::free;
  // Not handed to the I/O thread yet: nothing writes into its blocks.
  if (std::erase_if(pending_, [&](const onboard_job& j) { return j.request_id == request_id; }) > 0)
    return kv::release_action::free;
  return kv::release_action::quarantine;
}

void kvbm_connector::adopt(std::string_view request_id, std::vector<uint32_t> blocks) {
  auto& q = quarantined_[std::string{request_id}];
  q.insert(q.end(), blocks.begin(), blocks.end());
}

void kvbm_connector::clear_requests() {
  // The scheduler freed every request's blocks: no copy may still land in them.
  pending_.clear();
  onboard_.drain();
  for (const onboard_done& d : onboard_.poll())
    (void)finish(d); // frees quarantined blocks, counts bad disk blocks
  for (auto& [id, blocks] : quarantined_)
    kv_.free_detached(blocks);
  quarantined_.clear();
  requests_.clear();
  early_.clear();
  flush_events();
}

// --- Offload ----------------------------------------------------------------

void kvbm_connector::offload(std::span<const registered_block> blocks) {
  for (const registered_block& b : blocks) {
    const uint64_t h = b.sequence_hash;
    block_bytes slab;
    if (host_.contains(h)) {
      (void)host_.touch(h);
      slab = host_.bytes(h);
    } else {
      if (g1_) {
        const std::span<const std::byte> src = g1_->block(b.id);
        slab = std::make_shared<const std::vector<std::byte>>(src.begin(), src.end());
      }
      if (host_.capacity() > 0) {
        host_evicted(host_.insert(h, slab, 0, b.parent_hash));
        ++counters_.offload_blocks_d2h;
        announced_on_disk_.erase(h); // held by G2 again
        emit_stored(protocol::storage_tier::host_pinned, b);
      }
    }
    if (disk_)
      offer_to_disk(b, slab);
  }
  flush_events();
}

void kvbm_connector::offer_to_disk(const registered_block& b, const block_bytes& slab) {
  const uint64_t h = b.sequence_hash;
  const bool pass = filter_.should_offload(h, clock_ ? clock_() : std::chrono::steady_clock::now());
  if (disk_->contains(h)) {
    (void)disk_->touch(h);
    (void)host_.set_backed(h, true); // host evicts it before a block only it holds
    return;
  }
  if (!pass)
    return;
  std::span<const std::byte> bytes;
  if (slab)
    bytes = *slab;
  disk_store::write_result r = disk_->write(h, bytes, 0, b.parent_hash, b.tokens_hash);
  switch (r.status) {
    case write_status::stored:
      ++counters_.offload_blocks_h2d;
      (void)host_.set_backed(h, true);
      counters_.disk_evictions += r.evicted.size();
      emit_removed(protocol::storage_tier::disk, r.evicted);
      disk_dropped(r.evicted);
      emit_stored(protocol::storage_tier::disk, b);
      break;
    case write_status::present: break;
    case write_status::disk_full:
      if (counters_.offload_skipped_disk_full++ == 0)
        spdlog::warn("kvbm: the disk under {} is short of space; skipping disk offloads", disk_->directory());
      break;
    case write_status::io_error:
      if (counters_.offload_skipped_io_error++ == 0)
        spdlog::warn("kvbm: writing a block under {} failed; skipping that offload", disk_->directory());
      break;
  }
}

void kvbm_connector::host_evicted(std::vector<block_lru::evicted> evicted) {
  counters_.host_evictions += evicted.size();
  std::vector<uint64_t> removed;
  for (const block_lru::evicted& e : evicted) {
    if (disk_ && disk_->contains(e.sequence_hash))
      announced_on_disk_.insert(e.sequence_hash);
    else
      removed.push_back(e.sequence_hash);
  }
  emit_removed(protocol::storage_tier::host_pinned, std::move(removed));
}

void kvbm_connector::disk_dropped(const std::vector<uint64_t>& hashes) {
  std::vector<uint64_t> removed;
  for (uint64_t h : hashes) {
    (void)host_.set_backed(h, false);
    if (announced_on_disk_.erase(h) != 0)
      removed.push_back(h);
  }
  emit_removed(protocol::storage_tier::host_pinned, std::move(removed));
}

// --- Events -----------------------------------------------------------------

void kvbm_connector::emit_stored(protocol::storage_tier tier, const registered_block& b) {
  // Extends this tier's last event when it is a stored run ending at b's
  // parent (tiers are indexed apart, so only the order within a tier matters).
  auto last = std::find_if(events_.rbegin(), events_.rend(), [&](const auto& e) { return e.medium == tier; });
  if (last != events_.rend() && last->kind == protocol::kv_event_kind::stored && b.parent_hash &&
      last->blocks.back().block_hash == *b.parent_hash) {
    last->blocks.push_back(protocol::kv_stored_block{b.sequence_hash, b.tokens_hash});
    return;
  }
  protocol::kv_event& e = events_.emplace_back();
  e.kind = protocol::kv_event_kind::stored;
  e.medium = tier;
  e.parent_hash = b.parent_hash;
  e.blocks.push_back(protocol::kv_stored_block{b.sequence_hash, b.tokens_hash});
}

void kvbm_connector::emit_removed(protocol::storage_tier tier, std::vector<uint64_t> hashes) {
  if (hashes.empty())
    return;
  auto last = std::find_if(events_.rbegin(), events_.rend(), [&](const auto& e) { return e.medium == tier; });
  if (last != events_.rend() && last->kind == protocol::kv_event_kind::removed) {
    last->removed_hashes.insert(last->removed_hashes.end(), hashes.begin(), hashes.end());
    return;
  }
  protocol::kv_event& e = events_.emplace_back();
  e.kind = protocol::kv_event_kind::removed;
  e.medium = tier;
  e.removed_hashes = std::move(hashes);
}

void kvbm_connector::flush_events() {
  for (protocol::kv_event& e : events_)
    kv_.push_event(std::move(e));
  events_.clear();
}

} // namespace dynamo::kvbm
