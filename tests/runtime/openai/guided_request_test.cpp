// Structured outputs in requests: response_format and the guided_*
// extensions (top level and under nvext) become one guided_decoding, and a bad
// schema, regex or grammar is a 400 naming the field and the problem.
#include "runtime/openai/request.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include <ostream>

namespace dynamo::protocol {
inline std::ostream& boost_test_print_type(std::ostream& os, guided_kind k) { return os << static_cast<int>(k); }
} // namespace dynamo::protocol

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;
using protocol::guided_kind;

namespace {

expected<chat_request> chat(const std::string& extra) {
  return parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + extra + "}");
}

expected<completion_request> completion(const std::string& extra) {
  return parse_completion_request(R"({"model":"m","prompt":"hi",)" + extra + "}");
}

} // namespace

BOOST_AUTO_TEST_SUITE(guided_request_parsing)

BOOST_AUTO_TEST_CASE(response_format_text_is_unconstrained) {
  auto r = chat(R"("response_format":{"type":"text"})");
  BOOST_REQUIRE(test::ok(r));
  BOOST_TEST(r->params.guided.kind == guided_kind::none);
}

BOOST_AUTO_TEST_CASE(response_format_json_object_and_json_schema) {
  auto o = chat(R"("response_format":{"type":"json_object"})");
  BOOST_REQUIRE(test::ok(o));
  BOOST_TEST(o->params.guided.kind == guided_kind::json_object);
  BOOST_TEST(o->params.guided.spec.empty());

  auto s = chat(R"("response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,
                   "schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}})");
  BOOST_REQUIRE(test::ok(s));
  BOOST_TEST(s->params.guided.kind == guided_kind::json_schema);
  BOOST_TEST(nlohmann::json::parse(s->params.guided.spec) ==
             nlohmann::json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})"));

  auto c = completion(R"("response_format":{"type":"json_object"})");
  BOOST_REQUIRE(test::ok(c));
  BOOST_TEST(c->params.guided.kind == guided_kind::json_object);
}

BOOST_AUTO_TEST_CASE(extensions_top_level_and_under_nvext) {
  auto re = chat(R"("nvext":{"guided_regex":"[0-9]{3}"})");
  BOOST_REQUIRE(test::ok(re));
  BOOST_TEST(re->params.guided.kind == guided_kind::regex);
  BOOST_TEST(re->params.guided.spec == "[0-9]{3}");

  auto ch = completion(R"("guided_choice":["yes","no"])");
  BOOST_REQUIRE(test::ok(ch));
  BOOST_TEST(ch->params.guided.kind == guided_kind::choice);
  BOOST_TEST(nlohmann::json::parse(ch->params.guided.spec) == nlohmann::json::parse(R"(["yes","no"])"));

  auto gr = chat(R"("nvext":{"guided_grammar":"root ::= \"a\" | \"b\""})");
  BOOST_REQUIRE(test::ok(gr));
  BOOST_TEST(gr->params.guided.kind == guided_kind::grammar);

  auto js = chat(R"("guided_json":"{\"type\":\"string\"}")");
  BOOST_REQUIRE(test::ok(js));
  BOOST_TEST(js->params.guided.kind == guided_kind::json_schema);
  BOOST_TEST(js->params.guided.spec == R"({"type":"string"})");
}

BOOST_AUTO_TEST_CASE(invalid_specs_are_400_naming_the_field_and_the_problem) {
  check_error(chat(R"("nvext":{"guided_regex":"a(b"})"), 400, "nvext.guided_regex", "invalid_value");
  check_error(chat(R"("guided_regex":"(a)\\1")"), 400, "guided_regex", "unsupported_value");
  check_error(chat(R"("guided_grammar":"root ::= foo")"), 400, "guided_grammar", "invalid_value");
  check_error(chat(R"("guided_grammar":"root ::= root \"a\"")"), 400, "guided_grammar", "invalid_value");
  check_error(chat(R"("guided_choice":[])"), 400, "guided_choice", "invalid_type");
  check_error(chat(R"("guided_choice":["a",1])"), 400, "guided_choice[1]", "invalid_type");
  check_error(chat(R"("response_format":{"type":"xml"})"), 400, "response_format.type", "invalid_value");
  check_error(chat(R"("response_format":{"type":"json_schema"})"), 400, "response_format.json_schema",
              "missing_required_parameter");
  check_error(chat(R"("response_format":{"type":"json_schema","json_schema":{"schema":{}}})"), 400,
              "response_format.json_schema.name", "missing_required_parameter");
  check_error(chat(R"("nvext":[1])"), 400, "nvext", "invalid_type");
}

BOOST_AUTO_TEST_CASE(unsupported_schema_keywords_are_named) {
  auto r = chat(R"("response_format":{"type":"json_schema","json_schema":{"name":"t",
                   "schema":{"type":"object","properties":{"tags":{"type":"array","uniqueItems":true}}}}})");
  check_error(r, 400, "response_format.json_schema.schema", "unsupported_value");
  const auto e = test::failure(r);
  BOOST_TEST(e.message.find("uniqueItems") != std::string::npos, e.message);
  BOOST_TEST(e.message.find("/properties/tags") != std::string::npos, e.message);
}

BOOST_AUTO_TEST_CASE(only_one_constraint_at_a_time) {
  check_error(chat(R"("response_format":{"type":"json_object"},"nvext":{"guided_regex":"a"})"), 400,
              "nvext.guided_regex", "invalid_value");
  check_error(chat(R"("guided_regex":"a","guided_choice":["a"])"), 400, "guided_choice", "invalid_value");
}

BOOST_AUTO_TEST_SUITE_END()
