// A worker's error chunk as an error value: the worker's code when it gave
// one, else internal; its message, else a fixed one.
#include "runtime/protocol/output_error.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::protocol;

BOOST_AUTO_TEST_SUITE(output_error)

BOOST_AUTO_TEST_CASE(an_error_chunk_keeps_the_workers_code_and_message) {
  engine_output out;
  out.finish = finish_reason::error;
  out.error_code = static_cast<uint8_t>(errc::context_length_exceeded);
  out.error = "the prompt has 40 tokens";
  BOOST_TEST(static_cast<int>(error_code_of(out)) == static_cast<int>(errc::context_length_exceeded));
  auto err = error_of(out);
  BOOST_TEST(static_cast<int>(code_of(err)) == static_cast<int>(errc::context_length_exceeded));
  BOOST_TEST(message_of(err) == "the prompt has 40 tokens");
}

BOOST_AUTO_TEST_CASE(no_code_is_internal_and_no_message_says_the_worker_failed) {
  engine_output out;
  out.finish = finish_reason::error;
  BOOST_TEST(static_cast<int>(error_code_of(out)) == static_cast<int>(errc::internal));
  auto err = error_of(out);
  BOOST_TEST(static_cast<int>(code_of(err)) == static_cast<int>(errc::internal));
  BOOST_TEST(message_of(err) == "the worker failed the request");
}

BOOST_AUTO_TEST_SUITE_END()
