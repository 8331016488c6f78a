#include "runtime/openai/request.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;

namespace {

const std::string msgs = R"("messages":[{"role":"user","content":"hi"}])";

expected<chat_request> chat(const std::string& extra) {
  return parse_chat_request(R"({"model":"m",)" + msgs + (extra.empty() ? "" : "," + extra) + "}");
}

} // namespace

BOOST_AUTO_TEST_SUITE(chat_request_parsing)

BOOST_AUTO_TEST_CASE(minimal_request_gets_defaults) {
  auto r = chat("");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->model == "m");
  BOOST_REQUIRE_EQUAL(r->chat.messages.size(), 1u);
  BOOST_TEST(r->chat.messages[0]["role"] == "user");
  BOOST_TEST(r->chat.messages[0]["content"] == "hi");
  BOOST_TEST(r->chat.tools.is_null());
  BOOST_TEST(r->chat.kwargs.empty());
  BOOST_TEST((r->tool_choice == tool_choice_mode::none));
  BOOST_TEST(!r->params.max_tokens);
  BOOST_TEST(!r->params.temperature);
  BOOST_TEST(!r->params.stream);
  BOOST_TEST(!r->params.include_usage);
  BOOST_TEST(r->params.stop.empty());
}

BOOST_AUTO_TEST_CASE(reads_every_implemented_field) {
  auto r = chat(R"("max_tokens":7,"min_tokens":2,"temperature":0.5,"top_p":0.9,"top_k":40,
                   "seed":-1,"stop":["a","b"],"n":1,"stream":true,
                   "stream_options":{"include_usage":true},"ignore_eos":true,"user":"u1")");
  BOOST_REQUIRE(r);
  const auto& p = r->params;
  BOOST_TEST(*p.max_tokens == 7u);
  BOOST_TEST(*p.min_tokens == 2u);
  BOOST_TEST(*p.temperature == 0.5f);
  BOOST_TEST(*p.top_p == 0.9f);
  BOOST_TEST(*p.top_k == 40);
  BOOST_TEST(*p.seed == UINT64_MAX); // -1 as two's complement
  BOOST_TEST(p.stop == (std::vector<std::string>{"a", "b"}));
  BOOST_TEST(p.stream);
  BOOST_TEST(p.include_usage);
  BOOST_TEST(p.ignore_eos);
  BOOST_TEST(*p.user == "u1");
}

BOOST_AUTO_TEST_CASE(max_completion_tokens_wins_over_max_tokens) {
  auto r = chat(R"("max_tokens":100,"max_completion_tokens":5)");
  BOOST_REQUIRE(r);
  BOOST_TEST(*r->params.max_tokens == 5u);
}

BOOST_AUTO_TEST_CASE(null_means_not_given_and_unknown_fields_are_ignored) {
  auto r = chat(R"("temperature":null,"stop":null,"nvext":{"x":1},"metadata":{"a":"b"})");
  BOOST_REQUIRE(r);
  BOOST_TEST(!r->params.temperature);
}

BOOST_AUTO_TEST_CASE(stop_may_be_a_single_string) {
  auto r = chat(R"("stop":"END")");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->params.stop == std::vector<std::string>{"END"});
}

BOOST_AUTO_TEST_CASE(content_parts_are_joined_with_newlines) {
  auto r = parse_chat_request(R"({"model":"m","messages":[
      {"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"assistant","content":null},{"role":"developer","content":"d"}]})");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->chat.messages[0]["content"] == "a\nb");
  BOOST_TEST(r->chat.messages[1]["content"] == "");
  BOOST_TEST(r->chat.messages[2]["role"] == "developer");
}

BOOST_AUTO_TEST_CASE(malformed_json_is_400_invalid_json) {
  auto r = parse_chat_request("{\"model\": ");
  check_error(r, 400, "", "invalid_json");
  BOOST_TEST(test::failure(r).type == "invalid_request_error");
  check_error(parse_chat_request(""), 400, "", "invalid_json");
}

BOOST_AUTO_TEST_CASE(deep_nesting_is_rejected_before_parsing) {
  std::string deep = R"({"model":"m","x":)" + std::string(200, '[') + std::string(200, ']') + "}";
  check_error(parse_chat_request(deep), 400, "", "invalid_json");
  // Brackets inside strings do not count.
  auto ok = chat(R"("user":")" + std::string(200, '[') + "\"");
  BOOST_TEST(test::ok(ok));
}

BOOST_AUTO_TEST_CASE(body_must_be_an_object) {
  check_error(parse_chat_request("[1,2]"), 400, "", "invalid_type");
}

