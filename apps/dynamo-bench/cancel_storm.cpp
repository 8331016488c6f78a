#include "apps/dynamo-bench/cancel_storm.hpp"

#include "apps/dynamo-bench/openai_stream.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/bench/sse_parser.hpp"
#include "runtime/bench/stats.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <thread>
#include <vector>

namespace dynamo::bench {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

double ms_between(clock::time_point a, clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// One streamed request as the benchmark watches it; filled on the client's io thread.
struct stream_call {
  std::mutex mtx;
  std::condition_variable cv;
  clock::time_point sent;
  std::optional<clock::time_point> headers, first_token;
  unsigned status = 0;
  bool ended = false;
  std::string error;
  sse_parser parser;
  std::shared_ptr<http::cancel_token> token = std::make_shared<http::cancel_token>();

  bool wait_end(std::chrono::seconds limit) {
    std::unique_lock lk{mtx};
    return cv.wait_for(lk, limit, [&] { return ended; });
  }
  /// True once a token arrived; false when the stream ended (or `limit` passed) without one.
  bool wait_first_token(std::chrono::seconds limit) {
    std::unique_lock lk{mtx};
    cv.wait_for(lk, limit, [&] { return first_token || ended; });
    return first_token.has_value();
  }
};

std::shared_ptr<stream_call> start_stream(http::http_client& client, const load_config& cfg, std::string body) {
  auto c = std::make_shared<stream_call>();
  http::client_request req{"POST", std::string{target_of(cfg)}, std::move(body), "application/json", c->token};
  http::client_callbacks cb;
  cb.on_status = [c](unsigned s) {
    std::lock_guard lk{c->mtx};
    c->status = s;
    c->headers = clock::now();
  };
  cb.on_data = [c](std::string_view d) {
    std::lock_guard lk{c->mtx};
    for (auto& ev : c->parser.feed(d)) {
      auto e = read_event(ev);
      if (!e.error.empty())
        c->error = e.error;
      if (e.content_tokens > 0 && !c->first_token) {
        c->first_token = clock::now();
        c->cv.notify_all();
      }
    }
  };
  cb.on_done = [c](expected<void> r) {
    std::lock_guard lk{c->mtx};
    c->ended = true;
    if (!r && c->error.empty())
      c->error = describe(r.error());
    else if (r && c->status != 200 && c->error.empty())
      c->error = fmt::format("HTTP {}", c->status);
    c->cv.notify_all();
  };
  c->sent = clock::now();
  client.start(std::move(req), std::move(cb));
  return c;
}

// TTFT (ms) of one streamed request, run to its end.
expected<double> probe(http::http_client& client, const load_config& cfg, std::mt19937_64& rng) {
  auto c = start_stream(client, cfg, make_body(cfg, cfg.isl, cfg.osl, rng));
  if (!c->wait_end(std::chrono::seconds(600)))
    return make_error(errc::timeout, "the probe request did not end within 600 s");
  std::lock_guard lk{c->mtx};
  if (!c->error.empty())
    return make_error(errc::io_error, "probe: " + c->error);
  if (!c->first_token)
    return make_error(errc::internal, "probe: the stream carried no token");
  return ms_between(c->sent, *c->first_token);
}

// The value of an unlabelled series on /metrics; nullopt when absent.
std::optional<double> metric(http::http_client& client, const std::string& name) {
  auto res = client.request({"GET", "/metrics", "", ""}, std::chrono::seconds(10));
  if (!res || res->status != 200)
    return std::nullopt;
  std::istringstream in{res->body};
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0)
      return std::strtod(line.c_str() + name.size() + 1, nullptr);
  return std::nullopt;
}

struct round_result {
  double ttft_ms = 0;
  uint32_t headers_before_cancel = 0; ///< storm streams whose headers had arrived when closed
  uint32_t tokens_before_cancel = 0;  ///< storm streams that had a token when closed
  uint32_t ended_before_cancel = 0;   ///< storm streams that had ended (nothing left to cancel)
  sample_set header_ms;               ///< storm: send -> headers
};

expected<round_result> storm_round(http::http_client& client, const load_config& cfg, const storm_config& sc,
                                   std::mt19937_64& rng) {
  std::vector<std::shared_ptr<stream_call>> busy;
  for (uint32_t i = 0; i < sc.busy_streams; ++i) {
    busy.push_back(start_stream(client, cfg, make_body(cfg, 16, 1024, rng)));
    if (!busy.back()->wait_first_token(std::chrono::seconds(600)))
      return make_error(errc::io_error, "cancel-storm: a busy stream produced no token");
  }
  std::vector<std::string> bodies;
  for (uint32_t i = 0; i < sc.storm; ++i)
    bodies.push_back(make_body(cfg, cfg.isl, sc.storm_osl, rng));
  const auto t0 = clock::now();
  std::vector<std::shared_ptr<stream_call>> calls;
  for (auto& b : bodies)
    calls.push_back(start_stream(client, cfg, std::move(b)));
  std::this_thread::sleep_until(t0 + std::chrono::milliseconds(sc.cancel_after_ms));
  round_result r;
  for (auto& c : busy)
    c->token->cancel();
  for (auto& c : calls) {
    {
      std::lock_guard lk{c->mtx};
      if (c->headers) {
        ++r.headers_before_cancel;
        r.header_ms.add(ms_between(c->sent, *c->headers));
      }
      r.tokens_before_cancel += c->first_token ? 1 : 0;
      r.ended_before_cancel += c->ended ? 1 : 0;
    }
    c->token->cancel();
  }
  auto ttft = probe(client, cfg, rng);
  for (auto& c : calls)
    (void)c->wait_end(std::chrono::seconds(30));
  for (auto& c : busy)
    (void)c->wait_end(std::chrono::seconds(30));
  if (!ttft)
    return ttft.error();
  r.ttft_ms = *ttft;
  return r;
}

json samples_json(const sample_set& s, const std::vector<double>& values) {
  return {{"samples", values}, {"median", s.percentile(50)}};
}

} // namespace

