#include "runtime/openai/embeddings.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;
using nlohmann::json;

namespace {

protocol::model_card card(uint32_t embedding_size = 3) {
  protocol::model_card c;
  c.name = "m";
  c.context_length = 8;
  c.embedding_size = embedding_size;
  return c;
}

embedding_request parsed(const std::string& body) {
  auto r = parse_embedding_request(body);
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
  return *r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(embeddings)

BOOST_AUTO_TEST_CASE(every_input_shape_parses_to_one_entry_per_embedding) {
  using text = std::string;
  using ids = std::vector<uint32_t>;
  auto one = parsed(R"({"model":"m","input":"hi"})");
  BOOST_REQUIRE_EQUAL(one.inputs.size(), 1u);
  BOOST_TEST(std::get<text>(one.inputs[0]) == "hi");
  BOOST_TEST((one.encoding == embedding_encoding::float_array));
  BOOST_TEST(!one.dimensions);
  auto strings = parsed(R"({"model":"m","input":["a","b"],"encoding_format":"base64","dimensions":3})");
  BOOST_REQUIRE_EQUAL(strings.inputs.size(), 2u);
  BOOST_TEST(std::get<text>(strings.inputs[1]) == "b");
  BOOST_TEST((strings.encoding == embedding_encoding::base64));
  BOOST_TEST(*strings.dimensions == 3u);
  auto tokens = parsed(R"({"model":"m","input":[1,2,3]})");
  BOOST_REQUIRE_EQUAL(tokens.inputs.size(), 1u);
  BOOST_TEST(std::get<ids>(tokens.inputs[0]) == (ids{1, 2, 3}), boost::test_tools::per_element());
  auto nested = parsed(R"({"model":"m","input":[[1],[2,3],"x"],"user":"u"})");
  BOOST_REQUIRE_EQUAL(nested.inputs.size(), 3u);
  BOOST_TEST(std::get<ids>(nested.inputs[1]) == (ids{2, 3}), boost::test_tools::per_element());
  BOOST_TEST(std::get<text>(nested.inputs[2]) == "x");
}

BOOST_AUTO_TEST_CASE(bad_bodies_are_400s_naming_the_field) {
  check_error(parse_embedding_request(R"({"model":"m"})"), 400, "input", "missing_required_parameter");
  check_error(parse_embedding_request(R"({"input":"x"})"), 400, "model", "missing_required_parameter");
  check_error(parse_embedding_request(R"({"model":"m","input":""})"), 400, "input", "invalid_value");
  check_error(parse_embedding_request(R"({"model":"m","input":[]})"), 400, "input", "invalid_value");
  check_error(parse_embedding_request(R"({"model":"m","input":["a",""]})"), 400, "input[1]", "invalid_value");
  check_error(parse_embedding_request(R"({"model":"m","input":[[1],[]]})"), 400, "input[1]", "invalid_value");
  check_error(parse_embedding_request(R"({"model":"m","input":[1,-2]})"), 400, "input[1]", "invalid_value");
  check_error(parse_embedding_request(R"({"model":"m","input":["a",{}]})"), 400, "input[1]", "invalid_type");
  check_error(parse_embedding_request(R"({"model":"m","input":5})"), 400, "input", "invalid_type");
  check_error(parse_embedding_request(R"({"model":"m","input":"x","encoding_format":"int8"})"), 400,
              "encoding_format", "invalid_value");
  check_error(parse_embedding_request(R"({"model":"m","input":"x","dimensions":0})"), 400, "dimensions",
              "invalid_value");
  json many{{"model", "m"}, {"input", json::array()}};
  for (size_t i = 0; i <= max_embedding_inputs; ++i)
    many["input"].push_back("x");
  check_error(parse_embedding_request(many.dump()), 400, "input", "invalid_value");
}

BOOST_AUTO_TEST_CASE(each_input_becomes_an_embed_request) {
  tok::byte_tokenizer tk;
  auto r = preprocess_embeddings(parsed(R"({"model":"m","input":["ab",[7,8,9]]})"), card(), tk, "embd-1");
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
  BOOST_REQUIRE_EQUAL(r->size(), 2u);
  const auto& a = (*r)[0];
  BOOST_TEST(a.request_id == "embd-1-0");
  BOOST_TEST(a.embed);
  BOOST_TEST(a.model == "m");
  BOOST_TEST(a.token_ids == (std::vector<uint32_t>{'a', 'b'}), boost::test_tools::per_element());
  BOOST_TEST(a.prompt_tokens == 2u);
  BOOST_TEST(a.sampling.n == 1u);
  BOOST_TEST((a.sampling.guided.kind == protocol::guided_kind::none));
  BOOST_TEST((*r)[1].request_id == "embd-1-1");
  BOOST_TEST((*r)[1].token_ids == (std::vector<uint32_t>{7, 8, 9}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(what_the_model_cannot_embed_is_a_400) {
  tok::byte_tokenizer tk;
  check_error(preprocess_embeddings(parsed(R"({"model":"m","input":"x"})"), card(0), tk, "id"), 400, "model",
              "unsupported_value");
  check_error(preprocess_embeddings(parsed(R"({"model":"m","input":"x","dimensions":2})"), card(), tk, "id"), 400,
              "dimensions", "unsupported_value");
  BOOST_TEST(static_cast<bool>(
    preprocess_embeddings(parsed(R"({"model":"m","input":"x","dimensions":3})"), card(), tk, "id")));
  check_error(preprocess_embeddings(parsed(R"({"model":"m","input":"12345678"})"), card(), tk, "id"), 400, "input",
              "context_length_exceeded");
  check_error(preprocess_embeddings(parsed(R"({"model":"m","input":["x",[1,999]]})"), card(), tk, "id"), 400,
              "input[1]", "invalid_value");
}

BOOST_AUTO_TEST_CASE(vectors_are_normalized_and_base64_is_little_endian_float32) {
  const auto n = l2_normalized({3.0f, 4.0f});
  BOOST_TEST(n[0] == 0.6f, boost::test_tools::tolerance(1e-7f));
  BOOST_TEST(n[1] == 0.8f, boost::test_tools::tolerance(1e-7f));
  BOOST_TEST(l2_normalized({0.0f, 0.0f}) == (std::vector<float>{0.0f, 0.0f}), boost::test_tools::per_element());
  BOOST_TEST(base64_floats({1.0f}) == "AACAPw==");            // 00 00 80 3f
  BOOST_TEST(base64_floats({1.0f, -2.0f}) == "AACAPwAAAMA="); // 00 00 80 3f 00 00 00 c0
  BOOST_TEST(base64_floats({}) == "");
}

BOOST_AUTO_TEST_CASE(the_body_is_openais_list_of_embeddings) {
  const std::vector<std::vector<float>> hidden = {{3.0f, 0.0f, 4.0f}, {0.0f, 2.0f, 0.0f}};
  auto j = json::parse(embedding_body(parsed(R"({"model":"m","input":["a","b"]})"), "m", hidden, 7));
  BOOST_TEST(j["object"] == "list");
  BOOST_TEST(j["model"] == "m");
  BOOST_TEST(j["usage"]["prompt_tokens"] == 7);
  BOOST_TEST(j["usage"]["total_tokens"] == 7);
  BOOST_REQUIRE_EQUAL(j["data"].size(), 2u);
  BOOST_TEST(j["data"][1]["object"] == "embedding");
  BOOST_TEST(j["data"][1]["index"] == 1);
  BOOST_TEST(j["data"][0]["embedding"][2].get<double>() == 0.8, boost::test_tools::tolerance(1e-7));
  BOOST_TEST(j["data"][1]["embedding"][1].get<double>() == 1.0);
  auto b = json::parse(embedding_body(parsed(R"({"model":"m","input":"a","encoding_format":"base64"})"), "m",
                                      {{0.0f, 5.0f}}, 1));
  BOOST_TEST(b["data"][0]["embedding"] == "AAAAAAAAgD8="); // [0, 1]
}

BOOST_AUTO_TEST_SUITE_END()
