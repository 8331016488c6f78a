// An external engine's vLLM-format KV events reach the router: a Python
// publisher (vllm_kv_publisher.py: vLLM's frames, msgspec layouts, replay
// socket) stands for the engine, whose discovery record names its endpoints;
// the router's index is read the way disaggregation reads it (peek_atom).
#include "actors/router/model_watcher.hpp"

#include "planes/discovery/inproc_discovery.hpp"
#include "runtime/protocol/codec.hpp"
#include "tests/support/child_process.hpp"

#include <boost/test/unit_test.hpp>
#include <caf/all.hpp>
#include <fmt/format.h>

#include <future>
#include <sstream>
#include <thread>

using namespace dynamo;
using namespace dynamo::actors;
using namespace std::chrono_literals;

namespace {

constexpr uint64_t instance = 0x5eed0000000000a1;
constexpr uint32_t block_size = 4;

std::vector<uint32_t> tokens(uint32_t first, uint32_t n) {
  std::vector<uint32_t> t(n);
  for (uint32_t i = 0; i < n; ++i)
    t[i] = first + i;
  return t;
}

std::string json_list(const std::vector<uint64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

std::string json_list(const std::vector<uint32_t>& v) {
  return json_list(std::vector<uint64_t>(v.begin(), v.end()));
}

/// The Python publisher, driven line by line.
struct publisher {
  test::child_process proc;
  std::string endpoint, replay;

  static publisher start(const std::string& encoding, bool with_replay) {
    std::string script = std::string{std::getenv("DYNAMO_SOURCE_DIR")} +
                         "/tests/actors/router/vllm_kv_publisher.py";
    std::vector<std::string> args{"python3", script, "--encoding", encoding};
    if (with_replay)
      args.push_back("--replay");
    auto p = test::child_process::spawn("/usr/bin/env", args); // python3 from PATH
    BOOST_REQUIRE(p);
    auto ready = p->read_line();
    BOOST_REQUIRE(ready);
    std::istringstream in(*ready);
    std::string word, pub, rep;
    in >> word >> pub >> rep;
    BOOST_REQUIRE_EQUAL(word, "ready");
    return publisher{std::move(*p), pub, rep == "-" ? "" : rep};
  }
  std::string command(const std::string& json) {
    BOOST_REQUIRE(proc.write_line(json));
    auto reply = proc.read_line();
    BOOST_REQUIRE(reply);
    BOOST_REQUIRE(reply->rfind("ok", 0) == 0);
    return *reply;
  }
  void store(std::vector<uint64_t> hashes, std::optional<uint64_t> parent, uint32_t first_token,
             bool send = true) {
    auto t = tokens(first_token, static_cast<uint32_t>(hashes.size()) * block_size);
    command(fmt::format(R"({{"op":"store","hashes":{},"parent":{},"tokens":{},"block_size":{},"send":{}}})",
                        json_list(hashes), parent ? std::to_string(*parent) : "null",
                        json_list(t), block_size, send ? "true" : "false"));
  }
  void remove(std::vector<uint64_t> hashes, bool send = true) {
    command(fmt::format(R"({{"op":"remove","hashes":{},"send":{}}})", json_list(hashes),
                        send ? "true" : "false"));
  }
};

/// A router (inside a model_watcher) that knows the external worker from its discovery record.
struct cluster {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  std::shared_ptr<planes::inproc_discovery_store> store = planes::make_inproc_discovery_store();
  std::unique_ptr<planes::discovery_plane> discovery;
  std::unique_ptr<model_watcher> watcher;
  std::unique_ptr<planes::registration> reg;

  explicit cluster(const publisher& pub) {
    discovery = std::move(*planes::make_inproc_discovery(store));
    model_watcher_config wc;
    wc.router.mode = route::router_mode::kv;
    auto w = model_watcher::start(sys, *discovery, wc, [](const protocol::model_card&) {
      return expected<model_assets>{mocker_assets()};
    });
    BOOST_REQUIRE(w);
    watcher = std::move(*w);
    planes::instance_record rec;
    rec.endpoint = {"dynamo", "vllm", "generate"};
    rec.instance = instance;
    rec.request_address = "tcp://127.0.0.1:9"; // not called here
    rec.metadata[std::string{protocol::zmq_kv_events_key}] = pub.endpoint;
    if (!pub.replay.empty())
      rec.metadata[std::string{protocol::zmq_kv_replay_key}] = pub.replay;
    protocol::model_card card;
    card.name = "external";
    card.source = "mocker";
    card.kv_block_size = block_size;
    rec.payload = protocol::encode(card);
    auto r = discovery->register_instance(rec);
    BOOST_REQUIRE(r);
    reg = std::move(*r);
  }
  ~cluster() {
    reg.reset();
    watcher.reset();
    sys.await_actors_before_shutdown(false);
  }

  /// Tokens of `prompt` the router finds cached (on any worker).
  uint32_t cached(const std::vector<uint32_t>& prompt) {
    auto models = watcher->models();
    auto it = models.find("external");
    if (it == models.end())
      return 0;
    auto done = std::make_shared<std::promise<uint32_t>>();
    auto job = std::make_shared<peek_job>();
    job->tokens = prompt;
    job->answer = [done](uint32_t n) { done->set_value(n); };
    auto answer = done->get_future();
    caf::anon_send(it->second.router->get(), peek_atom::value, std::move(job));
    return answer.wait_for(5s) == std::future_status::ready ? answer.get() : 0;
  }
  /// Waits (10 s at most) until the router finds `expected` tokens of `prompt` cached.
  uint32_t await_cached(const std::vector<uint32_t>& prompt, uint32_t expected) {
    uint32_t got = 0;
    for (int i = 0; i < 500 && (got = cached(prompt)) != expected; ++i)
      std::this_thread::sleep_for(20ms);
    return got;
  }
  route::vllm_relay_stats stats() {
    for (int i = 0; i < 500; ++i) {
      if (auto s = watcher->kv_relay_stats(instance))
        return *s;
      std::this_thread::sleep_for(20ms);
    }
    BOOST_FAIL("the instance got no relay");
    return {};
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(vllm_kv_relay_into_the_router)

BOOST_AUTO_TEST_CASE(map_encoded_batches_reach_the_index_and_a_gap_is_replayed) {
  auto pub = publisher::start("map", true);
  cluster c(pub);
  (void)c.stats(); // the relay exists, so its SUB connects
  pub.command(R"({"op":"wait_subscriber"})");
  pub.store({11, 12}, std::nullopt, 100);
  BOOST_TEST(c.await_cached(tokens(100, 8), 8) == 8u);

  // #1 is lost on the way; #2 reveals the gap and the replay brings #1 back.
  pub.store({13}, 12, 108, false);
  pub.store({14}, 13, 112);
  BOOST_TEST(c.await_cached(tokens(100, 16), 16) == 16u);
  auto s = c.stats();
  BOOST_TEST(s.gaps == 1u);
  BOOST_TEST(s.replays == 1u);
  BOOST_TEST(s.clears == 0u);
  BOOST_TEST(s.malformed == 0u);

  pub.remove({14});
  BOOST_TEST(c.await_cached(tokens(100, 16), 12) == 12u);
}

BOOST_AUTO_TEST_CASE(array_encoded_batches_without_replay_clear_the_worker_on_a_gap) {
  auto pub = publisher::start("array", false);
  cluster c(pub);
  (void)c.stats();
  pub.command(R"({"op":"wait_subscriber"})");
  pub.store({11, 12}, std::nullopt, 100);
  BOOST_TEST(c.await_cached(tokens(100, 8), 8) == 8u);

  // The removal of block 12 is lost: the router cannot know which blocks the
  // engine still has, so it drops them all rather than route to a stale prefix.
  pub.remove({12}, false);
  pub.store({21}, std::nullopt, 300);
  BOOST_TEST(c.await_cached(tokens(300, 4), 4) == 4u);
  BOOST_TEST(c.cached(tokens(100, 8)) == 0u);
  auto s = c.stats();
  BOOST_TEST(s.gaps == 1u);
  BOOST_TEST(s.clears == 1u);
}

BOOST_AUTO_TEST_CASE(a_router_that_joins_late_replays_the_engine_buffer) {
  auto pub = publisher::start("array", true);
  // Published before anyone listens: only the replay can bring these.
  pub.store({11, 12}, std::nullopt, 100);
  pub.store({13}, 12, 108);
  cluster c(pub);
  (void)c.stats();
  pub.command(R"({"op":"wait_subscriber"})");
  pub.store({14}, 13, 112); // the first live batch (#2) starts the replay from #0
  BOOST_TEST(c.await_cached(tokens(100, 16), 16) == 16u);
  auto s = c.stats();
  BOOST_TEST(s.gaps == 0u);
  BOOST_TEST(s.replays == 1u);
  BOOST_TEST(s.clears == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
