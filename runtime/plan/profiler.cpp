#include "runtime/plan/profiler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <time.h>

namespace dynamo::plan {

namespace {

using wall = std::chrono::steady_clock;

// Token ids clear of the special tokens real vocabularies keep at either end.
constexpr uint32_t token_lo = 1000, token_hi = 9000;

class prompt_source {
public:
  std::vector<uint32_t> make(uint32_t n) {
    std::uniform_int_distribution<uint32_t> d(token_lo, token_hi);
    std::vector<uint32_t> out(n);
    for (auto& t : out)
      t = d(rng_);
    return out;
  }
  std::string next_id() { return "profile-" + std::to_string(++serial_); }

private:
  std::mt19937 rng_{20261125};
  uint64_t serial_ = 0;
};

protocol::preprocessed_request request(std::string id, std::vector<uint32_t> prompt, uint32_t max_tokens) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.model = "profile";
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  r.token_ids = std::move(prompt);
  r.sampling.temperature = 0;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true; // no stop ids: every request runs its max_tokens
  return r;
}

// One step, timed: the simulated duration when the engine reports one.
struct timed_step {
  engine::step_result result;
  double ms = 0;
  bool simulated = false;
};

// CPU time of the calling thread (ms): a one-thread CPU engine computes on it.
double thread_cpu_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// One step, timed by the wall clock or (sw.thread_cpu_clock) the thread's CPU clock.
expected<timed_step> step(engine::engine_core& e, const profile_sweep& sw) {
  const bool use_thread_cpu = sw.thread_cpu_clock;
  const double c0 = use_thread_cpu ? thread_cpu_ms() : 0.0;
  auto t0 = wall::now();
  auto r = e.step();
  auto t1 = wall::now();
  const double c1 = use_thread_cpu ? thread_cpu_ms() : 0.0;
  if (!r)
    return r.error();
  timed_step s;
  s.simulated = r->duration.count() > 0;
  s.ms = s.simulated    ? static_cast<double>(r->duration.count()) / 1000.0
         : use_thread_cpu ? c1 - c0
                          : std::chrono::duration<double, std::milli>(t1 - t0).count();
  s.result = std::move(*r);
  return s;
}

// Runs `id` (already added) to its end; the time of every step it took and its cached tokens.
expected<std::pair<double, uint32_t>> run_to_end(engine::engine_core& e, const profile_sweep& sw, const std::string& id,
                                                       bool& simulated) {
  double ms = 0;
  uint32_t cached = 0;
  for (int guard = 0; guard < 1'000'000; ++guard) {
    auto s = step(e, sw);
    if (!s)
      return s.error();
    ms += s->ms;
    simulated = simulated || s->simulated;
    for (const auto& o : s->result.outputs) {
      if (o.request_id != id)
        continue;
      cached = std::max(cached, o.output.cached_tokens);
      if (o.output.finish == protocol::finish_reason::error)
        return make_error(errc::internal, "profile request failed: " + o.output.error);
      if (o.output.finish != protocol::finish_reason::none)
        return std::pair{ms, cached};
    }
  }
  return make_error(errc::internal, "profile request did not finish");
}

// Seconds since the sweep began, and each phase's share of profile_sweep::budget_s.
struct sweep_budget {
  wall::time_point start = wall::now();
  phase_budget prefill{0}, decode{0}, mixed{0};

