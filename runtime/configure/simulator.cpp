#include "runtime/configure/simulator.hpp"

#include "runtime/bench/stats.hpp"
#include "runtime/disagg/prefill_first.hpp"
#include "runtime/route/selector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace dynamo::configure {

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

struct seq {
  uint32_t req = 0;
  uint32_t prefill_left = 0;  ///< prompt tokens still to compute (an estimate until admitted)
  uint32_t context = 0;       ///< tokens in this engine's KV
  uint32_t decode_left = 0;   ///< tokens to sample after the first
  uint32_t chunk = 0;         ///< this step: prompt tokens computed
  bool decoding = false;      ///< this step: one token sampled
  bool handed_off = false;    ///< its prompt's KV comes from a prefill worker
  bool first_sent = false;    ///< handed off: the prefill's first token reached the client
  double last_token_ms = 0;
};

struct worker {
  bool prefill_only = false;  ///< a disaggregated prefill worker: hands off after the first token
  std::vector<seq> running;
  std::deque<seq> waiting;
  std::unordered_set<uint64_t> cache; ///< prefix ids of prompts computed here (never evicted)
  /// The router's view of the decode load: prompt prefix ids of the requests
  /// routed here and not yet done -> how many hold each (shared ones count
  /// once, as route::active_sequences counts them), and their tokens.
  std::unordered_map<uint64_t, uint32_t> active;
  uint64_t active_tokens = 0;
  bool busy = false;
  double busy_until = never;
  double step_start = 0;
  uint64_t kv_used = 0;         ///< tokens held by running sequences
  uint64_t pending_prefill = 0; ///< prompt tokens still to compute, waiting and running

  void reset(bool prefill) {
    prefill_only = prefill;
    running.clear();
    waiting.clear();
    cache.clear();
    active.clear();
    active_tokens = 0;
    busy = false;
    busy_until = never;
    kv_used = pending_prefill = 0;
  }
};

struct handoff {
  double at_ms;
  uint32_t req;
  bool operator>(const handoff& o) const noexcept { return at_ms > o.at_ms || (at_ms == o.at_ms && req > o.req); }
};

} // namespace

std::string_view to_string(deployment_mode m) noexcept {
  return m == deployment_mode::aggregated ? "agg" : "disagg";
}

std::string describe(const deployment& d) {
  if (d.mode == deployment_mode::aggregated)
    return fmt::format("agg {}x max_num_seqs {} max_num_batched_tokens {} router {}", d.decode_replicas,
                       d.max_num_seqs, d.max_num_batched_tokens, route::to_string(d.router));
  return fmt::format("disagg {}P+{}D max_num_seqs {} max_num_batched_tokens {} threshold {} router {}",
                     d.prefill_replicas, d.decode_replicas, d.max_num_seqs, d.max_num_batched_tokens,
                     d.max_local_prefill_length, route::to_string(d.router));
}

struct simulator::state {
  const simulator& sim;
  const plan::step_times& times;
  const sim_options& opt;
  uint32_t kv_cap;
  const deployment* d = nullptr;
  const request_set* rs = nullptr;
  std::vector<worker> workers; ///< prefill workers first, then decode (or aggregated) workers
  uint32_t num_prefill = 0;
  std::priority_queue<handoff, std::vector<handoff>, std::greater<>> handoffs;
  std::vector<double> ttft;
  std::vector<std::pair<double, uint64_t>> gaps;
  route::kv_selector kv_select{1};
  route::round_robin_selector rr_prefill, rr_decode;
  route::random_selector random_select{1};
  std::vector<route::candidate_cost> costs;
  sim_result r;
  double cached_tokens = 0, prompt_tokens = 0, out_tokens = 0, last_done = 0;

  state(const simulator& s, const plan::step_times& t, const sim_options& o, uint32_t cap)
      : sim(s), times(t), opt(o), kv_cap(cap) {}

