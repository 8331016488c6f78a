// The compilers, checked by exact accept/reject cases over a byte vocabulary:
// regex, choices, GBNF, any-JSON, JSON Schema (keywords, refs and recursion,
// whitespace policy, error values) and tool calls.
#include "runtime/grammar/gbnf.hpp"
#include "runtime/grammar/json_schema.hpp"
#include "runtime/grammar/regex.hpp"
#include "tests/runtime/grammar/grammar_test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::gram;
using namespace dynamo::gram::testing;

namespace {

std::shared_ptr<const compiled_grammar> schema(std::string_view s, const json_options& o = {}) {
  return compile_bytes(json_schema_grammar(s, o));
}

void check_error(const caf::error& e, errc code, std::string_view needle) {
  BOOST_CHECK_MESSAGE(code_of(e) == code, describe(e));
  BOOST_CHECK_MESSAGE(message_of(e).find(needle) != std::string::npos, describe(e) << " lacks " << needle);
}

} // namespace

BOOST_AUTO_TEST_SUITE(grammar_compilers)

BOOST_AUTO_TEST_CASE(regex_cases) {
  auto g = compile_bytes(regex_grammar("^[A-Z][a-z]{2,3}(-\\d+)?|x.y$"));
  BOOST_CHECK(accepts(g, "Abc"));
  BOOST_CHECK(accepts(g, "Abcd-42"));
  BOOST_CHECK(accepts(g, "x\xE2\x82\xACy")); // . is one code point (here €)
  BOOST_CHECK(!accepts(g, "Ab"));
  BOOST_CHECK(!accepts(g, "Abcde"));
  BOOST_CHECK(!accepts(g, "Abc-"));
  BOOST_CHECK(!accepts(g, "x\ny"));
  BOOST_CHECK(!accepts(g, "x\xE2\x82y")); // a broken character
  auto w = compile_bytes(regex_grammar("[^\\s,]+(?:,\\s?\\w*)*"));
  BOOST_CHECK(accepts(w, "a,b, c,"));
  BOOST_CHECK(!accepts(w, " a"));
  check_error(regex_grammar("(a)\\1").error(), errc::unsupported, "backreference");
  check_error(regex_grammar("a(?=b)").error(), errc::unsupported, "lookaround");
  check_error(regex_grammar("(ab").error(), errc::invalid_argument, "missing ')'");
  check_error(regex_grammar("a{3,2}").error(), errc::invalid_argument, "n < m");
}

BOOST_AUTO_TEST_CASE(choice_cases) {
  auto g = compile_bytes(choice_grammar({"yes", "no", "maybe so"}));
  BOOST_CHECK(accepts(g, "yes"));
  BOOST_CHECK(accepts(g, "maybe so"));
  BOOST_CHECK(!accepts(g, "ye"));
  BOOST_CHECK(!accepts(g, "yes "));
  check_error(choice_grammar({}).error(), errc::invalid_argument, "empty");
}

BOOST_AUTO_TEST_CASE(gbnf_cases) {
  // The shape of llama.cpp's grammars/arithmetic.gbnf and json.gbnf snippets.
  const char* text = R"G(# comment
root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t]{0,2}
)G";
  auto g = compile_bytes(gbnf_grammar(text));
  BOOST_CHECK(accepts(g, "1+2= 3\n"));
  BOOST_CHECK(accepts(g, "(a1 *b)=c\nx=y\n"));
  BOOST_CHECK(!accepts(g, "1+2=3"));
  BOOST_CHECK(!accepts(g, "1 +2=   3\n"));
  auto esc = compile_bytes(gbnf_grammar("root ::= \"\\x41\\u00e9\\n\" [^\\]]? \"\\\"\""));
  BOOST_CHECK(accepts(esc, "A\xC3\xA9\n\""));
  BOOST_CHECK(accepts(esc, "A\xC3\xA9\nz\""));
  BOOST_CHECK(!accepts(esc, "A\xC3\xA9\n]\""));
  auto multi = compile_bytes(gbnf_grammar("root ::= (\n  \"a\" |\n  \"b\"\n) \"c\"{2}"));
  BOOST_CHECK(accepts(multi, "bcc"));
  check_error(gbnf_grammar("root ::= foo").error(), errc::invalid_argument, "'foo' is used but not defined");
  check_error(gbnf_grammar("start ::= \"a\"").error(), errc::invalid_argument, "no 'root'");
  check_error(gbnf_grammar("root ::= \"a\n").error(), errc::invalid_argument, "unterminated string literal");
  check_error(gbnf_grammar("root ::= <think>").error(), errc::unsupported, "token references");
  check_error(gbnf_grammar("root ::= \"a\"\nroot ::= \"b\"").error(), errc::invalid_argument, "defined twice");
}

