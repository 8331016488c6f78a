#include "runtime/openai/responses_api.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;
using nlohmann::json;

namespace {

json chat_of(std::string_view body) {
  auto r = translate_responses_request(body);
  BOOST_REQUIRE(test::ok(r));
  return json::parse(r->chat_body);
}

dialect_request translate(std::string_view body) {
  auto r = translate_responses_request(body);
  BOOST_REQUIRE(test::ok(r));
  return std::move(*r);
}

// A chat.completion.chunk as response.cpp writes them (the fields the dialect reads).
std::string chunk(json delta, json finish = nullptr) {
  return json{{"id", "chatcmpl-abc"}, {"object", "chat.completion.chunk"}, {"created", 7}, {"model", "m"},
              {"choices", json::array({json{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}})}}
    .dump();
}

/// A chunk whose choice carries chat logprobs for `tokens` (logprob -0.5 each,
/// one alternative).
std::string chunk_lp(json delta, const std::vector<std::string>& tokens) {
  json content = json::array();
  for (const auto& t : tokens) {
    json bytes = json::array();
    for (unsigned char c : t)
      bytes.push_back(c);
    content.push_back({{"token", t}, {"logprob", -0.5}, {"bytes", bytes},
                       {"top_logprobs", json::array({{{"token", t}, {"logprob", -0.5}, {"bytes", bytes}}})}});
  }
  auto j = json::parse(chunk(std::move(delta)));
  j["choices"][0]["logprobs"] = {{"content", content}};
  return j.dump();
}

std::string usage_chunk(int in, int out) {
  return json{{"id", "chatcmpl-abc"}, {"object", "chat.completion.chunk"}, {"created", 7}, {"model", "m"},
              {"choices", json::array()},
              {"usage", {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}}}}
    .dump();
}

/// The event types of `events`, checking each data's type and sequence numbers from `seq`.
std::vector<std::string> types(const std::vector<sse_event>& events, int64_t& seq) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    auto j = json::parse(e.data);
    BOOST_TEST(j["type"] == e.event);
    BOOST_TEST(j["sequence_number"] == seq++);
    out.push_back(e.event);
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(responses_api)

BOOST_AUTO_TEST_CASE(string_input_and_instructions) {
  auto chat = chat_of(R"({"model":"m","input":"Hi","instructions":"Be brief.","max_output_tokens":5,
                          "temperature":0,"top_p":0.5})");
  BOOST_TEST(chat["model"] == "m");
  BOOST_TEST(chat["messages"] == json::parse(R"([{"role":"system","content":"Be brief."},
                                                {"role":"user","content":"Hi"}])"));
  BOOST_TEST(chat["max_completion_tokens"] == 5);
  BOOST_TEST(chat["temperature"] == 0);
  BOOST_TEST(chat["top_p"] == 0.5);
  BOOST_TEST(!chat.contains("stream"));
}

BOOST_AUTO_TEST_CASE(items_become_messages_tool_calls_and_tool_results) {
  auto chat = chat_of(R"({"model":"m","input":[
      {"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},
      {"type":"message","role":"assistant","content":[{"type":"output_text","text":"c"}]},
      {"type":"function_call","call_id":"call_1","name":"f","arguments":"{\"x\":1}"},
      {"type":"function_call","call_id":"call_2","name":"g","arguments":"{}"},
      {"type":"function_call_output","call_id":"call_1","output":"42"},
      {"type":"reasoning","id":"rs_1","summary":[]}]})");
  BOOST_TEST(chat["messages"] == json::parse(R"([
      {"role":"user","content":"a\nb"},
      {"role":"assistant","content":"c"},
      {"role":"assistant","content":null,"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},
        {"id":"call_2","type":"function","function":{"name":"g","arguments":"{}"}}]},
      {"role":"tool","tool_call_id":"call_1","content":"42"}])"));
}