  const sim_request& req(uint32_t i) const { return rs->requests[i]; }

  // Prompt tokens of request i that worker w caches (whole shared blocks).
  uint32_t overlap(const worker& w, uint32_t i) const {
    const sim_request& q = req(i);
    uint32_t n = 0;
    while (n < q.num_blocks && w.cache.count(rs->block_ids[q.first_block + n]))
      ++n;
    return std::min(n * rs->block_tokens, q.isl);
  }

  void remember_prompt(worker& w, uint32_t i) {
    const sim_request& q = req(i);
    const uint32_t full = std::min(q.num_blocks, q.isl / rs->block_tokens);
    for (uint32_t b = 0; b < full; ++b)
      w.cache.insert(rs->block_ids[q.first_block + b]);
  }

  uint32_t block_len(const sim_request& q, uint32_t b) const {
    return std::min(rs->block_tokens, q.isl - std::min(q.isl, b * rs->block_tokens));
  }

  // Prompt tokens of request i at the head of its prompt that requests active
  // on w already hold (they add no decode load there).
  uint32_t held(const worker& w, uint32_t i) const {
    const sim_request& q = req(i);
    uint32_t tokens = 0;
    for (uint32_t b = 0; b < q.num_blocks && w.active.count(rs->block_ids[q.first_block + b]); ++b)
      tokens += block_len(q, b);
    return tokens;
  }

  // Only the KV router weighs load; the others need no booking.
  void book(worker& w, uint32_t i) {
    if (d->router != route::router_mode::kv)
      return;
    const sim_request& q = req(i);
    for (uint32_t b = 0; b < q.num_blocks; ++b)
      if (w.active[rs->block_ids[q.first_block + b]]++ == 0)
        w.active_tokens += block_len(q, b);
  }

  void unbook(worker& w, uint32_t i) {
    if (d->router != route::router_mode::kv)
      return;
    const sim_request& q = req(i);
    for (uint32_t b = 0; b < q.num_blocks; ++b) {
      auto it = w.active.find(rs->block_ids[q.first_block + b]);
      if (it != w.active.end() && --it->second == 0) {
        w.active_tokens -= block_len(q, b);
        w.active.erase(it);
      }
    }
  }

  // A worker of [first, first + n) for request i, as the router picks it;
  // overlap_weight 0 routes by load alone (the decode leg of prefill-first).
  size_t pick(size_t first, size_t n, uint32_t i, double overlap_weight, route::round_robin_selector& rr) {
    if (n == 1)
      return first;
    if (d->router == route::router_mode::round_robin)
      return first + rr.select(n);
    if (d->router == route::router_mode::random)
      return first + random_select.select(n);
    costs.clear();
    const sim_request& q = req(i);
    for (size_t k = 0; k < n; ++k) {
      const worker& w = workers[first + k];
      const uint32_t hit = overlap_weight > 0 ? overlap(w, i) : 0;
      route::candidate_cost c;
      c.overlap_blocks = hit / opt.block_size;
      c.prefill_tokens = static_cast<double>(w.pending_prefill + (q.isl - hit));
      c.decode_blocks = std::ceil(static_cast<double>(w.active_tokens + q.isl - held(w, i)) / opt.block_size);
      c.tree_size = w.cache.size();
      c.logit = route::kv_logit(overlap_weight, c.prefill_tokens, opt.block_size, c.decode_blocks);
      costs.push_back(c);
    }
    return first + kv_select.select(costs, 0.0);
  }

  void enqueue(size_t wi, seq s, double now) {
    worker& w = workers[wi];
    book(w, s.req);
    w.pending_prefill += s.prefill_left;
    w.waiting.push_back(s);
    if (!w.busy)
      start_step(w, now);
  }

