// guided_decoding -> grammar (every kind, the tool_calls spec's options),
// errors as values fit for a 400, and the compiled-grammar cache.
#include "runtime/grammar/guided.hpp"
#include "tests/runtime/grammar/grammar_test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::gram;
using namespace dynamo::gram::testing;
using protocol::guided_decoding;
using protocol::guided_kind;

namespace {

std::shared_ptr<const compiled_grammar> of(guided_kind k, std::string spec) {
  return compile_bytes(grammar_of(guided_decoding{k, std::move(spec)}));
}

void check_error(guided_kind k, std::string spec, errc code, std::string_view needle) {
  const guided_decoding g{k, std::move(spec)};
  auto v = validate(g);
  BOOST_REQUIRE(!v);
  BOOST_CHECK_MESSAGE(code_of(v.error()) == code, describe(v.error()));
  BOOST_CHECK_MESSAGE(message_of(v.error()).find(needle) != std::string::npos, describe(v.error()) << " lacks " << needle);
}

const std::string weather = R"({"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}})";
const std::string time_fn = R"({"name":"get_time"})";

} // namespace

BOOST_AUTO_TEST_SUITE(guided_grammars)

BOOST_AUTO_TEST_CASE(each_kind_builds_its_grammar) {
  auto obj = of(guided_kind::json_object, "");
  BOOST_CHECK(accepts(obj, R"({"a": [1, "x"]})"));
  BOOST_CHECK(!accepts(obj, "[1]"));
  auto schema = of(guided_kind::json_schema, R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]})");
  BOOST_CHECK(accepts(schema, R"({"n": 12})"));
  BOOST_CHECK(!accepts(schema, R"({"n": "12"})"));
  auto re = of(guided_kind::regex, "[a-c]{2}\\d");
  BOOST_CHECK(accepts(re, "ab7"));
  BOOST_CHECK(!accepts(re, "ad7"));
  auto choice = of(guided_kind::choice, R"(["red","green"])");
  BOOST_CHECK(accepts(choice, "green"));
  BOOST_CHECK(!accepts(choice, "blue"));
  auto gbnf = of(guided_kind::grammar, "root ::= \"x\" [0-9]+");
  BOOST_CHECK(accepts(gbnf, "x42"));
  BOOST_CHECK(!accepts(gbnf, "x"));
}

