#include "runtime/openai/openapi.hpp"
#include "runtime/openai/request.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <set>

using namespace dynamo::openai;

namespace {

std::set<std::string> schema_fields(const nlohmann::json& doc, const char* schema) {
  std::set<std::string> out;
  for (const auto& [k, v] : doc["components"]["schemas"][schema]["properties"].items())
    out.insert(k);
  return out;
}

std::set<std::string> to_set(std::span<const std::string_view> s) {
  return {s.begin(), s.end()};
}

} // namespace

BOOST_AUTO_TEST_SUITE(openapi_document)

BOOST_AUTO_TEST_CASE(is_valid_openapi_3_json_with_every_route) {
  auto doc = nlohmann::json::parse(openapi_json());
  BOOST_TEST(doc["openapi"].get<std::string>().starts_with("3."));
  for (auto* path : {"/v1/chat/completions", "/v1/completions", "/v1/models",
                     "/v1/models/{model_id}", "/health", "/live", "/metrics", "/openapi.json",
                     "/v1/responses", "/tokenize", "/detokenize"})
    BOOST_TEST(doc["paths"].contains(path), path);
  BOOST_TEST(doc["paths"]["/v1/chat/completions"].contains("post"));
  BOOST_TEST(doc["paths"]["/v1/models"].contains("get"));
}

BOOST_AUTO_TEST_CASE(request_schemas_list_exactly_the_parsed_fields) {
  auto doc = nlohmann::json::parse(openapi_json());
  BOOST_TEST(schema_fields(doc, "ChatCompletionRequest") == to_set(chat_request_fields()),
             boost::test_tools::per_element());
  BOOST_TEST(schema_fields(doc, "CompletionRequest") == to_set(completion_request_fields()),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(every_ref_resolves) {
  auto doc = nlohmann::json::parse(openapi_json());
  std::vector<const nlohmann::json*> todo{&doc};
  size_t refs = 0;
  while (!todo.empty()) {
    const auto* j = todo.back();
    todo.pop_back();
    if (j->is_object() && j->contains("$ref")) {
      auto ref = (*j)["$ref"].get<std::string>();
      BOOST_REQUIRE(ref.starts_with("#/"));
      nlohmann::json::json_pointer ptr{ref.substr(1)};
      BOOST_TEST(doc.contains(ptr), ref);
      ++refs;
    }
    if (j->is_structured())
      for (const auto& child : *j)
        todo.push_back(&child);
  }
  BOOST_TEST(refs > 10u);
}

BOOST_AUTO_TEST_SUITE_END()
