#include "runtime/route/bench/ttft_breakdown.hpp"

#include "runtime/mocker/timing_model.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dynamo::route::bench {

std::vector<probe_executor::entry> probe_executor::take_batch(std::chrono::microseconds& simulated) {
  simulated = std::exchange(simulated_, std::chrono::microseconds{0});
  return std::exchange(last_, {});
}

expected<engine::batch_result> probe_executor::execute(const engine::batch& b) {
  auto r = inner_->execute(b);
  last_.clear();
  for (const engine::batch_entry& e : b.entries)
    last_.push_back(entry{e.seq_id, static_cast<uint32_t>(e.tokens.size()), e.sample});
  simulated_ = r ? r->simulated : std::chrono::microseconds{0};
  return r;
}

uint32_t tiered_prefix(const engine::engine_core& core, std::span<const uint64_t> hashes, size_t max_blocks) {
  hashes = hashes.first(std::min(hashes.size(), max_blocks));
  const kv::block_pool& pool = core.sched().kv().pool();
  auto n = static_cast<uint32_t>(pool.lookup_prefix(hashes).size());
  const kvbm::kvbm_connector* k = core.kvbm();
  for (; n < hashes.size(); ++n) {
    const uint64_t h = hashes[n];
    const bool in_tier = k && (k->host().contains(h) || (k->disk() && k->disk()->contains(h)));
    if (!in_tier && pool.lookup_prefix(hashes.subspan(n, 1)).empty())
      break;
  }
  return n;
}

void record_step(std::span<const probe_executor::entry> batch, double start_us, double duration_us,
                 double onboard_us, std::span<const size_t> seq_to_request, std::vector<request_probe>& probes,
                 std::span<const double> first_token_us) {
  for (const probe_executor::entry& e : batch) {
    if (e.seq_id == 0 || e.seq_id > seq_to_request.size())
      continue;
    const size_t i = seq_to_request[e.seq_id - 1];
    if (first_token_us[i] >= 0)
      continue; // decoding: its TTFT is over
    request_probe& p = probes[i];
    if (p.first_scheduled_us < 0)
      p.first_scheduled_us = start_us;
    p.service_us += duration_us;
    p.onboard_us += onboard_us;
    p.computed += e.tokens;
  }
}

std::string breakdown_json(std::span<const request_probe> probes, std::span<const double> first_token_us,
                           uint32_t block_size, uint32_t num_blocks) {
  std::vector<std::pair<double, size_t>> ttft;
  for (size_t i = 0; i < probes.size(); ++i)
    if (first_token_us[i] >= 0 && probes[i].first_scheduled_us >= 0)
      ttft.emplace_back(first_token_us[i] - probes[i].arrival_us, i);
  if (ttft.empty())
    return "null";
  std::sort(ttft.begin(), ttft.end());
  const size_t lo = ttft.size() * 4 / 10, hi = std::max(lo + 1, ttft.size() * 6 / 10);
  double in_flight = 0, behind = 0, onboard = 0, own = 0, shared = 0, computed = 0;
  for (size_t k = lo; k < hi; ++k) {
    const request_probe& p = probes[ttft[k].second];
    const double queue = p.first_scheduled_us - p.arrival_us;
    const double own_us = mocker::prefill_ms(p.computed) * 1000.0;
    in_flight += std::min(p.in_flight_wait_us, queue);
    behind += queue - std::min(p.in_flight_wait_us, queue);
    onboard += p.onboard_us;
    own += own_us;
    shared += p.service_us - p.onboard_us - own_us;
    computed += p.computed;
  }
  const auto n = static_cast<double>(hi - lo);
  double prompt = 0, seen = 0, any = 0, routed = 0, hit = 0, misrouted = 0, rbest = 0, rrouted = 0;
  for (const request_probe& p : probes) {
    prompt += p.prompt_blocks;
    seen += p.seen_blocks;
    any += p.any_worker_blocks;
    routed += p.routed_blocks;
    hit += p.hit_blocks;
    rbest += p.router_best_blocks;
    rrouted += p.router_routed_blocks;
    misrouted += p.routed_blocks < p.any_worker_blocks ? 1 : 0;
  }
  const auto m = static_cast<double>(probes.size());
  // The timing model's floor: only what no cache held is computed, in a step
  // of its own (its first token samples, so the decode term applies at least
  // at its own KV usage), with no queueing.
  std::vector<double> floor;
  for (const request_probe& p : probes) {
    const uint64_t uncached = (uint64_t{p.prompt_blocks} - std::min(p.seen_blocks, p.prompt_blocks)) * block_size;
    floor.push_back(mocker::prefill_ms(std::max<uint64_t>(uncached, 1)) +
                    mocker::decode_ms(static_cast<double>(p.prompt_blocks) / std::max(num_blocks, 1u)));
  }
  std::sort(floor.begin(), floor.end());
  return fmt::format(
      R"({{"ttft_p50_ms": {:.1f}, "ttft_p50_floor_infinite_cache_ms": {:.1f}, "p40_p60": {{"requests": {}, "queue_in_flight_step_ms": {:.1f}, )"
      R"("queue_behind_others_ms": {:.1f}, "onboard_ms": {:.1f}, "own_prefill_alone_ms": {:.1f}, )"
      R"("shared_step_ms": {:.1f}, "computed_tokens": {:.0f}}}, "per_request_mean_tokens": {{"prompt": {:.0f}, )"
      R"("cacheable_infinite_cache": {:.0f}, "cacheable_best_worker_any_tier": {:.0f}, )"
      R"("cacheable_routed_worker_any_tier": {:.0f}, "hit_routed_worker": {:.0f}, )"
      R"("router_view_best_worker": {:.0f}, "router_view_routed_worker": {:.0f}}}, )"
      R"("routed_below_best_worker": {:.4f}}})",
      ttft[ttft.size() / 2].first / 1000.0, floor[floor.size() / 2], hi - lo, in_flight / n / 1000.0, behind / n / 1000.0,
      onboard / n / 1000.0, own / n / 1000.0, shared / n / 1000.0, computed / n, prompt / m * block_size,
      seen / m * block_size, any / m * block_size, routed / m * block_size, hit / m * block_size, rbest / m * block_size, rrouted / m * block_size, misrouted / m);
}

} // namespace dynamo::route::bench