BOOST_AUTO_TEST_CASE(tool_calls_single_call_with_markers) {
  auto g = of(guided_kind::tool_calls, R"({"functions":[)" + weather + "," + time_fn +
                                            R"(],"begin":"<tool_call>\n","end":"\n</tool_call>","max_calls":1})");
  BOOST_CHECK(accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"));
  BOOST_CHECK(accepts(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
  BOOST_CHECK(!accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>")); // city required
  BOOST_CHECK(!accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  BOOST_CHECK(!accepts(g, "{\"name\": \"get_time\", \"arguments\": {}}"));
  // max_calls 1: a second call is not allowed.
  BOOST_CHECK(!accepts(g, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                          "{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>"));
}

BOOST_AUTO_TEST_CASE(tool_calls_parallel_with_separator) {
  auto g = of(guided_kind::tool_calls, R"({"functions":[)" + time_fn +
                                            R"(],"begin":"<c>","end":"</c>","separator":"\n","max_calls":0})");
  const std::string one = R"(<c>{"name": "get_time", "arguments": {}}</c>)";
  BOOST_CHECK(accepts(g, one));
  BOOST_CHECK(accepts(g, one + "\n" + one + "\n" + one));
  BOOST_CHECK(!accepts(g, one + one)); // the separator is required
  auto two = of(guided_kind::tool_calls, R"({"functions":[)" + time_fn + R"(],"separator":";","max_calls":2})");
  const std::string bare = R"({"name": "get_time", "arguments": {}})";
  BOOST_CHECK(accepts(two, bare + ";" + bare));
  BOOST_CHECK(!accepts(two, bare + ";" + bare + ";" + bare));
}

BOOST_AUTO_TEST_CASE(tool_calls_array_and_arguments_key) {
  auto g = of(guided_kind::tool_calls, R"({"functions":[)" + weather +
                                            R"(],"begin":"[TOOL_CALLS]","array":true,"max_calls":0,"arguments_key":"parameters"})");
  BOOST_CHECK(accepts(g, R"([TOOL_CALLS][{"name": "get_weather", "parameters": {"city": "Oslo"}}])"));
  BOOST_CHECK(accepts(g, R"([TOOL_CALLS][{"name": "get_weather", "parameters": {"city": "Oslo"}}, {"name": "get_weather", "parameters": {"city": "Rome"}}])"));
  BOOST_CHECK(!accepts(g, R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Oslo"}}])"));
  BOOST_CHECK(!accepts(g, R"([TOOL_CALLS][])"));
  auto one = of(guided_kind::tool_calls, R"({"functions":[)" + weather + R"(],"array":true,"max_calls":1})");
  BOOST_CHECK(!accepts(one, R"([{"name": "get_weather", "arguments": {"city": "a"}}, {"name": "get_weather", "arguments": {"city": "b"}}])"));
}

BOOST_AUTO_TEST_CASE(errors_name_the_problem) {
  check_error(guided_kind::json_schema, "{not json", errc::invalid_argument, "not valid JSON");
  check_error(guided_kind::json_schema, R"({"type":"array","uniqueItems":true})", errc::unsupported, "uniqueItems");
  check_error(guided_kind::regex, "a(?=b)", errc::unsupported, "lookaround");
  check_error(guided_kind::choice, R"(["a", 3])", errc::invalid_argument, "item 1");
  check_error(guided_kind::choice, "[]", errc::invalid_argument, "empty");
  check_error(guided_kind::grammar, "root ::= x", errc::invalid_argument, "'x'");
  check_error(guided_kind::grammar, "root ::= root \"a\"", errc::invalid_argument, "recursion");
  check_error(guided_kind::tool_calls, R"({"functions":[]})", errc::invalid_argument, "functions");
  check_error(guided_kind::tool_calls, R"({"functions":[{"name":"f","parameters":{"not":{}}}]})", errc::unsupported,
              "function 'f'");
  check_error(guided_kind::tool_calls, R"({"functions":[{"name":"f"}],"max_calls":-1})", errc::invalid_argument,
              "max_calls");
  check_error(guided_kind::none, "", errc::invalid_argument, "no grammar");
}

BOOST_AUTO_TEST_CASE(cache_shares_and_bounds) {
  grammar_cache cache(byte_vocab(), 2);
  auto a = cache.get({guided_kind::regex, "a+"});
  auto a2 = cache.get({guided_kind::regex, "a+"});
  BOOST_REQUIRE(a && a2);
  BOOST_CHECK(a->get() == a2->get()); // one compiled grammar for one (kind, spec)
  auto c = cache.get({guided_kind::grammar, "root ::= \"a\"+"}); // same text, other kind: another entry
  BOOST_REQUIRE(c);
  BOOST_CHECK(c->get() != a->get());
  BOOST_CHECK_EQUAL(cache.size(), 2u);
  auto d = cache.get({guided_kind::choice, R"(["a"])"}); // evicts the least recently used (regex a+)
  BOOST_REQUIRE(d);
  BOOST_CHECK_EQUAL(cache.size(), 2u);
  auto a3 = cache.get({guided_kind::regex, "a+"});
  BOOST_REQUIRE(a3);
  BOOST_CHECK(a3->get() != a->get());
  auto bad = cache.get({guided_kind::regex, "("});
  BOOST_CHECK(!bad);
  BOOST_CHECK_EQUAL(cache.size(), 2u);
}

BOOST_AUTO_TEST_SUITE_END()
