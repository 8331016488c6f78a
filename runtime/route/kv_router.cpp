#include "runtime/route/kv_router.hpp"
#include "runtime/kv/block_count.hpp"

#include "runtime/kv/block_hash.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dynamo::route {

namespace {

kv_indexer_options indexer_options(const kv_router_config& c) {
  kv_indexer_options o;
  o.index = radix_index_options{static_cast<size_t>(c.router_max_tree_size),
                                c.router_prune_target_ratio};
  // Approximate mode writes from route() itself: applied at once, on the caller.
  o.event_threads = c.use_kv_events ? c.router_event_threads : 1;
  return o;
}

} // namespace

kv_router::kv_router(kv_router_config config, uint32_t block_size, router_mode mode,
                     uint64_t seed, resync_sink sink)
    : config_(std::move(config)), block_size_(block_size == 0 ? 1 : block_size), mode_(mode),
      index_(indexer_options(config_), std::move(sink)),
      sequences_(block_size_), kv_selector_(seed), random_(seed ^ 0x5bd1e995u),
      hash_rng_(seed + 1) {}

void kv_router::cost_candidates(const route_request& r, std::span<const uint64_t> seq_hashes,
                                uint32_t isl, std::vector<candidate_cost>& out) const {
  const double weight = r.overrides.overlap_score_weight.value_or(config_.overlap_score_weight);
  const bool track_prefill =
      r.overrides.track_prefill_tokens.value_or(config_.router_track_prefill_tokens);
  const uint64_t request_blocks = kv::blocks_for_tokens(isl, block_size_);
  out.clear();
  for (const worker_key& w : r.candidates) {
    candidate_cost c;
    c.worker = w;
    c.overlap_blocks = scores_.blocks_of(w);
    c.tree_size = index_.tree_size(w);
    // Blocks only in a KVBM tier (onboarded, not recomputed) count at a discount.
    const uint32_t lower = scores_.lower_blocks_of(w) - c.overlap_blocks;
    c.cached_tokens = static_cast<uint64_t>((c.overlap_blocks + config_.router_lower_tier_weight * lower) * block_size_);
    if (track_prefill) {
      uint64_t uncached = isl > c.cached_tokens ? isl - c.cached_tokens : 0;
      c.prefill_tokens = static_cast<double>(sequences_.active_prefill_tokens(w) + uncached);
    }
    if (config_.router_track_active_blocks) {
      uint64_t shared = sequences_.shared_prefix_blocks(w, seq_hashes);
      uint64_t fresh = request_blocks > shared ? request_blocks - shared : 0;
      c.decode_blocks = static_cast<double>(sequences_.active_decode_blocks(w) + fresh);
      if (auto cap = capacity_.find(w); cap != capacity_.end())
        c.overflow_blocks = std::max(0.0, c.decode_blocks - static_cast<double>(cap->second));
    }
    c.logit = kv_logit(weight, c.prefill_tokens, block_size_, c.decode_blocks);
    out.push_back(c);
  }
}

size_t kv_router::choose(const route_request& r, std::span<const candidate_cost> costs) {
  if (r.pinned) {
    for (size_t i = 0; i < costs.size(); ++i)
      if (costs[i].worker == *r.pinned)
        return i;
  }
  switch (mode_) {
  case router_mode::round_robin:
    return round_robin_.select(costs.size());
  case router_mode::random:
    return random_.select(costs.size());
  case router_mode::kv:
    break;
  }
  double temperature = r.overrides.router_temperature.value_or(config_.router_temperature);
  // A worker that cannot hold the request next to its running ones makes it
  // wait for one to finish, which no prefill saved makes up for.
  fitting_.clear();
  fitting_index_.clear();
  for (size_t i = 0; i < costs.size(); ++i)
    if (costs[i].overflow_blocks == 0) {
      fitting_.push_back(costs[i]);
      fitting_index_.push_back(i);
    }
  if (fitting_.empty() || fitting_.size() == costs.size())
    return kv_selector_.select(costs, temperature);
  return fitting_index_[kv_selector_.select(fitting_, temperature)];
}

uint32_t kv_router::best_overlap_blocks(std::span<const uint32_t> tokens) {
  local_ = kv::local_block_hashes(tokens, block_size_);
  index_.find_matches(local_, false, scores_);
  uint32_t best = 0;
  for (const auto& e : scores_.scores)
    best = std::max(best, e.blocks);
  return best;
}

