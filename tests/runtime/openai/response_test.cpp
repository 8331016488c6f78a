#include "runtime/openai/response.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <limits>

using namespace dynamo;
using namespace dynamo::openai;
using protocol::finish_reason;

namespace {

const response_meta meta{"chatcmpl-1", 1700000000, "m"};
const usage_counts usage{10, 3, 4};

} // namespace

BOOST_AUTO_TEST_SUITE(response_bodies)

std::vector<choice_result> one(std::string text, finish_reason f) {
  return {choice_result{0, std::move(text), f, std::nullopt}};
}

BOOST_AUTO_TEST_CASE(chat_completion_has_exact_shape) {
  BOOST_TEST(chat_completion_body(meta, one("Hi!", finish_reason::stop), usage) ==
             R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m",)"
             R"("choices":[{"index":0,"message":{"role":"assistant","content":"Hi!","refusal":null},)"
             R"("logprobs":null,"finish_reason":"stop"}],)"
             R"("usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,)"
             R"("prompt_tokens_details":{"cached_tokens":4}}})");
}

BOOST_AUTO_TEST_CASE(chat_chunks_have_exact_shapes) {
  const std::string head =
    R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m",)";
  BOOST_TEST(chat_role_chunk(meta, 0, false) ==
             head + R"("choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},)"
                    R"("logprobs":null,"finish_reason":null}]})");
  BOOST_TEST(chat_content_chunk(meta, 0, "a\"b", nullptr, true) ==
             head + R"("choices":[{"index":0,"delta":{"content":"a\"b"},)"
                    R"("logprobs":null,"finish_reason":null}],"usage":null})");
  BOOST_TEST(chat_finish_chunk(meta, 2, finish_reason::length, false) ==
             head + R"("choices":[{"index":2,"delta":{},"logprobs":null,)"
                    R"("finish_reason":"length"}]})");
  BOOST_TEST(chat_usage_chunk(meta, usage) ==
             head + R"("choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,)"
                    R"("total_tokens":13,"prompt_tokens_details":{"cached_tokens":4}}})");
}

BOOST_AUTO_TEST_CASE(text_completion_whole_and_streamed) {
  const response_meta cm{"cmpl-1", 5, "m"};
  BOOST_TEST(completion_body(cm, one("xyz", finish_reason::length), {1, 2, 0}) ==
             R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m",)"
             R"("choices":[{"index":0,"text":"xyz","logprobs":null,"finish_reason":"length"}],)"
             R"("usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,)"
             R"("prompt_tokens_details":{"cached_tokens":0}}})");
  BOOST_TEST(completion_chunk(cm, 0, "x", nullptr, finish_reason::none, false) ==
             R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"m",)"
             R"("choices":[{"index":0,"text":"x","logprobs":null,"finish_reason":null}]})");
  auto last = nlohmann::json::parse(completion_usage_chunk(cm, {1, 2, 0}));
  BOOST_TEST(last["choices"].empty());
  BOOST_TEST(last["usage"]["total_tokens"] == 3);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_replaced_not_thrown) {
  auto body = chat_content_chunk(meta, 0, "a\xFF", nullptr, false);
  BOOST_TEST(body.find("a\xEF\xBF\xBD") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(choices_are_listed_with_their_index) {
  std::vector<choice_result> two{{0, "a", finish_reason::stop, std::nullopt},
                                 {1, "bc", finish_reason::length, std::nullopt}};
  auto j = nlohmann::json::parse(chat_completion_body(meta, two, usage));
  BOOST_TEST(j["choices"].size() == 2u);
  BOOST_TEST(j["choices"][1]["index"] == 1);
  BOOST_TEST(j["choices"][1]["message"]["content"] == "bc");
  BOOST_TEST(j["choices"][1]["finish_reason"] == "length");
}

// The two logprobs shapes of the OpenAI API reference, for a whole token and
// the two halves of "é" (0xC3 0xA9), which are not text on their own.
const std::vector<logprob_entry> entries{
  {"Hi", -0.5f, {{"Hi", -0.5f}, {"Hello", -1.25f}}, 0},
  {"\xC3", -std::numeric_limits<float>::infinity(), {}, 2},
};

BOOST_AUTO_TEST_CASE(chat_logprobs_shape) {
  std::vector<choice_result> c{{0, "Hi", finish_reason::stop, entries}};
  auto j = nlohmann::json::parse(chat_completion_body(meta, c, usage));
  const auto& lp = j["choices"][0]["logprobs"];
  BOOST_TEST(lp["refusal"].is_null());
  BOOST_TEST(lp["content"].size() == 2u);
  BOOST_TEST(lp["content"][0]["token"] == "Hi");
  BOOST_TEST(lp["content"][0]["logprob"] == -0.5);
  BOOST_TEST((lp["content"][0]["bytes"] == nlohmann::json::array({72, 105})));
  BOOST_TEST(lp["content"][0]["top_logprobs"][1]["token"] == "Hello");
  BOOST_TEST(lp["content"][0]["top_logprobs"][1]["logprob"] == -1.25);
  BOOST_TEST((lp["content"][0]["top_logprobs"][1]["bytes"] == nlohmann::json::array({72, 101, 108, 108, 111})));
  BOOST_TEST(lp["content"][1]["token"] == "bytes:\\xc3");
  BOOST_TEST((lp["content"][1]["bytes"] == nlohmann::json::array({195})));
  BOOST_TEST(lp["content"][1]["logprob"] == -9999.0); // -inf has no JSON form
  BOOST_TEST(lp["content"][1]["top_logprobs"].empty());
  auto chunk = nlohmann::json::parse(chat_content_chunk(meta, 0, "Hi", &entries, false));
  BOOST_TEST(chunk["choices"][0]["logprobs"] == lp);
}

BOOST_AUTO_TEST_CASE(completion_logprobs_shape) {
  const response_meta cm{"cmpl-1", 5, "m"};
  std::vector<choice_result> c{{0, "Hi", finish_reason::stop, entries}};
  auto j = nlohmann::json::parse(completion_body(cm, c, usage));
  const auto& lp = j["choices"][0]["logprobs"];
  BOOST_TEST((lp["tokens"] == nlohmann::json::array({"Hi", "bytes:\\xc3"})));
  BOOST_TEST((lp["token_logprobs"] == nlohmann::json::array({-0.5, -9999.0})));
  BOOST_TEST((lp["text_offset"] == nlohmann::json::array({0, 2})));
  // The alternatives and the chosen token, keyed by token string.
  BOOST_TEST((lp["top_logprobs"][0] == nlohmann::json{{"Hi", -0.5}, {"Hello", -1.25}}));
  BOOST_TEST((lp["top_logprobs"][1] == nlohmann::json{{"bytes:\\xc3", -9999.0}}));
}

BOOST_AUTO_TEST_CASE(token_text_escapes_only_invalid_utf8) {
  BOOST_TEST(token_text("caf\xC3\xA9") == "caf\xC3\xA9");
  BOOST_TEST(token_text("\xE2\x80") == "bytes:\\xe2\\x80");
  BOOST_TEST(token_text("") == "");
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
