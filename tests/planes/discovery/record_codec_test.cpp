#include "planes/discovery/record_codec.hpp"

#include "discovery_backends.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
namespace dc = dynamo::planes::discovery_codec;

BOOST_AUTO_TEST_SUITE(record_codec)

BOOST_AUTO_TEST_CASE(record_round_trips_under_its_key) {
  auto rec = make_record("dyn/backend/generate", 0xabc);
  rec.health = health_state::draining;
  rec.lease_ttl_ms = 1000;
  rec.renewed_at_ms = 123456;
  BOOST_TEST(rec.key() == "dyn/backend/generate/0000000000000abc");
  auto back = dc::decode(rec.key(), dc::encode(rec));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->same_content(rec));
  BOOST_TEST(back->lease_ttl_ms == 1000);
  BOOST_TEST(back->renewed_at_ms == 123456);
  BOOST_TEST(back->metadata.at("model") == "smollm2");
}

BOOST_AUTO_TEST_CASE(wrong_key_bad_fields_and_garbage_are_malformed) {
  auto rec = make_record("dyn/backend/generate", 0xabc);
  rec.lease_ttl_ms = 1000;
  auto data = dc::encode(rec);
  BOOST_TEST(code_of(dc::decode("dyn/backend/generate/0000000000000abd", data).error()) ==
             errc::malformed_message);
  auto no_lease = rec;
  no_lease.lease_ttl_ms = 0;
  BOOST_TEST(!dc::decode(rec.key(), dc::encode(no_lease)));
  auto bad_health = rec;
  bad_health.health = static_cast<health_state>(7);
  BOOST_TEST(!dc::decode(rec.key(), dc::encode(bad_health)));
  auto bad_name = rec;
  bad_name.endpoint.component_name = "Back End";
  BOOST_TEST(!dc::decode(bad_name.key(), dc::encode(bad_name)));
  BOOST_TEST(!dc::decode(rec.key(), bytes{0xc1}));
  BOOST_TEST(!dc::decode(rec.key(), bytes(data.begin(), data.begin() + data.size() / 2)));
}

BOOST_AUTO_TEST_CASE(prefixes_are_whole_validated_segments) {
  BOOST_TEST(dc::parse_prefix("")->empty());
  BOOST_TEST(*dc::parse_prefix("dyn/backend") == (std::vector<std::string>{"dyn", "backend"}));
  BOOST_TEST(dc::parse_prefix("dyn/backend/generate/0000000000000abc")->size() == 4u);
  for (auto bad : {"Dyn", "dyn/", "dyn//x", "/dyn", "dyn/backend/generate/xyz",
                   "dyn/backend/generate/0000000000000abc/more", "a b"})
    BOOST_TEST(code_of(dc::parse_prefix(bad).error()) == errc::invalid_argument, bad);
  auto p = *dc::parse_prefix("dyn/backend");
  BOOST_TEST(dc::key_matches("dyn/backend/generate/0000000000000abc", p));
  BOOST_TEST(!dc::key_matches("dyn/backend2/generate/0000000000000abc", p));
  BOOST_TEST(!dc::key_matches("dynamo/backend/generate/0000000000000abc", *dc::parse_prefix("dyn")));
}

BOOST_AUTO_TEST_CASE(a_lease_expires_strictly_after_its_ttl) {
  instance_record rec;
  rec.lease_ttl_ms = 1000;
  rec.renewed_at_ms = 5000;
  BOOST_TEST(!dc::expired(rec, 6000));
  BOOST_TEST(dc::expired(rec, 6001));
}

BOOST_AUTO_TEST_SUITE_END()
