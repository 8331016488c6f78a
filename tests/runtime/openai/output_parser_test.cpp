// output_parser: reasoning and each tool-call format, whole and streamed.
// Every case is fed whole, split at every byte into two pieces, and one byte
// at a time; each way must give the same reasoning, content and calls, and
// the call deltas must be shaped as OpenAI's (id and name first, arguments "",
// then fragments that add up to the arguments). Token-by-token traces pin
// when each fragment goes out.
#include "runtime/openai/output_parser.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <random>
#include <string>
#include <vector>

using namespace dynamo::openai;

namespace {

struct result {
  std::string reasoning, content;
  std::vector<std::pair<std::string, std::string>> calls; ///< name, arguments
  bool operator==(const result&) const = default;
};

std::ostream& operator<<(std::ostream& os, const result& r) {
  os << "{reasoning=\"" << r.reasoning << "\" content=\"" << r.content << "\" calls=[";
  for (const auto& [n, a] : r.calls)
    os << n << a << ";";
  return os << "]}";
}

void absorb(result& r, const output_delta& d, std::vector<std::string>& ids, tool_format f) {
  r.reasoning += d.reasoning;
  r.content += d.content;
  for (const tool_call_delta& c : d.calls) {
    if (c.id) { // a new call: index, id, name and empty arguments
      BOOST_TEST(c.index == r.calls.size());
      BOOST_REQUIRE(c.name.has_value());
      BOOST_TEST(c.arguments.empty());
      if (f == tool_format::mistral) // its templates want 9 alphanumerics back
        BOOST_TEST((c.id->size() == 9u && std::all_of(c.id->begin(), c.id->end(), ::isalnum)));
      else
        BOOST_TEST((c.id->starts_with("call_") && c.id->size() == 29u));
      ids.push_back(*c.id);
      r.calls.emplace_back(*c.name, "");
    } else {
      BOOST_REQUIRE(!r.calls.empty());
      BOOST_TEST(c.index + 1 == r.calls.size());
      BOOST_TEST(!c.name.has_value());
      r.calls.back().second += c.arguments;
    }
  }
}

result run(output_parser::options o, const std::vector<std::string>& pieces) {
  output_parser p(o);
  result r;
  std::vector<std::string> ids;
  for (const auto& piece : pieces)
    absorb(r, p.push(piece), ids, o.tools);
  absorb(r, p.finish(), ids, o.tools);
  BOOST_REQUIRE_EQUAL(p.calls().size(), r.calls.size());
  for (size_t i = 0; i < r.calls.size(); ++i) {
    BOOST_TEST(p.calls()[i].id == ids[i]);
    BOOST_TEST(p.calls()[i].name == r.calls[i].first);
    BOOST_TEST(p.calls()[i].arguments == r.calls[i].second);
  }
  return r;
}

void check(output_parser::options o, const std::string& text, const result& want) {
  BOOST_TEST_CONTEXT("text: " << text) {
    BOOST_TEST(run(o, {text}) == want);
    for (size_t i = 0; i <= text.size(); ++i)
      BOOST_TEST(run(o, {text.substr(0, i), text.substr(i)}) == want, "split at " << i);
    std::vector<std::string> bytes;
    for (char c : text)
      bytes.emplace_back(1, c);
    BOOST_TEST(run(o, bytes) == want, "one byte at a time");
  }
}

/// Each push's deltas (and finish()'s, last) as text: R<reasoning>|
/// C<content>| H<index>:<name>| (a call's header) A<index>:<fragment>|.
std::vector<std::string> trace(output_parser::options o, const std::vector<std::string>& pieces) {
  output_parser p(o, [] { return std::string("call_000000000000000000000000"); });
  std::vector<std::string> out;
  auto add = [&](const output_delta& d) {
    std::string s;
    if (!d.reasoning.empty())
      s += "R" + d.reasoning + "|";
    if (!d.content.empty())
      s += "C" + d.content + "|";
    for (const tool_call_delta& c : d.calls)
      s += (c.id ? "H" + std::to_string(c.index) + ":" + *c.name
                 : "A" + std::to_string(c.index) + ":" + c.arguments) + "|";
    out.push_back(s);
  };
  for (const auto& piece : pieces)
    add(p.push(piece));
  add(p.finish());
  return out;
}

using trace_t = std::vector<std::string>;

const output_parser::options hermes{tool_format::hermes, false, false};
const output_parser::options llama3{tool_format::llama3_json, false, false};
const output_parser::options mistral{tool_format::mistral, false, false};
const output_parser::options think{tool_format::none, true, false};

} // namespace