expected<route_decision> kv_router::route(const route_request& r) {
  if (r.candidates.empty())
    return make_error(errc::no_workers, "no candidate workers");
  if (r.pinned && std::find(r.candidates.begin(), r.candidates.end(), *r.pinned) ==
                      r.candidates.end())
    return make_error(errc::no_workers, fmt::format("pinned worker {} is not a candidate",
                                                    to_string(*r.pinned)));
  if (!r.tokens.empty())
    local_ = kv::local_block_hashes(r.tokens, block_size_);
  else
    local_.assign(r.local_hashes.begin(), r.local_hashes.end());
  uint32_t isl = r.isl != 0 ? r.isl : static_cast<uint32_t>(r.tokens.size());
  if (isl == 0)
    return make_error(errc::invalid_argument, "empty prompt");
  if (uint64_t{local_.size()} * block_size_ > isl)
    return make_error(errc::invalid_argument, "more prompt blocks than prompt tokens");
  if (r.overrides.assume_kv_reuse.value_or(config_.router_assume_kv_reuse)) {
    seq_ = kv::sequence_hashes(local_);
  } else {
    seq_.resize(local_.size());
    for (uint64_t& h : seq_)
      h = hash_rng_(); // no two requests share blocks
  }
  index_.find_matches(local_, false, scores_);
  route_decision d;
  cost_candidates(r, seq_, isl, d.costs);
  size_t i = choose(r, d.costs);
  d.chosen = d.costs[i];
  d.worker = d.chosen.worker;
  d.overlap_blocks = d.chosen.overlap_blocks;
  bool track_prefill =
      r.overrides.track_prefill_tokens.value_or(config_.router_track_prefill_tokens);
  // Booked as costed: a request that onboards from a KVBM tier is not
  // predicted to prefill what it loads.
  if (!sequences_.add_request(r.request_id, d.worker, seq_, isl, d.chosen.cached_tokens,
                              track_prefill))
    return make_error(errc::invalid_argument,
                      fmt::format("request id '{}' is already active", r.request_id));
  if (!config_.use_kv_events)
    record_approximate(d.worker, local_, kv::sequence_hashes(local_));
  return d;
}

// Approximate mode: assume the chosen worker now caches the whole prompt.
void kv_router::record_approximate(const worker_key& w, std::span<const uint64_t> local,
                                   std::span<const uint64_t> seq) {
  protocol::router_event ev;
  ev.worker_id = w.worker_id;
  ev.event.event_id = approx_event_id_++;
  ev.event.dp_rank = w.dp_rank;
  ev.event.kind = protocol::kv_event_kind::stored;
  for (size_t i = 0; i < local.size(); ++i)
    ev.event.blocks.push_back({seq[i], local[i]});
  index_.apply_unsequenced(std::move(ev));
}

bool kv_router::mark_prefill_completed(const std::string& request_id) {
  return sequences_.mark_prefill_completed(request_id);
}

bool kv_router::free(const std::string& request_id) { return sequences_.free(request_id); }

void kv_router::on_event(protocol::router_event event) { index_.on_event(std::move(event)); }

void kv_router::on_replay(protocol::kv_replay replay) { index_.on_replay(std::move(replay)); }

void kv_router::add_worker(const worker_key& worker) { index_.add_worker(worker); }

bool kv_router::set_worker_capacity(const worker_key& worker, uint64_t kv_blocks) {
  if (!config_.router_kv_capacity || kv_blocks == 0)
    return false;
  auto [it, fresh] = capacity_.try_emplace(worker, kv_blocks);
  if (!fresh && it->second == kv_blocks)
    return false;
  it->second = kv_blocks;
  return true;
}

std::optional<uint64_t> kv_router::worker_capacity(const worker_key& worker) const {
  auto it = capacity_.find(worker);
  return it == capacity_.end() ? std::nullopt : std::optional<uint64_t>{it->second};
}

void kv_router::remove_worker(uint64_t worker_id) {
  index_.remove_worker(worker_id);
  (void)sequences_.remove_worker(worker_id);
  std::erase_if(capacity_, [&](const auto& e) { return e.first.worker_id == worker_id; });
}

} // namespace dynamo::route