BOOST_AUTO_TEST_CASE(any_json_object) {
  auto g = compile_bytes(json_object_grammar());
  BOOST_CHECK(accepts(g, R"({})"));
  BOOST_CHECK(accepts(g, R"({"a": [1, -2.5e3, true, null, {"b": "\u00e9\n"}], "c":"x"})"));
  BOOST_CHECK(!accepts(g, R"([1])"));
  BOOST_CHECK(!accepts(g, R"({"a":01})"));
  BOOST_CHECK(!accepts(g, R"({"a":1,})"));
  BOOST_CHECK(!accepts(g, R"({"a":  1})"));  // at most one space
  BOOST_CHECK(!accepts(g, "{\n\"a\":1}"));    // no newlines by default
  BOOST_CHECK(!accepts(g, R"({"a":"\ud83d"})")); // no surrogate escapes
  BOOST_CHECK(!accepts(g, "{\"a\":\"\x01\"}"));  // raw control character
  auto flex = compile_bytes(json_schema_grammar("{}", {.whitespace = json_whitespace::flexible, .max_whitespace = 4}));
  BOOST_CHECK(accepts(flex, "{\n  \"a\" : [ 1 ,2 ]\n}"));
  BOOST_CHECK(!accepts(flex, "{\n      \"a\":1}")); // 7 > 4
  auto compact = compile_bytes(json_object_grammar({.whitespace = json_whitespace::none}));
  BOOST_CHECK(accepts(compact, R"({"a":[1,2]})"));
  BOOST_CHECK(!accepts(compact, R"({"a": 1})"));
}

BOOST_AUTO_TEST_CASE(schema_objects) {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
                      "c":{"type":"boolean"}},"required":["b"]})");
  BOOST_CHECK(accepts(g, R"({"b":"x"})"));
  BOOST_CHECK(accepts(g, R"({"a": 1, "b": "x", "c": true})"));
  BOOST_CHECK(accepts(g, R"({"b":"x","c":false})"));
  BOOST_CHECK(!accepts(g, R"({"a":1})"));            // b is required
  BOOST_CHECK(!accepts(g, R"({"b":"x","a":1})"));    // declared order
  BOOST_CHECK(!accepts(g, R"({"b":"x","d":1})"));    // no additional properties
  BOOST_CHECK(!accepts(g, R"({"a":1.5,"b":"x"})"));
  auto extra = schema(R"({"properties":{"id":{"type":"integer"}},"required":["id"],
                          "additionalProperties":{"type":"number"}})");
  BOOST_CHECK(accepts(extra, R"({"id":1,"x":2.5,"y_2":3})"));
  BOOST_CHECK(!accepts(extra, R"({"id":1,"id":2})")); // an extra key never repeats a declared one
  BOOST_CHECK(accepts(extra, R"({"id":1,"idx":2})"));
  BOOST_CHECK(!accepts(extra, R"({"id":1,"x":"s"})"));
  auto open = schema(R"({"type":"object"})");
  BOOST_CHECK(accepts(open, R"({"k":[1,{"z":null}]})"));
}