BOOST_AUTO_TEST_CASE(tools_are_flattened_to_chat_shape) {
  auto chat = chat_of(R"({"model":"m","input":"x",
      "tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true}],
      "tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false})");
  BOOST_TEST(chat["tools"] == json::parse(R"([{"type":"function","function":
      {"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}])"));
  BOOST_TEST(chat["tool_choice"] == json::parse(R"({"type":"function","function":{"name":"f"}})"));
  BOOST_TEST(chat["parallel_tool_calls"] == false);
  BOOST_TEST(chat_of(R"({"model":"m","input":"x","tool_choice":"required"})")["tool_choice"] == "required");
}

BOOST_AUTO_TEST_CASE(text_format_becomes_response_format) {
  auto chat = chat_of(R"({"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"s",
      "schema":{"type":"object"},"strict":true}}})");
  BOOST_TEST(chat["response_format"] == json::parse(R"({"type":"json_schema","json_schema":
      {"name":"s","schema":{"type":"object"},"strict":true}})"));
  BOOST_TEST(chat_of(R"({"model":"m","input":"x","text":{"format":{"type":"json_object"}}})")["response_format"] ==
             json::parse(R"({"type":"json_object"})"));
  BOOST_TEST(!chat_of(R"({"model":"m","input":"x","text":{"format":{"type":"text"}}})").contains("response_format"));
}

BOOST_AUTO_TEST_CASE(stream_asks_chat_for_usage) {
  auto r = translate(R"({"model":"m","input":"x","stream":true})");
  BOOST_TEST(r.stream);
  auto chat = json::parse(r.chat_body);
  BOOST_TEST(chat["stream"] == true);
  BOOST_TEST(chat["stream_options"]["include_usage"] == true);
}

BOOST_AUTO_TEST_CASE(bad_requests_name_the_responses_field) {
  check_error(translate_responses_request(R"({"model":"m"})"), 400, "input", "missing_required_parameter");
  check_error(translate_responses_request(R"({"input":"x"})"), 400, "model", "missing_required_parameter");
  check_error(translate_responses_request(R"({"model":"m","input":5})"), 400, "input", "invalid_type");
  check_error(translate_responses_request(R"({"model":"m","input":[]})"), 400, "input", "invalid_value");
  check_error(translate_responses_request(R"({"model":"m","input":[{"role":"bot","content":"x"}]})"), 400,
              "input[0].role", "invalid_value");
  check_error(translate_responses_request(
                R"({"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"u"}]}]})"),
              400, "input[0].content[0].type", "unsupported_value");
  check_error(translate_responses_request(R"({"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]})"),
              400, "input[0].call_id", "missing_required_parameter");
  check_error(translate_responses_request(R"({"model":"m","input":"x","tools":[{"type":"web_search"}]})"), 400,
              "tools[0].type", "unsupported_value");
  check_error(translate_responses_request(R"({"model":"m","input":"x","previous_response_id":"resp_1"})"), 400,
              "previous_response_id", "unsupported_value");
  check_error(translate_responses_request(R"({"model":"m","input":"x","max_output_tokens":0})"), 400,
              "max_output_tokens", "invalid_value");
  check_error(translate_responses_request(R"({"model":"m","input":"x","text":{"format":{"type":"xml"}}})"), 400,
              "text.format.type", "invalid_value");
  check_error(translate_responses_request(R"({"model":"m","input":"x","stream":"yes"})"), 400, "stream",
              "invalid_type");
  check_error(translate_responses_request("[1]"), 400, "", "invalid_type");
  check_error(translate_responses_request("{"), 400, "", "invalid_json");
}

BOOST_AUTO_TEST_CASE(body_of_a_text_answer) {
  auto r = translate(R"({"model":"m","input":"x","instructions":"i","metadata":{"k":"v"}})");
  auto body = r.dialect->body(R"({"id":"chatcmpl-abc","object":"chat.completion","created":7,"model":"m",
      "choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null},"logprobs":null,
                  "finish_reason":"stop"}],
      "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}})");
  BOOST_REQUIRE(test::ok(body));
  auto j = json::parse(*body);
  BOOST_TEST(j["id"] == "resp_abc");
  BOOST_TEST(j["object"] == "response");
  BOOST_TEST(j["created_at"] == 7);
  BOOST_TEST(j["status"] == "completed");
  BOOST_TEST(j["model"] == "m");
  BOOST_TEST(j["instructions"] == "i");
  BOOST_TEST(j["metadata"] == json({{"k", "v"}}));
  BOOST_TEST(j["output"] == json::parse(R"([{"id":"msg_abc","type":"message","status":"completed","role":"assistant",
      "content":[{"type":"output_text","text":"Hello","annotations":[],"logprobs":[]}]}])"));
  BOOST_TEST(j["usage"] == json::parse(R"({"input_tokens":3,"input_tokens_details":{"cached_tokens":1,"cache_write_tokens":0},
      "output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5})"));
  BOOST_TEST(j["incomplete_details"].is_null());
}

