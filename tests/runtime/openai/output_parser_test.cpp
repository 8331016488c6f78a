// output_parser: reasoning and each tool-call format, whole and streamed.
// Every case is fed whole, split at every byte into two pieces, and one byte
// at a time; each way must give the same reasoning, content and calls, and
// the call deltas must be shaped as OpenAI's (id and name first, arguments "").
#include "runtime/openai/output_parser.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
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

BOOST_AUTO_TEST_CASE(a_parser_without_formats_passes_text_through) {
  output_parser p({});
  BOOST_TEST(!p.active());
  BOOST_TEST(p.push(" a<tool_call>").content == " a<tool_call>");
}

BOOST_AUTO_TEST_SUITE_END()
