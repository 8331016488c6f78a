// The dynamo-planner binary for real: a file discovery root, a fake worker in
// this process (file registration + ZeroMQ publisher sending kv_metrics), the
// planner as a child process. Checks the JSON line on its stdout, the
// decisions record in the file store, and a clean exit on SIGTERM; with
// --connector kubernetes, the requests a fake API server receives.
#include "planes/discovery/file_discovery.hpp"
#include "planes/event/zmq_event_plane.hpp"
#include "runtime/plan/decisions.hpp"
#include "runtime/protocol/codec.hpp"
#include "tests/planes/kubernetes/fake_kube_api.hpp"
#include "tests/planes/support/support.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace dynamo;
using namespace std::chrono_literals;
using planes::testing::wait_until;

namespace {

// A child with its stdout on a pipe; killed (SIGKILL) if still running at the end.
class child {
public:
  explicit child(std::vector<std::string> argv) {
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    pid_ = ::fork();
    BOOST_REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> args;
      for (auto& a : argv)
        args.push_back(a.data());
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0)
      ::close(fd_);
  }

  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        auto line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
        continue;
      char buf[4096];
      auto n = ::read(fd_, buf, sizeof buf);
      if (n <= 0)
        return std::nullopt;
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

  /// SIGTERM, then the exit status (-1 if it did not exit in time or died by a signal).
  int terminate(std::chrono::milliseconds timeout) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    bool exited = wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
    if (!exited)
      return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string buffer_;
};

// A config for pool "decode" (file discovery in `dir`) and one registered
// decode worker reporting a full KV cache every 20 ms until stop().
struct loaded_worker {
  std::string config_path;
  std::unique_ptr<planes::discovery_plane> discovery;
  std::unique_ptr<planes::event_publisher> pub;
  std::unique_ptr<planes::registration> reg;
  std::atomic<bool> stopping{false};
  std::thread reporter;

  explicit loaded_worker(const std::string& dir) : config_path(dir + "/cluster.yaml") {
    std::ofstream(config_path) << "namespace: plan-e2e\n"
                                  "discovery: {backend: file, root: " << dir << "/discovery}\n"
                                  "planner: {enabled: true, interval_ms: 200, max_replicas: 3, predictor: constant}\n"
                                  "pools:\n"
                                  "  - {name: decode, role: decode, model: m, replicas: 1}\n";
    auto d = planes::make_file_discovery(dir + "/discovery");
    BOOST_REQUIRE(d);
    discovery = std::move(*d);
    auto p = planes::make_zmq_event_publisher();
    BOOST_REQUIRE(p);
    pub = std::move(*p);
    planes::instance_record rec;
    rec.endpoint = {"plan-e2e", "decode", "generate"};
    rec.request_address = "tcp://127.0.0.1:1";
    rec.event_address = pub->address();
    rec.metadata = {{"role", "decode"}, {"model", "m"}, {"index", "0"}};
    auto r = discovery->register_instance(rec);
    BOOST_REQUIRE(r);
    reg = std::move(*r);
    // A late subscriber misses the first reports: keep sending.
    reporter = std::thread([this, id = reg->record().instance] {
      protocol::load_metrics m;
      m.worker_id = id;
      m.kv_usage = 0.95f;
      while (!stopping) {
        (void) pub->publish("kv_metrics", protocol::encode(m));
        std::this_thread::sleep_for(20ms);
      }
    });
  }
  void stop() {
    stopping = true;
    if (reporter.joinable())
      reporter.join();
  }
  ~loaded_worker() { stop(); }
};

} // namespace

BOOST_AUTO_TEST_SUITE(planner_binary_suite)

