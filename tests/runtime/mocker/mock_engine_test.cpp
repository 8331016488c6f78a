#include "runtime/mocker/mock_executor.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;

namespace {

mocker::mocker_config tiny() {
  mocker::mocker_config c;
  c.block_size = 4;
  c.num_blocks = 16;
  c.context_length = 64;
  c.speedup_ratio = 0;
  c.max_num_batched_tokens = 32;
  return c;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mock_engine)

BOOST_AUTO_TEST_CASE(generates_the_continuation_stream) {
  auto core = mocker::make_engine(tiny());
  BOOST_REQUIRE(core);
  auto prompt = test::iota_tokens(10, 65);
  BOOST_REQUIRE((*core)->add_request(test::request("a", prompt, 5)));
  auto out = test::run(**core);
  BOOST_TEST(out["a"].tokens == mocker::continuation(prompt, 5), boost::test_tools::per_element());
  BOOST_TEST(out["a"].finish == protocol::finish_reason::length);
}

BOOST_AUTO_TEST_SUITE_END()
