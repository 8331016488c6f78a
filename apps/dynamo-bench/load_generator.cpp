#include "apps/dynamo-bench/load_generator.hpp"

#include "apps/dynamo-bench/openai_stream.hpp"
#include "apps/dynamo-bench/replica_sampler.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/bench/rate_schedule.hpp"
#include "runtime/bench/sse_parser.hpp"
#include "runtime/bench/stats.hpp"
#include "runtime/core/host.hpp"
#include "runtime/core/http_url.hpp"
#include "runtime/route/workload.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

namespace dynamo::bench {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

double seconds_between(clock::time_point a, clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A request's traffic class: index into run_state::classes and class_names.
constexpr size_t short_class = 0, long_class = 1;
constexpr std::array<const char*, 2> class_names{"short", "long"};

struct request_plan {
  size_t cls = short_class;
  uint32_t isl = 0, osl = 0;
  double at = 0; ///< seconds from the measured run's start to its sending
};

/// A trace to replay: each request's sending time (seconds from the run's
/// start), prompt tokens and max_tokens.
struct trace_plan {
  std::vector<double> at_s;
  std::vector<std::vector<uint32_t>> prompts;
  std::vector<uint32_t> osl;
};

/// cfg.trace_path as a trace_plan (see load_config::trace_path).
expected<trace_plan> load_trace(const load_config& cfg) {
  std::ifstream in(cfg.trace_path);
  if (!in)
    return make_error(errc::io_error, "cannot read trace " + cfg.trace_path);
  auto records = route::read_jsonl(in);
  if (!records)
    return std::move(records.error());
  trace_plan plan;
  const std::vector<double> at_ms = route::trace_arrivals_ms(*records, cfg.trace_rate, cfg.num_requests);
  if (at_ms.empty())
    return make_error(errc::invalid_argument, "trace " + cfg.trace_path + " has no requests");
  const uint32_t span = cfg.token_hi - cfg.token_lo + 1;
  for (size_t i = 0; i < at_ms.size(); ++i) {
    const auto& rec = (*records)[i];
    auto tokens = route::synthesize_tokens(rec, cfg.trace_block_size, span);
    if (rec.input_length == 0 || tokens.size() < rec.input_length)
      return make_error(errc::invalid_argument,
                        fmt::format("trace {} line {}: {} hash ids of {} tokens do not cover input_length {}",
                                    cfg.trace_path, i + 1, rec.hash_ids.size(), cfg.trace_block_size,
                                    rec.input_length));
    for (auto& t : tokens)
      t += cfg.token_lo;
    plan.at_s.push_back(at_ms[i] / 1000.0);
    plan.prompts.push_back(std::move(tokens));
    plan.osl.push_back(std::max(1u, rec.output_length));
  }
  return plan;
}

/// One timeline window of a measured run, by sending time.
struct window_stats {
  uint64_t sent = 0, completed = 0, met = 0;
};

struct class_stats {
  sample_set ttft, itl, tpot, e2e;
  uint64_t completed = 0, output_tokens = 0;
};

struct request_result {
  bool ok = false;
  std::string error;
  double ttft = -1, e2e = 0;
  std::vector<double> itls;
  uint64_t output_tokens = 0;
};

// Everything shared between the driver thread and the I/O callbacks.
struct run_state {
  std::mutex mtx;
  std::condition_variable cv;
  uint32_t started = 0, finished = 0, in_flight = 0;
  sample_set ttft, itl, tpot, e2e;
  uint64_t completed = 0, failed = 0, output_tokens = 0, input_tokens = 0;
  std::array<class_stats, 2> classes;
  std::vector<std::string> first_errors;
  uint64_t sla_met = 0;
  std::vector<window_stats> windows;
};

/// Whether a finished request met both SLA targets (false when none are set).
bool meets_sla(const load_config& cfg, const request_result& r) {
  if (!r.ok || cfg.sla_ttft_ms <= 0 || r.ttft < 0 || r.ttft * 1e3 > cfg.sla_ttft_ms)
    return false;
  if (r.itls.empty())
    return true;
  double sum = 0;
  for (double v : r.itls)
    sum += v;
  return sum / static_cast<double>(r.itls.size()) * 1e3 <= cfg.sla_itl_ms;
}

// Draws the class only when there is a mix, so that a run without long
// requests sends the same prompts as before the mix existed.
request_plan pick_class(const load_config& cfg, std::mt19937_64& rng) {
  if (cfg.long_fraction > 0 && std::bernoulli_distribution(cfg.long_fraction)(rng))
    return {long_class, cfg.long_isl, cfg.long_osl};
  return {short_class, cfg.isl, cfg.osl};
}

// Adds a finished measured request to the totals, its class and its window. Caller holds st.mtx.
void record(const load_config& cfg, run_state& st, const request_result& r, const request_plan& plan) {
  const size_t w = static_cast<size_t>(plan.at / cfg.window_s);
  if (st.windows.size() <= w)
    st.windows.resize(w + 1);
  ++st.windows[w].sent;
  const bool met = meets_sla(cfg, r);
  st.sla_met += met ? 1 : 0;
  st.windows[w].met += met ? 1 : 0;
  st.windows[w].completed += r.ok ? 1 : 0;
  if (!r.ok) {
    ++st.failed;
    if (st.first_errors.size() < 5)
      st.first_errors.push_back(r.error);
    return;
  }
  auto& c = st.classes[plan.cls];
  ++st.completed;
  ++c.completed;
  st.output_tokens += r.output_tokens;
  c.output_tokens += r.output_tokens;
  st.input_tokens += plan.isl;
  if (r.ttft >= 0) {
    st.ttft.add(r.ttft);
    c.ttft.add(r.ttft);
  }
  for (double v : r.itls) {
    st.itl.add(v);
    c.itl.add(v);
  }
  // Time per output token after the first (vLLM's TPOT): per token however
  // the tokens were grouped into chunks (ITL above is per chunk).
  if (r.ttft >= 0 && r.output_tokens > 1) {
    const double tpot = (r.e2e - r.ttft) / static_cast<double>(r.output_tokens - 1);
    st.tpot.add(tpot);
    c.tpot.add(tpot);
  }
  st.e2e.add(r.e2e);
  c.e2e.add(r.e2e);
}

void start_one(http::http_client& client, const load_config& cfg, run_state& st, std::string body,
               request_plan plan, bool measured) {
  struct ctx {
    request_result r;
    sse_parser parser;
    clock::time_point sent = clock::now(), last;
    unsigned status = 0;
    uint64_t events = 0;
    bool done = false;
  };
  auto c = std::make_shared<ctx>();
  http::client_request req;
  req.target = std::string{target_of(cfg)};
  req.body = std::move(body);
  http::client_callbacks cb;
  cb.on_status = [c](unsigned s) { c->status = s; };
  cb.on_data = [c](std::string_view d) {
    for (auto& ev : c->parser.feed(d)) {
      auto e = read_event(ev);
      c->done = c->done || e.done;
      if (!e.error.empty())
        c->r.error = e.error;
      if (e.completion_tokens)
        c->r.output_tokens = *e.completion_tokens;
      auto n = e.content_tokens;
      if (n == 0)
        continue;
      auto now = clock::now();
      if (c->events == 0)
        c->r.ttft = seconds_between(c->sent, now);
      else
        c->r.itls.push_back(seconds_between(c->last, now) / static_cast<double>(n));
      c->last = now;
      c->events += n;
    }
  };
  cb.on_done = [c, &cfg, &st, measured, plan](expected<void> res) {
    auto& r = c->r;
    r.e2e = seconds_between(c->sent, clock::now());
    if (!res)
      r.error = describe(res.error());
    else if (c->status != 200)
      r.error = fmt::format("HTTP {}", c->status);
    else if (!c->done && r.error.empty())
      r.error = "stream ended without [DONE]";
    r.ok = r.error.empty();
    if (r.output_tokens == 0)
      r.output_tokens = c->events;
    {
      std::lock_guard lk{st.mtx};
      if (measured)
        record(cfg, st, r, plan);
      ++st.finished;
      --st.in_flight;
    }
    st.cv.notify_all();
  };
  client.start(std::move(req), std::move(cb));
}

// Sends `count` requests, closed loop (concurrency cap) or open loop (rate),
// or (`sched`) as many as the schedule's arrivals, or (`trace`) the trace's.
void drive(http::http_client& client, const load_config& cfg, run_state& st, uint32_t count,
           bool measured, std::mt19937_64& rng, const rate_schedule* sched = nullptr,
           const trace_plan* trace = nullptr) {
  std::exponential_distribution<double> gap(cfg.request_rate > 0 ? cfg.request_rate : 1.0);
  std::mt19937_64 own_arrivals{cfg.arrival_seed};
  std::mt19937_64& arrivals = cfg.arrival_seed > 0 ? own_arrivals : rng;
  const auto t0 = clock::now();
  auto next_arrival = t0;
  double at = 0;
  if (trace != nullptr)
    count = static_cast<uint32_t>(trace->at_s.size());
  for (uint32_t i = 0; sched != nullptr || i < count; ++i) {
    if (sched != nullptr || trace != nullptr) {
      if (sched != nullptr) {
        const auto next = sched->next_arrival(at, rng);
        if (!next)
          break;
        at = *next;
      } else {
        at = trace->at_s[i];
      }
      next_arrival = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(at));
    }
    request_plan plan;
    std::string body;
    if (trace != nullptr) {
      plan = {short_class, static_cast<uint32_t>(trace->prompts[i].size()), trace->osl[i]};
      body = make_body(cfg, trace->prompts[i], plan.osl);
    } else {
      plan = pick_class(cfg, rng);
      body = make_body(cfg, plan.isl, plan.osl, rng);
    }
    std::unique_lock lk{st.mtx};
    if (sched != nullptr || trace != nullptr) {
      st.cv.wait_until(lk, next_arrival, [] { return false; });
    } else if (cfg.request_rate > 0) {
      next_arrival += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(gap(arrivals)));
      st.cv.wait_until(lk, next_arrival, [] { return false; });
    }
    st.cv.wait(lk, [&] { return st.in_flight < cfg.concurrency; });
    ++st.in_flight;
    ++st.started;
    lk.unlock();
    plan.at = seconds_between(t0, clock::now());
    start_one(client, cfg, st, std::move(body), plan, measured);
  }
  std::unique_lock lk{st.mtx};
  st.cv.wait(lk, [&] { return st.in_flight == 0; });
}

