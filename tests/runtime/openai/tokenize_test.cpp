#include "runtime/openai/tokenize.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;
using nlohmann::json;

namespace {

// A byte tokenizer whose model adds BOS id 300 (special-token text is not parsed).
class bos_tokenizer final : public tok::tokenizer {
public:
  std::vector<uint32_t> encode(std::string_view text, bool special) const override {
    return inner_.encode(text, special);
  }
  std::string token_bytes(uint32_t id, bool special) const override {
    if (id == 300)
      return special ? "<s>" : "";
    return inner_.token_bytes(id, special);
  }
  uint32_t vocab_size() const noexcept override { return 301; }
  std::vector<uint32_t> stop_token_ids() const override { return {256}; }
  int64_t bos_token_id() const noexcept override { return 300; }

private:
  tok::byte_tokenizer inner_;
};

protocol::model_card card() {
  protocol::model_card c;
  c.name = "m";
  c.context_length = 64;
  return c;
}

const bos_tokenizer tk;
const tok::simple_chat_template tmpl;

json tokenize(std::string_view body) {
  auto req = parse_tokenize_request(body);
  BOOST_REQUIRE(test::ok(req));
  auto out = tokenize_body(*req, card(), tk, tmpl);
  BOOST_REQUIRE(test::ok(out));
  return json::parse(*out);
}

} // namespace

BOOST_AUTO_TEST_SUITE(tokenize_endpoint)

BOOST_AUTO_TEST_CASE(prompt_gets_bos_by_default) {
  auto j = tokenize(R"({"model":"m","prompt":"Hi"})");
  BOOST_TEST(j["tokens"] == json({300, 'H', 'i'}));
  BOOST_TEST(j["count"] == 3);
  BOOST_TEST(j["max_model_len"] == 64);
}

BOOST_AUTO_TEST_CASE(add_special_tokens_false_drops_bos) {
  auto j = tokenize(R"({"model":"m","prompt":"Hi","add_special_tokens":false})");
  BOOST_TEST(j["tokens"] == json({'H', 'i'}));
  BOOST_TEST(j["count"] == 2);
}

BOOST_AUTO_TEST_CASE(messages_go_through_the_template_without_bos) {
  // simple_chat_template: "role: content\n" then "assistant: ".
  auto j = tokenize(R"({"model":"m","messages":[{"role":"user","content":"x"}]})");
  std::string want = "user: x\nassistant: ";
  json ids = json::array();
  for (char c : want)
    ids.push_back(static_cast<uint8_t>(c));
  BOOST_TEST(j["tokens"] == ids);
  auto no_gen = tokenize(
    R"({"model":"m","messages":[{"role":"user","content":"x"}],"add_generation_prompt":false})");
  BOOST_TEST(no_gen["count"] == 8); // "user: x\n"
}

BOOST_AUTO_TEST_CASE(bad_tokenize_requests) {
  check_error(parse_tokenize_request(R"({"model":"m"})"), 400, "prompt",
              "missing_required_parameter");
  check_error(parse_tokenize_request(R"({"model":"m","prompt":"a","messages":[]})"), 400, "prompt",
              "invalid_value");
  check_error(parse_tokenize_request(R"({"prompt":"a"})"), 400, "model",
              "missing_required_parameter");
  check_error(parse_tokenize_request(R"({"model":"m","prompt":3})"), 400, "prompt", "invalid_type");
  check_error(parse_tokenize_request(R"({"model":"m","messages":[{"role":"x","content":"a"}]})"),
              400, "messages[0].role", "invalid_value");
  check_error(parse_tokenize_request(R"({"model":"m","prompt":"a","add_special_tokens":"yes"})"), 400,
              "add_special_tokens", "invalid_type");
  check_error(parse_tokenize_request("{"), 400, "", "invalid_json");
}

BOOST_AUTO_TEST_CASE(detokenize_includes_special_tokens) {
  auto req = parse_detokenize_request(R"({"model":"m","tokens":[300,72,105]})");
  BOOST_REQUIRE(test::ok(req));
  auto out = detokenize_body(*req, tk);
  BOOST_REQUIRE(test::ok(out));
  BOOST_TEST(json::parse(*out) == json({{"prompt", "<s>Hi"}}));
}

BOOST_AUTO_TEST_CASE(bad_detokenize_requests) {
  check_error(parse_detokenize_request(R"({"model":"m"})"), 400, "tokens",
              "missing_required_parameter");
  check_error(parse_detokenize_request(R"({"model":"m","tokens":"ab"})"), 400, "tokens",
              "invalid_type");
  check_error(parse_detokenize_request(R"({"model":"m","tokens":[1,-2]})"), 400, "tokens[1]",
              "invalid_type");
  auto req = parse_detokenize_request(R"({"model":"m","tokens":[1,301]})");
  BOOST_REQUIRE(test::ok(req));
  check_error(detokenize_body(*req, tk), 400, "tokens[1]", "invalid_value");
}

BOOST_AUTO_TEST_CASE(count_chat_tokens_matches_the_chat_path) {
  // BOS + "user: x\nassistant: " (19 bytes).
  tok::chat_input chat;
  chat.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", "x"}}});
  auto n = count_chat_tokens(chat, tk, tmpl);
  BOOST_REQUIRE(test::ok(n));
  BOOST_TEST(*n == 20u);
}

BOOST_AUTO_TEST_SUITE_END()
