#include "runtime/route/bench/kv_routing_sim.hpp"

#include "runtime/core/units.hpp"
#include "runtime/kv/block_hash.hpp"
#include "runtime/plan/profiler.hpp"
#include "runtime/plan/router_cost.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace dynamo::route::bench {

kvbm::kvbm_config kvbm_of(const options& o, std::string_view v) {
  kvbm::kvbm_config k;
  if (v == "host" || v == "host+disk")
    k.host_bytes = gib_to_bytes(o.kvbm_host_gb);
  if (v == "host+disk")
    k.disk_bytes = gib_to_bytes(o.kvbm_disk_gb);
  if (o.kvbm_disk_min_frequency > 0)
    k.disk_filter.min_frequency = o.kvbm_disk_min_frequency;
  return k;
}

expected<timing_costs> profiled_timing(const options& o) {
  expected<plan::engine_profile> p = plan::engine_profile{};
  if (!o.router_profile.empty()) {
    p = plan::load_profile(o.router_profile);
  } else {
    plan::profile_sweep sweep; // dynamo-profile's default grid, cold prompts only
    sweep.isl = {128, 256, 512, 1024, 2048, 4096, 6144, 8192};
    sweep.context = {128, 512, 1024, 2048};
    sweep.prefix_hit = {0.0};
    p = plan::run_profile([&o] { return mocker::make_engine(o.engine); }, sweep);
  }
  if (!p)
    return std::move(p.error());
  return plan::router_timing_from_profile(*p);
}

cost_weights router_cost_weights(const options& o, std::string_view v) {
  if (!o.timing_cost)
    return {o.overlap_weight, o.lower_tier_weight};
  timing_costs t = o.timing;
  const std::chrono::microseconds onboard =
      v == "host+disk" ? mocker::onboard_time(0, 1, o.engine) : mocker::onboard_time(1, 0, o.engine);
  t.onboard_ms_per_block = static_cast<double>(onboard.count()) / 1000.0;
  return weights_from_timing(t);
}

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

struct engine_slot {
  std::unique_ptr<engine::engine_core> core;
  bench::probe_executor* probe = nullptr; ///< owned by core
  std::vector<size_t> seq_to_request;     ///< its sequence ids 1, 2, ... -> request index
  worker_key key;
  bool busy = false;
  double step_end_us = never;
  engine::step_result pending;
};

class simulation {
public:
  simulation(const options& o, router_mode mode, const std::vector<trace_record>& trace, std::string_view kvbm)
      : o_(o), trace_(trace),
        router_(inline_events(o, kvbm), o.engine.block_size, mode, o.seed,
                [this](const protocol::kv_resync_request&) { ++result_.resyncs; }) {
    engine::engine_config base;
    base.kvbm = kvbm_of(o, kvbm);
    // The engines live on the virtual clock: the disk filter's decay (and any
    // hold's age) counts simulated time, not the few wall seconds a run takes.
    base.clock = [this] {
      return std::chrono::steady_clock::time_point{} + std::chrono::microseconds(std::llround(now_us_));
    };
    for (uint32_t w = 0; w < o.workers; ++w) {
      auto probe = std::make_unique<bench::probe_executor>(std::make_unique<mocker::mock_executor>(o.engine));
      bench::probe_executor* p = probe.get();
      auto core = mocker::make_engine(std::move(probe), o.engine, base);
      if (!core) {
        std::fprintf(stderr, "%s\n", describe(core.error()).c_str());
        std::exit(1);
      }
      engines_.push_back(engine_slot{std::move(*core), p, {}, worker_key{w + 1, 0}});
      candidates_.push_back(engines_.back().key);
      router_.set_worker_capacity(engines_.back().key, o.engine.num_blocks); // with --router-kv-capacity
    }
    result_.requests.resize(trace.size());
    result_.probes.resize(trace.size());
    result_.first_token_us.assign(trace.size(), -1);
    result_.per_worker_requests.assign(o.workers, 0);
    result_.engine_block_size = o.engine.block_size;
    result_.engine_num_blocks = o.engine.num_blocks;
    // Each session's turns in order: the first arrives at its timestamp; the
    // others at theirs (trace replies) or a think time after the turn before.
    std::unordered_map<uint64_t, size_t> last;
    successor_.assign(trace.size(), none);
    predecessor_.assign(trace.size(), none);
    for (size_t i = 0; i < trace.size(); ++i) {
      auto [it, first] = last.try_emplace(trace[i].session, i);
      if (!first && trace[i].session != 0) {
        successor_[it->second] = i;
        predecessor_[i] = it->second;
        it->second = i;
      }
      if (o.trace_replies || predecessor_[i] == none)
        arrivals_.emplace(arrival_us(i), i);
    }
    prompts_.resize(trace.size());
    replies_.resize(trace.size());
  }