  explicit sweep_budget(const profile_sweep& sw) {
    if (const double b = sw.budget_s; b > 0) {
      prefill = phase_budget(b / 4);
      decode = phase_budget(sw.mixed_chunk.empty() ? b : 3 * b / 4);
      mixed = phase_budget(b);
    }
  }
  [[nodiscard]] double now_s() const { return std::chrono::duration<double>(wall::now() - start).count(); }
};

// Work units of the budget's predictions: tokens, a token attending to c
// earlier ones costing (1 + c / 4096) (attention catches up with a small
// model's matmuls near 4k of context); a decode step of b sequences at least
// 8 tokens' worth (it reads all the weights).
double prefill_work(double tokens) { return tokens * (1 + tokens / 8192); }
double decode_work(uint32_t batch, uint32_t ctx, uint32_t steps) {
  return batch * prefill_work(ctx) + steps * std::max(8.0, double(batch)) * (1 + ctx / 4096.0);
}

// Runs `measure` when a point of `work` fits its phase's budget, else lists
// it under `skipped` as `what`, over the budget.
template <class Measure>
expected<void> within_budget(phase_budget& phase, const sweep_budget& b, double work, const std::string& what,
                             engine_profile& p, Measure&& measure) {
  const double t0 = b.now_s();
  if (!phase.fits(work, t0)) {
    p.skipped.push_back(fmt::format("{}: over the time budget (predicted {:.1f} s, {:.1f} s left of its phase)",
                                    what, phase.predict(work), std::max(0.0, phase.end_s() - t0)));
    return {};
  }
  if (auto ok = measure(); !ok)
    return ok.error();
  phase.record(work, b.now_s() - t0);
  return {};
}

// One prefill point: the fastest of sw.repeats prompts of `isl` tokens whose
// first `hit` share is already cached.
expected<void> profile_prefill_point(engine::engine_core& e, const profile_sweep& sw, prompt_source& src,
                                     uint32_t isl, double hit, engine_profile& p, const profile_progress& progress) {
  double best = -1;
  uint32_t cached = 0;
  for (uint32_t rep = 0; rep < std::max(1u, sw.repeats); ++rep) {
    auto prompt = src.make(isl);
    auto shared = static_cast<uint32_t>(hit * isl);
    if (shared > 0) { // warm the cache with the shared prefix (unmeasured)
      auto id = src.next_id();
      if (auto ok = e.add_request(request(id, std::vector<uint32_t>(prompt.begin(), prompt.begin() + shared), 1)); !ok)
        return ok.error();
      if (auto r = run_to_end(e, sw, id, p.simulated); !r)
        return r.error();
    }
    auto id = src.next_id();
    if (auto ok = e.add_request(request(id, prompt, 1)); !ok)
      return ok.error();
    auto r = run_to_end(e, sw, id, p.simulated);
    if (!r)
      return r.error();
    if (best < 0 || r->first < best) {
      best = r->first;
      cached = r->second;
    }
  }
  p.prefill.push_back({isl, hit, cached, best});
  if (progress)
    progress(fmt::format("prefill isl {} hit {:.2f}: {:.3f} ms ({} cached)", isl, hit, best, cached));
  return {};
}

expected<void> profile_prefill(engine::engine_core& e, const profile_sweep& sw, prompt_source& src,
                               engine_profile& p, sweep_budget& budget, const profile_progress& progress) {
  for (uint32_t isl : sw.isl) {
    if (isl + 1 >= p.max_model_len || isl > p.max_kv_tokens) {
      p.skipped.push_back(fmt::format("prefill isl {}: does not fit (max_model_len {}, KV {} tokens)", isl,
                                      p.max_model_len, p.max_kv_tokens));
      continue;
    }
    for (double hit : sw.prefix_hit) {
      const double work = std::max(1u, sw.repeats) * prefill_work(isl);
      auto ok = within_budget(budget.prefill, budget, work, fmt::format("prefill isl {} hit {:.2f}", isl, hit), p,
                              [&] { return profile_prefill_point(e, sw, src, isl, hit, p, progress); });
      if (!ok)
        return ok.error();
    }
  }
  return {};
}

// Tokens each request of a decode point generates: the measured steps, plus
// the steps in which the batch's later prompts are still being prefilled (the
// first requests decode meanwhile and must not finish before the batch is full).
uint32_t decode_point_tokens(const profile_sweep& sw, uint32_t batch, uint32_t ctx, uint32_t step_tokens) {
  const uint64_t prefill_steps = (uint64_t{batch} * ctx + step_tokens - 1) / std::max(1u, step_tokens);
  return sw.decode_steps + 3 + static_cast<uint32_t>(prefill_steps);
}

// Adds `batch` requests of `ctx` prompt tokens and `tokens` output tokens and
// steps until each has its first token: a batch decoding. Their ids.
expected<std::vector<std::string>> start_batch(engine::engine_core& e, const profile_sweep& sw, prompt_source& src, uint32_t batch,
                                               uint32_t ctx, uint32_t tokens) {
  std::map<std::string, bool> started; // request id -> first token seen
  for (uint32_t i = 0; i < batch; ++i) {
    auto id = src.next_id();
    if (auto ok = e.add_request(request(id, src.make(ctx), tokens)); !ok)
      return ok.error();
    started[id] = false;
  }
  auto all_started = [&] {
    return std::all_of(started.begin(), started.end(), [](const auto& kv) { return kv.second; });
  };
  for (int guard = 0; !all_started() && guard < 1'000'000; ++guard) {
    auto s = step(e, sw);
    if (!s)
      return s.error();
    for (const auto& o : s->result.outputs)
      if (auto it = started.find(o.request_id); it != started.end() && !o.output.token_ids.empty())
        it->second = true;
  }
  std::vector<std::string> ids;
  for (const auto& [id, _] : started)
    ids.push_back(id);
  return ids;
}

expected<void> profile_decode_point(engine::engine_core& e, const profile_sweep& sw, prompt_source& src,
                                    uint32_t batch, uint32_t ctx, engine_profile& p) {
  const uint32_t tokens = decode_point_tokens(sw, batch, ctx, p.max_num_batched_tokens);
  auto started = start_batch(e, sw, src, batch, ctx, tokens);
  if (!started)
    return started.error();
  double total = 0;
  uint32_t measured = 0;
  for (uint32_t k = 0; k < sw.decode_steps + 1; ++k) {
    auto s = step(e, sw);
    if (!s)
      return s.error();
    p.simulated = p.simulated || s->simulated;
    if (k == 0 || s->result.num_seqs != batch)
      continue; // the first decode step is a warm-up; a partial batch is not this point
    total += s->ms;
    ++measured;
  }
  for (const auto& id : *started)
    (void) e.abort(id);
  while (e.has_work())
    if (auto s = step(e, sw); !s)
      return s.error();
  if (measured == 0)
    return make_error(errc::internal, fmt::format("decode batch {} context {}: no full step measured", batch, ctx));
  p.decode.push_back({batch, ctx, total / measured});
  return {};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2);
}

