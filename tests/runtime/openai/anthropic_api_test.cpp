#include "runtime/openai/anthropic_api.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;
using nlohmann::json;

namespace {

dialect_request translate(std::string_view body) {
  auto r = translate_anthropic_request(body);
  BOOST_REQUIRE(test::ok(r));
  return std::move(*r);
}

json chat_of(std::string_view body) { return json::parse(translate(body).chat_body); }

std::string chunk(json delta, json finish = nullptr) {
  return json{{"id", "chatcmpl-abc"}, {"object", "chat.completion.chunk"}, {"created", 7}, {"model", "m"},
              {"choices", json::array({json{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}}
    .dump();
}

std::vector<std::string> types(const std::vector<sse_event>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    BOOST_TEST(json::parse(e.data)["type"] == e.event);
    out.push_back(e.event);
  }
  return out;
}

using v = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(anthropic_api)

BOOST_AUTO_TEST_CASE(system_messages_and_sampling) {
  auto chat = chat_of(R"({"model":"m","max_tokens":16,"system":[{"type":"text","text":"S"}],
      "messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":[{"type":"text","text":"Yo"}]}],
      "stop_sequences":["\n\n"],"temperature":0.5,"top_p":0.9,"top_k":4})");
  BOOST_TEST(chat["messages"] == json::parse(R"([{"role":"system","content":"S"},{"role":"user","content":"Hi"},
                                                {"role":"assistant","content":"Yo"}])"));
  BOOST_TEST(chat["max_tokens"] == 16);
  BOOST_TEST(chat["stop"] == json::parse(R"(["\n\n"])"));
  BOOST_TEST(chat["temperature"] == 0.5);
  BOOST_TEST(chat["top_k"] == 4);
}

BOOST_AUTO_TEST_CASE(tool_use_and_tool_result_blocks) {
  auto chat = chat_of(R"({"model":"m","max_tokens":8,"messages":[
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":[{"type":"text","text":"checking"},
                                     {"type":"tool_use","id":"toolu_1","name":"w","input":{"city":"Paris"}}]},
      {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]},
                                {"type":"text","text":"thanks"}]}],
      "tools":[{"name":"w","description":"d","input_schema":{"type":"object"}}],
      "tool_choice":{"type":"any","disable_parallel_tool_use":true}})");
  BOOST_TEST(chat["messages"] == json::parse(R"([
      {"role":"user","content":"weather?"},
      {"role":"assistant","content":"checking","tool_calls":[
        {"id":"toolu_1","type":"function","function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}}]},
      {"role":"tool","tool_call_id":"toolu_1","content":"sunny"},
      {"role":"user","content":"thanks"}])"));
  BOOST_TEST(chat["tools"] == json::parse(R"([{"type":"function","function":{"name":"w","description":"d",
                                             "parameters":{"type":"object"}}}])"));
  BOOST_TEST(chat["tool_choice"] == "required");
  BOOST_TEST(chat["parallel_tool_calls"] == false);
  auto named = chat_of(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}],
                           "tool_choice":{"type":"tool","name":"w"}})");
  BOOST_TEST(named["tool_choice"] == json::parse(R"({"type":"function","function":{"name":"w"}})"));
}

BOOST_AUTO_TEST_CASE(bad_requests) {
  check_error(translate_anthropic_request(R"({"model":"m","messages":[{"role":"user","content":"x"}]})"), 400,
              "max_tokens", "missing_required_parameter");
  check_error(translate_anthropic_request(R"({"model":"m","max_tokens":0,"messages":[{"role":"user","content":"x"}]})"),
              400, "max_tokens", "invalid_value");
  check_error(translate_anthropic_request(R"({"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]})"),
              400, "messages[0].role", "invalid_value");
  check_error(translate_anthropic_request(
                R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]})"),
              400, "messages[0].content[0].type", "unsupported_value");
  check_error(translate_anthropic_request(
                R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tools":[{"name":"t"}]})"),
              400, "tools[0].input_schema", "missing_required_parameter");
  check_error(translate_anthropic_request(
                R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"x"}],"tool_choice":{"type":"all"}})"),
              400, "tool_choice.type", "invalid_value");
  check_error(translate_anthropic_request(R"({"model":"m","max_tokens":5,"messages":[]})"), 400, "messages",
              "invalid_value");
}

BOOST_AUTO_TEST_CASE(count_request_needs_no_max_tokens) {
  auto chat = translate_anthropic_count_request(R"({"model":"m","system":"S","messages":[{"role":"user","content":"x"}]})");
  BOOST_REQUIRE(test::ok(chat));
  BOOST_TEST(json::parse(*chat)["messages"].size() == 2u);
  BOOST_TEST(json::parse(anthropic_count_body(12)) == json({{"input_tokens", 12}}));
}

BOOST_AUTO_TEST_CASE(error_envelope) {
  auto j = json::parse(anthropic_error_body(api_error{400, "invalid_request_error", "bad", "x", "y"}));
  BOOST_TEST(j == json::parse(R"({"type":"error","error":{"type":"invalid_request_error","message":"bad"},
                                  "request_id":null})"));
  BOOST_TEST(json::parse(anthropic_error_body(api_error{404, "", "no", "", ""}))["error"]["type"] == "not_found_error");
  BOOST_TEST(json::parse(anthropic_error_body(api_error{503, "", "busy", "", ""}))["error"]["type"] == "overloaded_error");
  BOOST_TEST(json::parse(anthropic_error_body(api_error{500, "", "x", "", ""}))["error"]["type"] == "api_error");
}

