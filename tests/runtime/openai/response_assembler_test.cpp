// One request's choices assembled from interleaved engine chunks: per-choice
// text, stop tokens and stop strings, logprobs with bytes and offsets, stream
// payloads with their index, the unary body, usage over all choices.
#include "runtime/openai/response_assembler.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using nlohmann::json;
using protocol::engine_output;
using protocol::finish_reason;

namespace {

const tok::byte_tokenizer tk;
const response_meta meta{"chatcmpl-1", 7, "m"};

engine_output chunk(uint32_t index, std::string_view text, finish_reason choice_end = finish_reason::none,
                    finish_reason stream_end = finish_reason::none, bool logprobs = false) {
  engine_output out;
  out.index = index;
  for (unsigned char c : text) {
    out.token_ids.push_back(c);
    if (logprobs)
      out.logprobs.push_back({-0.5f, {{c, -0.5f}, {'z', -2.0f}}});
  }
  out.choice_finish = choice_end;
  out.finish = stream_end;
  return out;
}

response_assembler::options opts(bool chat, bool stream, uint32_t n, bool logprobs = false) {
  response_assembler::options o;
  o.chat = chat;
  o.stream = stream;
  o.n = n;
  o.logprobs = logprobs;
  o.stop_token_ids = {tok::byte_tokenizer::eos_id};
  o.prompt_tokens = 4;
  return o;
}

} // namespace

BOOST_AUTO_TEST_SUITE(response_assembler_suite)

BOOST_AUTO_TEST_CASE(interleaved_choices_make_one_body_with_usage_over_all) {
  response_assembler a{tk, meta, opts(true, false, 2, true)};
  const auto none = finish_reason::none;
  BOOST_TEST(!a.push(chunk(1, "xy", none, none, true))->done);
  BOOST_TEST(!a.push(chunk(0, "ab", none, none, true))->done);
  auto eos = chunk(1, "z", none, none, true);
  eos.token_ids.push_back(tok::byte_tokenizer::eos_id);
  eos.logprobs.push_back({-0.1f, {}});
  eos.choice_finish = finish_reason::stop;
  BOOST_TEST(!a.push(eos)->done);
  auto last = a.push(chunk(0, "c", none, finish_reason::length, true));
  BOOST_TEST(last->done);
  BOOST_TEST(!last->cancel_backend);
  auto j = json::parse(a.body());
  BOOST_TEST(j["choices"][0]["message"]["content"] == "abc");
  BOOST_TEST(j["choices"][0]["finish_reason"] == "length");
  BOOST_TEST(j["choices"][1]["message"]["content"] == "xyz"); // EOS: counted, no text
  BOOST_TEST(j["choices"][1]["finish_reason"] == "stop");
  BOOST_TEST(j["choices"][1]["logprobs"]["content"].size() == 3u); // ... and no logprob entry
  BOOST_TEST(j["choices"][1]["logprobs"]["content"][2]["token"] == "z");
  BOOST_TEST(j["usage"]["completion_tokens"] == 7); // 3 + 4 with the EOS
  BOOST_TEST(j["usage"]["prompt_tokens"] == 4);    // once
}

BOOST_AUTO_TEST_CASE(stream_payloads_carry_their_choice_and_each_finish_once) {
  response_assembler a{tk, meta, opts(true, true, 2)};
  const auto open = a.opening();
  BOOST_REQUIRE_EQUAL(open.size(), 2u);
  BOOST_TEST(json::parse(open[1])["choices"][0]["index"] == 1);
  BOOST_TEST(json::parse(open[1])["choices"][0]["delta"]["role"] == "assistant");
  auto u = a.push(chunk(1, "hi", finish_reason::stop));
  BOOST_REQUIRE_EQUAL(u->events.size(), 2u);
  BOOST_TEST(json::parse(u->events[0])["choices"][0]["delta"]["content"] == "hi");
  BOOST_TEST(json::parse(u->events[1])["choices"][0]["index"] == 1);
  BOOST_TEST(json::parse(u->events[1])["choices"][0]["finish_reason"] == "stop");
  // The stream's end also ends choice 0, which the backend did not end itself.
  u = a.push(chunk(0, "", finish_reason::none, finish_reason::length));
  BOOST_REQUIRE_EQUAL(u->events.size(), 1u);
  BOOST_TEST(json::parse(u->events[0])["choices"][0]["index"] == 0);
  BOOST_TEST(json::parse(u->events[0])["choices"][0]["finish_reason"] == "length");
  BOOST_TEST(u->done);
}

