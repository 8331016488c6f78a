#include "apps/dynamo-bench/load_generator.hpp"

#include "planes/http_client/http_client.hpp"
#include "runtime/bench/sse_parser.hpp"
#include "runtime/bench/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
  uint64_t completed = 0, failed = 0, output_tokens = 0;
  std::vector<std::string> first_errors;
};

std::string make_body(const load_config& cfg, std::mt19937_64& rng) {
  std::uniform_int_distribution<uint32_t> tok(cfg.token_lo, cfg.token_hi);
  json body{{"model", cfg.model}, {"max_tokens", cfg.osl}, {"stream", true},
            {"stream_options", {{"include_usage", true}}}, {"ignore_eos", true},
            {"temperature", 0}};
  if (cfg.endpoint == "chat") {
    static const char* words[] = {"alpha", "beta", "gamma", "delta", "river", "stone",
                                  "cloud", "market", "engine", "paper", "light", "music"};
    std::string text;
    for (uint32_t i = 0; i < cfg.isl; ++i) {
      text += words[rng() % std::size(words)];
      text += ' ';
    }
    body["messages"] = json::array({{{"role", "user"}, {"content", text}}});
  } else {
    std::vector<uint32_t> ids(cfg.isl);
    for (auto& id : ids)
      id = tok(rng);
    body["prompt"] = ids;
  }
  return body.dump();
}

// Interprets one SSE event; returns the number of content tokens it carried.
uint64_t content_tokens(const sse_event& ev, request_result& r, bool& done) {
  if (ev.data == "[DONE]") {
    done = true;
    return 0;
  }
  if (ev.event == "error") {
    r.error = "stream error: " + ev.data;
    return 0;
  }
  auto j = json::parse(ev.data, nullptr, false);
  if (j.is_discarded())
    return 0;
  if (j.contains("usage") && j["usage"].is_object())
    r.output_tokens = j["usage"].value("completion_tokens", r.output_tokens);
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    return 0;
  const auto& c = j["choices"][0];
  std::string text;
  if (c.contains("text") && c["text"].is_string())
    text = c["text"].get<std::string>();
  else if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string())
    text = c["delta"]["content"].get<std::string>();
  return text.empty() ? 0 : 1;
}

void start_one(http::http_client& client, const load_config& cfg, run_state& st, std::string body,
               bool measured, std::function<void()> on_finish) {
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
  req.target = cfg.endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions";
  req.body = std::move(body);
  http::client_callbacks cb;
  cb.on_status = [c](unsigned s) { c->status = s; };
  cb.on_data = [c](std::string_view d) {
    for (auto& ev : c->parser.feed(d)) {
      auto n = content_tokens(ev, c->r, c->done);
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
  cb.on_done = [c, &st, measured, on_finish = std::move(on_finish)](expected<void> res) {
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
      if (measured) {
        if (r.ok) {
          ++st.completed;
          st.output_tokens += r.output_tokens;
          if (r.ttft >= 0)
            st.ttft.add(r.ttft);
          for (double v : r.itls)
            st.itl.add(v);
          st.e2e.add(r.e2e);
        } else {
          ++st.failed;
          if (st.first_errors.size() < 5)
            st.first_errors.push_back(r.error);
        }
      }
      ++st.finished;
      --st.in_flight;
    }
    st.cv.notify_all();
    on_finish();
  };
  client.start(std::move(req), std::move(cb));
}

expected<std::string> resolve_model(http::http_client& client) {
  auto res = client.request({"GET", "/v1/models", "", ""}, std::chrono::seconds(10));
  if (!res)
    return res.error();
  auto j = json::parse(res->body, nullptr, false);
  if (res->status != 200 || j.is_discarded() || !j.contains("data") || j["data"].empty())
    return make_error(errc::not_found, "GET /v1/models returned no model: " + res->body);
  return j["data"][0].value("id", std::string{});
}

// Sends `count` requests, closed loop (concurrency cap) or open loop (rate).
void drive(http::http_client& client, const load_config& cfg, run_state& st, uint32_t count,
           bool measured, std::mt19937_64& rng) {
  std::exponential_distribution<double> gap(cfg.request_rate > 0 ? cfg.request_rate : 1.0);
  auto next_arrival = clock::now();
  for (uint32_t i = 0; i < count; ++i) {
    std::string body = make_body(cfg, rng);
    std::unique_lock lk{st.mtx};
    if (cfg.request_rate > 0) {
      next_arrival += std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(gap(rng)));
      st.cv.wait_until(lk, next_arrival, [] { return false; });
    }
    st.cv.wait(lk, [&] { return st.in_flight < cfg.concurrency; });
    ++st.in_flight;
    ++st.started;
    lk.unlock();
    start_one(client, cfg, st, std::move(body), measured, [] {});
  }
  std::unique_lock lk{st.mtx};
  st.cv.wait(lk, [&] { return st.in_flight == 0; });
}

} // namespace

expected<std::string> run_load(const load_config& in) {
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
                      {"num_requests", cfg.num_requests}, {"isl", cfg.isl}, {"osl", cfg.osl}};
  report["completed"] = st.completed;
  report["failed"] = st.failed;
  report["errors"] = st.first_errors;
  report["duration_s"] = wall;
  report["requests_per_s"] = wall > 0 ? static_cast<double>(st.completed) / wall : 0;
  report["output_tokens"] = st.output_tokens;
  report["output_tokens_per_s"] = wall > 0 ? static_cast<double>(st.output_tokens) / wall : 0;
  report["input_tokens_per_s"] = wall > 0 ? static_cast<double>(st.completed) * cfg.isl / wall : 0;
  report["ttft_ms"] = json::parse(to_json(st.ttft.summarize(), 1e3));
  report["itl_ms"] = json::parse(to_json(st.itl.summarize(), 1e3));
  report["e2e_ms"] = json::parse(to_json(st.e2e.summarize(), 1e3));
  report["connections_opened"] = client.connections_opened();
  return report.dump(2);
}

} // namespace dynamo::bench