  void arrive(uint32_t i, double now) {
    const sim_request& q = req(i);
    const size_t nd = workers.size() - num_prefill;
    seq s{.req = i, .prefill_left = q.isl, .decode_left = q.osl - 1};
    if (num_prefill > 0) {
      uint32_t cached = 0; // what the decode router reports (kv mode only: it holds the index)
      if (d->router == route::router_mode::kv)
        for (size_t k = num_prefill; k < workers.size(); ++k)
          cached = std::max(cached, overlap(workers[k], i));
      if (disagg::prefill_remotely(q.isl, cached, d->max_local_prefill_length)) {
        ++r.remote_prefills;
        s.decode_left = 0;
        return enqueue(pick(0, num_prefill, i, 1.0, rr_prefill), s, now);
      }
    }
    enqueue(pick(num_prefill, nd, i, 1.0, rr_decode), s, now);
  }

  // The decode engine starts a KV pull at once when nothing waits before it
  // and a slot is free (scheduler::add_request), even in the middle of a step,
  // and sends the prefill's first token when the pull ends (handle_pull_done).
  void hand_off(const handoff& h) {
    const sim_request& q = req(h.req);
    seq s{.req = h.req, .prefill_left = 0, .context = q.isl, .decode_left = q.osl - 1, .handed_off = true};
    const size_t wi = pick(num_prefill, workers.size() - num_prefill, h.req, 0.0, rr_decode);
    if (pulls_at_once(workers[wi], q.isl))
      send_first(s, h.at_ms);
    enqueue(wi, s, h.at_ms);
  }

  // Only pulls already started wait before it (they take slots and blocks).
  bool pulls_at_once(const worker& w, uint32_t isl) const {
    uint64_t kv = w.kv_used + isl;
    for (const seq& o : w.waiting) {
      if (!o.first_sent)
        return false;
      kv += o.context;
    }
    return w.running.size() + w.waiting.size() < d->max_num_seqs && (kv <= kv_cap || w.running.empty());
  }

  void send_first(seq& s, double now) {
    ttft.push_back(now - req(s.req).arrival_ms);
    s.last_token_ms = now;
    s.first_sent = true;
  }

  void finish(const seq& s, double now) {
    ++r.completed;
    out_tokens += req(s.req).osl;
    last_done = std::max(last_done, now);
  }

  uint32_t chunk(uint32_t left, uint32_t budget) const { return std::min(left, budget); }

  void admit(worker& w, seq s) { // by value: it leaves the queue here
    w.kv_used += s.context + (s.handed_off ? 0 : s.prefill_left);
    r.kv_overflow = r.kv_overflow || w.kv_used > kv_cap;
    w.waiting.pop_front();
    w.running.push_back(s);
  }

  // Sequences at the head of the queue whose KV came from a prefill worker:
  // they need blocks, not step tokens, and decode in this very step. One that
  // waited for a slot has its KV pulled now and its first token sent (a queue
  // for the decode worker's slots is part of TTFT; the hand-off's own cost,
  // simulator::handoff_ms, is charged before it reaches the decode router).
  void admit_loaded(worker& w, double now) {
    while (!w.waiting.empty() && w.waiting.front().handed_off && w.running.size() < d->max_num_seqs) {
      seq s = w.waiting.front();
      if (w.kv_used + s.context > kv_cap && !w.running.empty())
        break;
      remember_prompt(w, s.req);
      if (!s.first_sent)
        send_first(s, now);
      admit(w, s);
    }
  }

