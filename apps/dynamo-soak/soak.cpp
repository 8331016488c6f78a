#include "apps/dynamo-soak/soak.hpp"

#include "planes/discovery/file_discovery.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/bench/sse_parser.hpp"
#include "runtime/bench/stats.hpp"
#include "runtime/metrics/exposition.hpp"
#include "runtime/mocker/token_stream.hpp"
#include "runtime/protocol/disagg.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dynamo::soak {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;
namespace fs = std::filesystem;

uint16_t free_port() {
  // Bind port 0 on loopback, read it back, close: good enough on a test host.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string write_config(const soak_config& c, const fs::path& dir, uint16_t port) {
  auto path = dir / "cluster.yaml";
  std::ofstream(path) << fmt::format(R"(namespace: soak
discovery: {{backend: file, root: {}, lease_ttl_ms: 1000}}
frontend: {{host: 127.0.0.1, port: {}}}
router: {{mode: {}, migration_limit: {}}}
shutdown_grace_ms: 2000
pools:
  - name: backend
    engine: mocker
    model: mocker
    replicas: {}
    mocker: {{speedup_ratio: {}}}
)",
                                     (dir / "discovery").string(), port, c.router_mode,
                                     c.migration_limit, c.workers, c.speedup_ratio);
  return path.string();
}

pid_t spawn(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

struct worker_view {
  std::vector<int> pids;
  size_t ready = 0;
};

worker_view workers_of(planes::discovery_plane& d) {
  worker_view v;
  auto recs = d.list("soak/backend/generate");
  if (!recs)
    return v;
  for (auto& r : *recs) {
    if (r.health != planes::health_state::ready)
      continue;
    ++v.ready;
    if (auto it = r.metadata.find(std::string{protocol::pid_metadata_key}); it != r.metadata.end())
      v.pids.push_back(std::stoi(it->second));
  }
  return v;
}

// Shared by the load driver and the I/O callbacks.
struct load_state {
  std::mutex mtx;
  std::condition_variable cv;
  uint32_t in_flight = 0, started = 0;
  uint64_t ok = 0, wrong = 0, failed = 0;
  bench::sample_set e2e, max_gap;
  std::vector<std::string> errors;
};

void one_request(http::http_client& client, const soak_config& cfg, load_state& st,
                 std::vector<uint32_t> prompt) {
  struct ctx {
    std::string expected, text;
    bench::sse_parser parser;
    unsigned status = 0;
    bool done = false;
    std::string error;
    clock::time_point start = clock::now(), last = start;
    double max_gap = 0;
  };
  auto c = std::make_shared<ctx>();
  for (auto t : mocker::continuation(prompt, cfg.osl))
    c->expected.push_back(static_cast<char>(t));
  json body{{"model", "mocker"}, {"prompt", prompt}, {"max_tokens", cfg.osl}, {"ignore_eos", true},
            {"temperature", 0}, {"stream", true}};
  http::client_callbacks cb;
  cb.on_status = [c](unsigned s) { c->status = s; };
  cb.on_data = [c](std::string_view d) {
    for (auto& ev : c->parser.feed(d)) {
      if (ev.data == "[DONE]") {
        c->done = true;
        continue;
      }
      if (ev.event == "error") {
        c->error = "stream error: " + ev.data;
        continue;
      }
      auto j = json::parse(ev.data, nullptr, false);
      if (j.is_discarded() || !j.contains("choices") || j["choices"].empty())
        continue;
      auto now = clock::now();
      c->max_gap = std::max(c->max_gap, std::chrono::duration<double>(now - c->last).count());
      c->last = now;
      c->text += j["choices"][0].value("text", "");
    }
  };
  cb.on_done = [c, &st](expected<void> r) {
    std::string err = !r ? describe(r.error())
                     : c->status != 200 ? fmt::format("HTTP {}", c->status)
                     : !c->error.empty() ? c->error
                     : !c->done          ? "no [DONE]"
                                         : "";
    std::lock_guard lk{st.mtx};
    if (!err.empty()) {
      ++st.failed;
      if (st.errors.size() < 8)
        st.errors.push_back(err);
    } else if (c->text != c->expected) {
      ++st.wrong;
      if (st.errors.size() < 8)
        st.errors.push_back(fmt::format("wrong text: got {} chars, expected {}", c->text.size(),
                                        c->expected.size()));
    } else {
      ++st.ok;
      st.e2e.add(std::chrono::duration<double>(clock::now() - c->start).count());
      st.max_gap.add(c->max_gap);
    }
    --st.in_flight;
    st.cv.notify_all();
  };
  client.start({"POST", "/v1/completions", body.dump(), "application/json"}, std::move(cb));
}

} // namespace

