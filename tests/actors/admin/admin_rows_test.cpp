#include "actors/admin/admin_rows.hpp"
#include "actors/admin/admin_service.hpp"
#include "actors/core/supervisor.hpp"
#include "actors/core/system.hpp"
#include "planes/discovery/inproc_discovery.hpp"

#include "tests/actors/admin/admin_test_util.hpp"
#include "tests/support/http_client.hpp"

#include <caf/all.hpp>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <thread>

using namespace dynamo;
using namespace dynamo::admin;
using namespace dynamo::actors;
using namespace std::chrono_literals;

namespace {

/// A child that throws (and so dies abnormally) on crash_atom.
caf::behavior crashable_child(caf::event_based_actor*) {
  return {
    [](crash_atom) -> int { throw std::runtime_error("boom from child"); },
  };
}

/// Takes list/restart requests and never answers them.
caf::behavior silent_supervisor(caf::event_based_actor* self) {
  return {
    [self](list_atom) { return self->make_response_promise<std::vector<child_status>>(); },
    [self](restart_atom, const std::string&) { return self->make_response_promise<bool>(); },
  };
}

/// Answers list with the wrong type.
caf::behavior confused_supervisor(caf::event_based_actor*) {
  return {
    [](list_atom) { return 42; },
  };
}

supervisor_config fast_config(std::string name) {
  supervisor_config cfg;
  cfg.name = std::move(name);
  cfg.initial_backoff = 1ms;
  cfg.max_backoff = 5ms;
  return cfg;
}

child_spec crashable(std::string name) {
  child_spec spec;
  spec.name = std::move(name);
  spec.spawn = [](caf::actor_system& sys) { return sys.spawn(crashable_child); };
  return spec;
}

/// A real supervisor with children "a" and "b".
caf::actor two_child_supervisor(caf::actor_system& sys) {
  return spawn_supervisor(sys, fast_config("workers"), {crashable("a"), crashable("b")});
}

caf::actor child_of(caf::actor_system& sys, const caf::actor& sup, const std::string& name) {
  caf::scoped_actor self{sys};
  caf::actor out;
  self->request(sup, 1s, lookup_atom::value, name).receive([&](caf::actor& a) { out = a; },
                                                           [&](caf::error&) {});
  return out;
}

/// Polls the rows until `pred` holds (5 s at most, so nothing hangs).
template <class Pred>
std::vector<actor_row> rows_when(caf::actor_system& sys, const supervisor_list& sups, Pred pred) {
  std::vector<actor_row> rows;
  for (int i = 0; i < 1000; ++i) {
    rows = collect_actor_rows(sys, sups);
    if (pred(rows))
      break;
    std::this_thread::sleep_for(5ms);
  }
  return rows;
}

const actor_row* find(const std::vector<actor_row>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name)
      return &r;
  return nullptr;
}

bool restarted_once_and_running(const std::vector<actor_row>& rows, const std::string& name) {
  const auto* r = find(rows, name);
  return r && r->restarts == 1 && r->state == "running";
}

} // namespace

BOOST_AUTO_TEST_SUITE(admin_rows)