BOOST_AUTO_TEST_CASE(stop_strings_on_every_choice_cancel_the_backend) {
  auto o = opts(false, false, 2);
  o.stop = {"!"};
  response_assembler a{tk, meta, o};
  auto u = a.push(chunk(0, "ab!cd"));
  BOOST_TEST(!u->done);
  u = a.push(chunk(1, "x!"));
  BOOST_TEST(u->done);
  BOOST_TEST(u->cancel_backend); // the backend still runs: nothing more is wanted
  auto j = json::parse(a.body());
  BOOST_TEST(j["choices"][0]["text"] == "ab");
  BOOST_TEST(j["choices"][1]["text"] == "x");
  BOOST_TEST(j["choices"][1]["finish_reason"] == "stop");
}

BOOST_AUTO_TEST_CASE(completion_logprobs_offsets_count_code_points_and_partial_tokens) {
  response_assembler a{tk, meta, opts(false, false, 1, true)};
  // "é" is two byte tokens: the first has no text of its own yet.
  auto u = a.push(chunk(0, "a\xC3\xA9" "b", finish_reason::none, finish_reason::length, true));
  BOOST_TEST(u->done);
  auto lp = json::parse(a.body())["choices"][0]["logprobs"];
  BOOST_TEST((lp["tokens"] == json::array({"a", "bytes:\\xc3", "bytes:\\xa9", "b"})));
  BOOST_TEST((lp["text_offset"] == json::array({0, 1, 1, 2})));
  BOOST_TEST(json::parse(a.body())["choices"][0]["text"] == "a\xC3\xA9" "b");
}

BOOST_AUTO_TEST_CASE(a_choice_the_request_does_not_have_is_an_error) {
  response_assembler a{tk, meta, opts(true, false, 2)};
  BOOST_TEST(!a.push(chunk(2, "x")));
}

namespace {

const std::string call_text =
  "<think>weather</think>\nOK.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";

response_assembler::options tool_opts(bool stream) {
  auto o = opts(true, stream, 2, true);
  o.parse = {tool_format::hermes, true, false};
  return o;
}

} // namespace

BOOST_AUTO_TEST_CASE(unary_choices_are_parsed_each_on_its_own) {
  response_assembler a{tk, meta, tool_opts(false)};
  // Choice 0 in three chunks cut inside the markers; choice 1 plain text.
  BOOST_TEST(!a.push(chunk(0, call_text.substr(0, 9), finish_reason::none, finish_reason::none, true))->done);
  BOOST_TEST(!a.push(chunk(1, "Just text.", finish_reason::stop, finish_reason::none, true))->done);
  BOOST_TEST(!a.push(chunk(0, call_text.substr(9, 30), finish_reason::none, finish_reason::none, true))->done);
  BOOST_TEST(a.push(chunk(0, call_text.substr(39), finish_reason::none, finish_reason::stop, true))->done);
  auto j = json::parse(a.body());
  const auto& m0 = j["choices"][0]["message"];
  BOOST_TEST(m0["content"] == "OK.");
  BOOST_TEST(m0["reasoning_content"] == "weather");
  BOOST_REQUIRE_EQUAL(m0["tool_calls"].size(), 1u);
  BOOST_TEST(m0["tool_calls"][0]["type"] == "function");
  BOOST_TEST(m0["tool_calls"][0]["id"].get<std::string>().starts_with("call_"));
  BOOST_TEST(m0["tool_calls"][0]["function"]["name"] == "get_weather");
  BOOST_TEST(m0["tool_calls"][0]["function"]["arguments"] == R"({"city":"Paris"})");
  BOOST_TEST(j["choices"][0]["finish_reason"] == "tool_calls");
  BOOST_TEST(j["choices"][0]["logprobs"]["content"].size() == call_text.size()); // every token
  const auto& m1 = j["choices"][1]["message"];
  BOOST_TEST(m1["content"] == "Just text.");
  BOOST_TEST(!m1.contains("tool_calls"));
  BOOST_TEST(!m1.contains("reasoning_content"));
  BOOST_TEST(j["choices"][1]["finish_reason"] == "stop");
  BOOST_TEST(j["usage"]["completion_tokens"] == call_text.size() + 10);
}