// `batch` sequences of `ctx` tokens decoding; then, `sw.mixed_repeats` times,
// a pure decode step and a step that also prefills a fresh `chunk`-token prompt
// (max_tokens 1: it ends with that step), each timed.
expected<void> profile_mixed_point(engine::engine_core& e, const profile_sweep& sw, prompt_source& src,
                                   uint32_t batch, uint32_t ctx, uint32_t chunk, engine_profile& p) {
  const uint32_t reps = std::max(1u, sw.mixed_repeats);
  const uint32_t tokens = decode_point_tokens(sw, batch, ctx, p.max_num_batched_tokens) + 2 * reps;
  auto started = start_batch(e, sw, src, batch, ctx, tokens);
  if (!started)
    return started.error();
  std::vector<double> mixed, decode;
  for (uint32_t k = 0; k < reps + 1; ++k) {
    auto d = step(e, sw); // the first one a warm-up
    if (!d)
      return d.error();
    if (k == 0)
      continue;
    if (auto ok = e.add_request(request(src.next_id(), src.make(chunk), 1)); !ok)
      return ok.error();
    auto m = step(e, sw);
    if (!m)
      return m.error();
    if (d->result.num_seqs == batch)
      decode.push_back(d->ms);
    if (m->result.num_tokens == batch + chunk)
      mixed.push_back(m->ms);
  }
  for (const auto& id : *started)
    (void) e.abort(id);
  while (e.has_work())
    if (auto s = step(e, sw); !s)
      return s.error();
  if (mixed.empty() || decode.empty())
    return make_error(errc::internal, fmt::format("mixed batch {} context {} chunk {}: no such step measured",
                                                  batch, ctx, chunk));
  p.mixed.push_back({batch, ctx, chunk, median(mixed), median(decode)});
  return {};
}

expected<void> profile_mixed(engine::engine_core& e, const profile_sweep& sw, prompt_source& src,
                             engine_profile& p, sweep_budget& budget, const profile_progress& progress) {
  for (uint32_t chunk : sw.mixed_chunk)
    for (uint32_t ctx : sw.context)
      for (uint32_t batch : sw.batch) {
        const uint32_t tokens = decode_point_tokens(sw, batch, ctx, p.max_num_batched_tokens) + 2 * sw.mixed_repeats;
        const uint64_t need = uint64_t{batch} * (ctx + tokens) + chunk;
        if (batch >= p.max_num_seqs || batch + chunk > p.max_num_batched_tokens || ctx + tokens >= p.max_model_len ||
            need > p.max_kv_tokens) {
          p.skipped.push_back(fmt::format("mixed batch {} context {} chunk {}: does not fit", batch, ctx, chunk));
          continue;
        }
        const double work = decode_work(batch, ctx, tokens) + sw.mixed_repeats * prefill_work(chunk);
        auto ok = within_budget(budget.mixed, budget, work,
                                fmt::format("mixed batch {} context {} chunk {}", batch, ctx, chunk), p, [&] {
                                  auto r = profile_mixed_point(e, sw, src, batch, ctx, chunk, p);
                                  if (r && progress) {
                                    const auto& m = p.mixed.back();
                                    progress(fmt::format("mixed batch {} context {} chunk {}: {:.3f} ms/step "
                                                         "(decode alone {:.3f})",
                                                         batch, ctx, chunk, m.step_ms, m.decode_ms));
                                  }
                                  return r;
                                });
        if (!ok)
          return ok.error();
      }
  return {};
}

} // namespace

