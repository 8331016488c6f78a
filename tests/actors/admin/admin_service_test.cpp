#include "actors/admin/admin_service.hpp"
#include "planes/http_client/http_client.hpp"
#include "runtime/core/ids.hpp"

#include "tests/actors/admin/admin_test_util.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/loopback_listener.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

using namespace dynamo;
using namespace dynamo::admin;
using dynamo::test::http_client;
using dynamo::test::http_reply;
using json = nlohmann::json;

namespace {

/// A latch a test opens once; waiters give up after 5 s so nothing hangs.
class gate {
public:
  void open() {
    std::lock_guard lock{m_};
    open_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock lock{m_};
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return open_; });
  }

private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

/// Hosts workers 0xab and 0xcd and actors "router" and "a b"; records calls.
class fake_backend final : public admin_backend {
public:
  std::string process_kind() const override { return "worker"; }

  std::vector<actor_row> actors() override {
    if (block_actors) {
      entered.open();
      release.wait();
    }
    if (throw_in_actors)
      throw std::runtime_error("kaboom");
    return {{"worker-sup", "engine", "running", 0, ""},
            {"worker-sup", "publisher", "restarting", 3, "runtime_error: boom"}};
  }

  expected<std::vector<instance_row>> instances() override {
    if (fail_instances)
      return make_error(errc::io_error, "discovery store unreadable");
    return std::vector<instance_row>{
      {"dyn/backend/generate/00000000000000ab", 0xab, "tcp://127.0.0.1:7001", "ready",
       {{"model", "smol"}}},
      {"dyn/backend/generate/00000000000000cd", 0xcd, "tcp://127.0.0.1:7002", "draining", {}}};
  }

  expected<void> drain(uint64_t instance_id, bool on) override {
    std::lock_guard lock{mutex_};
    calls_.push_back((on ? "drain " : "undrain ") + to_hex(instance_id));
    if (!hosted.contains(instance_id))
      return make_error(errc::not_found, "instance " + to_hex(instance_id) + " is not hosted here");
    return {};
  }

  expected<std::optional<instance_host>> host_of(uint64_t instance_id) override {
    auto it = elsewhere.find(instance_id);
    if (it == elsewhere.end())
      return std::optional<instance_host>{};
    return std::optional<instance_host>{it->second};
  }

  expected<void> restart(const std::string& name) override {
    std::lock_guard lock{mutex_};
    calls_.push_back("restart " + name);
    if (name != "router" && name != "a b")
      return make_error(errc::not_found, "no actor named '" + name + "'");
    return {};
  }

  std::vector<std::string> calls() {
    std::lock_guard lock{mutex_};
    return calls_;
  }

  std::set<uint64_t> hosted{0xab, 0xcd};
  std::map<uint64_t, instance_host> elsewhere; ///< host_of's answers (none: no record)
  bool fail_instances = false;
  bool throw_in_actors = false;
  bool block_actors = false;
  gate entered;
  gate release;

private:
  std::mutex mutex_;
  std::vector<std::string> calls_;
};

struct fixture {
  std::shared_ptr<fake_backend> backend = std::make_shared<fake_backend>();

  std::unique_ptr<admin_service> start(admin_options opts = {}) {
    auto svc = admin_service::start(std::move(opts), backend);
    BOOST_REQUIRE_MESSAGE(svc, "admin service failed: " << (svc ? "" : describe(svc.error())));
    BOOST_REQUIRE((*svc)->port() != 0);
    return std::move(*svc);
  }
};

http_reply call(uint16_t port, const std::string& method, const std::string& target,
                const std::string& authorization = {}) {
  http_client c{port};
  std::vector<std::pair<std::string, std::string>> headers;
  if (!authorization.empty())
    headers.emplace_back("Authorization", authorization);
  return c.request(method, target, {}, headers);
}

json parse(const http_reply& r) {
  auto j = json::parse(r.body, nullptr, false);
  BOOST_TEST(!j.is_discarded(), "not JSON: " + r.body);
  return j;
}

