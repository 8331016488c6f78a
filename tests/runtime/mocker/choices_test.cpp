// The mocker honours seed and n: a seeded request's tokens follow the seed
// (same seed, same tokens; other seeds, other tokens), choice c of a seeded
// request draws as seed + c, and the request's engine run delivers n streams.
#include "runtime/mocker/mock_executor.hpp"
#include "tests/runtime/engine/test_util.hpp"
#include "tests/runtime/mocker/mocker_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <map>

using namespace dynamo;
using protocol::finish_reason;
using test::engine_of;
using test::iota_tokens;
using test::request;
using test::tiny;

namespace {

/// Every choice's tokens and how it ended, from an engine run.
std::map<uint32_t, std::pair<std::vector<uint32_t>, finish_reason>> run_choices(engine::engine_core& core) {
  std::map<uint32_t, std::pair<std::vector<uint32_t>, finish_reason>> out;
  while (core.has_work()) {
    auto r = core.step();
    BOOST_REQUIRE(r);
    for (const auto& o : r->outputs) {
      auto& [tokens, end] = out[o.output.index];
      BOOST_REQUIRE(end == finish_reason::none);
      tokens.insert(tokens.end(), o.output.token_ids.begin(), o.output.token_ids.end());
      end = o.output.choice_end();
    }
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mocker_choices)

BOOST_AUTO_TEST_CASE(the_seed_picks_the_stream) {
  const auto prompt = iota_tokens(6, 65);
  BOOST_TEST(mocker::stream_of(std::nullopt, 0) == 0u); // unseeded choice 0: the historical tokens
  const auto a = mocker::continuation(prompt, 16, mocker::stream_of(1, 0));
  BOOST_TEST(a == mocker::continuation(prompt, 16, mocker::stream_of(1, 0)));
  BOOST_TEST(a != mocker::continuation(prompt, 16, mocker::stream_of(2, 0)));
  BOOST_TEST(a != mocker::continuation(prompt, 16));
  BOOST_TEST(mocker::continuation(prompt, 16, mocker::stream_of(std::nullopt, 1)) != mocker::continuation(prompt, 16));
}

BOOST_AUTO_TEST_CASE(n_seeded_choices_follow_seed_plus_choice) {
  auto core = engine_of(tiny());
  const auto prompt = iota_tokens(10, 65);
  auto r = request("r", prompt, 6);
  r.sampling.n = 3;
  r.sampling.seed = 500;
  r.sampling.logprobs = 1;
  BOOST_REQUIRE(core->add_request(r));
  const auto out = run_choices(*core);
  BOOST_REQUIRE_EQUAL(out.size(), 3u);
  for (uint32_t c = 0; c < 3; ++c) {
    BOOST_TEST(out.at(c).first == mocker::continuation(prompt, 6, mocker::stream_of(500 + c, c)),
               boost::test_tools::per_element());
    BOOST_TEST(out.at(c).second == finish_reason::length);
  }
  // n = 1 with seed 500 is choice 0.
  auto one = request("one", prompt, 6);
  one.sampling.seed = 500;
  BOOST_REQUIRE(core->add_request(one));
  BOOST_TEST(run_choices(*core).at(0).first == out.at(0).first, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(the_engine_refuses_what_it_cannot_run) {
  auto core = engine_of(tiny());
  auto too_many = request("n", iota_tokens(5, 65), 2);
  too_many.sampling.n = 257; // above max_num_seqs
  auto wide = request("lp", iota_tokens(5, 65), 2);
  wide.sampling.logprobs = 21;
  BOOST_REQUIRE(core->add_request(too_many));
  BOOST_REQUIRE(core->add_request(wide));
  auto out = test::run(*core);
  BOOST_TEST(out["n"].finish == finish_reason::error);
  BOOST_TEST(out["n"].error.find("n is 257") != std::string::npos);
  BOOST_TEST(out["lp"].finish == finish_reason::error);
}

BOOST_AUTO_TEST_SUITE_END()
