// The etcd backend against a real etcd on loopback (skipped without the
// binary): the discovery contract, lease expiry after a stopped keep-alive and a
// SIGKILLed process (times printed, not asserted), etcd killed and restarted
// (the last view stays, registrations come back), corrupt records, and a fake
// etcd that streams malformed watch data.
#include "planes/discovery/etcd_client.hpp"
#include "planes/discovery/etcd_codec.hpp"
#include "planes/discovery/etcd_discovery.hpp"
#include "planes/discovery/record_codec.hpp"

#include "discovery_backends.hpp"
#include "etcd_server.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
using namespace std::chrono_literals;
namespace ec = dynamo::planes::etcd_codec;

namespace {

int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

struct etcd_fixture {
  std::optional<etcd_server> server = etcd_server::start();
  std::string prefix = "/dynamo-test";

  etcd_discovery_options options() const {
    etcd_discovery_options o;
    o.endpoints = {server->url()};
    o.key_prefix = prefix;
    o.base.lease_ttl = 1000ms;
    o.base.keep_alive_interval = 333ms; // TTL/3, as the apps use it
    o.request_timeout = 1000ms;
    o.max_backoff = 200ms;
    return o;
  }
  std::unique_ptr<discovery_plane> plane() {
    BOOST_REQUIRE_MESSAGE(server, "etcd did not start");
    auto p = make_etcd_discovery(options());
    BOOST_REQUIRE_MESSAGE(p, "etcd discovery failed");
    return std::move(*p);
  }
  // Writes raw bytes under a record key, as a broken or hostile writer would.
  void store_raw(const std::string& record_key, const bytes& data) {
    etcd_client c{{*parse_etcd_endpoint(server->url())}, 2000ms};
    BOOST_REQUIRE(c.call("/v3/kv/put", ec::put_body(ec::instance_key(prefix, record_key), data, 0)));
  }
};

} // namespace

BOOST_AUTO_TEST_SUITE(discovery_etcd, *boost::unit_test::precondition(etcd_installed))

BOOST_FIXTURE_TEST_CASE(a_registered_record_is_listed_under_each_prefix, etcd_fixture) {
  auto plane = this->plane();
  auto reg = plane->register_instance(make_record("dyn/backend/generate"));
  BOOST_REQUIRE(reg);
  auto rec = (*reg)->record();
  BOOST_TEST(rec.instance != 0u);
  BOOST_TEST(rec.lease_ttl_ms == 1000); // etcd granted the 1 s asked for
  auto reader = this->plane();
  for (auto prefix : {"", "dyn", "dyn/backend", "dyn/backend/generate"}) {
    auto listed = reader->list(prefix);
    BOOST_REQUIRE(listed);
    BOOST_REQUIRE_EQUAL(listed->size(), 1u);
    BOOST_TEST(listed->at(0).same_content(rec));
  }
  BOOST_TEST(reader->list(rec.key())->size() == 1u);
  BOOST_TEST(reader->list("dy")->empty());
  BOOST_TEST(reader->list("dyn/frontend")->empty());
  BOOST_TEST(reader->list("dyn/backend/generate/00000000000000ff")->empty());
  BOOST_TEST(code_of(reader->list("dyn/").error()) == errc::invalid_argument);
  auto got = reader->list("dyn")->at(0);
  BOOST_TEST(got.payload == (bytes{0x81, 0xa1, 'x', 0x01}));
  BOOST_TEST(got.metadata.at("model") == "smollm2");
}