BOOST_AUTO_TEST_CASE(body_of_tool_calls_and_of_a_cut_answer) {
  auto r = translate(R"({"model":"m","input":"x"})");
  auto body = r.dialect->body(R"({"id":"chatcmpl-abc","created":7,"model":"m",
      "choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
        {"id":"call_9","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],
      "usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}})");
  BOOST_REQUIRE(test::ok(body));
  auto j = json::parse(*body);
  BOOST_TEST(j["output"] == json::parse(R"([{"id":"fc_abc_0","type":"function_call","status":"completed",
      "arguments":"{\"a\":1}","call_id":"call_9","name":"f"}])"));
  auto cut = translate(R"({"model":"m","input":"x","max_output_tokens":2})");
  auto cut_body = cut.dialect->body(R"({"id":"chatcmpl-abc","created":7,"model":"m",
      "choices":[{"index":0,"message":{"role":"assistant","content":"He"},"finish_reason":"length"}]})");
  BOOST_REQUIRE(test::ok(cut_body));
  auto c = json::parse(*cut_body);
  BOOST_TEST(c["status"] == "incomplete");
  BOOST_TEST(c["incomplete_details"]["reason"] == "max_output_tokens");
  BOOST_TEST(c["max_output_tokens"] == 2);
}

BOOST_AUTO_TEST_CASE(stream_of_text) {
  auto r = translate(R"({"model":"m","input":"x","stream":true})");
  auto& d = *r.dialect;
  int64_t seq = 0;
  using v = std::vector<std::string>;
  BOOST_TEST(types(d.push(chunk({{"role", "assistant"}, {"content", ""}})), seq) ==
             (v{"response.created", "response.in_progress"}), boost::test_tools::per_element());
  auto first = d.push(chunk({{"content", "Hel"}}));
  BOOST_TEST(types(first, seq) ==
             (v{"response.output_item.added", "response.content_part.added", "response.output_text.delta"}),
             boost::test_tools::per_element());
  BOOST_TEST(json::parse(first[2].data)["delta"] == "Hel");
  BOOST_TEST(json::parse(first[2].data)["item_id"] == "msg_abc");
  BOOST_TEST(types(d.push(chunk({{"content", "lo"}})), seq) == (v{"response.output_text.delta"}),
             boost::test_tools::per_element());
  BOOST_TEST(d.push(chunk(json::object(), "stop")).empty());
  BOOST_TEST(d.push(usage_chunk(3, 2)).empty());
  auto end = d.finish();
  BOOST_TEST(types(end, seq) == (v{"response.output_text.done", "response.content_part.done",
                                   "response.output_item.done", "response.completed"}),
             boost::test_tools::per_element());
  BOOST_TEST(json::parse(end[0].data)["text"] == "Hello");
  auto done = json::parse(end[3].data)["response"];
  BOOST_TEST(done["status"] == "completed");
  BOOST_TEST(done["output"][0]["content"][0]["text"] == "Hello");
  BOOST_TEST(done["usage"]["output_tokens"] == 2);
}

