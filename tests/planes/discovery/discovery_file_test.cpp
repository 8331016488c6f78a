// File-backend-only discovery behaviour: a killed process, the on-disk layout,
// the root directory default, and files that are not records.
#include "planes/discovery/file_store.hpp"
#include "planes/discovery/record_codec.hpp"

#include "discovery_backends.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>
#include <thread>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_SUITE(discovery_file)

BOOST_AUTO_TEST_CASE(a_killed_process_disappears_from_watchers) {
  temp_dir dir;
  auto plane = make_file_discovery(dir.path(), fast_options());
  BOOST_REQUIRE(plane);
  watch_recorder rec;
  auto w = (*plane)->watch("dyn/worker", rec.callback());
  BOOST_REQUIRE(w);
  // The peer uses the production defaults: TTL 1000 ms, keep-alive 250 ms.
  auto peer = spawn_planes_peer({"register", dir.path(), "dyn/worker/generate", "1000", "250"});
  BOOST_REQUIRE(peer);
  auto line = peer->read_line();
  BOOST_REQUIRE(line && line->starts_with("REGISTERED "));
  auto key = "dyn/worker/generate/" + line->substr(11);
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_TEST(rec.lines().at(0) == "added " + key + " ready");
  auto killed_at = std::chrono::steady_clock::now();
  peer->kill_hard();
  BOOST_REQUIRE(rec.wait_size(2));
  auto noticed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - killed_at)
                        .count();
  BOOST_TEST_MESSAGE("killed instance left the watch after " << noticed_ms << " ms");
  BOOST_TEST(rec.lines().at(1) == "removed " + key + " ready");
}

BOOST_AUTO_TEST_CASE(an_unreadable_live_record_keeps_its_last_view_until_its_lease_ends) {
  temp_dir dir;
  auto plane = make_file_discovery(dir.path(), fast_options());
  BOOST_REQUIRE(plane);
  watch_recorder rec;
  auto w = (*plane)->watch("dyn/worker", rec.callback());
  BOOST_REQUIRE(w);
  auto peer = spawn_planes_peer({"register", dir.path(), "dyn/worker/generate", "1000", "250"});
  BOOST_REQUIRE(peer);
  auto line = peer->read_line();
  BOOST_REQUIRE(line && line->starts_with("REGISTERED "));
  const std::string key = "dyn/worker/generate/" + line->substr(11);
  BOOST_REQUIRE(rec.wait_size(1));
  const auto file = fs::path{dir.path()} / key;
  auto corrupt = [&] { std::ofstream{file, std::ios::binary | std::ios::trunc} << "not a record"; };
  // Torn while its owner keeps rewriting it (every 250 ms): no news, no flapping.
  for (int i = 0; i < 40; ++i) {
    corrupt();
    std::this_thread::sleep_for(std::chrono::milliseconds(15));
  }
  BOOST_TEST(rec.lines().size() == 1u, "the worker left and rejoined while its record was unreadable");
  // Its owner dies with the record unreadable: it goes when the last good lease ends.
  peer->kill_hard();
  corrupt();
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST(rec.lines().at(1) == "removed " + key + " ready");
}

BOOST_AUTO_TEST_CASE(records_live_at_the_documented_path_with_no_temp_files_left) {
  temp_dir dir;
  auto plane = make_file_discovery(dir.path(), fast_options());
  BOOST_REQUIRE(plane);
  auto reg = (*plane)->register_instance(make_record("dyn/backend/generate", 0xbeef));
  BOOST_REQUIRE(reg);
  BOOST_REQUIRE((*reg)->set_health(health_state::unhealthy));
  auto ep_dir = fs::path{dir.path()} / "dyn" / "backend" / "generate";
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator{ep_dir})
    names.push_back(e.path().filename().string());
  BOOST_TEST(names == std::vector<std::string>{"000000000000beef"});
}

BOOST_AUTO_TEST_CASE(temp_files_odd_directories_and_huge_files_are_not_records) {
  temp_dir dir;
  auto plane = make_file_discovery(dir.path(), fast_options());
  BOOST_REQUIRE(plane);
  auto reg = (*plane)->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  auto write = [&](const std::string& rel, size_t n) {
    auto p = fs::path{dir.path()} / rel;
    fs::create_directories(p.parent_path());
    std::ofstream{p, std::ios::binary} << std::string(n, 'x');
  };
  write("dyn/backend/generate/.0000000000000002.tmp.1.1", 10); // in-flight write: ignored
  write("dyn/Not A Name/generate/0000000000000003", 10);       // not a component: ignored
  write("dyn/backend/generate/0000000000000004", discovery_codec::max_record_bytes + 1); // too large
  auto listed = (*plane)->list("dyn");
  BOOST_REQUIRE(listed);
  BOOST_TEST(listed->size() == 1u);
  BOOST_TEST((*plane)->corrupt_count() == 1u);
}

BOOST_AUTO_TEST_CASE(the_root_defaults_to_the_environment_then_tmp) {
  ::unsetenv("DYNAMO_DISCOVERY_DIR");
  BOOST_TEST(default_discovery_root() == "/tmp/dynamo_discovery");
  ::setenv("DYNAMO_DISCOVERY_DIR", "/tmp/elsewhere", 1);
  BOOST_TEST(default_discovery_root() == "/tmp/elsewhere");
  ::unsetenv("DYNAMO_DISCOVERY_DIR");
}

BOOST_AUTO_TEST_SUITE_END()