BOOST_AUTO_TEST_CASE(scales_a_loaded_pool_and_exits_on_sigterm) {
  planes::testing::temp_dir dir;
  loaded_worker w(dir.path());
  auto& config_path = w.config_path;
  auto& discovery = w.discovery;
  child planner({DYNAMO_PLANNER_BIN, "--config", config_path, "--log-level", "warn"});
  auto line = planner.read_line(20s);
  w.stop();
  BOOST_REQUIRE_MESSAGE(line, "no decision line from dynamo-planner");
  auto j = nlohmann::json::parse(*line);
  BOOST_TEST(j["event"] == "scaling_decision");
  BOOST_TEST(j["pool"] == "decode");
  BOOST_TEST(j["current"] == 1);
  BOOST_TEST(j["target"] == 2);
  BOOST_TEST(j["decision_id"] == 1);

  auto read_record = [&]() -> std::optional<plan::planner_decisions> {
    auto recs = discovery->list("plan-e2e/planner/decisions");
    if (!recs || recs->size() != 1)
      return std::nullopt;
    auto d = plan::from_metadata(recs->front().metadata);
    return d ? std::optional{*d} : std::nullopt;
  };
  BOOST_REQUIRE(wait_until([&] {
    auto d = read_record();
    return d && d->decision_id == 1;
  }));
  BOOST_TEST(read_record()->replicas.at("decode") == 2u);

  BOOST_TEST(planner.terminate(10s) == 0);
  BOOST_TEST(!read_record().has_value()); // the record left with the planner
}

// --connector kubernetes: the same decision also scales Deployment
// worker-decode on a (fake) API server: GET at startup, GET + merge-PATCH.
BOOST_AUTO_TEST_CASE(the_kubernetes_connector_patches_the_pool_deployment) {
  planes::testing::temp_dir dir;
  test::fake_kube_api api("serving", "planner-token");
  api.add_deployment("worker-decode", 1);
  auto token = dir.path() + "/token";
  std::ofstream(token) << "planner-token\n";
  loaded_worker w(dir.path());
  child planner({DYNAMO_PLANNER_BIN, "--config", w.config_path, "--log-level", "warn", "--connector", "kubernetes",
                 "--kubernetes-api", api.url(), "--kubernetes-namespace", "serving", "--kubernetes-token-file",
                 token});
  auto line = planner.read_line(20s);
  w.stop();
  BOOST_REQUIRE_MESSAGE(line, "no decision line from dynamo-planner");
  BOOST_TEST(nlohmann::json::parse(*line)["target"] == 2);
  BOOST_REQUIRE(wait_until([&] { return api.replicas("worker-decode") == 2u; }));
  auto reqs = api.take_requests();
  const std::string path = "/apis/apps/v1/namespaces/serving/deployments/worker-decode/scale";
  BOOST_REQUIRE_EQUAL(reqs.size(), 3u); // the startup check, then GET + PATCH for decision 1
  for (const auto& r : reqs) {
    BOOST_TEST(r.target == path);
    BOOST_TEST(r.authorization == "Bearer planner-token");
  }
  BOOST_TEST(reqs[0].method == "GET");
  BOOST_TEST(reqs[1].method == "GET");
  BOOST_TEST(reqs[2].method == "PATCH");
  BOOST_TEST(reqs[2].content_type == "application/merge-patch+json");
  BOOST_TEST(reqs[2].body == R"({"spec":{"replicas":2}})");
  BOOST_TEST(planner.terminate(10s) == 0);
}

BOOST_AUTO_TEST_CASE(the_kubernetes_connector_outside_a_pod_fails_with_a_message) {
  planes::testing::temp_dir dir;
  auto config_path = dir.path() + "/cluster.yaml";
  std::ofstream(config_path) << "discovery: {backend: file, root: " << dir.path() << "}\npools: [{name: b, model: m}]\n";
  ::unsetenv("KUBERNETES_SERVICE_HOST"); // the child inherits this environment
  child planner({DYNAMO_PLANNER_BIN, "--config", config_path, "--connector", "kubernetes"});
  BOOST_TEST(!planner.read_line(10s).has_value());
  BOOST_TEST(planner.terminate(10s) == 1); // exited at once: config_error, not a crash
}

BOOST_AUTO_TEST_CASE(bad_configs_fail_with_a_message) {
  planes::testing::temp_dir dir;
  auto config_path = dir.path() + "/cluster.yaml";
  std::ofstream(config_path) << "discovery: {backend: memory}\npools: [{name: b, model: m}]\n";
  child planner({DYNAMO_PLANNER_BIN, "--config", config_path});
  BOOST_TEST(!planner.read_line(10s).has_value()); // nothing on stdout; the error goes to stderr
  BOOST_TEST(planner.terminate(10s) == 1);
}

BOOST_AUTO_TEST_SUITE_END()