BOOST_AUTO_TEST_CASE(stream_of_text_then_a_tool_call) {
  auto r = translate(R"({"model":"m","input":"x","stream":true})");
  auto& d = *r.dialect;
  int64_t seq = 0;
  using v = std::vector<std::string>;
  (void)types(d.push(chunk({{"role", "assistant"}, {"content", ""}})), seq);
  (void)types(d.push(chunk({{"content", "ok"}})), seq);
  auto call = d.push(chunk({{"tool_calls", json::parse(R"([{"index":0,"id":"call_1","type":"function",
                                                             "function":{"name":"f","arguments":""}}])")}}));
  BOOST_TEST(types(call, seq) == (v{"response.output_text.done", "response.content_part.done",
                                    "response.output_item.done", "response.output_item.added"}),
             boost::test_tools::per_element());
  auto added = json::parse(call[3].data);
  BOOST_TEST(added["output_index"] == 1);
  BOOST_TEST(added["item"]["call_id"] == "call_1");
  BOOST_TEST(added["item"]["name"] == "f");
  auto args = d.push(chunk({{"tool_calls", json::parse(R"([{"index":0,"function":{"arguments":"{\"a\":"}}])")}}));
  auto args2 = d.push(chunk({{"tool_calls", json::parse(R"([{"index":0,"function":{"arguments":"1}"}}])")}}));
  BOOST_TEST(types(args, seq) == (v{"response.function_call_arguments.delta"}), boost::test_tools::per_element());
  BOOST_TEST(types(args2, seq) == (v{"response.function_call_arguments.delta"}), boost::test_tools::per_element());
  (void)d.push(chunk(json::object(), "tool_calls"));
  auto end = d.finish();
  BOOST_TEST(types(end, seq) == (v{"response.function_call_arguments.done", "response.output_item.done",
                                   "response.completed"}),
             boost::test_tools::per_element());
  BOOST_TEST(json::parse(end[0].data)["arguments"] == "{\"a\":1}");
  auto out = json::parse(end[2].data)["response"]["output"];
  BOOST_TEST(out.size() == 2u);
  BOOST_TEST(out[1]["type"] == "function_call");
  BOOST_TEST(out[1]["arguments"] == "{\"a\":1}");
}

BOOST_AUTO_TEST_CASE(stream_cut_by_length_is_incomplete) {
  auto r = translate(R"({"model":"m","input":"x","stream":true})");
  auto& d = *r.dialect;
  (void)d.push(chunk({{"role", "assistant"}, {"content", ""}}));
  (void)d.push(chunk({{"content", "a"}}, "length"));
  auto end = d.finish();
  BOOST_TEST(end.back().event == "response.incomplete");
  BOOST_TEST(json::parse(end.back().data)["response"]["incomplete_details"]["reason"] == "max_output_tokens");
  auto err = d.stream_error(api_error{500, "server_error", "boom", "", ""});
  BOOST_TEST(err.event == "error");
  BOOST_TEST(json::parse(err.data)["message"] == "boom");
}

BOOST_AUTO_TEST_CASE(include_logprobs_and_reasoning_effort_reach_chat) {
  auto chat = chat_of(R"({"model":"m","input":"x","include":["message.output_text.logprobs"],"top_logprobs":3})");
  BOOST_TEST(chat["logprobs"] == true);
  BOOST_TEST(chat["top_logprobs"] == 3);
  auto plain = chat_of(R"({"model":"m","input":"x","top_logprobs":3})");
  BOOST_TEST(!plain.contains("logprobs")); // logprobs come back only when included, as OpenAI's
  BOOST_TEST(!plain.contains("top_logprobs"));
  auto off = chat_of(R"({"model":"m","input":"x","reasoning":{"effort":"none","summary":"auto"}})");
  BOOST_TEST(off["chat_template_kwargs"] == json::parse(R"({"enable_thinking":false})"));
  BOOST_TEST(!chat_of(R"({"model":"m","input":"x","reasoning":{"effort":"high"}})").contains("chat_template_kwargs"));
  auto kw = chat_of(R"({"model":"m","input":"x","reasoning":{"effort":"none"},
                        "chat_template_kwargs":{"enable_thinking":true,"k":1}})");
  BOOST_TEST(kw["chat_template_kwargs"] == json::parse(R"({"enable_thinking":true,"k":1})"));
  check_error(translate_responses_request(R"({"model":"m","input":"x","include":["reasoning.encrypted_content"]})"),
              400, "include[0]", "unsupported_value");
  check_error(translate_responses_request(R"({"model":"m","input":"x","include":"x"})"), 400, "include",
              "invalid_type");
  check_error(translate_responses_request(R"({"model":"m","input":"x","top_logprobs":21})"), 400, "top_logprobs",
              "invalid_value");
  check_error(translate_responses_request(R"({"model":"m","input":"x","reasoning":{"effort":"max"}})"), 400,
              "reasoning.effort", "invalid_value");
}

BOOST_AUTO_TEST_CASE(body_with_reasoning_and_logprobs) {
  auto r = translate(R"({"model":"m","input":"x","include":["message.output_text.logprobs"],"top_logprobs":1,
                         "reasoning":{"effort":"low"}})");
  auto body = r.dialect->body(R"({"id":"chatcmpl-abc","created":7,"model":"m",
      "choices":[{"index":0,"message":{"role":"assistant","content":"Hi","reasoning_content":"hm"},
                  "logprobs":{"content":[{"token":"Hi","logprob":-0.25,"bytes":[72,105],
                                          "top_logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]}]},
                  "finish_reason":"stop"}],
      "usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"completion_tokens_details":{"reasoning_tokens":2}}})");
  BOOST_REQUIRE(test::ok(body));
  auto j = json::parse(*body);
  BOOST_TEST(j["output"] == json::parse(R"([
      {"id":"rs_abc","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"hm"}],
       "encrypted_content":null,"status":"completed"},
      {"id":"msg_abc","type":"message","status":"completed","role":"assistant",
       "content":[{"type":"output_text","text":"Hi","annotations":[],"logprobs":[
         {"token":"Hi","logprob":-0.25,"bytes":[72,105],"top_logprobs":[{"token":"Hi","logprob":-0.25,"bytes":[72,105]}]}]}]}])"));
  BOOST_TEST(j["usage"]["output_tokens_details"]["reasoning_tokens"] == 2);
  BOOST_TEST(j["reasoning"] == json::parse(R"({"effort":"low","summary":null})"));
  BOOST_TEST(j["top_logprobs"] == 1);
}

BOOST_AUTO_TEST_CASE(stream_of_reasoning_then_text_with_logprobs) {
  auto r = translate(R"({"model":"m","input":"x","stream":true,"include":["message.output_text.logprobs"]})");
  auto& d = *r.dialect;
  int64_t seq = 0;
  using v = std::vector<std::string>;
  (void)types(d.push(chunk({{"role", "assistant"}, {"content", ""}})), seq);
  auto think = d.push(chunk_lp({{"reasoning_content", "hm"}}, {"<think>", "hm"}));
  BOOST_TEST(types(think, seq) == (v{"response.output_item.added", "response.content_part.added",
                                     "response.reasoning_text.delta"}),
             boost::test_tools::per_element());
  BOOST_TEST(json::parse(think[0].data)["item"]["type"] == "reasoning");
  BOOST_TEST(json::parse(think[0].data)["output_index"] == 0);
  BOOST_TEST(json::parse(think[1].data)["part"] == json::parse(R"({"type":"reasoning_text","text":""})"));
  BOOST_TEST(json::parse(think[2].data)["delta"] == "hm");
  BOOST_TEST(json::parse(think[2].data)["item_id"] == "rs_abc");
  auto text = d.push(chunk_lp({{"content", "Hi"}}, {"</think>", "Hi"}));
  BOOST_TEST(types(text, seq) == (v{"response.reasoning_text.done", "response.content_part.done",
                                    "response.output_item.done", "response.output_item.added",
                                    "response.content_part.added", "response.output_text.delta"}),
             boost::test_tools::per_element());
  BOOST_TEST(json::parse(text[0].data)["text"] == "hm");
  BOOST_TEST(json::parse(text[3].data)["output_index"] == 1);
  auto delta = json::parse(text[5].data);
  BOOST_TEST(delta["output_index"] == 1);
  // Every token so far, the reasoning's included, without bytes (ResponseLogProb).
  BOOST_TEST(delta["logprobs"].size() == 4u);
  BOOST_TEST(delta["logprobs"][3] == json::parse(R"({"token":"Hi","logprob":-0.5,"top_logprobs":[{"token":"Hi","logprob":-0.5}]})"));
  (void)d.push(chunk_lp(json::object(), {"<end>"}));
  (void)d.push(chunk(json::object(), "stop"));
  auto end = d.finish();
  BOOST_TEST(types(end, seq) == (v{"response.output_text.done", "response.content_part.done",
                                   "response.output_item.done", "response.completed"}),
             boost::test_tools::per_element());
  auto done_lps = json::parse(end[0].data)["logprobs"];
  BOOST_TEST(done_lps.size() == 5u); // with bytes, the end token included
  BOOST_TEST(done_lps[4]["bytes"] == json::parse("[60,101,110,100,62]"));
  auto out = json::parse(end[3].data)["response"]["output"];
  BOOST_TEST(out.size() == 2u);
  BOOST_TEST(out[0]["content"][0]["text"] == "hm");
  BOOST_TEST(out[1]["content"][0]["logprobs"] == done_lps);
}

BOOST_AUTO_TEST_SUITE_END()