expected<engine_profile> run_profile(const engine_maker& make, const profile_sweep& sw,
                                     const profile_progress& progress) {
  engine_profile p;
  prompt_source src;
  sweep_budget budget(sw);
  {
    auto e = make();
    if (!e)
      return e.error();
    const auto& c = (*e)->sched().config();
    p.max_kv_tokens = c.num_blocks * c.block_size;
    p.max_num_seqs = c.max_num_seqs;
    p.max_num_batched_tokens = c.max_num_batched_tokens;
    p.max_model_len = c.max_model_len;
    p.block_size = c.block_size;
    if (auto ok = profile_prefill(**e, sw, src, p, budget, progress); !ok)
      return ok.error();
  }
  auto e = make(); // decode on an empty cache
  if (!e)
    return e.error();
  for (uint32_t ctx : sw.context)
    for (uint32_t batch : sw.batch) {
      const uint32_t tokens = decode_point_tokens(sw, batch, ctx, p.max_num_batched_tokens);
      uint64_t need = uint64_t{batch} * (ctx + tokens);
      if (batch > p.max_num_seqs || ctx + tokens >= p.max_model_len || need > p.max_kv_tokens) {
        p.skipped.push_back(fmt::format("decode batch {} context {}: does not fit (max_num_seqs {}, "
                                        "max_model_len {}, KV {} tokens)",
                                        batch, ctx, p.max_num_seqs, p.max_model_len, p.max_kv_tokens));
        continue;
      }
      auto ok = within_budget(budget.decode, budget, decode_work(batch, ctx, tokens),
                              fmt::format("decode batch {} context {}", batch, ctx), p, [&] {
                                auto r = profile_decode_point(**e, sw, src, batch, ctx, p);
                                if (r && progress)
                                  progress(fmt::format("decode batch {} context {}: {:.3f} ms/step", batch, ctx,
                                                       p.decode.back().step_ms));
                                return r;
                              });
      if (!ok)
        return ok.error();
    }
  if (auto ok = profile_mixed(**e, sw, src, p, budget, progress); !ok)
    return ok.error();
  return p;
}

namespace {

// The hand-off half of probe_seconds: each pair prefills its prompt on both
// clusters and decodes one more token.
double handoff_seconds(const step_times& t, const probe_sizes& s) {
  double ms = 0;
  for (uint32_t isl : s.isl)
    ms += 2.0 * (s.requests + s.warmup) * (t.prefill_ms(isl) + t.decode_step_ms(1, isl));
  return ms / 1000.0;
}

// The step-overhead half: b prompts, then batch_osl steps of b sequences.
double batch_seconds(const step_times& t, const probe_sizes& s) {
  double ms = 0;
  for (uint32_t b : s.batch)
    ms += b * t.prefill_ms(s.batch_isl) + s.batch_osl * t.decode_step_ms(b, s.batch_isl + s.batch_osl / 2.0);
  return ms / 1000.0;
}

std::vector<uint32_t> halved(const std::vector<uint32_t>& v, uint32_t floor) {
  std::vector<uint32_t> out;
  for (uint32_t x : v)
    if (const uint32_t h = std::max(floor, x / 2); std::find(out.begin(), out.end(), h) == out.end())
      out.push_back(h);
  return out;
}

} // namespace

double probe_seconds(const engine_profile& p, const probe_sizes& s) {
  const step_times t(p);
  if (!t.has_prefill() || !t.has_decode())
    return 0;
  return handoff_seconds(t, s) + batch_seconds(t, s);
}

probe_sizes fit_probe(const engine_profile& p, probe_sizes s, double budget_s) {
  if (p.max_num_seqs > 0)
    std::erase_if(s.batch, [&](uint32_t b) { return b > p.max_num_seqs; });
  std::sort(s.isl.begin(), s.isl.end());
  std::sort(s.batch.begin(), s.batch.end());
  const step_times t(p);
  if (budget_s <= 0 || !t.has_prefill() || !t.has_decode())
    return s;
  const double half = budget_s / 2;
  while (handoff_seconds(t, s) > half && s.isl.size() > 2)
    s.isl.pop_back();
  while (handoff_seconds(t, s) > half && !s.isl.empty() && s.isl.back() > 16)
    s.isl = halved(s.isl, 16);
  while (handoff_seconds(t, s) > half && s.requests > 3)
    --s.requests;
  while (batch_seconds(t, s) > half && s.batch_isl > 32)
    s.batch_isl = std::max(32u, s.batch_isl / 2);
  while (batch_seconds(t, s) > half && s.batch.size() > 2)
    s.batch.pop_back();
  while (batch_seconds(t, s) > half && s.batch_osl > 16)
    s.batch_osl = std::max(16u, s.batch_osl / 2);
  return s;
}

} // namespace dynamo::plan
