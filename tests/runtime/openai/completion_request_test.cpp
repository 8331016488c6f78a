#include "runtime/openai/request.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;

namespace {

expected<completion_request> completion(const std::string& prompt, const std::string& extra = "") {
  return parse_completion_request(R"({"model":"m","prompt":)" + prompt +
                                  (extra.empty() ? "" : "," + extra) + "}");
}

using ids = std::vector<uint32_t>;

} // namespace

BOOST_AUTO_TEST_SUITE(completion_request_parsing)

BOOST_AUTO_TEST_CASE(prompt_as_string_or_single_string_array) {
  auto a = completion(R"("hello")");
  BOOST_REQUIRE(a);
  BOOST_TEST(std::get<std::string>(a->prompt) == "hello");
  auto b = completion(R"(["hello"])");
  BOOST_REQUIRE(b);
  BOOST_TEST(std::get<std::string>(b->prompt) == "hello");
}

BOOST_AUTO_TEST_CASE(prompt_as_token_ids_or_single_token_array) {
  auto a = completion("[1,2,3]");
  BOOST_REQUIRE(a);
  BOOST_TEST(std::get<ids>(a->prompt) == (ids{1, 2, 3}));
  auto b = completion("[[4,5]]");
  BOOST_REQUIRE(b);
  BOOST_TEST(std::get<ids>(b->prompt) == (ids{4, 5}));
}

BOOST_AUTO_TEST_CASE(empty_or_missing_prompts_are_rejected) {
  check_error(parse_completion_request(R"({"model":"m"})"), 400, "prompt",
              "missing_required_parameter");
  check_error(completion("[]"), 400, "prompt", "invalid_value");
  check_error(completion(R"("")"), 400, "prompt", "invalid_value");
  check_error(completion(R"([""])"), 400, "prompt[0]", "invalid_value");
  check_error(completion("[[]]"), 400, "prompt[0]", "invalid_value");
}

BOOST_AUTO_TEST_CASE(several_prompts_are_unsupported) {
  check_error(completion(R"(["a","b"])"), 400, "prompt", "unsupported_value");
  check_error(completion("[[1],[2]]"), 400, "prompt", "unsupported_value");
}

BOOST_AUTO_TEST_CASE(bad_prompt_shapes_and_token_ids_are_rejected) {
  check_error(completion("5"), 400, "prompt", "invalid_type");
  check_error(completion(R"(["a",1])"), 400, "prompt", "invalid_type");
  check_error(completion("[1,-2]"), 400, "prompt[1]", "invalid_value");
  check_error(completion("[4294967296]"), 400, "prompt[0]", "invalid_value");
  check_error(completion("[[1,-1]]"), 400, "prompt[0][1]", "invalid_value");
}

BOOST_AUTO_TEST_CASE(shares_the_common_validation) {
  check_error(completion(R"("x")", R"("temperature":5)"), 400, "temperature", "invalid_value");
  check_error(completion(R"("x")", R"("n":0)"), 400, "n", "invalid_value");
  BOOST_TEST(completion(R"("x")", R"("n":3)")->params.n == 3u);
  check_error(completion(R"("x")", R"("max_tokens":0)"), 400, "max_tokens", "invalid_value");
  auto r = completion(R"("x")", R"("max_tokens":3,"stream":true,"stop":"\n")");
  BOOST_REQUIRE(r);
  BOOST_TEST(*r->params.max_tokens == 3u);
  BOOST_TEST(r->params.stream);
  BOOST_TEST(r->params.stop == std::vector<std::string>{"\n"});
}

BOOST_AUTO_TEST_CASE(completion_only_fields_accept_neutral_values) {
  BOOST_TEST(test::ok(completion(R"("x")", R"("echo":false,"best_of":1,"suffix":"","logprobs":0)")
               ));
  check_error(completion(R"("x")", R"("best_of":2)"), 400, "best_of", "unsupported_value");
  BOOST_TEST(test::ok(completion(R"("x")", R"("n":2,"best_of":2)")));
  check_error(completion(R"("x")", R"("n":3,"best_of":2)"), 400, "best_of", "invalid_value");
  check_error(completion(R"("x")", R"("suffix":"end")"), 400, "suffix", "unsupported_value");
  check_error(completion(R"("x")", R"("logprobs":6)"), 400, "logprobs", "invalid_value");
  check_error(completion(R"("x")", R"("logprobs":true)"), 400, "logprobs", "invalid_type");
}

BOOST_AUTO_TEST_CASE(echo_allows_max_tokens_zero_and_one_choice) {
  auto r = completion(R"("x")", R"("echo":true,"max_tokens":0,"logprobs":1)");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->params.echo);
  BOOST_TEST(*r->params.max_tokens == 0u);
  BOOST_TEST(!completion(R"("x")", "")->params.echo);
  check_error(completion(R"("x")", R"("max_tokens":0)"), 400, "max_tokens", "invalid_value");
  check_error(completion(R"("x")", R"("echo":false,"max_tokens":0)"), 400, "max_tokens", "invalid_value");
  check_error(completion(R"("x")", R"("echo":true,"max_tokens":-1)"), 400, "max_tokens", "invalid_value");
  check_error(completion(R"("x")", R"("echo":true,"n":2)"), 400, "echo", "unsupported_value");
  check_error(completion(R"("x")", R"("echo":1)"), 400, "echo", "invalid_type");
}

BOOST_AUTO_TEST_CASE(logprobs_is_the_number_of_alternatives) {
  BOOST_TEST(!completion(R"("x")", "")->params.logprobs);
  BOOST_TEST(*completion(R"("x")", R"("logprobs":0)")->params.logprobs == 0u);
  BOOST_TEST(*completion(R"("x")", R"("logprobs":5)")->params.logprobs == 5u);
}

BOOST_AUTO_TEST_SUITE_END()