json summary_json(const sample_set& s) { return json::parse(to_json(s.summarize(), 1e3)); }

json classes_json(const run_state& st) {
  json out = json::object();
  for (size_t i = 0; i < st.classes.size(); ++i) {
    const auto& c = st.classes[i];
    out[class_names[i]] = {{"completed", c.completed}, {"output_tokens", c.output_tokens},
                           {"ttft_ms", summary_json(c.ttft)}, {"itl_ms", summary_json(c.itl)},
                           {"tpot_ms", summary_json(c.tpot)},
                           {"e2e_ms", summary_json(c.e2e)}};
  }
  return out;
}

/// What a schedule run adds to the report: SLA attainment (overall and per
/// window, with the schedule's rate and the sampled replicas) and GPU-seconds.
json sla_json(const load_config& cfg, const run_state& st, const replica_sampler* sampler, double wall,
              const std::optional<rate_schedule>& sched) {
  json out;
  const uint64_t measured = st.completed + st.failed;
  out["ttft_ms"] = cfg.sla_ttft_ms;
  out["itl_ms"] = cfg.sla_itl_ms;
  out["met"] = st.sla_met;
  out["attainment"] = measured > 0 ? static_cast<double>(st.sla_met) / static_cast<double>(measured) : 0.0;
  out["gpu_seconds"] = sampler != nullptr ? sampler->gpu_seconds() : cfg.static_gpus * wall;
  out["gpu_source"] = sampler != nullptr ? "dynamo_planner_observed_replicas at " + cfg.replicas_url : "static";
  if (sampler != nullptr)
    out["failed_scrapes"] = sampler->failed_scrapes();
  json timeline = json::array();
  for (size_t w = 0; w < st.windows.size(); ++w) {
    const double a = static_cast<double>(w) * cfg.window_s, b = a + cfg.window_s;
    const window_stats& x = st.windows[w];
    json row = {{"t_s", a}, {"sent", x.sent}, {"completed", x.completed},
                {"attainment", x.sent > 0 ? static_cast<double>(x.met) / static_cast<double>(x.sent) : 0.0}};
    if (sched)
      row["rate"] = sched->rate_at((a + b) / 2);
    if (sampler != nullptr) {
      double sum = 0, n = 0;
      for (const auto& smp : sampler->samples())
        if (smp.t >= a && smp.t < b) {
          sum += smp.replicas;
          n += 1;
        }
      row["replicas"] = n > 0 ? sum / n : 0.0;
    }
    timeline.push_back(std::move(row));
  }
  out["timeline"] = std::move(timeline);
  return out;
}

} // namespace

