#include "runtime/plan/decisions.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::plan;

BOOST_AUTO_TEST_SUITE(decisions_suite)

BOOST_AUTO_TEST_CASE(metadata_round_trip) {
  planner_decisions d{7, {{"decode", 3}, {"prefill", 1}}};
  auto m = to_metadata(d);
  BOOST_TEST(m.size() == 3u);
  BOOST_TEST(m.at("decision_id") == "7");
  BOOST_TEST(m.at("replicas.decode") == "3");
  BOOST_TEST(m.at("replicas.prefill") == "1");
  m["owner"] = "someone"; // other keys are ignored
  auto back = from_metadata(m);
  BOOST_REQUIRE(back);
  BOOST_TEST(back->decision_id == 7u);
  BOOST_TEST((back->replicas == std::map<std::string, uint32_t>{{"decode", 3}, {"prefill", 1}}));
}

BOOST_AUTO_TEST_CASE(bad_metadata_is_malformed) {
  using md = std::map<std::string, std::string>;
  for (const auto& m : {md{{"replicas.a", "1"}}, md{{"decision_id", "x"}},
                        md{{"decision_id", "1"}, {"replicas.a", "-1"}},
                        md{{"decision_id", "1"}, {"replicas.", "1"}},
                        md{{"decision_id", "1"}, {"replicas.a", "5000000000"}}}) {
    auto d = from_metadata(m);
    BOOST_TEST(!d);
    if (!d)
      BOOST_TEST(to_string(code_of(d.error())) == "malformed_message");
  }
}

BOOST_AUTO_TEST_CASE(one_json_line_per_decision) {
  scaling_decision d{"decode", config::worker_role::decode, 2, 3, 2, "scale up: \"x\""};
  BOOST_TEST(decision_json(d, 4, 12345) ==
             R"({"at_ms":12345,"current":2,"decision_id":4,"event":"scaling_decision",)"
             R"("observed":2,"pool":"decode","reason":"scale up: \"x\"","role":"decode","target":3})");
}

BOOST_AUTO_TEST_SUITE_END()