BOOST_AUTO_TEST_CASE(rows_of_a_real_supervisor_count_a_crash) {
  auto rt = make_actor_system(2);
  auto sup = two_child_supervisor(*rt.system);
  supervisor_list sups{{"workers", sup}};
  auto rows = collect_actor_rows(*rt.system, sups);
  BOOST_REQUIRE_EQUAL(rows.size(), 2u);
  BOOST_TEST(rows[0].supervisor == "workers");
  BOOST_TEST(rows[0].name == "a");
  BOOST_TEST(rows[1].name == "b");
  for (const auto& r : rows) {
    BOOST_TEST(r.state == "running");
    BOOST_TEST(r.restarts == 0u);
    BOOST_TEST(r.last_reason == "");
  }
  auto b = child_of(*rt.system, sup, "b");
  BOOST_REQUIRE(b);
  caf::anon_send(b, crash_atom::value);
  rows = rows_when(*rt.system, sups, [](auto& r) { return restarted_once_and_running(r, "b"); });
  BOOST_REQUIRE_EQUAL(rows.size(), 2u);
  BOOST_TEST(rows[1].restarts == 1u);
  BOOST_TEST(rows[1].state == "running");
  BOOST_TEST(rows[1].last_reason.find("runtime_error") != std::string::npos, rows[1].last_reason);
  BOOST_TEST(rows[0].restarts == 0u); // the sibling was left alone
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(silent_dead_confused_and_null_supervisors_are_unreachable_rows) {
  auto rt = make_actor_system(2);
  auto real = two_child_supervisor(*rt.system);
  auto silent = rt.system->spawn(silent_supervisor);
  auto confused = rt.system->spawn(confused_supervisor);
  auto dead = rt.system->spawn(silent_supervisor);
  {
    caf::scoped_actor self{*rt.system};
    self->send_exit(dead, caf::exit_reason::user_shutdown);
    self->wait_for(dead);
  }
  supervisor_list sups{{"silent", silent},
                       {"workers", real},
                       {"dead", dead},
                       {"confused", confused},
                       {"null", caf::actor{}}};
  auto rows = collect_actor_rows(*rt.system, sups, 50ms);
  BOOST_REQUIRE_EQUAL(rows.size(), 6u);
  BOOST_TEST(rows[0].supervisor == "silent");
  BOOST_TEST(rows[0].state == "unreachable");
  BOOST_TEST(rows[0].name == "");
  BOOST_TEST(rows[0].last_reason.find("timeout") != std::string::npos, rows[0].last_reason);
  BOOST_TEST(rows[1].supervisor == "workers"); // the live one is still reported, in order
  BOOST_TEST(rows[1].name == "a");
  BOOST_TEST(rows[2].name == "b");
  BOOST_TEST(rows[3].supervisor == "dead");
  BOOST_TEST(rows[3].state == "unreachable");
  BOOST_TEST(rows[3].last_reason.find("request_receiver_down") != std::string::npos);
  BOOST_TEST(rows[4].supervisor == "confused");
  BOOST_TEST(rows[4].state == "unreachable");
  BOOST_TEST(rows[4].last_reason.find("unexpected_response") != std::string::npos);
  BOOST_TEST(rows[5].supervisor == "null");
  BOOST_TEST(rows[5].state == "unreachable");
  BOOST_TEST(rows[5].last_reason == "no supervisor handle");
  for (auto& a : {real, silent, confused})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(restart_actor_finds_the_child_by_name) {
  auto rt = make_actor_system(2);
  auto other = spawn_supervisor(*rt.system, fast_config("other"), {crashable("x")});
  auto sup = two_child_supervisor(*rt.system);
  supervisor_list sups{{"other", other}, {"workers", sup}};
  BOOST_REQUIRE(restart_actor(*rt.system, sups, "a"));
  auto rows = rows_when(*rt.system, sups, [](auto& r) { return restarted_once_and_running(r, "a"); });
  BOOST_TEST(restarted_once_and_running(rows, "a"));
  BOOST_TEST(find(rows, "x")->restarts == 0u);
  auto unknown = restart_actor(*rt.system, sups, "nope");
  BOOST_REQUIRE(!unknown);
  BOOST_TEST(code_of(unknown.error()) == errc::not_found);
  // When a supervisor that might have it does not answer, say so.
  auto silent = rt.system->spawn(silent_supervisor);
  supervisor_list with_silent{{"silent", silent}, {"workers", sup}};
  auto unsure = restart_actor(*rt.system, with_silent, "nope", 50ms);
  BOOST_REQUIRE(!unsure);
  BOOST_TEST(code_of(unsure.error()) == errc::timeout);
  BOOST_TEST(message_of(unsure.error()).find("silent") != std::string::npos);
  for (auto& a : {other, sup, silent})
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(instance_rows_mirror_the_discovery_plane) {
  auto store = planes::make_inproc_discovery_store();
  auto plane = planes::make_inproc_discovery(store);
  BOOST_REQUIRE(plane);
  auto record = [](std::string component, instance_id id) {
    planes::instance_record rec;
    rec.endpoint = {"dyn", std::move(component), "generate"};
    rec.instance = id;
    rec.request_address = "tcp://127.0.0.1:" + std::to_string(7000 + id);
    return rec;
  };
  auto w1 = (*plane)->register_instance(record("backend", 0xab));
  auto w2 = (*plane)->register_instance(record("prefill", 0xcd));
  BOOST_REQUIRE(w1);
  BOOST_REQUIRE(w2);
  BOOST_REQUIRE((*w1)->set_health(planes::health_state::draining));
  BOOST_REQUIRE((*w1)->set_metadata({{"model", "smol"}, {"admin", "http://10.0.0.5:8123"}}));
  auto rows = instance_rows(**plane, "");
  BOOST_REQUIRE(rows);
  BOOST_REQUIRE_EQUAL(rows->size(), 2u);
  const auto& a = rows->at(0);
  BOOST_TEST(a.key == "dyn/backend/generate/00000000000000ab");
  BOOST_TEST(a.instance_id == 0xabu);
  BOOST_TEST(a.address == "tcp://127.0.0.1:7171");
  BOOST_TEST(a.health == "draining");
  BOOST_TEST(a.metadata.at("model") == "smol");
  BOOST_TEST(a.admin_url == "http://10.0.0.5:8123");
  BOOST_TEST(rows->at(1).health == "ready");
  BOOST_TEST(rows->at(1).admin_url == "");
  auto host = [&](uint64_t id) { return find_instance_host(**plane, id).value(); };
  BOOST_TEST(host(0xab).value().admin_url == "http://10.0.0.5:8123");
  BOOST_TEST(host(0xab).value().non_worker == "");
  BOOST_TEST(host(0xcd).value().admin_url == "");
  BOOST_TEST(!host(0xef).has_value());
  auto frontend = record("frontend", 0x12);
  frontend.endpoint.endpoint_name = "process";
  frontend.request_address.clear();
  auto w3 = (*plane)->register_instance(frontend);
  BOOST_REQUIRE(w3);
  BOOST_TEST(host(0x12).value().non_worker == "frontend");
  BOOST_TEST(host(0xab).value().non_worker == "");
  auto only = instance_rows(**plane, "dyn/prefill");
  BOOST_REQUIRE(only);
  BOOST_REQUIRE_EQUAL(only->size(), 1u);
  BOOST_TEST(only->at(0).instance_id == 0xcdu);
  BOOST_TEST(code_of(instance_rows(**plane, "BAD PREFIX").error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

/// A backend wired the way a process would wire it: helpers over a real
/// supervisor and an in-memory discovery plane.
class hosted_backend final : public admin_backend {
public:
  hosted_backend(caf::actor_system& sys, supervisor_list sups, planes::discovery_plane& plane)
    : sys_(sys), sups_(std::move(sups)), plane_(plane) {}
  std::string process_kind() const override { return "worker"; }
  std::vector<actor_row> actors() override { return collect_actor_rows(sys_, sups_); }
  expected<std::vector<instance_row>> instances() override { return instance_rows(plane_); }
  expected<void> drain(uint64_t, bool) override {
    return make_error(errc::not_found, "no workers hosted here");
  }
  expected<std::optional<instance_host>> host_of(uint64_t id) override {
    return find_instance_host(plane_, id);
  }
  expected<void> restart(const std::string& name) override {
    return restart_actor(sys_, sups_, name);
  }

private:
  caf::actor_system& sys_;
  supervisor_list sups_;
  planes::discovery_plane& plane_;
};

} // namespace

BOOST_AUTO_TEST_SUITE(admin_end_to_end)

BOOST_AUTO_TEST_CASE(restart_over_http_shows_up_in_the_actor_list) {
  auto rt = make_actor_system(2);
  auto sup = two_child_supervisor(*rt.system);
  auto plane = planes::make_inproc_discovery(planes::make_inproc_discovery_store());
  BOOST_REQUIRE(plane);
  planes::instance_record rec;
  rec.endpoint = {"dyn", "backend", "generate"};
  rec.instance = 0x42;
  rec.request_address = "tcp://127.0.0.1:9";
  auto reg = (*plane)->register_instance(rec);
  BOOST_REQUIRE(reg);
  auto backend = std::make_shared<hosted_backend>(*rt.system, supervisor_list{{"workers", sup}},
                                                  **plane);
  auto svc = admin_service::start({}, backend);
  BOOST_REQUIRE(svc);
  const uint16_t port = (*svc)->port();
  auto get = [port](const std::string& method, const std::string& path) {
    dynamo::test::http_client c{port};
    return c.request(method, path);
  };
  auto restart = get("POST", "/admin/actors/b/restart");
  BOOST_TEST(restart.status == 200u);
  BOOST_TEST(restart.body == R"({"restarted":"b"})");
  BOOST_TEST(get("POST", "/admin/actors/zz/restart").status == 404u);
  nlohmann::json b;
  for (int i = 0; i < 1000; ++i) {
    auto j = nlohmann::json::parse(get("GET", "/admin/actors").body, nullptr, false);
    BOOST_REQUIRE(j.is_object());
    b = j["actors"][1];
    if (b["restarts"] == 1 && b["state"] == "running")
      break;
    std::this_thread::sleep_for(5ms);
  }
  BOOST_TEST(b["supervisor"] == "workers");
  BOOST_TEST(b["name"] == "b");
  BOOST_TEST(b["restarts"] == 1);
  BOOST_TEST(b["state"] == "running");
  auto inst = nlohmann::json::parse(get("GET", "/admin/instances").body, nullptr, false);
  BOOST_REQUIRE(inst.is_object());
  BOOST_REQUIRE_EQUAL(inst["instances"].size(), 1u);
  BOOST_TEST(inst["instances"][0]["instance_id"] == "0000000000000042");
  BOOST_TEST(inst["instances"][0]["address"] == "tcp://127.0.0.1:9");
  BOOST_TEST(get("POST", "/admin/workers/42/drain").status == 404u);
  (*svc)->stop();
  caf::anon_send_exit(sup, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
