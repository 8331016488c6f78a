#include "runtime/openai/response.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using protocol::finish_reason;

namespace {

const response_meta meta{"chatcmpl-1", 1700000000, "m"};
const usage_counts usage{10, 3, 4};

} // namespace

BOOST_AUTO_TEST_SUITE(response_bodies)

BOOST_AUTO_TEST_CASE(chat_completion_has_exact_shape) {
  BOOST_TEST(chat_completion_body(meta, "Hi!", finish_reason::stop, usage) ==
             R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m",)"
             R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hi!"},)"
             R"("logprobs":null,"finish_reason":"stop"}],)"
             R"("usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,)"
             R"("prompt_tokens_details":{"cached_tokens":4}}})");
}

BOOST_AUTO_TEST_CASE(chat_chunks_have_exact_shapes) {
  const std::string head =
    R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m",)";
  BOOST_TEST(chat_role_chunk(meta, false) ==
             head + R"("choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
                    R"("logprobs":null,"finish_reason":null}]})");
  BOOST_TEST(chat_content_chunk(meta, "a\"b", true) ==
             head + R"("choices":[{"index":0,"delta":{"content":"a\"b"},)"
                    R"("logprobs":null,"finish_reason":null}],"usage":null})");
  BOOST_TEST(chat_finish_chunk(meta, finish_reason::length, false) ==
             head + R"("choices":[{"index":0,"delta":{},"logprobs":null,)"
                    R"("finish_reason":"length"}]})");
  BOOST_TEST(chat_usage_chunk(meta, usage) ==
             head + R"("choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,)"
                    R"("total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}})");
}

BOOST_AUTO_TEST_CASE(text_completion_whole_and_streamed) {
  const response_meta cm{"cmpl-1", 5, "m"};
  BOOST_TEST(completion_body(cm, "xyz", finish_reason::length, {1, 2, 0}) ==
             R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m",)"
             R"("choices":[{"index":0,"text":"xyz","logprobs":null,"finish_reason":"length"}],)"
             R"("usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,)"
             R"("prompt_tokens_details":{"cached_tokens":0}}})");
  BOOST_TEST(completion_chunk(cm, "x", finish_reason::none, false) ==
             R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m",)"
             R"("choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":null}]})");
  auto last = nlohmann::json::parse(completion_usage_chunk(cm, {1, 2, 0}));
  BOOST_TEST(last["choices"].empty());
  BOOST_TEST(last["usage"]["total_tokens"] == 3);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_replaced_not_thrown) {
  auto body = chat_content_chunk(meta, "a\xFF", false);
  BOOST_TEST(body.find("a\xEF\xBF\xBD") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(model_objects_and_lists) {
  model_info m{"org/model", 42, "dynamo"};
  BOOST_TEST(model_body(m) ==
             R"({"id":"org/model","object":"model","created":42,"owned_by":"dynamo"})");
  std::vector<model_info> list{m};
  BOOST_TEST(model_list_body(list) ==
             R"({"object":"list","data":[{"id":"org/model","object":"model","created":42,)"
             R"("owned_by":"dynamo"}]})");
  BOOST_TEST(model_list_body({}) == R"({"object":"list","data":[]})");
}

BOOST_AUTO_TEST_CASE(finish_reasons_and_ids) {
  BOOST_TEST(finish_reason_text(finish_reason::none) == "");
  BOOST_TEST(finish_reason_text(finish_reason::stop) == "stop");
  BOOST_TEST(finish_reason_text(finish_reason::length) == "length");
  auto a = random_hex_id();
  auto b = random_hex_id();
  BOOST_TEST(a.size() == 32u);
  BOOST_TEST(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  BOOST_TEST(a != b);
}

BOOST_AUTO_TEST_SUITE_END()