BOOST_AUTO_TEST_CASE(schema_strings_numbers_arrays) {
  auto s = schema(R"({"type":"array","items":{"type":"string","minLength":2,"maxLength":3},"minItems":1,"maxItems":2})");
  BOOST_CHECK(accepts(s, R"(["ab"])"));
  BOOST_CHECK(accepts(s, R"(["ab", "\n\u00e9\""])"));
  BOOST_CHECK(!accepts(s, R"([])"));
  BOOST_CHECK(!accepts(s, R"(["a"])"));
  BOOST_CHECK(!accepts(s, R"(["abcd"])"));
  BOOST_CHECK(!accepts(s, R"(["ab","ab","ab"])"));
  auto tuple = schema(R"({"type":"array","prefixItems":[{"type":"integer"},{"const":"x"}],"items":false})");
  BOOST_CHECK(accepts(tuple, R"([1, "x"])"));
  BOOST_CHECK(!accepts(tuple, R"([1, "x", 2])"));
  auto n = schema(R"({"type":"integer","minimum":-12,"exclusiveMaximum":105})");
  for (int v : {-12, -9, -1, 0, 7, 10, 99, 100, 104}) BOOST_CHECK_MESSAGE(accepts(n, std::to_string(v)), v);
  for (int v : {-13, -20, 105, 110, 1000}) BOOST_CHECK_MESSAGE(!accepts(n, std::to_string(v)), v);
  BOOST_CHECK(!accepts(n, "-0012"));
  auto f = schema(R"({"type":"number","minimum":0.5,"maximum":3})");
  BOOST_CHECK(accepts(f, "1.25"));
  BOOST_CHECK(accepts(f, "3"));
  BOOST_CHECK(accepts(f, "2.999"));
  BOOST_CHECK(!accepts(f, "3.5"));
  BOOST_CHECK(!accepts(f, "0.25")); // sound, not complete: 0.5..1 is only reachable as integers
  auto p = schema(R"({"type":"string","pattern":"^a\"[0-9]{2}$"})");
  BOOST_CHECK(accepts(p, R"("a\"12")"));
  BOOST_CHECK(!accepts(p, R"("a"12")"));
  auto date = schema(R"({"type":"string","format":"date"})");
  BOOST_CHECK(accepts(date, R"("2024-02-28")"));
  BOOST_CHECK(accepts(date, R"("2023-12-31")"));
  BOOST_CHECK(!accepts(date, R"("2023-02-30")"));
  BOOST_CHECK(!accepts(date, R"("2023-04-31")"));
  auto dt = schema(R"({"type":"string","format":"date-time"})");
  BOOST_CHECK(accepts(dt, R"("2024-01-15T13:45:00Z")"));
  BOOST_CHECK(accepts(dt, R"("2024-01-15T13:45:00.25+02:00")"));
  BOOST_CHECK(!accepts(dt, R"("2024-01-15T24:00:00Z")"));
  auto uuid = schema(R"({"format":"uuid"})");
  BOOST_CHECK(accepts(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  auto e = schema(R"({"enum":["a b", 3, null, {"k":[1]}, true]})");
  for (const char* v : {R"("a b")", "3", "null", R"({"k":[1]})", "true"}) BOOST_CHECK(accepts(e, v));
  BOOST_CHECK(!accepts(e, "false"));
  auto u = schema(R"({"type":["integer","null"]})");
  BOOST_CHECK(accepts(u, "null"));
  BOOST_CHECK(accepts(u, "-3"));
  auto nl = schema(R"({"type":"string","nullable":true,"maxLength":1})");
  BOOST_CHECK(accepts(nl, "null"));
  BOOST_CHECK(accepts(nl, R"("x")"));
  BOOST_CHECK(!accepts(nl, R"("xy")"));
}

BOOST_AUTO_TEST_CASE(schema_combinators_and_refs) {
  auto any = schema(R"({"anyOf":[{"type":"integer"},{"type":"object","properties":{"x":{"const":1}},"required":["x"]}]})");
  BOOST_CHECK(accepts(any, "5"));
  BOOST_CHECK(accepts(any, R"({"x":1})"));
  BOOST_CHECK(!accepts(any, R"({"x":2})"));
  auto all = schema(R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
                                 {"properties":{"b":{"type":"null"}},"required":["b"]}]})");
  BOOST_CHECK(accepts(all, R"({"a":1,"b":null})"));
  BOOST_CHECK(!accepts(all, R"({"a":1})"));
  // Recursion through $defs: a tree of any depth.
  auto tree = schema(R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
                          "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
                          "required":["v"]}}})");
  BOOST_CHECK(accepts(tree, R"({"v":1})"));
  BOOST_CHECK(accepts(tree, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[]}]},{"v":4}]})"));
  BOOST_CHECK(!accepts(tree, R"({"v":1,"kids":[{"kids":[]}]})"));
  auto root_ref = schema(R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
                             "required":["next"],"definitions":{}})");
  BOOST_CHECK(accepts(root_ref, R"({"next":{"next":null}})"));
}