BOOST_AUTO_TEST_CASE(model_is_required_non_empty_string) {
  check_error(parse_chat_request("{" + msgs + "}"), 400, "model", "missing_required_parameter");
  check_error(parse_chat_request(R"({"model":"",)" + msgs + "}"), 400, "model", "invalid_value");
  check_error(parse_chat_request(R"({"model":5,)" + msgs + "}"), 400, "model", "invalid_type");
}

BOOST_AUTO_TEST_CASE(messages_must_be_a_non_empty_array_of_valid_messages) {
  check_error(parse_chat_request(R"({"model":"m"})"), 400, "messages",
              "missing_required_parameter");
  check_error(parse_chat_request(R"({"model":"m","messages":[]})"), 400, "messages",
              "invalid_value");
  check_error(parse_chat_request(R"({"model":"m","messages":"hi"})"), 400, "messages",
              "invalid_type");
  check_error(parse_chat_request(R"({"model":"m","messages":[1]})"), 400, "messages[0]",
              "invalid_type");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"content":"x"}]})"), 400,
              "messages[0].role", "missing_required_parameter");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"bot","content":"x"}]})"),
              400, "messages[0].role", "invalid_value");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"x"},
              {"role":"user"}]})"), 400, "messages[1].content", "missing_required_parameter");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":7}]})"),
              400, "messages[0].content", "invalid_type");
}

BOOST_AUTO_TEST_CASE(non_text_content_parts_are_unsupported) {
  auto r = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":[
      {"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]})");
  check_error(r, 400, "messages[0].content[1].type", "unsupported_value");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":[
      {"type":"text"}]}]})"), 400, "messages[0].content[0].text", "missing_required_parameter");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":[
      {"text":"x"}]}]})"), 400, "messages[0].content[0].type", "missing_required_parameter");
}

BOOST_AUTO_TEST_CASE(malformed_tool_calls_in_messages_are_400) {
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"assistant","content":null,
      "tool_calls":[{"id":"1"}]}]})"), 400, "messages[0].tool_calls[0].function",
              "missing_required_parameter");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"assistant","tool_calls":
      [{"id":"1","type":"function","function":{"name":"f","arguments":5}}]}]})"), 400,
              "messages[0].tool_calls[0].function.arguments", "invalid_type");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"x",
      "tool_calls":[{"id":"1","type":"function","function":{"name":"f"}}]}]})"), 400,
              "messages[0].tool_calls", "invalid_value");
  check_error(parse_chat_request(R"({"model":"m","messages":[{"role":"tool","content":"x"}]})"),
              400, "messages[0].tool_call_id", "missing_required_parameter");
}

BOOST_AUTO_TEST_CASE(temperature_is_between_0_and_2) {
  BOOST_TEST(test::ok(chat(R"("temperature":0)")));
  BOOST_TEST(test::ok(chat(R"("temperature":2)")));
  check_error(chat(R"("temperature":2.01)"), 400, "temperature", "invalid_value");
  check_error(chat(R"("temperature":-0.1)"), 400, "temperature", "invalid_value");
  check_error(chat(R"("temperature":"hot")"), 400, "temperature", "invalid_type");
}

BOOST_AUTO_TEST_CASE(top_p_is_between_0_and_1) {
  BOOST_TEST(test::ok(chat(R"("top_p":1)")));
  check_error(chat(R"("top_p":1.5)"), 400, "top_p", "invalid_value");
  check_error(chat(R"("top_p":-1)"), 400, "top_p", "invalid_value");
}

BOOST_AUTO_TEST_CASE(top_k_is_minus_one_or_at_least_one) {
  BOOST_TEST(*chat(R"("top_k":-1)")->params.top_k == -1);
  BOOST_TEST(*chat(R"("top_k":1)")->params.top_k == 1);
  check_error(chat(R"("top_k":0)"), 400, "top_k", "invalid_value");
  check_error(chat(R"("top_k":-2)"), 400, "top_k", "invalid_value");
  check_error(chat(R"("top_k":1.5)"), 400, "top_k", "invalid_type");
}

BOOST_AUTO_TEST_CASE(max_and_min_tokens_are_checked) {
  check_error(chat(R"("max_tokens":0)"), 400, "max_tokens", "invalid_value");
  check_error(chat(R"("max_tokens":-5)"), 400, "max_tokens", "invalid_value");
  check_error(chat(R"("max_tokens":4294967296)"), 400, "max_tokens", "invalid_value");
  check_error(chat(R"("max_tokens":18446744073709551615)"), 400, "max_tokens", "invalid_value");
  check_error(chat(R"("max_tokens":10.0)"), 400, "max_tokens", "invalid_type");
  check_error(chat(R"("max_completion_tokens":0)"), 400, "max_completion_tokens", "invalid_value");
  check_error(chat(R"("min_tokens":-1)"), 400, "min_tokens", "invalid_value");
  check_error(chat(R"("max_tokens":3,"min_tokens":4)"), 400, "min_tokens", "invalid_value");
  BOOST_TEST(test::ok(chat(R"("max_tokens":4,"min_tokens":4)")));
}

