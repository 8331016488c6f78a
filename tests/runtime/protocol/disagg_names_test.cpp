// The disaggregation vocabulary: every role and transport name parses back to
// its enum, aliases and unknown names are handled as documented.
#include "runtime/protocol/disagg.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::protocol;

BOOST_AUTO_TEST_SUITE(disagg_names)

BOOST_AUTO_TEST_CASE(roles_round_trip) {
  for (auto r : {disagg_role::aggregated, disagg_role::prefill, disagg_role::decode}) {
    auto back = parse_disagg_role(to_string(r));
    BOOST_REQUIRE(back);
    BOOST_TEST(static_cast<int>(*back) == static_cast<int>(r));
  }
  BOOST_TEST(to_string(disagg_role::prefill) == "prefill");
  BOOST_TEST(to_string(static_cast<disagg_role>(9)) == "unknown");
}

BOOST_AUTO_TEST_CASE(agg_is_aggregated_and_unknown_roles_fail) {
  auto agg = parse_disagg_role("agg");
  BOOST_REQUIRE(agg);
  BOOST_CHECK(*agg == disagg_role::aggregated);
  auto bad = parse_disagg_role("Prefill");
  BOOST_REQUIRE(!bad);
  BOOST_CHECK(code_of(bad.error()) == errc::config_error);
  BOOST_TEST(message_of(bad.error()) == "'Prefill' is not one of aggregated|prefill|decode");
}

BOOST_AUTO_TEST_CASE(transports_round_trip) {
  for (auto t : {kv_transport_kind::automatic, kv_transport_kind::inproc, kv_transport_kind::tcp,
                 kv_transport_kind::ucx, kv_transport_kind::cuda_ipc}) {
    auto back = parse_kv_transport(to_string(t));
    BOOST_REQUIRE(back);
    BOOST_TEST(static_cast<int>(*back) == static_cast<int>(t));
  }
  BOOST_TEST(to_string(kv_transport_kind::automatic) == "auto");
  BOOST_TEST(to_string(kv_transport_kind::cuda_ipc) == "cuda-ipc");
}

BOOST_AUTO_TEST_CASE(unknown_transport_fails) {
  auto bad = parse_kv_transport("cuda_ipc");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(message_of(bad.error()) == "'cuda_ipc' is not one of auto|inproc|tcp|ucx|cuda-ipc");
  BOOST_TEST(!parse_kv_transport(""));
}

BOOST_AUTO_TEST_SUITE_END()