BOOST_AUTO_TEST_CASE(streamed_tool_calls_are_shaped_as_openai_deltas) {
  response_assembler a{tk, meta, tool_opts(true)};
  std::vector<json> deltas;
  std::string finish;
  size_t logprob_entries = 0;
  auto take = [&](const std::vector<std::string>& events) {
    for (const auto& e : events) {
      auto j = json::parse(e);
      const auto& c = j["choices"][0];
      if (c["index"] != 0)
        continue;
      if (!c["logprobs"].is_null())
        logprob_entries += c["logprobs"]["content"].size();
      if (!c["finish_reason"].is_null())
        finish = c["finish_reason"];
      else
        deltas.push_back(c["delta"]);
    }
  };
  for (size_t i = 0; i < call_text.size(); ++i) // one token per chunk
    take(a.push(chunk(0, call_text.substr(i, 1), finish_reason::none, finish_reason::none, true))->events);
  take(a.push(chunk(1, "x", finish_reason::stop))->events);
  take(a.push(chunk(0, "", finish_reason::none, finish_reason::stop))->events);
  std::string reasoning, content;
  std::vector<json> calls;
  for (const auto& d : deltas) {
    if (d.contains("reasoning_content"))
      reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content"))
      content += d["content"].get<std::string>();
    if (d.contains("tool_calls"))
      calls.push_back(d["tool_calls"][0]);
  }
  BOOST_TEST(reasoning == "weather");
  BOOST_TEST(content == "OK.");
  // One token per chunk: the header, then one fragment per token of the
  // arguments (the space between tokens is dropped, so it sends nothing).
  const std::string args = R"({"city":"Paris"})";
  BOOST_REQUIRE_EQUAL(calls.size(), 1 + args.size());
  BOOST_TEST(calls[0]["index"] == 0);
  BOOST_TEST(calls[0]["type"] == "function");
  BOOST_TEST(calls[0]["id"].get<std::string>().starts_with("call_"));
  BOOST_TEST(calls[0]["function"]["name"] == "get_weather");
  BOOST_TEST(calls[0]["function"]["arguments"] == "");
  for (size_t i = 1; i < calls.size(); ++i) {
    BOOST_TEST(calls[i].size() == 2u); // index and function
    BOOST_TEST(calls[i]["index"] == 0);
    BOOST_TEST(calls[i]["function"].size() == 1u);
    BOOST_TEST(calls[i]["function"]["arguments"] == args.substr(i - 1, 1));
  }
  BOOST_TEST(finish == "tool_calls");
  BOOST_TEST(logprob_entries == call_text.size()); // held-back text still reports its tokens
}

// parallel_tool_calls false: each choice ends with its first call's object,
// and once every choice has ended the generation is cancelled.
BOOST_AUTO_TEST_CASE(one_call_per_choice_ends_the_choice_and_then_the_generation) {
  auto o = tool_opts(false);
  o.parse.max_calls = 1;
  response_assembler a{tk, meta, o};
  const std::string one = "<tool_call>{\"name\": \"a\", \"arguments\": {}}";
  const std::string two = one + "</tool_call><tool_call>{\"name\": \"b\"}";
  auto u = a.push(chunk(0, two));
  BOOST_TEST(!u->done);
  u = a.push(chunk(1, one.substr(0, one.size() - 1)));
  BOOST_TEST(!u->done);
  const std::string last = "}</tool_call>"; // one chunk: the object closes in it
  u = a.push(chunk(1, last));
  BOOST_TEST(u->done);
  BOOST_TEST(u->cancel_backend);
  auto j = json::parse(a.body());
  for (const auto& c : j["choices"]) {
    BOOST_REQUIRE_EQUAL(c["message"]["tool_calls"].size(), 1u);
    BOOST_TEST(c["message"]["tool_calls"][0]["function"]["name"] == "a");
    BOOST_TEST(c["message"]["content"].is_null());
    BOOST_TEST(c["finish_reason"] == "tool_calls");
  }
  BOOST_TEST(j["usage"]["completion_tokens"] == two.size() + one.size() - 1 + last.size()); // every chunk sent
}

