#include "runtime/core/ids.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(ids)

BOOST_AUTO_TEST_CASE(names_follow_dynamo_rules) {
  BOOST_TEST(is_valid_name("dynamo"));
  BOOST_TEST(is_valid_name("vllm-worker_2"));
  BOOST_TEST(!is_valid_name(""));
  BOOST_TEST(!is_valid_name("Backend"));
  BOOST_TEST(!is_valid_name("a.b"));
}

BOOST_AUTO_TEST_CASE(endpoint_parses_both_spellings) {
  auto a = endpoint_id::parse("dynamo/backend/generate");
  BOOST_REQUIRE(a);
  BOOST_TEST(a->path() == "dynamo/backend/generate");
  auto b = endpoint_id::parse("dyn://dynamo.backend.generate");
  BOOST_REQUIRE(b);
  BOOST_TEST((*a == *b));
  BOOST_TEST(!endpoint_id::parse("dynamo/backend"));
  BOOST_TEST(!endpoint_id::parse("dynamo/Backend/generate"));
}

BOOST_AUTO_TEST_CASE(instance_path_prints_hex) {
  endpoint_id ep{"ns", "comp", "ep"};
  BOOST_TEST(instance_path(ep, 0xabcULL) == "ns/comp/ep/0000000000000abc");
  BOOST_TEST(new_instance_id() != 0u);
}

BOOST_AUTO_TEST_SUITE_END()