  sim_result run() {
    for (;;) {
      double arrival = arrivals_.empty() ? never : arrivals_.top().first;
      size_t e = earliest_step_end();
      double step_end = e < engines_.size() ? engines_[e].step_end_us : never;
      if (arrival == never && step_end == never)
        break;
      if (arrival <= step_end) {
        const size_t i = arrivals_.top().second;
        arrivals_.pop();
        on_arrival(i, arrival);
      } else {
        on_step_end(e);
      }
    }
    result_.working_set_blocks = distinct_.size();
    for (size_t i = 0; i < result_.requests.size(); ++i)
      result_.probes[i].hit_blocks = result_.requests[i].cached / o_.engine.block_size;
    for (const auto& eng : engines_) {
      result_.preemptions += eng.core->sched().num_preemptions();
      if (auto k = eng.core->load_metrics().kvbm) {
        protocol::kvbm_metrics& t = result_.kvbm;
        const double n = static_cast<double>(engines_.size());
        result_.has_kvbm = true;
        t.kvbm_matched_tokens += k->kvbm_matched_tokens;
        t.kvbm_offload_blocks_d2h += k->kvbm_offload_blocks_d2h;
        t.kvbm_offload_blocks_h2d += k->kvbm_offload_blocks_h2d;
        t.kvbm_onboard_blocks_h2d += k->kvbm_onboard_blocks_h2d;
        t.kvbm_onboard_blocks_d2d += k->kvbm_onboard_blocks_d2d;
        t.kvbm_host_cache_hit_rate += k->kvbm_host_cache_hit_rate / n;
        t.kvbm_disk_cache_hit_rate += k->kvbm_disk_cache_hit_rate / n;
      }
    }
    return std::move(result_);
  }

private:
  [[nodiscard]] double arrival_us(size_t i) const {
    return static_cast<double>(trace_[i].timestamp_ms) * 1000.0;
  }

  [[nodiscard]] size_t earliest_step_end() const {
    size_t best = engines_.size();
    for (size_t i = 0; i < engines_.size(); ++i)
      if (engines_[i].busy && (best == engines_.size() ||
                               engines_[i].step_end_us < engines_[best].step_end_us))
        best = i;
    return best;
  }

  /// The turn's prompt: from the trace, or the session's history so far.
  std::vector<uint32_t> prompt_of(size_t i) {
    const size_t prev = predecessor_[i];
    if (o_.trace_replies || prev == none)
      return synthesize_tokens(trace_[i], o_.workload.trace_block_size);
    std::vector<uint32_t> p = next_turn_prompt(prompts_[prev], replies_[prev], trace_[i], o_.workload.trace_block_size);
    prompts_[prev] = {};
    replies_[prev] = {};
    return p;
  }