BOOST_AUTO_TEST_CASE(schema_errors_name_keyword_and_path) {
  check_error(json_schema_grammar(R"({"type":"array","uniqueItems":true})").error(), errc::unsupported,
              "keyword 'uniqueItems' is not supported (at #)");
  check_error(json_schema_grammar(R"({"properties":{"a":{"not":{}}}})").error(), errc::unsupported,
              "'not' is not supported (at /properties/a)");
  check_error(json_schema_grammar(R"({"$ref":"#/$defs/missing"})").error(), errc::invalid_argument, "points nowhere");
  check_error(json_schema_grammar(R"({"$ref":"http://x/y.json"})").error(), errc::unsupported, "local references");
  check_error(json_schema_grammar("{").error(), errc::invalid_argument, "not valid JSON");
  check_error(json_schema_grammar(R"({"type":"strin"})").error(), errc::invalid_argument, "unknown type 'strin'");
  check_error(json_schema_grammar("false").error(), errc::invalid_argument, "allows no value");
  check_error(json_schema_grammar(R"({"type":"string","pattern":"a","maxLength":3})").error(), errc::unsupported,
              "'pattern' together with");
}

BOOST_AUTO_TEST_CASE(tool_calls) {
  const std::vector<tool_function> fns = {
      {"get_weather", R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]})"},
      {"ping", R"({"type":"object","properties":{}})"}};
  auto one = compile_bytes(tool_call_grammar(fns, false));
  BOOST_CHECK(accepts(one, R"({"name": "get_weather", "arguments": {"city": "Paris"}})"));
  BOOST_CHECK(accepts(one, R"({"name":"ping","arguments":{}})"));
  BOOST_CHECK(!accepts(one, R"({"name":"ping","arguments":{"city":"x"}})"));
  BOOST_CHECK(!accepts(one, R"({"name":"get_weather","arguments":{}})"));
  BOOST_CHECK(!accepts(one, R"({"name":"other","arguments":{}})"));
  auto many = compile_bytes(tool_call_grammar(fns, true));
  BOOST_CHECK(accepts(many, R"([{"name":"ping","arguments":{}}, {"name":"get_weather","arguments":{"city":"x"}}])"));
  BOOST_CHECK(!accepts(many, R"([])"));
  // Composable: wrap a call in model-specific markers.
  grammar g;
  auto call = add_tool_call(g, fns);
  BOOST_REQUIRE(call);
  const rule_id root = g.add_rule("root");
  g.define(root, g.seq({g.literal("<tool_call>\n"), g.ref(*call), g.literal("\n</tool_call>")}));
  g.set_root(root);
  auto wrapped = compile_bytes(g);
  BOOST_CHECK(accepts(wrapped, "<tool_call>\n{\"name\":\"ping\",\"arguments\":{}}\n</tool_call>"));
  check_error(tool_call_grammar({{"f", "{\"type\":\"object\",\"patternProperties\":{}}"}}, false).error(),
              errc::unsupported, "function 'f'");
}

BOOST_AUTO_TEST_SUITE_END()