BOOST_AUTO_TEST_CASE(echo_puts_the_prompt_and_its_logprobs_first) {
  auto o = opts(false, false, 1, true);
  o.echo = response_assembler::options::echo_prompt{{'h', 'i', '!'}, "hi!", false};
  response_assembler a{tk, meta, o};
  auto first = chunk(0, "ab", finish_reason::none, finish_reason::length, true);
  first.prompt_logprobs = {{-1.25f, {{'i', -1.25f}, {'x', -0.5f}}}, {-3.0f, {{'?', -0.1f}}}};
  BOOST_TEST(a.push(first)->done);
  const json c = json::parse(a.body())["choices"][0];
  BOOST_TEST(c["text"] == "hi!ab");
  const json& lp = c["logprobs"];
  BOOST_TEST((lp["tokens"] == json::array({"h", "i", "!", "a", "b"})));
  BOOST_TEST(lp["token_logprobs"][0].is_null());
  BOOST_TEST(lp["top_logprobs"][0].is_null());
  BOOST_TEST(lp["token_logprobs"][1] == -1.25);
  BOOST_TEST(lp["token_logprobs"][2] == -3.0);
  BOOST_TEST(lp["token_logprobs"][3] == -0.5);
  BOOST_TEST((lp["top_logprobs"][1] == json{{"i", -1.25}, {"x", -0.5}}));
  BOOST_TEST((lp["text_offset"] == json::array({0, 1, 2, 3, 4})));
  BOOST_TEST(json::parse(a.body())["usage"]["completion_tokens"] == 2);
}

BOOST_AUTO_TEST_CASE(echo_streams_the_prompt_as_its_own_chunk_and_max_tokens_zero_drops_the_output) {
  auto o = opts(false, true, 1, true);
  o.echo = response_assembler::options::echo_prompt{{'o', 'k'}, "", true}; // the text from the ids
  response_assembler a{tk, meta, o};
  auto only = chunk(0, "z", finish_reason::none, finish_reason::stop, true);
  only.prompt_logprobs = {{-2.0f, {}}};
  auto u = a.push(only);
  BOOST_REQUIRE(u);
  BOOST_TEST(u->done);
  BOOST_REQUIRE_EQUAL(u->events.size(), 2u);
  const json echo = json::parse(u->events[0])["choices"][0];
  BOOST_TEST(echo["text"] == "ok");
  BOOST_TEST(echo["finish_reason"].is_null());
  BOOST_TEST((echo["logprobs"]["token_logprobs"] == json::array({nullptr, -2.0})));
  const json end = json::parse(u->events[1])["choices"][0];
  BOOST_TEST(end["text"] == "");
  BOOST_TEST(end["finish_reason"] == "length"); // max_tokens 0 reached, whatever the worker said
  BOOST_TEST(a.usage().completion_tokens == 0u);
}

BOOST_AUTO_TEST_CASE(echo_logprobs_that_miss_prompt_tokens_are_an_internal_error) {
  auto o = opts(false, false, 1, true);
  o.echo = response_assembler::options::echo_prompt{{'a', 'b', 'c'}, "abc", false};
  response_assembler a{tk, meta, o};
  auto first = chunk(0, "x", finish_reason::none, finish_reason::length, true);
  first.prompt_logprobs = {{-1.0f, {}}};
  auto r = a.push(first);
  BOOST_REQUIRE(!r);
  BOOST_TEST(static_cast<int>(code_of(r.error())) == static_cast<int>(errc::internal));
}

BOOST_AUTO_TEST_SUITE_END()