/// Asserts the error shape and returns its code.
std::string error_code(const http_reply& r) {
  BOOST_TEST(r.header("content-type") == "application/json");
  auto j = parse(r);
  if (!j.is_object() || !j.contains("error"))
    return "<no error object>";
  const auto& e = j["error"];
  BOOST_TEST(e["message"].is_string());
  BOOST_TEST(!e["message"].get<std::string>().empty());
  BOOST_TEST(e["type"].is_string());
  return e.value("code", "<no code>");
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(admin_service_routes, fixture)

BOOST_AUTO_TEST_CASE(health_names_the_process) {
  auto svc = start();
  auto r = call(svc->port(), "GET", "/admin/health");
  BOOST_TEST(r.status == 200u);
  BOOST_TEST(r.header("content-type") == "application/json");
  BOOST_TEST(r.body == R"({"status":"ok","process":"worker"})");
}

BOOST_AUTO_TEST_CASE(actors_lists_every_row) {
  auto svc = start();
  auto r = call(svc->port(), "GET", "/admin/actors");
  BOOST_TEST(r.status == 200u);
  auto j = parse(r);
  BOOST_REQUIRE(j["actors"].is_array());
  BOOST_REQUIRE_EQUAL(j["actors"].size(), 2u);
  const auto& p = j["actors"][1];
  BOOST_TEST(p["supervisor"] == "worker-sup");
  BOOST_TEST(p["name"] == "publisher");
  BOOST_TEST(p["state"] == "restarting");
  BOOST_TEST(p["restarts"] == 3);
  BOOST_TEST(p["last_reason"] == "runtime_error: boom");
}

BOOST_AUTO_TEST_CASE(instances_list_with_hex_ids_and_backend_errors_map_to_status) {
  auto svc = start();
  auto r = call(svc->port(), "GET", "/admin/instances");
  BOOST_TEST(r.status == 200u);
  auto j = parse(r);
  BOOST_REQUIRE_EQUAL(j["instances"].size(), 2u);
  const auto& a = j["instances"][0];
  BOOST_TEST(a["key"] == "dyn/backend/generate/00000000000000ab");
  BOOST_TEST(a["instance_id"] == "00000000000000ab");
  BOOST_TEST(a["address"] == "tcp://127.0.0.1:7001");
  BOOST_TEST(a["health"] == "ready");
  BOOST_TEST(a["metadata"]["model"] == "smol");
  BOOST_TEST(j["instances"][1]["health"] == "draining");
  BOOST_TEST(j["instances"][1]["metadata"].is_object());
  backend->fail_instances = true;
  auto bad = call(svc->port(), "GET", "/admin/instances");
  BOOST_TEST(bad.status == 500u);
  BOOST_TEST(error_code(bad) == "io_error");
  BOOST_TEST(parse(bad)["error"]["message"] == "discovery store unreadable");
}

BOOST_AUTO_TEST_CASE(drain_and_undrain_a_hosted_worker) {
  auto svc = start();
  auto d = call(svc->port(), "POST", "/admin/workers/00000000000000ab/drain");
  BOOST_TEST(d.status == 200u);
  BOOST_TEST(d.body == R"({"instance_id":"00000000000000ab","draining":true})");
  auto u = call(svc->port(), "POST", "/admin/workers/CD/undrain"); // short and upper case
  BOOST_TEST(u.status == 200u);
  BOOST_TEST(u.body == R"({"instance_id":"00000000000000cd","draining":false})");
  BOOST_TEST(backend->calls() ==
             (std::vector<std::string>{"drain 00000000000000ab", "undrain 00000000000000cd"}));
}

BOOST_AUTO_TEST_CASE(drain_of_a_worker_not_hosted_here_is_404) {
  auto svc = start();
  auto r = call(svc->port(), "POST", "/admin/workers/00000000000000ef/drain");
  BOOST_TEST(r.status == 404u);
  BOOST_TEST(error_code(r) == "not_found");
}

BOOST_AUTO_TEST_CASE(malformed_instance_ids_are_400_and_never_reach_the_backend) {
  auto svc = start();
  for (std::string id : {"zz", "0", "0x1f", "10000000000000000", "%61%62", "-1"}) {
    auto r = call(svc->port(), "POST", "/admin/workers/" + id + "/drain");
    BOOST_TEST(r.status == 400u, id);
    BOOST_TEST(error_code(r) == "bad_request");
  }
  BOOST_TEST(call(svc->port(), "POST", "/admin/workers//undrain").status == 400u);
  BOOST_TEST(backend->calls().empty());
}

BOOST_AUTO_TEST_CASE(restart_known_and_unknown_actors) {
  auto svc = start();
  auto ok = call(svc->port(), "POST", "/admin/actors/router/restart");
  BOOST_TEST(ok.status == 200u);
  BOOST_TEST(ok.body == R"({"restarted":"router"})");
  auto spaced = call(svc->port(), "POST", "/admin/actors/a%20b/restart"); // percent-decoded
  BOOST_TEST(spaced.status == 200u);
  BOOST_TEST(spaced.body == R"({"restarted":"a b"})");
  auto unknown = call(svc->port(), "POST", "/admin/actors/nope/restart");
  BOOST_TEST(unknown.status == 404u);
  BOOST_TEST(error_code(unknown) == "not_found");
  BOOST_TEST(call(svc->port(), "POST", "/admin/actors//restart").status == 400u);
  BOOST_TEST(backend->calls() ==
             (std::vector<std::string>{"restart router", "restart a b", "restart nope"}));
}

BOOST_AUTO_TEST_CASE(unknown_routes_are_404_and_wrong_methods_405_with_allow) {
  auto svc = start();
  for (std::string path : {"/admin/nope", "/nope", "/admin", "/admin/", "/admin/health/",
                           "/admin/health/x", "/admin/workers/ab/pause", "/admin/actors/x/stop",
                           "/admin/workers/ab/drain/x", "/v1/models"}) {
    auto r = call(svc->port(), "GET", path);
    BOOST_TEST(r.status == 404u, path);
    BOOST_TEST(error_code(r) == "not_found", path);
  }
  auto p = call(svc->port(), "POST", "/admin/health");
  BOOST_TEST(p.status == 405u);
  BOOST_TEST(p.header("allow") == "GET");
  BOOST_TEST(error_code(p) == "method_not_allowed");
  auto g = call(svc->port(), "GET", "/admin/workers/ab/drain");
  BOOST_TEST(g.status == 405u);
  BOOST_TEST(g.header("allow") == "POST");
  BOOST_TEST(call(svc->port(), "DELETE", "/admin/actors").status == 405u);
  BOOST_TEST(call(svc->port(), "PUT", "/admin/actors/router/restart").status == 405u);
  BOOST_TEST(backend->calls().empty());
}

BOOST_AUTO_TEST_CASE(a_throwing_backend_gets_a_500_and_the_service_keeps_going) {
  backend->throw_in_actors = true;
  auto svc = start();
  auto r = call(svc->port(), "GET", "/admin/actors");
  BOOST_TEST(r.status == 500u);
  BOOST_TEST(error_code(r) == "internal");
  BOOST_TEST(parse(r)["error"]["message"].get<std::string>().find("kaboom") != std::string::npos);
  BOOST_TEST(call(svc->port(), "GET", "/admin/health").status == 200u);
}

BOOST_AUTO_TEST_CASE(keep_alive_connection_serves_several_requests) {
  auto svc = start();
  http_client c{svc->port()};
  BOOST_TEST(c.request("GET", "/admin/health").status == 200u);
  BOOST_TEST(c.request("POST", "/admin/workers/ab/drain").status == 200u);
  BOOST_TEST(c.request("GET", "/admin/nope").status == 404u);
  BOOST_TEST(c.request("GET", "/admin/actors").status == 200u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(admin_service_auth, fixture)

BOOST_AUTO_TEST_CASE(with_a_token_every_request_needs_the_bearer_header) {
  admin_options opts;
  opts.token = "s3cret";
  auto svc = start(opts);
  auto none = call(svc->port(), "GET", "/admin/health");
  BOOST_TEST(none.status == 401u);
  BOOST_TEST(error_code(none) == "unauthorized");
  BOOST_TEST(parse(none)["error"]["type"] == "authentication_error");
  BOOST_TEST(none.header("www-authenticate").find("Bearer") == 0u);
  for (std::string bad : {"Bearer wrong", "Bearer s3cre", "Bearer s3crett", "Basic s3cret",
                          "s3cret", "Bearer S3CRET"})
    BOOST_TEST(call(svc->port(), "GET", "/admin/health", bad).status == 401u, bad);
  // Checked before routing and before any backend call.
  BOOST_TEST(call(svc->port(), "GET", "/admin/nope").status == 401u);
  BOOST_TEST(call(svc->port(), "POST", "/admin/health").status == 401u);
  BOOST_TEST(call(svc->port(), "POST", "/admin/workers/ab/drain", "Bearer nope").status == 401u);
  BOOST_TEST(backend->calls().empty());
  // The right token opens every route.
  BOOST_TEST(call(svc->port(), "GET", "/admin/health", "Bearer s3cret").status == 200u);
  BOOST_TEST(call(svc->port(), "GET", "/admin/health", "bearer s3cret").status == 200u);
  BOOST_TEST(call(svc->port(), "POST", "/admin/workers/ab/drain", "Bearer s3cret").status == 200u);
  BOOST_TEST(call(svc->port(), "GET", "/admin/nope", "Bearer s3cret").status == 404u);
  BOOST_TEST(backend->calls() == (std::vector<std::string>{"drain 00000000000000ab"}));
}

BOOST_AUTO_TEST_CASE(env_tokens_are_read_at_start) {
  ::setenv("DYNAMO_ADMIN_TEST_TOKEN", "tok-from-env", 1);
  admin_options opts;
  opts.token = "env:DYNAMO_ADMIN_TEST_TOKEN";
  auto svc = start(opts);
  ::setenv("DYNAMO_ADMIN_TEST_TOKEN", "changed-later", 1); // read once, at start
  BOOST_TEST(call(svc->port(), "GET", "/admin/health", "Bearer tok-from-env").status == 200u);
  BOOST_TEST(call(svc->port(), "GET", "/admin/health", "Bearer changed-later").status == 401u);
  BOOST_TEST(call(svc->port(), "GET", "/admin/health", "Bearer env:DYNAMO_ADMIN_TEST_TOKEN").status ==
             401u);
  ::unsetenv("DYNAMO_ADMIN_TEST_TOKEN");
}

BOOST_AUTO_TEST_CASE(unset_or_empty_env_tokens_refuse_to_start) {
  ::unsetenv("DYNAMO_ADMIN_TEST_MISSING");
  admin_options opts;
  opts.token = "env:DYNAMO_ADMIN_TEST_MISSING";
  auto missing = admin_service::start(opts, backend);
  BOOST_REQUIRE(!missing);
  BOOST_TEST(code_of(missing.error()) == errc::config_error);
  BOOST_TEST(message_of(missing.error()).find("admin_options.token") != std::string::npos);
  BOOST_TEST(message_of(missing.error()).find("DYNAMO_ADMIN_TEST_MISSING") != std::string::npos);
  ::setenv("DYNAMO_ADMIN_TEST_MISSING", "", 1);
  auto empty = admin_service::start(opts, backend);
  BOOST_REQUIRE(!empty);
  BOOST_TEST(code_of(empty.error()) == errc::config_error);
  ::unsetenv("DYNAMO_ADMIN_TEST_MISSING");
}

BOOST_AUTO_TEST_CASE(a_public_host_without_a_token_is_refused) {
  for (std::string host : {"0.0.0.0", "::", "10.1.2.3"}) {
    admin_options opts;
    opts.host = host;
    auto r = admin_service::start(opts, backend);
    BOOST_REQUIRE(!r);
    BOOST_TEST(code_of(r.error()) == errc::config_error);
    BOOST_TEST(message_of(r.error()).find("admin_options.token") != std::string::npos);
  }
  // With a token it starts (all interfaces; reached here through loopback).
  admin_options opts;
  opts.host = "0.0.0.0";
  opts.token = "t0k";
  auto svc = start(opts);
  BOOST_TEST(call(svc->port(), "GET", "/admin/health").status == 401u);
  BOOST_TEST(call(svc->port(), "GET", "/admin/health", "Bearer t0k").status == 200u);
}

BOOST_AUTO_TEST_CASE(bad_options_are_errors_not_crashes) {
  BOOST_TEST(code_of(admin_service::start({}, nullptr).error()) == errc::invalid_argument);
  admin_options spaced;
  spaced.token = "has space";
  BOOST_TEST(code_of(admin_service::start(spaced, backend).error()) == errc::config_error);
  admin_options no_threads;
  no_threads.io_threads = 0;
  BOOST_TEST(code_of(admin_service::start(no_threads, backend).error()) == errc::invalid_argument);
  admin_options no_queue;
  no_queue.max_queued = 0;
  BOOST_TEST(code_of(admin_service::start(no_queue, backend).error()) == errc::config_error);
  admin_options unresolvable;
  unresolvable.host = "256.1.1.1";
  unresolvable.token = "t";
  BOOST_TEST(!admin_service::start(unresolvable, backend));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_FIXTURE_TEST_SUITE(admin_service_lifecycle, fixture)

BOOST_AUTO_TEST_CASE(stop_waits_for_the_backend_call_and_never_runs_queued_requests) {
  backend->block_actors = true;
  auto svc = start();
  const uint16_t port = svc->port();
  http_client first{port};
  first.send("GET", "/admin/actors");
  BOOST_REQUIRE(backend->entered.wait()); // the worker thread is inside actors()
  http_client second{port};
  second.send("POST", "/admin/workers/ab/drain"); // queued behind it, or not read yet
  std::thread stopper{[&] { svc->stop(); }};
  // stop() refuses work before it stops the server, so once connections are
  // refused the queued drain can no longer run; only then let actors() return.
  bool refused = false;
  for (int i = 0; i < 500 && !refused; ++i) {
    try {
      http_client probe{port};
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } catch (const std::exception&) {
      refused = true;
    }
  }
  BOOST_TEST(refused);
  backend->release.open();
  stopper.join();
  // Answered 503 (it was queued) or cut off (it was not read yet); never run.
  auto status = second.read_header().status;
  BOOST_TEST((status == 503u || status == 0u), "status " << status);
  BOOST_TEST(backend->calls().empty());
  svc->stop(); // idempotent
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

std::string url_of(const admin_service& svc) {
  return "http://127.0.0.1:" + std::to_string(svc.port());
}

/// A host that hangs: it listens but never accepts.
using silent_listener = dynamo::test::loopback_listener;

/// A service whose drain of worker e1 is forwarded to a silent host and
/// pending: sent, and the local drain tried (so the forward has begun).
struct pending_forward {
  fixture f;
  std::unique_ptr<admin_service> svc;
  silent_listener silent;
  std::optional<http_client> client;
  std::chrono::steady_clock::time_point sent;

  explicit pending_forward(std::chrono::milliseconds timeout) {
    admin_options o;
    o.forward_timeout = timeout;
    svc = f.start(o);
    f.backend->elsewhere[0xe1] = {"http://127.0.0.1:" + std::to_string(silent.port)};
    client.emplace(svc->port());
    client->send("POST", "/admin/workers/e1/drain");
    sent = std::chrono::steady_clock::now();
    while (f.backend->calls().empty() && std::chrono::steady_clock::now() - sent < std::chrono::seconds(2))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    BOOST_REQUIRE(f.backend->calls() == (std::vector<std::string>{"drain 00000000000000e1"}));
  }
  [[nodiscard]] std::chrono::steady_clock::duration since_sent() const {
    return std::chrono::steady_clock::now() - sent;
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(admin_forwarding)

BOOST_AUTO_TEST_CASE(a_drain_for_another_process_reaches_it_with_the_token) {
  auto here = std::make_shared<fake_backend>();
  auto host = std::make_shared<fake_backend>();
  host->hosted = {0xef};
  admin_options o;
  o.token = "s3cret";
  auto host_svc = admin_service::start(o, host);
  BOOST_REQUIRE(host_svc);
  here->elsewhere[0xef] = {url_of(**host_svc)};
  auto svc = admin_service::start(o, here);
  BOOST_REQUIRE(svc);
  auto d = call((*svc)->port(), "POST", "/admin/workers/ef/drain", "Bearer s3cret");
  BOOST_TEST(d.status == 200u);
  BOOST_TEST(d.body == R"({"instance_id":"00000000000000ef","draining":true})");
  auto u = call((*svc)->port(), "POST", "/admin/workers/ef/undrain", "Bearer s3cret");
  BOOST_TEST(u.status == 200u);
  BOOST_TEST(here->calls() == (std::vector<std::string>{"drain 00000000000000ef",
                                                        "undrain 00000000000000ef"}));
  BOOST_TEST(host->calls() == (std::vector<std::string>{"drain 00000000000000ef",
                                                        "undrain 00000000000000ef"}));
}

BOOST_AUTO_TEST_CASE(a_forwarded_request_is_never_forwarded_again) {
  auto a = std::make_shared<fake_backend>();
  auto b = std::make_shared<fake_backend>();
  auto svc_a = admin_service::start({}, a);
  auto svc_b = admin_service::start({}, b);
  BOOST_REQUIRE(svc_a);
  BOOST_REQUIRE(svc_b);
  a->elsewhere[0xef] = {url_of(**svc_b)}; // each names the other: a loop if forwarded twice
  b->elsewhere[0xef] = {url_of(**svc_a)};
  auto r = call((*svc_a)->port(), "POST", "/admin/workers/ef/drain");
  BOOST_TEST(r.status == 404u);
  BOOST_TEST(error_code(r) == "not_found");
  BOOST_TEST(a->calls().size() == 1u);
  BOOST_TEST(b->calls().size() == 1u);
}

BOOST_AUTO_TEST_CASE(unknown_and_unpublished_hosts_are_404) {
  fixture f;
  auto svc = f.start();
  f.backend->elsewhere[0xee] = {""};
  BOOST_TEST(call(svc->port(), "POST", "/admin/workers/ef/drain").status == 404u);
  auto r = call(svc->port(), "POST", "/admin/workers/ee/drain");
  BOOST_TEST(r.status == 404u);
  BOOST_TEST(r.body.find("publishes no admin URL") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unreachable_host_is_502_and_a_silent_one_504) {
  fixture f;
  admin_options o;
  o.forward_timeout = std::chrono::milliseconds(200);
  auto svc = f.start(o);
  silent_listener silent;
  f.backend->elsewhere[0xe1] = {"http://127.0.0.1:" + std::to_string(silent.port)};
  {
    silent_listener closed; // bound, then closed: nothing listens on its port
    f.backend->elsewhere[0xe2] = {"http://127.0.0.1:" + std::to_string(closed.port)};
  }
  auto t0 = std::chrono::steady_clock::now();
  auto hung = call(svc->port(), "POST", "/admin/workers/e1/drain");
  auto waited = std::chrono::steady_clock::now() - t0;
  BOOST_TEST(hung.status == 504u);
  BOOST_TEST(error_code(hung) == "gateway_timeout");
  BOOST_TEST(parse(hung)["error"]["message"].get<std::string>().find("did not answer in 200 ms") !=
             std::string::npos);
  // The configured timeout, not the 5 s default: about 200 ms.
  BOOST_TEST((waited >= std::chrono::milliseconds(190)));
  BOOST_TEST((waited < std::chrono::milliseconds(1500)));
  auto gone = call(svc->port(), "POST", "/admin/workers/e2/drain");
  BOOST_TEST(gone.status == 502u);
  BOOST_TEST(error_code(gone) == "bad_gateway");
  BOOST_TEST(call(svc->port(), "GET", "/admin/health").status == 200u); // still serving
}

BOOST_AUTO_TEST_CASE(a_forward_to_a_silent_host_holds_up_no_other_request) {
  pending_forward p{std::chrono::milliseconds(3000)};
  // Every other request, backend calls included, is answered meanwhile.
  const uint16_t port = p.svc->port();
  BOOST_TEST(call(port, "GET", "/admin/health").status == 200u);
  BOOST_TEST(call(port, "GET", "/admin/actors").status == 200u);
  BOOST_TEST(call(port, "POST", "/admin/workers/ab/drain").status == 200u);
  BOOST_TEST((p.since_sent() < std::chrono::milliseconds(2000)));
  BOOST_TEST(p.client->read_header().status == 504u);
  BOOST_TEST((p.since_sent() >= std::chrono::milliseconds(2900)));
}

namespace {

std::string tls_file(const std::string& name) { // the certificates of tests/planes/http/tls
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is set by CTest");
  return (std::filesystem::path{src} / "tests" / "planes" / "http" / "tls" / name).string();
}

/// An admin API over HTTPS (the test server certificate, for 127.0.0.1) whose
/// forwards trust `ca`.
admin_options tls_options(const std::string& ca) {
  admin_options o;
  o.token = "s3cret";
  o.tls = {tls_file(ca), tls_file("server.crt"), tls_file("server.key"), ""};
  return o;
}

/// POST over HTTPS, trusting the test CA, with the token.
expected<dynamo::http::client_response> try_https_post(uint16_t port, const std::string& target) {
  dynamo::http::http_client c{"127.0.0.1", port, 1, dynamo::http::client_tls{tls_file("ca.crt")}};
  dynamo::http::client_request req;
  req.target = target;
  req.headers.emplace_back("Authorization", "Bearer s3cret");
  return c.request(std::move(req), std::chrono::seconds(10));
}

/// A service over `backend` that must start.
std::unique_ptr<admin_service> started(admin_options o, std::shared_ptr<fake_backend> backend) {
  auto svc = admin_service::start(std::move(o), std::move(backend));
  BOOST_REQUIRE_MESSAGE(svc, "admin service failed: " << (svc ? "" : describe(svc.error())));
  return std::move(*svc);
}

dynamo::http::client_response https_post(uint16_t port, const std::string& target) {
  auto r = try_https_post(port, target);
  BOOST_REQUIRE_MESSAGE(r, "https request failed: " << (r ? "" : message_of(r.error())));
  return *r;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_drain_for_an_https_host_is_forwarded_over_tls) {
  auto host = std::make_shared<fake_backend>();
  host->hosted = {0xef};
  auto host_svc = started(tls_options("ca.crt"), host);
  BOOST_TEST(host_svc->scheme() == "https");
  const std::string host_url = "https://127.0.0.1:" + std::to_string(host_svc->port());
  auto here = std::make_shared<fake_backend>();
  here->elsewhere[0xef] = {host_url};
  auto svc = started(tls_options("ca.crt"), here);
  auto d = https_post(svc->port(), "/admin/workers/ef/drain");
  BOOST_TEST(d.status == 200u);
  BOOST_TEST(d.body == R"({"instance_id":"00000000000000ef","draining":true})");
  BOOST_TEST(host->calls() == (std::vector<std::string>{"drain 00000000000000ef"}));

  // A forwarder trusting another CA refuses the host's certificate: 502, the host untouched.
  auto wary = std::make_shared<fake_backend>();
  wary->elsewhere[0xef] = {host_url};
  auto wary_svc = started(tls_options("other-ca.crt"), wary);
  auto refused = https_post(wary_svc->port(), "/admin/workers/ef/undrain");
  BOOST_TEST(refused.status == 502u);
  BOOST_TEST(refused.body.find("is unreachable") != std::string::npos, refused.body);
  // And a plaintext forward to the TLS port is cut at the handshake: 502 too.
  wary->elsewhere[0xef] = {"http://127.0.0.1:" + std::to_string(host_svc->port())};
  BOOST_TEST(https_post(wary_svc->port(), "/admin/workers/ef/undrain").status == 502u);
  BOOST_TEST(host->calls().size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_mutual_tls_host_admits_the_forward_that_presents_the_cluster_certificate) {
  auto host = std::make_shared<fake_backend>();
  host->hosted = {0xef};
  auto o = tls_options("ca.crt");
  o.tls.client_ca_file = tls_file("ca.crt");
  auto host_svc = started(o, host);
  BOOST_TEST(!try_https_post(host_svc->port(), "/admin/workers/ef/drain")); // no client certificate
  auto here = std::make_shared<fake_backend>();
  here->elsewhere[0xef] = {"https://127.0.0.1:" + std::to_string(host_svc->port())};
  auto svc = started(tls_options("ca.crt"), here); // presents server.crt on the forward
  BOOST_TEST(https_post(svc->port(), "/admin/workers/ef/drain").status == 200u);
  BOOST_TEST(host->calls() == (std::vector<std::string>{"drain 00000000000000ef"}));
}

BOOST_AUTO_TEST_CASE(stop_answers_a_pending_forward_at_once) {
  pending_forward p{std::chrono::seconds(30)};
  std::this_thread::sleep_for(std::chrono::milliseconds(50)); // connected and waiting
  p.svc->stop();
  BOOST_TEST((p.since_sent() < std::chrono::seconds(5)));
  auto status = p.client->read_header().status;
  BOOST_TEST((status == 503u || status == 0u), "status " << status);
}

BOOST_AUTO_TEST_SUITE_END()