BOOST_AUTO_TEST_CASE(n_is_one_to_128) {
  BOOST_TEST(chat(R"("n":1)")->params.n == 1u);
  BOOST_TEST(chat("")->params.n == 1u);
  BOOST_TEST(chat(R"("n":128)")->params.n == 128u);
  check_error(chat(R"("n":0)"), 400, "n", "invalid_value");
  check_error(chat(R"("n":129)"), 400, "n", "invalid_value");
  check_error(chat(R"("n":1.5)"), 400, "n", "invalid_type");
}

BOOST_AUTO_TEST_CASE(penalties_min_p_and_logit_bias_are_read_within_openai_ranges) {
  auto r = chat(R"("frequency_penalty":0.5,"presence_penalty":-2,"repetition_penalty":1.3,
                   "min_p":0.05,"logit_bias":{"7":-100,"3":2.5,"50256":100})");
  BOOST_REQUIRE(r);
  BOOST_TEST(*r->params.frequency_penalty == 0.5f);
  BOOST_TEST(*r->params.presence_penalty == -2.0f);
  BOOST_TEST(*r->params.repetition_penalty == 1.3f);
  BOOST_TEST(*r->params.min_p == 0.05f);
  BOOST_REQUIRE_EQUAL(r->params.logit_bias.size(), 3u); // sorted by token id
  BOOST_TEST(r->params.logit_bias[0].token == 3u);
  BOOST_TEST(r->params.logit_bias[0].bias == 2.5f);
  BOOST_TEST(r->params.logit_bias[1].token == 7u);
  BOOST_TEST(r->params.logit_bias[2].token == 50256u);
  BOOST_TEST(r->params.logit_bias[2].bias == 100.0f);
  check_error(chat(R"("frequency_penalty":2.01)"), 400, "frequency_penalty", "invalid_value");
  check_error(chat(R"("presence_penalty":-3)"), 400, "presence_penalty", "invalid_value");
  check_error(chat(R"("presence_penalty":"1")"), 400, "presence_penalty", "invalid_type");
  check_error(chat(R"("repetition_penalty":0)"), 400, "repetition_penalty", "invalid_value");
  check_error(chat(R"("repetition_penalty":-1)"), 400, "repetition_penalty", "invalid_value");
  check_error(chat(R"("repetition_penalty":2.5)"), 400, "repetition_penalty", "invalid_value");
  check_error(chat(R"("min_p":1.5)"), 400, "min_p", "invalid_value");
  check_error(chat(R"("logit_bias":{"5":101})"), 400, "logit_bias", "invalid_value");
  check_error(chat(R"("logit_bias":{"5":-100.5})"), 400, "logit_bias", "invalid_value");
  check_error(chat(R"("logit_bias":{"x":1})"), 400, "logit_bias", "invalid_value");
  check_error(chat(R"("logit_bias":{"-1":1})"), 400, "logit_bias", "invalid_value");
  check_error(chat(R"("logit_bias":{"4294967296":1})"), 400, "logit_bias", "invalid_value");
  check_error(chat(R"("logit_bias":{"7":1,"07":2})"), 400, "logit_bias", "invalid_value");
  check_error(chat(R"("logit_bias":{"5":"1"})"), 400, "logit_bias.5", "invalid_type");
  check_error(chat(R"("logit_bias":[1])"), 400, "logit_bias", "invalid_type");
  std::string many = R"("logit_bias":{)";
  for (int i = 0; i <= 1024; ++i)
    many += (i ? ",\"" : "\"") + std::to_string(i) + "\":1";
  check_error(chat(many + "}"), 400, "logit_bias", "invalid_value");
}

BOOST_AUTO_TEST_CASE(logprobs_and_top_logprobs) {
  BOOST_TEST(!chat("")->params.logprobs);
  BOOST_TEST(!chat(R"("logprobs":false)")->params.logprobs);
  BOOST_TEST(*chat(R"("logprobs":true)")->params.logprobs == 0u);
  BOOST_TEST(*chat(R"("logprobs":true,"top_logprobs":20)")->params.logprobs == 20u);
  check_error(chat(R"("logprobs":true,"top_logprobs":21)"), 400, "top_logprobs", "invalid_value");
  check_error(chat(R"("top_logprobs":2)"), 400, "top_logprobs", "invalid_value");
  check_error(chat(R"("logprobs":false,"top_logprobs":2)"), 400, "top_logprobs", "invalid_value");
  check_error(chat(R"("logprobs":1)"), 400, "logprobs", "invalid_type");
}