BOOST_AUTO_TEST_SUITE(output_parser_tests)

BOOST_AUTO_TEST_CASE(hermes_calls_and_the_text_around_them) {
  check(hermes,
        "I'll check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
        "\"days\": 2}}\n</tool_call>",
        {"", "I'll check.", {{"get_weather", R"({"city":"Paris","days":2})"}}});
  check(hermes,
        "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
        "{\"name\": \"b\", \"arguments\": {\"q\": \"x </tool_call> y\"}}\n</tool_call>",
        {"", "", {{"a", "{}"}, {"b", R"({"q":"x </tool_call> y"})"}}});
  // Arguments written as a JSON string, and a call a stop token cut before </tool_call>.
  check(hermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": [1, 2]}\"}",
        {"", "", {{"f", R"({"a":[1,2]})"}}});
}

BOOST_AUTO_TEST_CASE(hermes_text_without_valid_calls_stays_content) {
  check(hermes, "Plain answer, no calls.", {"", "Plain answer, no calls.", {}});
  check(hermes, "a <tool b", {"", "a <tool b", {}});
  check(hermes, "x<tool_call>{\"name\": 5}</tool_call> y",
        {"", "x<tool_call>{\"name\": 5}</tool_call> y", {}});
  check(hermes, "<tool_call>{not json", {"", "<tool_call>{not json", {}});
  // Whitespace between text and a call is dropped; inside text it stays.
  check(hermes, "  a  b \n", {"", "a  b \n", {}});
}

BOOST_AUTO_TEST_CASE(llama3_json_calls) {
  check(llama3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
        {"", "", {{"get_weather", R"({"city":"Paris"})"}}});
  check(llama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": {\"x\": 1}}",
        {"", "", {{"a", "{}"}, {"b", R"({"x":1})"}}});
  check(llama3, "Hello {name}!", {"", "Hello {name}!", {}});
  check(llama3, "{\"answer\": 42}", {"", "{\"answer\": 42}", {}});
  check(llama3, "\n{\"name\": \"a\"", {"", "{\"name\": \"a\"", {}});
}

BOOST_AUTO_TEST_CASE(mistral_calls_in_both_forms) {
  check(mistral, "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]",
        {"", "", {{"a", R"({"x":1})"}, {"b", "{}"}}});
  check(mistral, "Sure. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]b[ARGS]{}",
        {"", "Sure.", {{"get_weather", R"({"city":"Paris"})"}, {"b", "{}"}}});
  check(mistral, "[TOOL_CALLS][{\"name\": \"a\"", {"", "[TOOL_CALLS][{\"name\": \"a\"", {}});
  check(mistral, "no [TOOL calls", {"", "no [TOOL calls", {}});
}

BOOST_AUTO_TEST_CASE(think_blocks_become_reasoning) {
  check(think, "<think>\nLet me see.\n</think>\n\nIt is 4.", {"\nLet me see.\n", "It is 4.", {}});
  check(think, "It is 4.", {"", "It is 4.", {}});
  check(think, " <thinking>x", {"", " <thinking>x", {}});
  check(think, "<think>cut short", {"cut short", "", {}});
  // DeepSeek-R1: the prompt opened <think>, so the output starts inside it.
  check({tool_format::none, true, true}, "two plus two</think>4", {"two plus two", "4", {}});
  check({tool_format::none, true, true}, "no end tag", {"no end tag", "", {}});
}