  /// What the request could reuse: blocks computed before anywhere, the best
  /// worker's tiers, the routed worker's tiers (before it is routed: `w` none).
  void probe_cacheable(size_t i, std::span<const uint64_t> hashes, size_t w) {
    bench::request_probe& p = result_.probes[i];
    const size_t usable = (std::max<size_t>(p.prompt_blocks * o_.engine.block_size, 1) - 1) / o_.engine.block_size;
    if (w != none) {
      p.routed_blocks = bench::tiered_prefix(*engines_[w].core, hashes, usable);
      return;
    }
    while (p.seen_blocks < std::min(usable, hashes.size()) && seen_.contains(hashes[p.seen_blocks]))
      ++p.seen_blocks;
    for (const engine_slot& e : engines_)
      p.any_worker_blocks = std::max(p.any_worker_blocks, bench::tiered_prefix(*e.core, hashes, usable));
  }

  void on_arrival(size_t i, double now) {
    now_us_ = now;
    const trace_record& t = trace_[i];
    std::vector<uint32_t> tokens = prompt_of(i);
    const std::vector<uint64_t> hashes = kv::sequence_hashes_of_tokens(tokens, o_.engine.block_size);
    bench::request_probe& p = result_.probes[i];
    p.arrival_us = now;
    p.prompt_blocks = static_cast<uint32_t>(tokens.size() / o_.engine.block_size);
    probe_cacheable(i, hashes, none);
    seen_.insert(hashes.begin(), hashes.end());
    distinct_.insert(hashes.begin(), hashes.end());
    if (!o_.trace_replies && successor_[i] != none)
      prompts_[i] = tokens;
    route_request r;
    r.request_id = std::to_string(i);
    r.tokens = tokens;
    r.candidates = candidates_;
    auto d = router_.route(r);
    if (!d) {
      std::fprintf(stderr, "routing failed: %s\n", describe(d.error()).c_str());
      std::exit(1);
    }
    size_t w = d->worker.worker_id - 1;
    probe_cacheable(i, hashes, w);
    {
      overlap_scores sc;
      router_.index().find_matches(kv::local_block_hashes(tokens, o_.engine.block_size), false, sc);
      for (const auto& e : sc.scores) {
        p.router_best_blocks = std::max(p.router_best_blocks, e.lower_blocks);
        if (e.worker == d->worker) p.router_routed_blocks = e.lower_blocks;
      }
    }
    request_state& s = result_.requests[i];
    s.arrival_us = now;
    s.prompt = static_cast<uint32_t>(tokens.size());
    s.predicted_overlap_tokens = d->overlap_blocks * o_.engine.block_size;
    ++result_.per_worker_requests[w];
    protocol::preprocessed_request req;
    req.request_id = r.request_id;
    req.token_ids = std::move(tokens);
    req.prompt_tokens = s.prompt;
    req.stop.max_tokens = std::max<uint32_t>(t.output_length, 1);
    req.stop.ignore_eos = true;
    if (!engines_[w].core->add_request(std::move(req))) {
      std::fprintf(stderr, "duplicate request id %zu\n", i);
      std::exit(1);
    }
    engines_[w].seq_to_request.push_back(i); // its sequence id is the count so far
    if (engines_[w].busy)
      p.in_flight_wait_us = engines_[w].step_end_us - now;
    else
      start_step(w, now);
  }

  void start_step(size_t w, double now) {
    engine_slot& e = engines_[w];
    auto r = e.core->step();
    if (!r) {
      std::fprintf(stderr, "engine step failed: %s\n", describe(r.error()).c_str());
      std::exit(1);
    }
    const bool onboarding = e.core->kvbm() != nullptr && e.core->kvbm()->loads_in_flight() > 0;
    if (r->num_seqs == 0 && r->outputs.empty() && r->kv_events.empty() && !onboarding) {
      e.busy = false; // nothing runnable: wait for the next arrival
      e.step_end_us = never;
      return;
    }
    ++result_.steps;
    result_.computed_tokens += r->num_tokens;
    std::chrono::microseconds simulated{0};
    const auto batch = e.probe->take_batch(simulated);
    bench::record_step(batch, now, static_cast<double>(r->duration.count()),
                       static_cast<double>((r->duration - simulated).count()), e.seq_to_request, result_.probes,
                       result_.first_token_us);
    e.busy = true;
    e.step_end_us = now + std::max<double>(1.0, static_cast<double>(r->duration.count()));
    e.pending = std::move(*r);
  }