BOOST_AUTO_TEST_CASE(stop_token_ids_are_token_ids) {
  BOOST_TEST((chat(R"("stop_token_ids":[5,0])")->params.stop_token_ids == std::vector<uint32_t>{5, 0}));
  check_error(chat(R"("stop_token_ids":[-1])"), 400, "stop_token_ids[0]", "invalid_value");
  check_error(chat(R"("stop_token_ids":5)"), 400, "stop_token_ids", "invalid_type");
}

BOOST_AUTO_TEST_CASE(stop_allows_at_most_32_strings) {
  std::string ok = "\"stop\":[";
  for (int i = 0; i < 32; ++i)
    ok += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
  BOOST_TEST(test::ok(chat(ok + "]")));
  check_error(chat(ok + ",\"x\"]"), 400, "stop", "invalid_value");
  check_error(chat(R"("stop":["a",1])"), 400, "stop[1]", "invalid_type");
  check_error(chat(R"("stop":{"a":1})"), 400, "stop", "invalid_type");
}

BOOST_AUTO_TEST_CASE(stream_options_need_stream_true) {
  check_error(chat(R"("stream_options":{"include_usage":true})"), 400, "stream_options",
              "invalid_value");
  check_error(chat(R"("stream":true,"stream_options":{"include_usage":1})"), 400,
              "stream_options.include_usage", "invalid_type");
  check_error(chat(R"("stream":"yes")"), 400, "stream", "invalid_type");
  auto r = chat(R"("stream":true,"stream_options":{})");
  BOOST_REQUIRE(r);
  BOOST_TEST(!r->params.include_usage);
}

BOOST_AUTO_TEST_CASE(empty_user_is_rejected) {
  check_error(chat(R"("user":"")"), 400, "user", "invalid_value");
  check_error(chat(R"("ignore_eos":"no")"), 400, "ignore_eos", "invalid_type");
}

BOOST_AUTO_TEST_CASE(unimplemented_fields_are_accepted_only_at_neutral_values) {
  BOOST_TEST(test::ok(chat(R"("frequency_penalty":0,"presence_penalty":0,"repetition_penalty":1,
                     "min_p":0,"logit_bias":{},"logprobs":false,"tools":[],
                     "tool_choice":"none","response_format":{"type":"text"},
                     "parallel_tool_calls":true)")));
  check_error(chat(R"("response_format":{"type":"json_object"},"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required")"),
              400, "response_format", "invalid_value");
}

namespace {

const std::string weather_tool =
  R"({"type":"function","function":{"name":"get_weather","description":"d","strict":true,
      "parameters":{"type":"object","properties":{"city":{"type":"string"},
      "days":{"type":["integer","null"]}},"required":["city"]}}})";

} // namespace

BOOST_AUTO_TEST_CASE(tools_and_tool_choice_are_read) {
  auto r = chat(R"("tools":[)" + weather_tool + R"(])");
  BOOST_REQUIRE(test::ok(r));
  BOOST_TEST((r->tool_choice == tool_choice_mode::automatic));
  BOOST_TEST(r->parallel_tool_calls);
  BOOST_REQUIRE_EQUAL(r->chat.tools.size(), 1u);
  // Key order as sent (the template prints the schema with tojson).
  BOOST_TEST(r->chat.tools[0]["function"].dump().starts_with(R"({"name":"get_weather","description")"));
  r = chat(R"("tools":[)" + weather_tool + R"(],"tool_choice":"required","parallel_tool_calls":false)");
  BOOST_REQUIRE(test::ok(r));
  BOOST_TEST((r->tool_choice == tool_choice_mode::required));
  BOOST_TEST(!r->parallel_tool_calls);
  r = chat(R"("tools":[)" + weather_tool +
           R"(],"tool_choice":{"type":"function","function":{"name":"get_weather"}})");
  BOOST_REQUIRE(test::ok(r));
  BOOST_TEST((r->tool_choice == tool_choice_mode::named));
  BOOST_TEST(r->tool_name == "get_weather");
  r = chat(R"("tools":[)" + weather_tool + R"(],"tool_choice":"none")");
  BOOST_REQUIRE(test::ok(r));
  BOOST_TEST((r->tool_choice == tool_choice_mode::none));
  BOOST_TEST(r->chat.tools.size() == 1u); // still rendered, as vLLM
  BOOST_TEST((chat(R"("tool_choice":"auto")")->tool_choice == tool_choice_mode::none));
}

