// The event plane's contract, run against ZeroMQ on loopback and the fake.
#include "event_backends.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;

namespace {

/// A subscriber connected to `pub`, subscribed to `prefixes` and "probe", with
/// the subscription known to be in effect.
template <class B>
std::unique_ptr<event_subscriber> joined(B& b, event_publisher& pub, event_recorder& rec,
                                         std::vector<std::string> prefixes) {
  auto sub = b.subscriber(rec.callbacks());
  BOOST_REQUIRE(sub->connect(pub.address()));
  for (auto& p : prefixes)
    BOOST_REQUIRE(sub->subscribe(p));
  BOOST_REQUIRE(sub->subscribe("probe"));
  BOOST_REQUIRE(await_subscription(pub, rec));
  return sub;
}

std::string text(const bytes& b) {
  return std::string(b.begin(), b.end());
}

} // namespace

BOOST_AUTO_TEST_SUITE(event_plane_contract)

BOOST_AUTO_TEST_CASE_TEMPLATE(events_arrive_in_order_with_their_envelope, B, event_backends) {
  B b;
  auto pub = b.publisher(0xabcdef);
  BOOST_TEST(pub->publisher_id() == 0xabcdefu);
  event_recorder rec;
  auto sub = joined(b, *pub, rec, {"kv"});
  for (int i = 0; i < 200; ++i)
    BOOST_REQUIRE(pub->publish("kv-events", to_bytes("e" + std::to_string(i))));
  BOOST_REQUIRE(rec.wait_events("kv", 200));
  auto events = rec.events("kv");
  for (int i = 0; i < 200; ++i) {
    BOOST_TEST(events[i].sequence == uint64_t(i + 1));
    BOOST_TEST(text(events[i].payload) == "e" + std::to_string(i));
    BOOST_TEST(events[i].publisher_id == 0xabcdefu);
    BOOST_TEST(events[i].topic == "kv-events");
    BOOST_TEST(events[i].published_at_ms > 0);
  }
  BOOST_TEST(rec.gaps("kv").empty());
  BOOST_TEST(sub->stats().malformed == 0u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(subscribers_get_only_topics_matching_their_prefixes, B,
                              event_backends) {
  B b;
  auto pub = b.publisher();
  event_recorder rec;
  auto sub = joined(b, *pub, rec, {"kv"});
  for (auto topic : {"kv-events", "load", "kv_metrics", "other", "k", "kv-events"})
    BOOST_REQUIRE(pub->publish(topic, bytes{}));
  BOOST_REQUIRE(rec.wait_events("kv-events", 2)); // one publisher: one ordered stream
  std::vector<std::string> topics;
  for (auto& e : rec.events())
    if (e.topic != "probe")
      topics.push_back(e.topic);
  BOOST_TEST(topics == (std::vector<std::string>{"kv-events", "kv_metrics", "kv-events"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(unsubscribe_stops_a_prefix, B, event_backends) {
  B b;
  auto pub = b.publisher();
  event_recorder rec;
  auto sub = joined(b, *pub, rec, {"a", "b"});
  BOOST_REQUIRE(sub->unsubscribe("b"));
  BOOST_TEST(code_of(sub->unsubscribe("b").error()) == errc::not_found);
  // A SUB socket also filters what it receives, so this is in effect at once.
  BOOST_REQUIRE(pub->publish("b", bytes{}));
  BOOST_REQUIRE(pub->publish("a", bytes{}));
  BOOST_REQUIRE(rec.wait_events("a", 1));
  BOOST_TEST(rec.events("b").empty());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_skipped_sequence_is_reported_as_a_gap_before_the_event, B,
                              event_backends) {
  B b;
  auto pub = b.publisher();
  event_recorder rec;
  auto sub = joined(b, *pub, rec, {"kv"});
  BOOST_REQUIRE(pub->publish("kv-events", bytes{}));
  BOOST_REQUIRE(pub->publish("kv-events", bytes{}));
  pub->skip_sequences("kv-events", 2); // what a dropped message looks like downstream
  BOOST_REQUIRE(pub->publish("kv-events", bytes{}));
  BOOST_REQUIRE(pub->publish("kv-events", bytes{}));
  BOOST_REQUIRE(rec.wait_events("kv", 4));
  BOOST_TEST(rec.log("kv") == (std::vector<std::string>{"event kv-events 1", "event kv-events 2",
                                                        "gap kv-events 3..5", "event kv-events 5",
                                                        "event kv-events 6"}),
             boost::test_tools::per_element());
  auto gap = rec.gaps("kv").at(0);
  BOOST_TEST(gap.publisher_id == pub->publisher_id());
  BOOST_TEST(sub->stats().gaps >= 1u);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(publishers_are_tracked_independently, B, event_backends) {
  B b;
  auto p1 = b.publisher(1);
  auto p2 = b.publisher(2);
  event_recorder rec;
  auto sub = joined(b, *p1, rec, {"kv"});
  BOOST_REQUIRE(sub->connect(p2->address())); // added at runtime
  BOOST_REQUIRE(sub->connect(p2->address())); // idempotent
  BOOST_REQUIRE(await_subscription(*p2, rec));
  for (int i = 0; i < 10; ++i) {
    BOOST_REQUIRE(p1->publish("kv-events", bytes{}));
    BOOST_REQUIRE(p2->publish("kv-events", bytes{}));
  }
  BOOST_REQUIRE(rec.wait_events("kv", 20));
  std::vector<uint64_t> seq1, seq2;
  for (auto& e : rec.events("kv"))
    (e.publisher_id == 1 ? seq1 : seq2).push_back(e.sequence);
  std::vector<uint64_t> want{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  BOOST_TEST(seq1 == want, boost::test_tools::per_element());
  BOOST_TEST(seq2 == want, boost::test_tools::per_element());
  BOOST_TEST(rec.gaps("kv").empty());
  BOOST_REQUIRE(sub->disconnect(p2->address()));
  BOOST_TEST(code_of(sub->disconnect(p2->address()).error()) == errc::not_found);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(a_late_subscriber_misses_earlier_events_and_sees_a_gap, B,
                              event_backends) {
  B b;
  auto pub = b.publisher();
  for (int i = 0; i < 3; ++i) // nobody is subscribed yet: these are gone (slow joiner)
    BOOST_REQUIRE(pub->publish("kv-events", bytes{}));
  event_recorder rec;
  auto sub = joined(b, *pub, rec, {"kv"});
  BOOST_REQUIRE(pub->publish("kv-events", bytes{}));
  BOOST_REQUIRE(rec.wait_events("kv", 1));
  BOOST_TEST(rec.log("kv") == (std::vector<std::string>{"gap kv-events 1..4", "event kv-events 4"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE_TEMPLATE(bad_topics_and_oversized_events_are_refused, B, event_backends) {
  B b;
  auto pub = b.publisher(0, 1024);
  event_recorder rec;
  auto sub = joined(b, *pub, rec, {"kv"});
  BOOST_TEST(code_of(pub->publish("", bytes{}).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(pub->publish(std::string(300, 't'), bytes{}).error()) ==
             errc::invalid_argument);
  BOOST_TEST(code_of(pub->publish("kv-events", bytes(2000, 1)).error()) == errc::invalid_argument);
  BOOST_REQUIRE(pub->publish("kv-events", bytes(100, 1)));
  BOOST_REQUIRE(rec.wait_events("kv", 1));
  BOOST_TEST(rec.events("kv").at(0).sequence == 1u); // the refused one used no number
  BOOST_TEST(rec.gaps("kv").empty());
}

BOOST_AUTO_TEST_SUITE_END()