expected<std::string> run_cancel_storm(const load_config& in, const storm_config& sc) {
  if (auto ok = validate(in); !ok)
    return ok.error();
  if (sc.storm == 0 || sc.rounds == 0 || sc.storm_osl == 0)
    return make_error(errc::config_error, "cancel-storm: storm, rounds and storm_osl must be > 0");
  load_config cfg = in;
  http::http_client client(cfg.host, cfg.port, cfg.io_threads, cfg.tls);
  if (cfg.model.empty()) {
    auto m = resolve_model(client);
    if (!m)
      return m.error();
    cfg.model = *m;
  }
  std::mt19937_64 rng{cfg.seed};
  const std::string disconnected = "dynamo_frontend_disconnected_clients";
  if (auto warm = probe(client, cfg, rng); !warm) // first request: lazy set-up, caches
    return warm.error();
  auto before = metric(client, disconnected);
  sample_set idle, after;
  std::vector<double> idle_v, after_v;
  for (uint32_t i = 0; i < sc.rounds; ++i) {
    auto t = probe(client, cfg, rng);
    if (!t)
      return t.error();
    idle.add(*t);
    idle_v.push_back(*t);
  }
  json rounds = json::array();
  for (uint32_t i = 0; i < sc.rounds; ++i) {
    auto r = storm_round(client, cfg, sc, rng);
    if (!r)
      return r.error();
    after.add(r->ttft_ms);
    after_v.push_back(r->ttft_ms);
    rounds.push_back({{"ttft_ms", r->ttft_ms},
                      {"ratio_to_idle_median", r->ttft_ms / idle.percentile(50)},
                      {"storm_headers_before_cancel", r->headers_before_cancel},
                      {"storm_first_tokens_before_cancel", r->tokens_before_cancel},
                      {"storm_ended_before_cancel", r->ended_before_cancel},
                      {"storm_headers_ms", json::parse(to_json(r->header_ms.summarize()))}});
  }
  auto later = metric(client, disconnected);
  const double ratio = after.percentile(50) / idle.percentile(50);
  json report;
  report["label"] = cfg.label;
  report["mode"] = "cancel-storm";
  report["config"] = {{"url", report_url(cfg)}, {"model", cfg.model},
                      {"endpoint", cfg.endpoint}, {"isl", cfg.isl}, {"probe_osl", cfg.osl},
                      {"storm", sc.storm}, {"cancel_after_ms", sc.cancel_after_ms},
                      {"storm_osl", sc.storm_osl}, {"busy_streams", sc.busy_streams},
                      {"rounds", sc.rounds}, {"seed", cfg.seed}};
  report["idle_ttft_ms"] = samples_json(idle, idle_v);
  report["after_storm_ttft_ms"] = samples_json(after, after_v);
  report["ttft_ratio"] = ratio; ///< median after a storm / median idle
  report["target_ratio"] = 2.0;
  report["target_met"] = ratio <= 2.0;
  report["rounds"] = rounds;
  report["disconnected_clients"] = {{"before", before ? json(*before) : json(nullptr)},
                                    {"after", later ? json(*later) : json(nullptr)},
                                    {"expected_increase", (sc.storm + sc.busy_streams) * sc.rounds}};
  return report.dump(2);
}

} // namespace dynamo::bench