std::string report_url(const load_config& cfg) {
  return fmt::format("{}://{}:{}", cfg.tls ? "https" : "http", url_host(cfg.host), cfg.port);
}

expected<void> validate(const load_config& cfg) {
  auto bad = [](const std::string& why) { return make_error(errc::config_error, "load: " + why); };
  if (cfg.concurrency == 0)
    return bad("concurrency must be > 0");
  if (cfg.isl == 0 || cfg.osl == 0)
    return bad("isl and osl must be > 0");
  if (!(cfg.long_fraction >= 0 && cfg.long_fraction <= 1))
    return bad("long_fraction must be in [0, 1]");
  if (cfg.long_fraction > 0 && (cfg.long_isl == 0 || cfg.long_osl == 0))
    return bad("long_isl and long_osl must be > 0");
  if (cfg.token_lo > cfg.token_hi)
    return bad("token_lo must be <= token_hi");
  if (cfg.endpoint != "completions" && cfg.endpoint != "chat")
    return bad("endpoint must be completions or chat");
  if (!cfg.rate_schedule.empty())
    if (auto s = rate_schedule::parse(cfg.rate_schedule); !s)
      return bad(message_of(s.error()));
  if (!cfg.trace_path.empty() && (cfg.endpoint != "completions" || !cfg.rate_schedule.empty() ||
                                  cfg.trace_block_size == 0 || cfg.trace_rate < 0))
    return bad("a trace replays on the completions endpoint, without a rate schedule, "
               "with trace_block_size > 0 and trace_rate >= 0");
  if ((cfg.sla_ttft_ms > 0) != (cfg.sla_itl_ms > 0) || cfg.sla_ttft_ms < 0 || cfg.sla_itl_ms < 0)
    return bad("sla_ttft_ms and sla_itl_ms: both > 0, or neither");
  if (!cfg.replicas_url.empty())
    if (auto u = parse_http_url(cfg.replicas_url, "replicas_url"); !u)
      return bad(message_of(u.error()));
  if (!(cfg.window_s > 0) || cfg.static_gpus < 0 || !(cfg.gpus_per_replica > 0))
    return bad("window_s and gpus_per_replica must be > 0, static_gpus >= 0");
  return {};
}

