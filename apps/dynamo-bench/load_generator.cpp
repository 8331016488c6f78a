#include "apps/dynamo-bench/load_generator.hpp"

#include "apps/dynamo-bench/openai_stream.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/bench/sse_parser.hpp"
#include "runtime/bench/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <condition_variable>
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
};

struct class_stats {
  sample_set ttft, itl, e2e;
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
  sample_set ttft, itl, e2e;
  uint64_t completed = 0, failed = 0, output_tokens = 0, input_tokens = 0;
  std::array<class_stats, 2> classes;
  std::vector<std::string> first_errors;
};

// Draws the class only when there is a mix, so that a run without long
// requests sends the same prompts as before the mix existed.
request_plan pick_class(const load_config& cfg, std::mt19937_64& rng) {
  if (cfg.long_fraction > 0 && std::bernoulli_distribution(cfg.long_fraction)(rng))
    return {long_class, cfg.long_isl, cfg.long_osl};
  return {short_class, cfg.isl, cfg.osl};
}

// Adds a finished measured request to the totals and to its class. Caller holds st.mtx.
void record(run_state& st, const request_result& r, const request_plan& plan) {
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
  cb.on_done = [c, &st, measured, plan](expected<void> res) {
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
        record(st, r, plan);
      ++st.finished;
      --st.in_flight;
    }
    st.cv.notify_all();
  };
  client.start(std::move(req), std::move(cb));
}

// Sends `count` requests, closed loop (concurrency cap) or open loop (rate).
void drive(http::http_client& client, const load_config& cfg, run_state& st, uint32_t count,
           bool measured, std::mt19937_64& rng) {
  std::exponential_distribution<double> gap(cfg.request_rate > 0 ? cfg.request_rate : 1.0);
  auto next_arrival = clock::now();
  for (uint32_t i = 0; i < count; ++i) {
    auto plan = pick_class(cfg, rng);
    std::string body = make_body(cfg, plan.isl, plan.osl, rng);
    std::unique_lock lk{st.mtx};
    if (cfg.request_rate > 0) {
      next_arrival += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(gap(rng)));
      st.cv.wait_until(lk, next_arrival, [] { return false; });
    }
    st.cv.wait(lk, [&] { return st.in_flight < cfg.concurrency; });
    ++st.in_flight;
    ++st.started;
    lk.unlock();
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
                           {"e2e_ms", summary_json(c.e2e)}};
  }
  return out;
}

} // namespace

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
  return {};
}

expected<std::string> run_load(const load_config& in) {
  if (auto ok = validate(in); !ok)
    return ok.error();
  load_config cfg = in;
  http::http_client client(cfg.host, cfg.port, cfg.io_threads);
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
  run_state st;
  auto t0 = clock::now();
  drive(client, cfg, st, cfg.num_requests, true, rng);
  double wall = seconds_between(t0, clock::now());

  json report;
  report["label"] = cfg.label;
  report["config"] = {{"url", fmt::format("http://{}:{}", cfg.host, cfg.port)},
                      {"model", cfg.model}, {"endpoint", cfg.endpoint},
                      {"concurrency", cfg.concurrency}, {"request_rate", cfg.request_rate},
                      {"num_requests", cfg.num_requests}, {"isl", cfg.isl}, {"osl", cfg.osl},
                      {"long_fraction", cfg.long_fraction}, {"long_isl", cfg.long_isl},
                      {"long_osl", cfg.long_osl}, {"seed", cfg.seed}};
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
  report["e2e_ms"] = summary_json(st.e2e);
  report["classes"] = classes_json(st);
  report["connections_opened"] = client.connections_opened();
  return report.dump(2);
}

} // namespace dynamo::bench
