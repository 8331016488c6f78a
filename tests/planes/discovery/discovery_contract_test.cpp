// The discovery plane's contract, run against the file backend and the fake.
#include "planes/discovery/record_codec.hpp"

#include "discovery_backends.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_SUITE(discovery_plane_contract)

BOOST_AUTO_TEST_CASE_TEMPLATE(a_registered_record_is_listed_under_each_prefix, B,
                              discovery_backends) {
  B b;
  auto plane = b.plane();
  auto reg = plane->register_instance(make_record("dyn/backend/generate"));
  BOOST_REQUIRE(reg);
  auto rec = (*reg)->record();
  BOOST_TEST(rec.instance != 0u); // assigned
  BOOST_TEST(rec.lease_ttl_ms == 1000);
  auto reader = b.plane(); // another "process" on the same store
  for (auto prefix : {"", "dyn", "dyn/backend", "dyn/backend/generate"}) {
    auto listed = reader->list(prefix);
    BOOST_REQUIRE(listed);
    BOOST_REQUIRE_EQUAL(listed->size(), 1u);
    BOOST_TEST(listed->at(0).same_content(rec));
  }
  BOOST_TEST(reader->list(rec.key())->size() == 1u);
  BOOST_TEST(reader->list("dy")->empty()); // whole segments only
  BOOST_TEST(reader->list("dyn/frontend")->empty());
  auto got = reader->list("dyn")->at(0);
  BOOST_TEST(got.request_address == "tcp://127.0.0.1:5555");
  BOOST_TEST(got.event_address == "tcp://127.0.0.1:5556");
  BOOST_TEST(got.payload == (bytes{0x81, 0xa1, 'x', 0x01}));
  BOOST_TEST(to_string(got.health) == "ready");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(bad_names_prefixes_and_options_are_refused, B, discovery_backends) {
  B b;
  auto plane = b.plane();
  auto bad = make_record("dyn/backend/generate");
  bad.endpoint.component_name = "Back End";
  BOOST_TEST(code_of(plane->register_instance(bad).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(plane->list("dyn/").error()) == errc::invalid_argument);
  BOOST_TEST(code_of(plane->watch("DYN", [](auto&) {}).error()) == errc::invalid_argument);
  auto opts = fast_options();
  opts.keep_alive_interval = opts.lease_ttl;
  if constexpr (std::is_same_v<B, file_backend>)
    BOOST_TEST(code_of(make_file_discovery(b.dir.path(), opts).error()) == errc::config_error);
  else
    BOOST_TEST(code_of(make_inproc_discovery(b.store, opts).error()) == errc::config_error);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(watch_reports_added_updated_and_removed, B, discovery_backends) {
  B b;
  auto owner = b.plane();
  auto watcher = b.plane();
  watch_recorder rec;
  auto w = watcher->watch("dyn/backend", rec.callback());
  BOOST_REQUIRE(w);
  auto reg = owner->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_REQUIRE((*reg)->set_health(health_state::draining));
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_REQUIRE((*reg)->set_metadata({{"model", "other"}}));
  BOOST_REQUIRE(rec.wait_size(3));
  BOOST_REQUIRE((*reg)->deregister());
  BOOST_REQUIRE(rec.wait_size(4));
  const std::string key = "dyn/backend/generate/0000000000000001";
  BOOST_TEST(rec.lines() == (std::vector<std::string>{"added " + key + " ready",
                                                      "updated " + key + " draining",
                                                      "updated " + key + " draining",
                                                      "removed " + key + " draining"}),
             boost::test_tools::per_element());
  BOOST_TEST(rec.events().at(2).record.metadata.at("model") == "other");
  BOOST_REQUIRE((*reg)->deregister()); // idempotent
  BOOST_TEST(code_of((*reg)->set_health(health_state::ready).error()) == errc::closed);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_new_watch_first_reports_what_exists, B, discovery_backends) {
  B b;
  auto plane = b.plane();
  auto r1 = plane->register_instance(make_record("dyn/backend/generate", 0x2));
  auto r2 = plane->register_instance(make_record("dyn/backend/generate", 0x1));
  auto r3 = plane->register_instance(make_record("dyn/frontend/http", 0x3));
  BOOST_REQUIRE(r1 && r2 && r3);
  watch_recorder rec;
  auto w = plane->watch("dyn/backend", rec.callback());
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST(rec.lines() ==
             (std::vector<std::string>{"added dyn/backend/generate/0000000000000001 ready",
                                       "added dyn/backend/generate/0000000000000002 ready"}));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(destroying_a_registration_removes_the_record, B,
                              discovery_backends) {
  B b;
  auto plane = b.plane();
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x5));
  BOOST_REQUIRE(reg);
  BOOST_TEST(b.exists("dyn/backend/generate/0000000000000005"));
  reg->reset();
  BOOST_TEST(!b.exists("dyn/backend/generate/0000000000000005"));
  BOOST_TEST(plane->list("dyn")->empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(an_unrenewed_lease_expires_and_is_collected_later, B,
                              discovery_backends) {
  B b;
  manual_clock clock;
  auto owner = b.plane(fast_options(clock.fn()));
  auto watcher = b.plane(fast_options(clock.fn()));
  watch_recorder rec;
  auto w = watcher->watch("dyn", rec.callback());
  auto reg = owner->register_instance(make_record("dyn/backend/generate", 0x7));
  BOOST_REQUIRE(reg);
  BOOST_REQUIRE(rec.wait_size(1));
  (*reg)->stop_keep_alive(); // as if the process hung or died
  clock.advance(1000ms);
  BOOST_TEST(watcher->list("dyn")->size() == 1u); // exactly at the TTL: still alive
  clock.advance(1ms);
  BOOST_TEST(watcher->list("dyn")->empty());
  BOOST_REQUIRE(rec.wait_size(2));
  BOOST_TEST(rec.lines().back() == "removed dyn/backend/generate/0000000000000007 ready");
  BOOST_TEST(b.exists("dyn/backend/generate/0000000000000007")); // ignored, not yet deleted
  clock.advance(5000ms);
  BOOST_TEST(watcher->list("dyn")->empty());
  BOOST_TEST(!b.exists("dyn/backend/generate/0000000000000007")); // garbage-collected
  // The key is free again.
  auto again = owner->register_instance(make_record("dyn/backend/generate", 0x7));
  BOOST_REQUIRE(again);
  BOOST_REQUIRE(rec.wait_size(3));
  BOOST_TEST(rec.lines().back() == "added dyn/backend/generate/0000000000000007 ready");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(keep_alive_renews_the_lease_as_time_passes, B, discovery_backends) {
  B b;
  manual_clock clock;
  auto plane = b.plane(fast_options(clock.fn()));
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x8));
  BOOST_REQUIRE(reg);
  auto start = clock.now();
  for (int step = 1; step <= 5; ++step) {
    clock.advance(500ms); // half a TTL per step: always renewed in time
    auto due = start + step * 500;
    BOOST_REQUIRE(wait_until([&] {
      auto listed = plane->list("dyn");
      return listed && listed->size() == 1 && listed->at(0).renewed_at_ms == due;
    }));
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_live_key_cannot_be_registered_twice, B, discovery_backends) {
  B b;
  auto plane = b.plane();
  auto first = plane->register_instance(make_record("dyn/backend/generate", 0x9));
  BOOST_REQUIRE(first);
  auto second = b.plane()->register_instance(make_record("dyn/backend/generate", 0x9));
  BOOST_TEST(code_of(second.error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(corrupt_records_are_skipped_and_counted_once, B,
                              discovery_backends) {
  B b;
  auto plane = b.plane();
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x1));
  BOOST_REQUIRE(reg);
  auto other = (*reg)->record();
  other.instance = 0xcc;
  auto encoded = discovery_codec::encode(other);
  b.store_raw("dyn/backend/generate/00000000000000aa", bytes{0xc1, 0x00, 0xff});  // garbage
  b.store_raw("dyn/backend/generate/00000000000000bb",                            // half written
              bytes(encoded.begin(), encoded.begin() + encoded.size() / 2));
  b.store_raw("dyn/backend/generate/00000000000000dd", encoded); // says cc, stored as dd
  auto listed = plane->list("dyn");
  BOOST_REQUIRE(listed);
  BOOST_REQUIRE_EQUAL(listed->size(), 1u);
  BOOST_TEST(listed->at(0).instance == 1u);
  BOOST_TEST(plane->corrupt_count() == 3u);
  BOOST_TEST(plane->list("dyn")->size() == 1u);
  BOOST_TEST(plane->corrupt_count() == 3u); // the same bad versions are counted once
  b.store_raw("dyn/backend/generate/00000000000000aa", bytes{0xc1, 0x01});
  BOOST_TEST(plane->list("dyn")->size() == 1u);
  BOOST_TEST(plane->corrupt_count() == 4u); // a new bad version counts again
  watch_recorder rec;
  auto w = plane->watch("dyn", rec.callback());
  BOOST_REQUIRE(rec.wait_size(1));
  BOOST_TEST(rec.lines().at(0) == "added dyn/backend/generate/0000000000000001 ready");
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_destroyed_watch_gets_no_more_callbacks, B, discovery_backends) {
  B b;
  auto plane = b.plane();
  watch_recorder gone, kept;
  auto w1 = plane->watch("dyn", gone.callback());
  auto w2 = plane->watch("dyn", kept.callback());
  BOOST_REQUIRE(w1 && w2);
  w1->reset();
  auto reg = plane->register_instance(make_record("dyn/backend/generate", 0x4));
  BOOST_REQUIRE(kept.wait_size(1)); // one thread polls both: w1 would have seen it by now
  BOOST_TEST(gone.size() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