  void on_step_end(size_t w) {
    engine_slot& e = engines_[w];
    double now = e.step_end_us;
    now_us_ = now;
    result_.end_us = std::max(result_.end_us, now);
    for (const auto& ev : e.pending.kv_events)
      router_.on_event(protocol::router_event{e.key.worker_id, ev});
    for (const auto& out : e.pending.outputs)
      on_output(out, now);
    e.pending = {};
    start_step(w, now);
  }

  void on_output(const engine::request_output& out, double now) {
    size_t i = std::stoul(out.request_id);
    request_state& s = result_.requests[i];
    s.outputs += static_cast<uint32_t>(out.output.token_ids.size());
    s.cached = std::max(s.cached, out.output.cached_tokens);
    if (!o_.trace_replies && successor_[i] != none)
      replies_[i].insert(replies_[i].end(), out.output.token_ids.begin(), out.output.token_ids.end());
    if (s.first_token_us < 0 && !out.output.token_ids.empty()) {
      s.first_token_us = now;
      result_.first_token_us[i] = now;
      if (!router_.mark_prefill_completed(out.request_id))
        ++result_.lifecycle_mismatches;
    }
    if (out.output.finish != protocol::finish_reason::none) {
      s.done_us = now;
      result_.errors += out.output.finish == protocol::finish_reason::error ? 1 : 0;
      if (!router_.free(out.request_id))
        ++result_.lifecycle_mismatches;
      on_finished(i, now);
    }
  }

  /// The reply's computed blocks join what an infinite cache holds; the
  /// session's next turn arrives its think time later.
  void on_finished(size_t i, double now) {
    if (o_.trace_replies || successor_[i] == none)
      return;
    std::vector<uint32_t> history = prompts_[i];
    if (!replies_[i].empty()) // the last token is sampled, never computed
      history.insert(history.end(), replies_[i].begin(), replies_[i].end() - 1);
    for (uint64_t h : kv::sequence_hashes_of_tokens(history, o_.engine.block_size))
      seen_.insert(h);
    const size_t next = successor_[i];
    arrivals_.emplace(now + arrival_us(next) - arrival_us(i), next);
  }

  /// Dynamo's defaults, with events applied on this thread (virtual time needs
  /// each event in the index before the next routing decision), and the
  /// capacity rule with --router-kv-capacity.
  static kv_router_config inline_events(const options& o, std::string_view kvbm) {
    kv_router_config c;
    c.router_event_threads = 1;
    const cost_weights w = router_cost_weights(o, kvbm);
    c.router_lower_tier_weight = w.lower_tier_weight;
    c.overlap_score_weight = w.overlap_score_weight;
    c.router_kv_capacity = o.router_capacity;
    return c;
  }

  static constexpr size_t none = std::numeric_limits<size_t>::max();
  const options& o_;
  const std::vector<trace_record>& trace_;
  /// Arrivals not yet simulated, earliest first (ties: trace order).
  std::priority_queue<std::pair<double, size_t>, std::vector<std::pair<double, size_t>>, std::greater<>> arrivals_;
  std::vector<size_t> successor_, predecessor_;      ///< the session's next / previous turn
  std::vector<std::vector<uint32_t>> prompts_, replies_; ///< kept until the next turn is built
  std::unordered_set<uint64_t> seen_;     ///< blocks computed so far (prompts, replies)
  std::unordered_set<uint64_t> distinct_; ///< prompt blocks so far
  kv_router router_;
  std::vector<engine_slot> engines_;
  std::vector<worker_key> candidates_;
  sim_result result_;
  double now_us_ = 0; ///< the virtual clock: the event being simulated
};

} // namespace

sim_result simulate(const options& o, router_mode mode, const std::vector<trace_record>& trace, std::string_view kvbm) {
  return simulation(o, mode, trace, kvbm).run();
}

} // namespace dynamo::route::bench
