// runtime/disagg/prefill_first: the router's prefill-first decisions and the
// two legs it makes of a request; and the worker's kv_push requests and check.
#include "runtime/disagg/disagg_connector.hpp"
#include "runtime/disagg/prefill_first.hpp"
#include "runtime/protocol/codec.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using ids = std::vector<uint32_t>;

namespace {

protocol::preprocessed_request request(size_t prompt_tokens) {
  protocol::preprocessed_request r;
  r.request_id = "r";
  r.token_ids.assign(prompt_tokens, 7);
  r.stop.max_tokens = 20;
  r.stop.min_tokens = 5;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(prefill_first)

BOOST_AUTO_TEST_CASE(only_long_single_choice_requests_with_a_prefill_instance_may_go_remote) {
  const auto r = request(512);
  BOOST_TEST(disagg::may_prefill_remotely(r, 1, 512));
  BOOST_TEST(!disagg::may_prefill_remotely(r, 0, 512));            // no prefill instance
  BOOST_TEST(!disagg::may_prefill_remotely(request(511), 1, 512)); // short
  auto n2 = r;
  n2.sampling.n = 2;
  BOOST_TEST(!disagg::may_prefill_remotely(n2, 1, 512)); // one first token per prefill result
  auto leg = r;
  leg.disagg = {1};
  BOOST_TEST(!disagg::may_prefill_remotely(leg, 1, 512)); // already a leg
}

BOOST_AUTO_TEST_CASE(what_counts_is_the_prompt_left_after_the_decode_workers_cache) {
  BOOST_TEST(disagg::prefill_remotely(600, 88, 512));
  BOOST_TEST(!disagg::prefill_remotely(600, 89, 512));
  BOOST_TEST(!disagg::prefill_remotely(600, 10'000, 1)); // more cached than the prompt: nothing left
}

BOOST_AUTO_TEST_CASE(the_prefill_leg_produces_one_token_as_a_prefill) {
  const auto p = disagg::prefill_request(request(4));
  BOOST_TEST(p.request_id == "r-prefill");
  BOOST_TEST(p.stop.max_tokens == 1u);
  BOOST_TEST(p.stop.min_tokens == 0u);
  BOOST_TEST(p.token_ids == request(4).token_ids, boost::test_tools::per_element());
  auto params = protocol::decode<protocol::disagg_params>(p.disagg);
  BOOST_REQUIRE(params);
  BOOST_CHECK(params->role == protocol::disagg_role::prefill);
  BOOST_TEST(!params->prefill.has_value());
}

BOOST_AUTO_TEST_CASE(the_result_rides_on_the_final_chunk_into_the_decode_leg) {
  protocol::kv_prefill_result r;
  r.hold_id = "r-prefill";
  r.block_ids = {3, 4};
  r.first_token = 9;
  protocol::engine_output chunk;
  chunk.disagg = protocol::encode(r);
  BOOST_TEST(!disagg::prefill_result_of(chunk).has_value()); // not final
  chunk.finish = protocol::finish_reason::length;
  auto back = disagg::prefill_result_of(chunk);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->block_ids == r.block_ids, boost::test_tools::per_element());
  chunk.disagg = {0xc1};
  BOOST_TEST(!disagg::prefill_result_of(chunk).has_value()); // does not decode
  auto params = protocol::decode<protocol::disagg_params>(disagg::decode_params(r));
  BOOST_REQUIRE(params);
  BOOST_CHECK(params->role == protocol::disagg_role::decode);
  BOOST_REQUIRE(params->prefill.has_value());
  BOOST_TEST(params->prefill->hold_id == "r-prefill");
  BOOST_TEST(params->prefill->first_token == 9u);
}

BOOST_AUTO_TEST_CASE(push_requests_and_their_check) {
  disagg::kv_load l;
  l.request_id = "r";
  l.source.hold_id = "r-prefill";
  l.source.block_ids = {3, 4, 5};
  l.source_block_ids = {4, 5};
  l.destination_block_ids = {10, 11};
  const auto push = disagg::push_request(l);
  BOOST_TEST(push.hold_id == "r-prefill");
  BOOST_TEST(push.source_block_ids == (ids{4, 5}), boost::test_tools::per_element());
  BOOST_TEST(push.destination_block_ids == (ids{10, 11}), boost::test_tools::per_element());
  BOOST_TEST(push.release);
  const auto release = disagg::release_request(l.source);
  BOOST_TEST(release.hold_id == "r-prefill");
  BOOST_TEST(release.source_block_ids.empty());
  BOOST_TEST(release.release);

  BOOST_TEST(static_cast<bool>(disagg::check_push(push, ids{3, 4, 5})));
  BOOST_TEST(static_cast<bool>(disagg::check_push(release, ids{3, 4, 5})));
  auto none = disagg::check_push(push, std::nullopt);
  BOOST_REQUIRE(!none);
  BOOST_CHECK(code_of(none.error()) == errc::not_found);
  BOOST_TEST(message_of(none.error()) == "no held blocks named r-prefill");
  auto other = disagg::check_push(push, ids{3, 4});
  BOOST_REQUIRE(!other);
  BOOST_CHECK(code_of(other.error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
