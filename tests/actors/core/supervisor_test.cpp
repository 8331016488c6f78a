#include "actors/core/supervisor.hpp"
#include "actors/core/system.hpp"

#include <caf/all.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <stdexcept>

using namespace dynamo::actors;
using namespace std::chrono_literals;

namespace {

using ask_atom = caf::atom_constant<caf::atom("ask")>;

// A child that answers `ask` with its generation number and throws on `crash`.
caf::behavior counter_child(caf::event_based_actor* self, int generation) {
  return {
    [generation](ask_atom) { return generation; },
    [self](crash_atom) -> int { throw std::runtime_error("boom from child"); },
  };
}

supervisor_config fast_config() {
  supervisor_config cfg;
  cfg.name = "test-sup";
  cfg.initial_backoff = 1ms;
  cfg.max_backoff = 5ms;
  cfg.max_restarts = 3;
  return cfg;
}

int ask(caf::scoped_actor& self, const caf::actor& sup, const std::string& name) {
  int out = -1;
  for (int attempt = 0; attempt < 200 && out < 0; ++attempt) {
    caf::actor child;
    self->request(sup, 1s, lookup_atom::value, name).receive(
      [&](const caf::actor& a) { child = a; }, [&](caf::error&) {});
    if (child)
      self->request(child, 1s, ask_atom::value).receive([&](int g) { out = g; },
                                                         [&](caf::error&) {});
    if (out < 0)
      std::this_thread::sleep_for(2ms);
  }
  return out;
}

std::vector<child_status> list(caf::scoped_actor& self, const caf::actor& sup) {
  std::vector<child_status> out;
  self->request(sup, 1s, list_atom::value).receive([&](std::vector<child_status>& v) { out = v; },
                                                   [&](caf::error&) {});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(supervisor)

BOOST_AUTO_TEST_CASE(restarts_a_crashed_child_and_counts_it) {
  auto rt = make_actor_system(2);
  std::atomic<int> generation{0};
  std::atomic<int> spawns{0};
  child_spec spec;
  spec.name = "worker";
  spec.spawn = [&](caf::actor_system& sys) { return sys.spawn(counter_child, ++generation); };
  spec.on_spawn = [&](const caf::actor&) { ++spawns; };
  auto sup = spawn_supervisor(*rt.system, fast_config(), {spec});
  caf::scoped_actor self{*rt.system};
  BOOST_TEST(ask(self, sup, "worker") == 1);
  caf::actor child;
  self->request(sup, 1s, lookup_atom::value, std::string{"worker"}).receive(
    [&](const caf::actor& a) { child = a; }, [&](caf::error&) {});
  self->send(child, crash_atom::value);
  // The replacement answers with the next generation.
  int g = -1;
  for (int i = 0; i < 200 && g != 2; ++i)
    g = ask(self, sup, "worker");
  BOOST_TEST(g == 2);
  BOOST_TEST(spawns.load() == 2);
  auto rows = list(self, sup);
  BOOST_REQUIRE_EQUAL(rows.size(), 1u);
  BOOST_TEST(rows[0].restarts == 1u);
  BOOST_TEST(rows[0].state == "running");
  BOOST_TEST(rows[0].last_reason.find("runtime_error") != std::string::npos);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(gives_up_after_the_restart_budget) {
  auto rt = make_actor_system(2);
  child_spec spec;
  spec.name = "flaky";
  spec.spawn = [](caf::actor_system& sys) {
    return sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
      self->quit(caf::make_error(caf::sec::runtime_error, "dies at start"));
      return {};
    });
  };
  auto sup = spawn_supervisor(*rt.system, fast_config(), {spec});
  caf::scoped_actor self{*rt.system};
  std::vector<child_status> rows;
  for (int i = 0; i < 500; ++i) {
    rows = list(self, sup);
    if (!rows.empty() && rows[0].state == "failed")
      break;
    std::this_thread::sleep_for(2ms);
  }
  BOOST_REQUIRE_EQUAL(rows.size(), 1u);
  BOOST_TEST(rows[0].state == "failed");
  BOOST_TEST(rows[0].restarts == 3u);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_CASE(restart_on_request_replaces_a_healthy_child) {
  auto rt = make_actor_system(2);
  std::atomic<int> generation{0};
  child_spec spec;
  spec.name = "w";
  spec.spawn = [&](caf::actor_system& sys) { return sys.spawn(counter_child, ++generation); };
  auto sup = spawn_supervisor(*rt.system, fast_config(), {spec});
  caf::scoped_actor self{*rt.system};
  BOOST_TEST(ask(self, sup, "w") == 1);
  bool ok = false;
  self->request(sup, 1s, restart_atom::value, std::string{"w"}).receive([&](bool b) { ok = b; },
                                                                        [&](caf::error&) {});
  BOOST_TEST(ok);
  int g = -1;
  for (int i = 0; i < 200 && g != 2; ++i)
    g = ask(self, sup, "w");
  BOOST_TEST(g == 2);
  bool unknown = true;
  self->request(sup, 1s, restart_atom::value, std::string{"nope"}).receive(
    [&](bool b) { unknown = b; }, [&](caf::error&) {});
  BOOST_TEST(!unknown);
  self->send_exit(sup, caf::exit_reason::user_shutdown);
}

BOOST_AUTO_TEST_SUITE_END()
