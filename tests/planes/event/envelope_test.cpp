#include "planes/event/envelope.hpp"

#include "../support/support.hpp"

#include <boost/test/unit_test.hpp>

#include <msgpack.hpp>

using namespace dynamo;
using namespace dynamo::planes;

namespace {
event_envelope make(uint64_t pub, uint64_t seq, std::string topic = "kv-events") {
  return event_envelope{pub, seq, std::move(topic), 1700000000000, bytes{1, 2, 3}};
}
} // namespace

BOOST_AUTO_TEST_SUITE(envelope)

BOOST_AUTO_TEST_CASE(round_trips_every_field) {
  auto env = make(0xfeedfacecafebeefull, 42);
  auto back = decode_envelope(encode_envelope(env), 1024);
  BOOST_REQUIRE(back);
  BOOST_TEST(back->publisher_id == 0xfeedfacecafebeefull);
  BOOST_TEST(back->sequence == 42u);
  BOOST_TEST(back->topic == "kv-events");
  BOOST_TEST(back->published_at_ms == 1700000000000);
  BOOST_TEST(back->payload == (bytes{1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(is_a_msgpack_map_with_named_fields_and_a_bin_payload) {
  auto encoded = encode_envelope(make(1, 2));
  auto oh = msgpack::unpack(reinterpret_cast<const char*>(encoded.data()), encoded.size());
  auto obj = oh.get();
  BOOST_REQUIRE(obj.type == msgpack::type::MAP);
  BOOST_REQUIRE(obj.via.map.size == 5u);
  std::vector<std::string> keys;
  for (uint32_t i = 0; i < obj.via.map.size; ++i)
    keys.push_back(obj.via.map.ptr[i].key.as<std::string>());
  BOOST_TEST(keys == (std::vector<std::string>{"publisher_id", "sequence", "topic",
                                               "published_at_ms", "payload"}));
  BOOST_TEST(obj.via.map.ptr[4].val.type == msgpack::type::BIN);
}

BOOST_AUTO_TEST_CASE(garbage_zero_sequence_empty_topic_and_big_payload_are_malformed) {
  BOOST_TEST(code_of(decode_envelope(bytes{0xc1}, 1024).error()) == errc::malformed_message);
  BOOST_TEST(!decode_envelope(bytes{}, 1024));
  BOOST_TEST(!decode_envelope(encode_envelope(make(1, 0)), 1024));
  BOOST_TEST(!decode_envelope(encode_envelope(make(1, 1, "")), 1024));
  auto big = make(1, 1);
  big.payload.assign(2000, 7);
  BOOST_TEST(!decode_envelope(encode_envelope(big), 1024));
  BOOST_TEST(static_cast<bool>(decode_envelope(encode_envelope(big), 4096)));
}

BOOST_AUTO_TEST_CASE(tracker_reports_in_order_gaps_stale_and_restarts) {
  using v = sequence_tracker::verdict;
  sequence_tracker t;
  BOOST_TEST((t.observe(make(1, 1)).kind == v::in_order));
  BOOST_TEST((t.observe(make(1, 2)).kind == v::in_order));
  auto gap = t.observe(make(1, 5));
  BOOST_TEST((gap.kind == v::gap));
  BOOST_TEST(gap.expected == 3u);
  BOOST_TEST((t.observe(make(1, 4)).kind == v::stale)); // late: dropped
  BOOST_TEST((t.observe(make(1, 5)).kind == v::stale)); // duplicate
  BOOST_TEST((t.observe(make(1, 6)).kind == v::in_order));
  auto restart = t.observe(make(1, 1));
  BOOST_TEST((restart.kind == v::gap));
  BOOST_TEST(restart.expected == 7u);
  BOOST_TEST((t.observe(make(1, 2)).kind == v::in_order));
}

BOOST_AUTO_TEST_CASE(tracker_keys_by_publisher_and_topic_and_flags_late_joins) {
  using v = sequence_tracker::verdict;
  sequence_tracker t;
  BOOST_TEST((t.observe(make(1, 1, "a")).kind == v::in_order));
  BOOST_TEST((t.observe(make(2, 1, "a")).kind == v::in_order));
  BOOST_TEST((t.observe(make(1, 1, "b")).kind == v::in_order));
  auto late = t.observe(make(3, 10, "a")); // joined after 9 events
  BOOST_TEST((late.kind == v::gap));
  BOOST_TEST(late.expected == 1u);
}

BOOST_AUTO_TEST_SUITE_END()