BOOST_AUTO_TEST_CASE(body_with_text_and_tool_use) {
  auto r = translate(R"({"model":"m","max_tokens":8,"messages":[{"role":"user","content":"x"}]})");
  auto body = r.dialect->body(R"({"id":"chatcmpl-abc","created":7,"model":"m","choices":[{"index":0,
      "message":{"role":"assistant","content":"ok","tool_calls":[{"id":"call_1","type":"function",
      "function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})");
  BOOST_REQUIRE(test::ok(body));
  BOOST_TEST(json::parse(*body) == json::parse(R"({"id":"msg_abc","type":"message","role":"assistant","model":"m",
      "content":[{"type":"text","text":"ok","citations":null},
                 {"type":"tool_use","id":"call_1","name":"w","input":{"city":"Paris"},"caller":{"type":"direct"}}],
      "stop_reason":"tool_use","stop_sequence":null,"stop_details":null,"container":null,
      "usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":5,"output_tokens":3,
               "output_tokens_details":null,"server_tool_use":null,"cache_creation":null,"inference_geo":null,
               "service_tier":null}})"));
  auto cut = translate(R"({"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]})");
  auto cut_body = cut.dialect->body(R"({"id":"chatcmpl-abc","model":"m","choices":[{"index":0,
      "message":{"role":"assistant","content":"a"},"finish_reason":"length"}]})");
  BOOST_REQUIRE(test::ok(cut_body));
  BOOST_TEST(json::parse(*cut_body)["stop_reason"] == "max_tokens");
}

BOOST_AUTO_TEST_CASE(stream_of_text) {
  auto r = translate(R"({"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"x"}]})");
  BOOST_TEST(r.stream);
  BOOST_TEST(json::parse(r.chat_body)["stream_options"]["include_usage"] == true);
  auto& d = *r.dialect;
  auto start = d.push(chunk({{"role", "assistant"}, {"content", ""}}));
  BOOST_TEST(types(start) == (v{"message_start", "ping"}), boost::test_tools::per_element());
  BOOST_TEST(json::parse(start[0].data)["message"]["id"] == "msg_abc");
  auto text = d.push(chunk({{"content", "Hi"}}));
  BOOST_TEST(types(text) == (v{"content_block_start", "content_block_delta"}), boost::test_tools::per_element());
  BOOST_TEST(json::parse(text[1].data)["delta"] == json::parse(R"({"type":"text_delta","text":"Hi"})"));
  BOOST_TEST(types(d.push(chunk({{"content", "!"}}))) == (v{"content_block_delta"}), boost::test_tools::per_element());
  (void)d.push(chunk(json::object(), "stop"));
  (void)d.push(json{{"id", "chatcmpl-abc"}, {"choices", json::array()},
                    {"usage", {{"prompt_tokens", 4}, {"completion_tokens", 2}}}}.dump());
  auto end = d.finish();
  BOOST_TEST(types(end) == (v{"content_block_stop", "message_delta", "message_stop"}), boost::test_tools::per_element());
  auto delta = json::parse(end[1].data);
  BOOST_TEST(delta["delta"]["stop_reason"] == "end_turn");
  BOOST_TEST(delta["usage"]["output_tokens"] == 2);
}

BOOST_AUTO_TEST_CASE(stream_of_a_tool_call) {
  auto r = translate(R"({"model":"m","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"x"}]})");
  auto& d = *r.dialect;
  (void)d.push(chunk({{"role", "assistant"}, {"content", ""}}));
  auto open = d.push(chunk({{"tool_calls", json::parse(R"([{"index":0,"id":"call_1","type":"function",
                                                            "function":{"name":"w","arguments":""}}])")}}));
  BOOST_TEST(types(open) == (v{"content_block_start"}), boost::test_tools::per_element());
  BOOST_TEST(json::parse(open[0].data)["content_block"] ==
             json::parse(R"({"type":"tool_use","id":"call_1","name":"w","input":{},"caller":{"type":"direct"}})"));
  BOOST_TEST(json::parse(open[0].data)["index"] == 0);
  auto args = d.push(chunk({{"tool_calls", json::parse(R"([{"index":0,"function":{"arguments":"{\"a\":1}"}}])")}}));
  BOOST_TEST(types(args) == (v{"content_block_delta"}), boost::test_tools::per_element());
  BOOST_TEST(json::parse(args[0].data)["delta"] == json::parse(R"({"type":"input_json_delta","partial_json":"{\"a\":1}"})"));
  (void)d.push(chunk(json::object(), "tool_calls"));
  auto end = d.finish();
  BOOST_TEST(types(end) == (v{"content_block_stop", "message_delta", "message_stop"}), boost::test_tools::per_element());
  BOOST_TEST(json::parse(end[1].data)["delta"]["stop_reason"] == "tool_use");
  auto err = d.stream_error(api_error{500, "server_error", "boom", "", ""});
  BOOST_TEST(err.event == "error");
  BOOST_TEST(json::parse(err.data)["error"]["type"] == "api_error");
}

BOOST_AUTO_TEST_SUITE_END()