BOOST_AUTO_TEST_CASE(bad_tools_are_400_naming_the_field) {
  check_error(chat(R"("tools":{})"), 400, "tools", "invalid_type");
  check_error(chat(R"("tools":[{"type":"retrieval"}])"), 400, "tools[0].type", "invalid_value");
  check_error(chat(R"("tools":[{"type":"function"}])"), 400, "tools[0].function",
              "missing_required_parameter");
  check_error(chat(R"("tools":[{"type":"function","function":{}}])"), 400, "tools[0].function.name",
              "missing_required_parameter");
  check_error(chat(R"("tools":[{"type":"function","function":{"name":"a b"}}])"), 400,
              "tools[0].function.name", "invalid_value");
  check_error(chat(R"("tools":[{"type":"function","function":{"name":"f"}},
                               {"type":"function","function":{"name":"f"}}])"),
              400, "tools[1].function.name", "invalid_value");
  check_error(chat(R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])"), 400,
              "tools[0].function.parameters", "invalid_type");
  check_error(chat(R"("tools":[{"type":"function","function":{"name":"f","parameters":
                   {"type":"object","properties":{"x":{"type":"str"}}}}}])"),
              400, "tools[0].function.parameters.properties.x.type", "invalid_value");
  check_error(chat(R"("tools":[{"type":"function","function":{"name":"f","parameters":
                   {"type":"object","properties":{"x":{"type":"array","items":{"type":5}}}}}}])"),
              400, "tools[0].function.parameters.properties.x.items.type", "invalid_value");
  check_error(chat(R"("tools":[{"type":"function","function":{"name":"f","strict":"yes"}}])"), 400,
              "tools[0].function.strict", "invalid_type");
}

BOOST_AUTO_TEST_CASE(bad_tool_choice_is_400) {
  const std::string tools = R"("tools":[)" + weather_tool + "],";
  check_error(chat(tools + R"("tool_choice":"always")"), 400, "tool_choice", "invalid_value");
  check_error(chat(tools + R"("tool_choice":1)"), 400, "tool_choice", "invalid_type");
  check_error(chat(tools + R"("tool_choice":{"type":"function","function":{"name":"nope"}})"), 400,
              "tool_choice.function.name", "invalid_value");
  check_error(chat(tools + R"("tool_choice":{"type":"function"})"), 400, "tool_choice.function",
              "missing_required_parameter");
  check_error(chat(R"("tool_choice":"required")"), 400, "tool_choice", "invalid_value");
  check_error(chat(R"("tool_choice":{"type":"function","function":{"name":"f"}})"), 400,
              "tool_choice.function.name", "invalid_value");
  check_error(chat(tools + R"("parallel_tool_calls":"yes")"), 400, "parallel_tool_calls", "invalid_type");
}

BOOST_AUTO_TEST_CASE(tool_history_reaches_the_template_as_vllm_passes_it) {
  auto r = parse_chat_request(R"({"model":"m","messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
        "function":{"name":"get_weather","arguments":"{\"city\": \"Paris\", \"days\": 2}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"21C"}]},
      {"role":"assistant","tool_calls":[{"id":"c2","type":"function",
        "function":{"name":"f","arguments":"not json"}}]}]})");
  BOOST_REQUIRE(test::ok(r));
  const auto& m = r->chat.messages;
  BOOST_TEST(m[1]["content"] == "");
  BOOST_TEST(m[1]["tool_calls"][0]["function"]["arguments"].dump() == R"({"city":"Paris","days":2})");
  BOOST_TEST(m[1]["tool_calls"][0]["id"] == "call_1");
  BOOST_TEST(m[2]["content"] == "21C");
  BOOST_TEST(m[2]["tool_call_id"] == "call_1");
  BOOST_TEST(m[3]["tool_calls"][0]["function"]["arguments"] == "not json"); // kept as sent
}

BOOST_AUTO_TEST_CASE(chat_template_kwargs_must_be_an_object_of_free_names) {
  auto r = chat(R"("chat_template_kwargs":{"enable_thinking":false,"a":[1]})");
  BOOST_REQUIRE(test::ok(r));
  BOOST_TEST(r->chat.kwargs.dump() == R"({"enable_thinking":false,"a":[1]})");
  check_error(chat(R"("chat_template_kwargs":[1])"), 400, "chat_template_kwargs", "invalid_type");
  check_error(chat(R"("chat_template_kwargs":{"tools":[]})"), 400, "chat_template_kwargs",
              "invalid_value");
}

BOOST_AUTO_TEST_SUITE_END()