BOOST_AUTO_TEST_CASE(reasoning_then_a_call) {
  check({tool_format::hermes, true, false},
        "<think>I need the weather. <tool_call> is how.</think>\n\n<tool_call>\n{\"name\": \"w\", "
        "\"arguments\": {}}\n</tool_call>",
        {"I need the weather. <tool_call> is how.", "", {{"w", "{}"}}});
}

// Arguments stream as the tokens arrive; the header waits for the name and
// the arguments' "{"; the object's closing "}" and the end marker never
// reach a fragment.
BOOST_AUTO_TEST_CASE(hermes_arguments_stream_token_by_token) {
  const trace_t pieces{"OK", ".\n", "<tool", "_call>", "\n{\"", "name", "\": \"", "get", "_weather",
                       "\", \"", "arguments", "\": {\"", "city", "\": \"", "Par", "is", "\"}}", "\n</",
                       "tool_call>"};
  const trace_t want{"COK|", "C.|", "", "", "", "", "", "", "", "", "",
                     "H0:get_weather|A0:{\"|", "A0:city|", "A0:\":\"|", "A0:Par|", "A0:is|", "A0:\"}|",
                     "", "", ""};
  BOOST_TEST(trace(hermes, pieces) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(llama3_arguments_stream_token_by_token) {
  const trace_t pieces{"<|python_tag|>", "{\"name\": \"get_weather\", ", "\"parameters\": {", "\"city\": ",
                       "\"Paris\"", "}}", "; {\"name\": \"b\", \"parameters\": {}", "}"};
  const trace_t want{"", "", "H0:get_weather|A0:{|", "A0:\"city\":|", "A0:\"Paris\"|", "A0:}|",
                     "H1:b|A1:{}|", "", ""};
  BOOST_TEST(trace(llama3, pieces) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(mistral_arguments_stream_token_by_token) {
  const trace_t array{"[TOOL_CALLS]", "[{\"name\": \"a\", \"arguments\": ", "{\"x\": ", "1}}",
                      ", {\"name\": \"b\", \"arguments\": {}}", "]"};
  BOOST_TEST(trace(mistral, array) == trace_t({"", "", "H0:a|A0:{\"x\":|", "A0:1}|", "H1:b|A1:{}|", "", ""}),
             boost::test_tools::per_element());
  const trace_t named{"Sure. ", "[TOOL_CALLS]", "get_", "weather", "[ARGS]", "{\"city\": ", "\"Paris\"}",
                      "[TOOL_CALLS]b[ARGS]{}"};
  BOOST_TEST(trace(mistral, named) == trace_t({"CSure.|", "", "", "", "", "H0:get_weather|A0:{\"city\":|",
                                                "A0:\"Paris\"}|", "H1:b|A1:{}|", ""}),
             boost::test_tools::per_element());
}

// Once the arguments object opens, the call is out: a reply cut short keeps
// what was written, and text after the object that is not </tool_call> is
// content again.
BOOST_AUTO_TEST_CASE(a_released_call_keeps_its_arguments) {
  check(hermes, "<tool_call>{\"name\": \"a\", \"arguments\": {\"x\": [1, 2",
        {"", "", {{"a", R"({"x":[1,2)"}}});
  check(hermes, "<tool_call>{\"name\": \"a\", \"arguments\": {}} and more",
        {"", "and more", {{"a", "{}"}}});
  // A character no JSON token holds ends the arguments: the end marker never joins them.
  check(hermes, "<tool_call>{\"name\": \"a\", \"arguments\": {\"city\": </tool_call> done",
        {"", "done", {{"a", R"({"city":)"}}});
  check(mistral, "[TOOL_CALLS]a[ARGS]{\"x\": 1 <end>", {"", "<end>", {{"a", R"({"x":1)"}}});
  // Keys in any order, other keys skipped; the header waits for the name.
  check(hermes,
        "<tool_call>{\"id\": [1, {\"}\": 2}], \"arguments\": {\"q\": \"a\\\"}\"}, \"type\": null, "
        "\"name\": \"f\"}</tool_call>",
        {"", "", {{"f", R"({"q":"a\"}"})"}}});
  BOOST_TEST(trace(hermes, {"<tool_call>{\"arguments\": {\"x\"", ": 1}", ", \"name\": \"f\"", "}"}) ==
               trace_t({"", "", "H0:f|A0:{\"x\":1}|", "", ""}),
             boost::test_tools::per_element());
}

// parallel_tool_calls false: the output ends with the first call's object.
BOOST_AUTO_TEST_CASE(max_calls_ends_the_output_after_the_last_call) {
  auto one = [](tool_format f) { return output_parser::options{f, false, false, 1}; };
  check(one(tool_format::hermes),
        "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\"}",
        {"", "", {{"a", "{}"}}});
  check(one(tool_format::llama3_json), R"({"name": "a", "parameters": {"x": 1}}; {"name": "b"})",
        {"", "", {{"a", R"({"x":1})"}}});
  check(one(tool_format::mistral), R"([TOOL_CALLS][{"name": "a", "arguments": {}}, {"name": "b"}])",
        {"", "", {{"a", "{}"}}});
  check(one(tool_format::mistral), R"([TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{})", {"", "", {{"a", "{}"}}});
  output_parser p(one(tool_format::hermes));
  (void)p.push("<tool_call>{\"name\": \"a\", \"arguments\": {}");
  BOOST_TEST(!p.stopped());
  (void)p.push("}");
  BOOST_TEST(p.stopped()); // the end marker is not awaited
  BOOST_TEST(p.push("more").empty());
  BOOST_TEST(p.finish().empty());
}

// Mutated calls (characters dropped, inserted, repeated) cut at random points:
// the same reasoning, content and calls as fed whole, fragments that add up
// to each call's arguments (run() checks those), and never a throw.
BOOST_AUTO_TEST_CASE(mutated_calls_give_the_same_result_for_any_split) {
  const std::vector<std::pair<output_parser::options, std::string>> seeds{
    {{tool_format::hermes, true, false},
     "<think>hm</think>A <tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"a\\\"}\", \"n\": [1, {}]}}\n"
     "</tool_call> <tool_call>{\"arguments\": \"{\\\"x\\\": 1}\", \"name\": \"g\"}</tool_call>"},
    {llama3, "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": true}}; {\"name\": \"g\"}"},
    {mistral, "x [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": null}}, {\"name\": \"g\", \"arguments\": {}}]"},
    {mistral, "[TOOL_CALLS]f[ARGS]{\"a\": [\"]\"]} [TOOL_CALLS] g [ARGS] {}"},
  };
  const std::string alphabet = "{}[]\":,<>/ \n\\a1";
  std::mt19937 rng(1234);
  auto below = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  for (int round = 0; round < 400; ++round) {
    const auto& [o, seed] = seeds[round % seeds.size()];
    std::string text = seed;
    for (size_t edits = below(8); edits > 0 && !text.empty(); --edits) {
      const size_t at = below(text.size());
      switch (below(3)) {
        case 0: text.erase(at, 1); break;
        case 1: text.insert(at, 1, alphabet[below(alphabet.size())]); break;
        default: text.insert(at, text.substr(at, below(8))); break;
      }
    }
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t n = 1 + below(6);
      pieces.push_back(text.substr(i, n));
      i += n;
    }
    BOOST_TEST_CONTEXT("text: " << text) {
      BOOST_TEST(run(o, pieces) == run(o, {text}));
    }
  }
}

BOOST_AUTO_TEST_CASE(a_parser_without_formats_passes_text_through) {
  output_parser p({});
  BOOST_TEST(!p.active());
  BOOST_TEST(p.push(" a<tool_call>").content == " a<tool_call>");
}

BOOST_AUTO_TEST_SUITE_END()