expected<std::string> run_load(const load_config& in) {
  if (auto ok = validate(in); !ok)
    return ok.error();
  load_config cfg = in;
  http::http_client client(cfg.host, cfg.port, cfg.io_threads, cfg.tls);
  if (cfg.model.empty()) {
    auto m = resolve_model(client);
    if (!m)
      return m.error();
    cfg.model = *m;
  }
  std::mt19937_64 rng{cfg.seed};
  run_state warm;
  if (cfg.warmup_requests > 0)
    drive(client, cfg, warm, cfg.warmup_requests, false, rng);
  std::optional<rate_schedule> sched;
  if (!cfg.rate_schedule.empty())
    sched = *rate_schedule::parse(cfg.rate_schedule); // validated
  std::unique_ptr<replica_sampler> sampler;
  if (!cfg.replicas_url.empty()) {
    const http_url u = *parse_http_url(cfg.replicas_url, "replicas_url"); // validated
    sampler = std::make_unique<replica_sampler>(u.host, u.port, u.target.empty() ? "/metrics" : u.target,
                                                cfg.gpus_per_replica);
    sampler->start();
  }
  std::optional<trace_plan> trace;
  if (!cfg.trace_path.empty()) {
    auto t = load_trace(cfg);
    if (!t)
      return t.error();
    trace = std::move(*t);
  }
  run_state st;
  auto t0 = clock::now();
  drive(client, cfg, st, cfg.num_requests, true, rng, sched ? &*sched : nullptr, trace ? &*trace : nullptr);
  double wall = seconds_between(t0, clock::now());
  if (sampler)
    sampler->stop();

  json report;
  report["label"] = cfg.label;
  report["config"] = {{"url", report_url(cfg)},
                      {"model", cfg.model}, {"endpoint", cfg.endpoint},
                      {"concurrency", cfg.concurrency}, {"request_rate", cfg.request_rate},
                      {"num_requests", cfg.num_requests}, {"isl", cfg.isl}, {"osl", cfg.osl},
                      {"long_fraction", cfg.long_fraction}, {"long_isl", cfg.long_isl},
                      {"long_osl", cfg.long_osl}, {"seed", cfg.seed},
                      {"arrival_seed", cfg.arrival_seed}};
  if (trace)
    report["config"]["trace"] = {{"path", cfg.trace_path}, {"block_size", cfg.trace_block_size},
                                 {"rate", cfg.trace_rate}, {"requests", trace->at_s.size()}};
  report["completed"] = st.completed;
  report["failed"] = st.failed;
  report["errors"] = st.first_errors;
  report["duration_s"] = wall;
  report["requests_per_s"] = wall > 0 ? static_cast<double>(st.completed) / wall : 0;
  report["output_tokens"] = st.output_tokens;
  report["output_tokens_per_s"] = wall > 0 ? static_cast<double>(st.output_tokens) / wall : 0;
  report["input_tokens_per_s"] = wall > 0 ? static_cast<double>(st.input_tokens) / wall : 0;
  report["ttft_ms"] = summary_json(st.ttft);
  report["itl_ms"] = summary_json(st.itl);
  report["tpot_ms"] = summary_json(st.tpot);
  report["e2e_ms"] = summary_json(st.e2e);
  report["classes"] = classes_json(st);
  report["connections_opened"] = client.connections_opened();
  if (sched) {
    report["rate_schedule"] = cfg.rate_schedule;
    report["expected_requests"] = sched->expected_requests();
  }
  if (cfg.sla_ttft_ms > 0)
    report["sla"] = sla_json(cfg, st, sampler.get(), wall, sched);
  return report.dump(2);
}

} // namespace dynamo::bench