  // Admits what fits and picks this step's work (the scheduler's order).
  void start_step(worker& w, double now) {
    admit_loaded(w, now);
    uint32_t budget = d->max_num_batched_tokens;
    uint32_t decodes = 0, prefill_tokens = 0, partial = 0, prefills = 0;
    plan::step_work work;
    double ctx_sum = 0;
    for (seq& s : w.running) {
      s.chunk = 0;
      s.decoding = s.prefill_left == 0 && s.decode_left > 0 && budget > 0;
      if (s.decoding) {
        ++decodes;
        ctx_sum += s.context;
        --budget;
      }
    }
    for (seq& s : w.running)
      if (s.prefill_left > 0 && budget > 0) {
        s.chunk = chunk(s.prefill_left, budget);
        times.add_chunk(work, s.context, s.chunk);
        ++prefills;
        budget -= s.chunk;
        prefill_tokens += s.chunk;
        partial += s.chunk < s.prefill_left ? 1 : 0;
      }
    while (!w.waiting.empty() && w.running.size() < d->max_num_seqs) {
      seq s = w.waiting.front();
      if (s.handed_off)
        break; // admitted at the next step (admit_loaded), as the scheduler loads before it decodes
      const sim_request& q = req(s.req);
      if (budget == 0)
        break;
      const uint32_t cached = std::min(overlap(w, s.req), q.isl - 1);
      const uint32_t need = q.isl - cached;
      const uint32_t n = chunk(need, budget);
      if ((n < need && partial >= 1) || (w.kv_used + q.isl > kv_cap && !w.running.empty()))
        break;
      w.pending_prefill += need;
      w.pending_prefill -= s.prefill_left;
      s.prefill_left = need;
      s.context = cached;
      s.chunk = n;
      times.add_chunk(work, s.context, n);
      budget -= n;
      prefill_tokens += n;
      partial += n < need ? 1 : 0;
      ++prefills;
      cached_tokens += cached;
      prompt_tokens += q.isl;
      admit(w, s);
    }
    if (decodes == 0 && prefill_tokens == 0) {
      w.busy = false;
      w.busy_until = never;
      return;
    }
    const double ms = times.step_ms(work, decodes, decodes > 0 ? ctx_sum / decodes : 0) +
                      sim.step_overhead_ms(decodes + prefills);
    w.busy = true;
    w.step_start = now;
    w.busy_until = now + std::max(ms, 1e-6);
    ++r.steps;
  }

  // Applies the step that ends now, then starts the next one.
  void end_step(worker& w) {
    const double now = w.busy_until;
    uint64_t bulk = 0; // decode tokens whose gap is exactly this step
    size_t keep = 0;
    for (size_t k = 0; k < w.running.size(); ++k) {
      seq& s = w.running[k];
      bool done = false;
      if (s.decoding) {
        if (s.last_token_ms == w.step_start) {
          ++bulk;
        } else {
          gaps.emplace_back(now - s.last_token_ms, 1);
        }
        s.last_token_ms = now;
        ++s.context;
        ++w.kv_used;
        done = --s.decode_left == 0;
      } else if (s.chunk > 0) {
        s.prefill_left -= s.chunk;
        s.context += s.chunk;
        w.pending_prefill -= s.chunk;
        if (s.prefill_left == 0) {
          remember_prompt(w, s.req);
          if (w.prefill_only && req(s.req).osl > 1) { // the decode worker takes it from here
            handoffs.push({now + sim.handoff_ms(req(s.req).isl), s.req});
            w.kv_used -= s.context;
            unbook(w, s.req);
            continue;
          }
          ttft.push_back(now - req(s.req).arrival_ms);
          s.last_token_ms = now;
          done = w.prefill_only || s.decode_left == 0;
        }
      }
      if (done) {
        finish(s, now);
        w.kv_used -= s.context;
        unbook(w, s.req);
        continue;
      }
      w.running[keep++] = s;
    }
    w.running.resize(keep);
    r.kv_overflow = r.kv_overflow || w.kv_used > kv_cap;
    if (bulk > 0)
      gaps.emplace_back(now - w.step_start, bulk);
    start_step(w, now);
  }