expected<std::string> run(const soak_config& cfg, bool& ok) {
  ok = false;
  auto dir = fs::temp_directory_path() / fmt::format("dynamo-soak-{}", ::getpid());
  fs::create_directories(dir / "discovery");
  auto port = free_port();
  auto config = write_config(cfg, dir, port);
  pid_t launcher = spawn({cfg.bin_dir + "/dynamo-launch", "--config", config, "--log-level", cfg.log_level});
  auto cleanup = [&] {
    ::kill(launcher, SIGTERM);
    ::waitpid(launcher, nullptr, 0);
    fs::remove_all(dir);
  };
  auto disc = planes::make_file_discovery((dir / "discovery").string());
  if (!disc) {
    cleanup();
    return disc.error();
  }
  http::http_client client("127.0.0.1", port, 2);
  auto deadline = clock::now() + std::chrono::seconds(30);
  while (clock::now() < deadline) {
    auto h = client.request({"GET", "/health", "", ""}, std::chrono::seconds(2));
    if (h && h->status == 200 && workers_of(**disc).ready == cfg.workers)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (workers_of(**disc).ready != cfg.workers) {
    cleanup();
    return make_error(errc::timeout, "the cluster did not become ready within 30 s");
  }

  load_state st;
  std::atomic<bool> stop_chaos{false};
  std::vector<double> recoveries;
  uint32_t kills = 0;
  std::thread chaos([&] {
    std::mt19937_64 rng{cfg.seed * 7919};
    while (cfg.kill_interval_ms > 0 && !stop_chaos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(cfg.kill_interval_ms));
      auto v = workers_of(**disc);
      if (stop_chaos || v.pids.empty())
        continue;
      int victim = v.pids[rng() % v.pids.size()];
      auto t0 = clock::now();
      ::kill(victim, SIGKILL);
      ++kills;
      // Recovery: the dead instance gone and a replacement registered.
      while (!stop_chaos) {
        auto now_v = workers_of(**disc);
        bool gone = std::find(now_v.pids.begin(), now_v.pids.end(), victim) == now_v.pids.end();
        if (gone && now_v.ready >= cfg.workers) {
          recoveries.push_back(std::chrono::duration<double>(clock::now() - t0).count());
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  });

  std::mt19937_64 rng{cfg.seed};
  std::uniform_int_distribution<uint32_t> tok(32, 126);
  auto t0 = clock::now();
  auto more = [&] {
    if (cfg.duration_s > 0)
      return std::chrono::duration<double>(clock::now() - t0).count() < cfg.duration_s;
    return st.started < cfg.requests;
  };
  while (more()) {
    std::vector<uint32_t> prompt(cfg.isl);
    for (auto& t : prompt)
      t = tok(rng);
    std::unique_lock lk{st.mtx};
    st.cv.wait(lk, [&] { return st.in_flight < cfg.concurrency; });
    ++st.in_flight;
    ++st.started;
    lk.unlock();
    one_request(client, cfg, st, std::move(prompt));
  }
  {
    std::unique_lock lk{st.mtx};
    st.cv.wait_for(lk, std::chrono::seconds(120), [&] { return st.in_flight == 0; });
  }
  double wall = std::chrono::duration<double>(clock::now() - t0).count();
  stop_chaos = true;
  chaos.join();
  auto scrape = client.request({"GET", "/metrics", "", ""}, std::chrono::seconds(5));
  uint64_t mig_new = 0, mig_ongoing = 0;
  if (scrape)
    if (auto page = metrics::parse_exposition(scrape->body)) {
      constexpr std::string_view name = "dynamo_frontend_model_migration_total";
      const double all = metrics::sum_samples(*page, name).value_or(0);
      mig_ongoing = static_cast<uint64_t>(
          metrics::sum_samples(*page, name, {{"migration_type", "ongoing_request"}}).value_or(0));
      mig_new = static_cast<uint64_t>(all) - mig_ongoing;
    }
  cleanup();

  uint64_t lost = st.started - st.ok;
  ok = lost == 0 && st.wrong == 0;
  bench::sample_set rec;
  for (double r : recoveries)
    rec.add(r);
  json report{{"requests", st.started},    {"completed", st.ok},        {"wrong_output", st.wrong},
              {"failed", st.failed},       {"requests_lost", lost},      {"worker_kills", kills},
              {"migrations_ongoing", mig_ongoing}, {"retries_before_first_token", mig_new},
              {"duration_s", wall},        {"requests_per_s", st.ok / wall},
              {"errors", st.errors}};
  report["config"] = {{"workers", cfg.workers}, {"concurrency", cfg.concurrency}, {"isl", cfg.isl},
                      {"osl", cfg.osl}, {"speedup_ratio", cfg.speedup_ratio},
                      {"kill_interval_ms", cfg.kill_interval_ms}, {"router_mode", cfg.router_mode}};
  report["recovery_s"] = json::parse(bench::to_json(rec.summarize()));
  report["e2e_ms"] = json::parse(bench::to_json(st.e2e.summarize(), 1e3));
  report["max_token_gap_ms"] = json::parse(bench::to_json(st.max_gap.summarize(), 1e3));
  return report.dump(2);
}

} // namespace dynamo::soak