BOOST_FIXTURE_TEST_CASE(bad_names_and_options_are_refused, etcd_fixture) {
  auto plane = this->plane();
  auto bad = make_record("dyn/backend/generate");
  bad.endpoint.component_name = "Back End";
  BOOST_TEST(code_of(plane->register_instance(bad).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(plane->watch("DYN", [](auto&) {}).error()) == errc::invalid_argument);
  auto o = options();
  o.base.keep_alive_interval = o.base.lease_ttl;
  BOOST_TEST(code_of(make_etcd_discovery(o).error()) == errc::config_error);
  o = options();
  o.endpoints = {};
  BOOST_TEST(code_of(make_etcd_discovery(o).error()) == errc::config_error);
  o.endpoints = {"ftp://127.0.0.1:2379"};
  BOOST_TEST(code_of(make_etcd_discovery(o).error()) == errc::config_error);
  o = options();
  o.key_prefix = "dynamo/";
  BOOST_TEST(code_of(make_etcd_discovery(o).error()) == errc::config_error);
}

BOOST_FIXTURE_TEST_CASE(watch_reports_added_updated_and_removed, etcd_fixture) {
  auto owner = this->plane();
  auto watcher = this->plane();
  watch_recorder rec;
  auto w = watcher->watch("dyn/backend", rec.callback());
  BOOST_REQUIRE(w);
  auto other = owner->register_instance(make_record("dyn/frontend/http", 0x9)); // outside the prefix
  BOOST_REQUIRE(other);
  auto started = std::chrono::steady_clock::now();
  auto reg = owner->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_TEST_MESSAGE("etcd: a registration reached another plane's watch " << ms_since(started)
                                                                            << " ms after register_instance began");
  BOOST_REQUIRE((*reg)->set_health(health_state::draining));
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_REQUIRE((*reg)->set_metadata({{"model", "other"}}));
  BOOST_REQUIRE(rec.wait_size(3));
  BOOST_REQUIRE((*reg)->deregister());
  BOOST_REQUIRE(rec.wait_size(4));
  const std::string key = "dyn/backend/generate/0000000000000001";
  BOOST_TEST(rec.lines() == (std::vector<std::string>{"added " + key + " ready", "updated " + key + " draining",
                                                      "updated " + key + " draining", "removed " + key + " draining"}),
             boost::test_tools::per_element());
  BOOST_TEST(rec.events().at(2).record.metadata.at("model") == "other");
  BOOST_REQUIRE((*reg)->deregister()); // idempotent
  BOOST_TEST(code_of((*reg)->set_health(health_state::ready).error()) == errc::closed);
}

BOOST_FIXTURE_TEST_CASE(a_new_watch_first_reports_what_exists, etcd_fixture) {
  auto plane = this->plane();
  auto r1 = plane->register_instance(make_record("dyn/backend/generate", 0x2));
  auto r2 = plane->register_instance(make_record("dyn/backend/generate", 0x1));
  auto r3 = plane->register_instance(make_record("dyn/frontend/http", 0x3));
  auto r4 = plane->register_instance(make_record("dyn2/backend/generate", 0x4)); // a longer namespace
  BOOST_REQUIRE(r1 && r2 && r3 && r4);
  watch_recorder rec;
  auto w = plane->watch("dyn/backend", rec.callback());
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST(rec.lines() == (std::vector<std::string>{"added dyn/backend/generate/0000000000000001 ready",
                                                      "added dyn/backend/generate/0000000000000002 ready"}));
  watch_recorder all;
  auto w2 = plane->watch("dyn", all.callback());
  BOOST_REQUIRE(all.wait_size(3));
  std::this_thread::sleep_for(100ms);
  BOOST_TEST(all.size() == 3u); // not dyn2
}

BOOST_FIXTURE_TEST_CASE(destroying_a_registration_removes_the_record_and_the_key_is_free, etcd_fixture) {
  auto plane = this->plane();
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x5));
  BOOST_REQUIRE(reg);
  auto second = this->plane()->register_instance(make_record("dyn/backend/generate", 0x5));
  BOOST_TEST(code_of(second.error()) == errc::invalid_argument); // live in another plane
  reg->reset();
  BOOST_TEST(plane->list("dyn")->empty());
  auto again = plane->register_instance(make_record("dyn/backend/generate", 0x5));
  BOOST_TEST(static_cast<bool>(again));
}

BOOST_FIXTURE_TEST_CASE(a_record_whose_keep_alive_stops_expires_one_ttl_later, etcd_fixture) {
  auto owner = this->plane();
  auto watcher = this->plane();
  watch_recorder rec;
  auto w = watcher->watch("dyn", rec.callback());
  auto kept = owner->register_instance(make_record("dyn/backend/generate", 0x6));
  auto reg = owner->register_instance(make_record("dyn/backend/generate", 0x7));
  BOOST_REQUIRE(kept && reg);
  BOOST_REQUIRE(rec.wait_size(2));
  auto stopped = std::chrono::steady_clock::now();
  (*reg)->stop_keep_alive(); // as if the process hung
  BOOST_REQUIRE(rec.wait_size(3));
  BOOST_TEST_MESSAGE("etcd: a record without keep-alive (TTL 1000 ms) left the watch after " << ms_since(stopped)
                                                                                              << " ms");
  BOOST_TEST(rec.lines().back() == "removed dyn/backend/generate/0000000000000007 ready");
  std::this_thread::sleep_for(1500ms); // the plane's other record is still renewed
  auto listed = watcher->list("dyn");
  BOOST_REQUIRE(listed);
  BOOST_REQUIRE_EQUAL(listed->size(), 1u);
  BOOST_TEST(listed->at(0).instance == 0x6u);
  BOOST_TEST(rec.size() == 3u);
}

BOOST_FIXTURE_TEST_CASE(a_killed_process_disappears_from_watchers, etcd_fixture) {
  auto plane = this->plane();
  watch_recorder rec;
  auto w = plane->watch("dyn/worker", rec.callback());
  BOOST_REQUIRE(w);
  auto spawned = std::chrono::steady_clock::now();
  auto peer = spawn_planes_peer({"register-etcd", server->url(), prefix, "dyn/worker/generate", "1000", "333"});
  BOOST_REQUIRE(peer);
  auto line = peer->read_line();
  BOOST_REQUIRE(line && line->starts_with("REGISTERED "));
  auto key = "dyn/worker/generate/" + line->substr(11);
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_TEST_MESSAGE("etcd: a new process joined the watch " << ms_since(spawned) << " ms after it was started");
  BOOST_TEST(rec.lines().at(0) == "added " + key + " ready");
  auto killed_at = std::chrono::steady_clock::now();
  peer->kill_hard();
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST_MESSAGE("etcd: a SIGKILLed process (TTL 1000 ms) left the watch after " << ms_since(killed_at) << " ms");
  BOOST_TEST(rec.lines().at(1) == "removed " + key + " ready");
}