  sim_result run(const deployment& dep, const request_set& reqs) {
    d = &dep;
    rs = &reqs;
    r = sim_result{};
    r.requests = reqs.requests.size();
    num_prefill = dep.mode == deployment_mode::disaggregated ? dep.prefill_replicas : 0;
    workers.resize(num_prefill + dep.decode_replicas);
    for (size_t k = 0; k < workers.size(); ++k)
      workers[k].reset(k < num_prefill);
    handoffs = {};
    ttft.clear();
    gaps.clear();
    kv_select = route::kv_selector{1};
    rr_prefill = rr_decode = route::round_robin_selector{};
    random_select = route::random_selector{1};
    cached_tokens = prompt_tokens = out_tokens = last_done = 0;
    size_t next = 0;
    while (r.steps < opt.max_steps) {
      worker* soonest = nullptr;
      for (worker& w : workers)
        if (w.busy && (soonest == nullptr || w.busy_until < soonest->busy_until))
          soonest = &w;
      const double t_step = soonest != nullptr ? soonest->busy_until : never;
      const double t_arrive = next < reqs.requests.size() ? reqs.requests[next].arrival_ms : never;
      const double t_hand = handoffs.empty() ? never : handoffs.top().at_ms;
      if (t_step == never && t_arrive == never && t_hand == never)
        break;
      if (t_step <= t_arrive && t_step <= t_hand) {
        end_step(*soonest);
      } else if (t_hand <= t_arrive) {
        handoff h = handoffs.top();
        handoffs.pop();
        hand_off(h);
      } else {
        arrive(static_cast<uint32_t>(next), t_arrive);
        ++next;
      }
    }
    return summarize();
  }

  sim_result summarize() {
    r.gpus = static_cast<uint32_t>(workers.size()) * opt.gpus_per_worker;
    if (!ttft.empty()) {
      double sum = 0;
      for (double x : ttft)
        sum += x;
      r.mean_ttft_ms = sum / static_cast<double>(ttft.size());
      std::vector<std::pair<double, uint64_t>> t;
      t.reserve(ttft.size());
      for (double x : ttft)
        t.emplace_back(x, 1);
      r.ttft_ms = bench::weighted_percentile(t, opt.percentile);
    }
    double gap_sum = 0;
    uint64_t gap_n = 0;
    for (const auto& [v, w] : gaps) {
      gap_sum += v * static_cast<double>(w);
      gap_n += w;
    }
    r.mean_itl_ms = gap_n > 0 ? gap_sum / static_cast<double>(gap_n) : 0;
    r.itl_ms = bench::weighted_percentile(gaps, opt.percentile);
    const double span_s = rs->requests.empty() ? 0 : (last_done - rs->requests.front().arrival_ms) / 1000.0;
    r.output_tokens_per_s = span_s > 0 ? out_tokens / span_s : 0;
    r.tokens_per_s_per_gpu = r.gpus > 0 ? r.output_tokens_per_s / r.gpus : 0;
    r.hit_rate = prompt_tokens > 0 ? cached_tokens / prompt_tokens : 0;
    return r;
  }
};

simulator::simulator(const plan::engine_profile& profile, sim_options options)
    : times_(profile), options_(options), kv_tokens_(profile.max_kv_tokens > 0 ? profile.max_kv_tokens : 1u << 30),
      handoff_(options.transfer_ms ? plan::linear_cost{*options.transfer_ms, 0, {}}
                                   : profile.handoff.value_or(plan::linear_cost{})),
      handoff_block_(profile.block_size),
      overhead_(options.step_overhead ? profile.step_overhead.value_or(plan::linear_cost{}) : plan::linear_cost{}),
      state_(std::make_unique<state>(*this, times_, options_, kv_tokens_)) {}

simulator::~simulator() = default;

bool simulator::usable() const noexcept {
  return times_.has_prefill() && times_.has_decode();
}

sim_result simulator::run(const deployment& d, const request_set& requests) {
  if (!usable() || d.decode_replicas == 0 ||
      (d.mode == deployment_mode::disaggregated && d.prefill_replicas == 0))
    return {};
  return state_->run(d, requests);
}

} // namespace dynamo::configure