BOOST_FIXTURE_TEST_CASE(while_etcd_is_down_the_view_stays_and_registrations_come_back, etcd_fixture) {
  auto owner = this->plane();
  auto watcher = this->plane();
  watch_recorder rec;
  auto w = watcher->watch("dyn", rec.callback());
  auto reg = owner->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  BOOST_REQUIRE(rec.wait_size(1));
  server->kill();
  std::this_thread::sleep_for(1500ms); // longer than the TTL: nothing is reported removed
  BOOST_TEST(rec.size() == 1u);
  BOOST_TEST(!watcher->list("dyn"));
  BOOST_TEST(!owner->register_instance(make_record("dyn/backend/generate", 0x2)));
  BOOST_TEST(!(*reg)->set_health(health_state::draining)); // kept, written when etcd returns
  auto restarted_at = std::chrono::steady_clock::now();
  BOOST_REQUIRE(server->restart());
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST_MESSAGE("etcd: the change made during the outage arrived " << ms_since(restarted_at)
                                                                        << " ms after etcd answered again");
  BOOST_TEST(rec.lines().at(1) == "updated dyn/backend/generate/0000000000000001 draining");
  auto r3 = owner->register_instance(make_record("dyn/backend/generate", 0x3));
  BOOST_REQUIRE(r3);
  BOOST_REQUIRE(rec.wait_size(3)); // the watch follows the new etcd process
  BOOST_TEST(rec.lines().at(2) == "added dyn/backend/generate/0000000000000003 ready");
  std::this_thread::sleep_for(1500ms); // the old lease survived the restart and is renewed
  BOOST_TEST(watcher->list("dyn")->size() == 2u);
}

BOOST_FIXTURE_TEST_CASE(registrations_are_written_again_when_etcd_lost_everything, etcd_fixture) {
  auto owner = this->plane();
  auto watcher = this->plane();
  watch_recorder rec;
  auto w = watcher->watch("dyn", rec.callback());
  auto reg = owner->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_REQUIRE(server->restart(/*wipe=*/true)); // a new, empty etcd: the lease is unknown
  BOOST_REQUIRE(wait_until([&] {
    auto listed = watcher->list("dyn");
    return listed && listed->size() == 1;
  }));
  BOOST_REQUIRE(wait_until([&] { return rec.lines().back().starts_with("added "); }));
  for (auto& l : rec.lines())
    BOOST_TEST_MESSAGE("watch: " << l);
  BOOST_TEST(rec.lines().back() == "added dyn/backend/generate/0000000000000001 ready");
  std::this_thread::sleep_for(1500ms); // the new lease is renewed
  BOOST_TEST(watcher->list("dyn")->size() == 1u);
}

BOOST_FIXTURE_TEST_CASE(corrupt_records_are_skipped_and_counted_once, etcd_fixture) {
  auto plane = this->plane();
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  auto other = (*reg)->record();
  other.instance = 0xcc;
  auto encoded = discovery_codec::encode(other);
  store_raw("dyn/backend/generate/00000000000000aa", bytes{0xc1, 0x00, 0xff});
  store_raw("dyn/backend/generate/00000000000000bb", bytes(encoded.begin(), encoded.begin() + encoded.size() / 2));
  store_raw("dyn/backend/generate/00000000000000dd", encoded); // says cc, stored as dd
  auto listed = plane->list("dyn");
  BOOST_REQUIRE(listed);
  BOOST_REQUIRE_EQUAL(listed->size(), 1u);
  BOOST_TEST(plane->corrupt_count() == 3u);
  BOOST_TEST(plane->list("dyn")->size() == 1u);
  BOOST_TEST(plane->corrupt_count() == 3u); // the same versions count once
  watch_recorder rec;
  auto w = plane->watch("dyn", rec.callback());
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_TEST(rec.lines().at(0) == "added dyn/backend/generate/0000000000000001 ready");
  store_raw("dyn/backend/generate/00000000000000aa", bytes{0xc1, 0x01}); // a new bad version
  store_raw((*reg)->record().key(), bytes{0xc1});                         // the live record overwritten
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST(rec.lines().at(1) == "removed dyn/backend/generate/0000000000000001 ready");
  BOOST_TEST(plane->corrupt_count() == 5u);
}

BOOST_FIXTURE_TEST_CASE(a_destroyed_watch_gets_no_more_callbacks, etcd_fixture) {
  auto plane = this->plane();
  watch_recorder gone, kept;
  auto w1 = plane->watch("dyn", gone.callback());
  auto w2 = plane->watch("dyn", kept.callback());
  BOOST_REQUIRE(w1 && w2);
  w1->reset();
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x4));
  BOOST_REQUIRE(kept.wait_size(1));
  std::this_thread::sleep_for(100ms);
  BOOST_TEST(gone.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
