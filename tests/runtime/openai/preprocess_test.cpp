#include "runtime/openai/preprocess.hpp"

#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using dynamo::openai::test::check_error;

namespace {

// A byte tokenizer whose model adds BOS id 300.
class bos_tokenizer final : public tok::tokenizer {
public:
  std::vector<uint32_t> encode(std::string_view text, bool special) const override {
    return inner_.encode(text, special);
  }
  std::string token_bytes(uint32_t id, bool special) const override {
    return id == 300 ? std::string{} : inner_.token_bytes(id, special);
  }
  uint32_t vocab_size() const noexcept override { return 301; }
  std::vector<uint32_t> stop_token_ids() const override { return {256}; }
  int64_t bos_token_id() const noexcept override { return 300; }

private:
  tok::byte_tokenizer inner_;
};

protocol::model_card card(uint32_t ctx) {
  protocol::model_card c;
  c.name = "m";
  c.context_length = ctx;
  return c;
}

const tok::byte_tokenizer tk;
const tok::simple_chat_template tmpl;

chat_request chat(std::string text) {
  chat_request r;
  r.model = "m";
  r.chat.messages = nlohmann::ordered_json::array({{{"role", "user"}, {"content", std::move(text)}}});
  return r;
}

completion_request completion(prompt_input p) {
  completion_request r;
  r.model = "m";
  r.prompt = std::move(p);
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(preprocess_suite)

BOOST_AUTO_TEST_CASE(chat_renders_template_and_fills_defaults) {
  auto r = preprocess_chat(chat("hi"), card(100), tk, tmpl, "req-1");
  BOOST_REQUIRE(r);
  const std::string prompt = "user: hi\nassistant: ";
  BOOST_TEST(r->request_id == "req-1");
  BOOST_TEST(r->model == "m");
  BOOST_TEST(tk.decode(r->token_ids) == prompt);
  BOOST_TEST(r->prompt_tokens == prompt.size());
  BOOST_TEST(r->stop.max_tokens == 100 - prompt.size()); // the rest of the context
  BOOST_TEST(r->stop.stop_token_ids == std::vector<uint32_t>{256});
  BOOST_TEST(!r->stop.ignore_eos);
  BOOST_TEST(r->sampling.temperature == 1.0f);
  BOOST_TEST(r->sampling.top_p == 1.0f);
  BOOST_TEST(r->sampling.top_k == 0);
  BOOST_TEST(!r->sampling.seed);
}

BOOST_AUTO_TEST_CASE(sampling_and_stop_options_are_copied) {
  auto req = chat("hi");
  req.params.max_tokens = 5;
  req.params.min_tokens = 2;
  req.params.temperature = 0.0f;
  req.params.top_p = 0.5f;
  req.params.top_k = -1;
  req.params.seed = 7;
  req.params.ignore_eos = true;
  auto r = preprocess_chat(req, card(100), tk, tmpl, "x");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->stop.max_tokens == 5u);
  BOOST_TEST(r->stop.min_tokens == 2u);
  BOOST_TEST(r->stop.ignore_eos);
  BOOST_TEST(r->stop.stop_token_ids.empty());
  BOOST_TEST(r->sampling.temperature == 0.0f);
  BOOST_TEST(r->sampling.top_p == 0.5f);
  BOOST_TEST(r->sampling.top_k == 0);
  BOOST_TEST(*r->sampling.seed == 7u);
}

BOOST_AUTO_TEST_CASE(prompt_must_be_shorter_than_the_context) {
  // "abcd" is 4 tokens: fits a 5-token context, not a 4-token one.
  BOOST_TEST(test::ok(preprocess_completion(completion(std::string{"abcd"}), card(5), tk, "x")));
  auto r = preprocess_completion(completion(std::string{"abcd"}), card(4), tk, "x");
  check_error(r, 400, "prompt", "context_length_exceeded");
  check_error(preprocess_chat(chat(std::string(100, 'a')), card(50), tk, tmpl, "x"), 400,
              "messages", "context_length_exceeded");
}

BOOST_AUTO_TEST_CASE(prompt_plus_max_tokens_must_fit) {
  auto req = completion(std::string{"abcd"});
  req.params.max_tokens = 6;
  BOOST_TEST(test::ok(preprocess_completion(req, card(10), tk, "x")));
  req.params.max_tokens = 7;
  check_error(preprocess_completion(req, card(10), tk, "x"), 400, "max_tokens",
              "context_length_exceeded");
}

BOOST_AUTO_TEST_CASE(min_tokens_must_fit_the_remaining_context) {
  auto req = completion(std::string{"abcd"});
  req.params.min_tokens = 7;
  check_error(preprocess_completion(req, card(10), tk, "x"), 400, "min_tokens", "invalid_value");
}

BOOST_AUTO_TEST_CASE(token_prompts_are_checked_against_the_vocabulary) {
  auto ok = preprocess_completion(completion(std::vector<uint32_t>{1, 256}), card(10), tk, "x");
  BOOST_REQUIRE(ok);
  BOOST_TEST(ok->token_ids == (std::vector<uint32_t>{1, 256}));
  check_error(preprocess_completion(completion(std::vector<uint32_t>{1, 257}), card(10), tk, "x"),
              400, "prompt", "invalid_value");
}

BOOST_AUTO_TEST_CASE(null_bytes_are_stripped_and_an_empty_prompt_is_rejected) {
  auto r = preprocess_completion(completion(std::string{"a\0b", 3}), card(10), tk, "x");
  BOOST_REQUIRE(r);
  BOOST_TEST(tk.decode(r->token_ids) == "ab");
  check_error(preprocess_completion(completion(std::string{"\0", 1}), card(10), tk, "x"), 400,
              "prompt", "invalid_value");
}

BOOST_AUTO_TEST_CASE(bos_is_added_once) {
  bos_tokenizer btk;
  auto r = preprocess_completion(completion(std::string{"ab"}), card(10), btk, "x");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->token_ids == (std::vector<uint32_t>{300, 'a', 'b'}));
  auto given = preprocess_completion(completion(std::vector<uint32_t>{300, 'a'}), card(10), btk, "x");
  BOOST_REQUIRE(given);
  BOOST_TEST(given->token_ids == (std::vector<uint32_t>{300, 'a'}));
}

BOOST_AUTO_TEST_CASE(card_without_context_length_is_a_config_error) {
  auto r = preprocess_chat(chat("hi"), card(0), tk, tmpl, "x");
  BOOST_REQUIRE(!r);
  BOOST_TEST(test::failure(r).status == 500u);
}

BOOST_AUTO_TEST_CASE(tool_choice_decides_parsing_and_the_forced_call_grammar) {
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"a","parameters":
      {"type":"object","properties":{"x":{"type":"integer"}}}}},{"type":"function","function":{"name":"b"}}])";
  auto run = [&](const std::string& extra, const output_format& fmt, chat_parsing& plan) {
    auto req = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + tools +
                                  extra + "}");
    BOOST_REQUIRE(test::ok(req));
    auto r = preprocess_chat(*req, card(1000), tk, tmpl, "id", fmt, &plan);
    BOOST_REQUIRE(test::ok(r));
    return *r;
  };
  chat_parsing plan;
  auto r = run("", {tool_format::llama3_json, false}, plan); // auto: parsed, not forced
  BOOST_TEST((plan.parser.tools == tool_format::llama3_json));
  BOOST_TEST((r.sampling.guided.kind == protocol::guided_kind::none));
  BOOST_TEST(plan.parser.max_calls == 0u); // parallel calls allowed
  run(R"(,"parallel_tool_calls":false)", {tool_format::hermes, false}, plan);
  BOOST_TEST(plan.parser.max_calls == 1u); // the reply ends with its first call
  r = run(R"(,"tool_choice":"none")", {tool_format::hermes, true}, plan);
  BOOST_TEST((plan.parser.tools == tool_format::none));
  BOOST_TEST(plan.parser.reasoning);
  BOOST_TEST((r.sampling.guided.kind == protocol::guided_kind::none));
  r = run(R"(,"tool_choice":"required")", {tool_format::hermes, false}, plan);
  BOOST_TEST((r.sampling.guided.kind == protocol::guided_kind::tool_calls));
  auto spec = nlohmann::json::parse(r.sampling.guided.spec);
  BOOST_TEST(spec["functions"].size() == 2u);
  BOOST_TEST(spec["functions"][0]["parameters"]["properties"]["x"]["type"] == "integer");
  BOOST_TEST(spec["functions"][1]["parameters"]["type"] == "object"); // none given: any object
  BOOST_TEST(spec["max_calls"] == 0);
  BOOST_TEST(spec["begin"] == "<tool_call>\n");
  r = run(R"(,"tool_choice":"required","parallel_tool_calls":false)", {tool_format::mistral, false}, plan);
  BOOST_TEST(nlohmann::json::parse(r.sampling.guided.spec)["max_calls"] == 1); // the grammar allows one call
  BOOST_TEST(plan.parser.max_calls == 1u);
  r = run(R"(,"tool_choice":{"type":"function","function":{"name":"b"}})", {tool_format::none, false},
          plan);
  spec = nlohmann::json::parse(r.sampling.guided.spec);
  BOOST_TEST(spec["functions"].size() == 1u);
  BOOST_TEST(spec["functions"][0]["name"] == "b");
  BOOST_TEST(spec["max_calls"] == 1);
  BOOST_TEST(plan.parser.max_calls == 1u);
  BOOST_TEST((plan.parser.tools == tool_format::hermes)); // forced calls are written in the generic form
}

BOOST_AUTO_TEST_CASE(a_prompt_that_opens_think_starts_the_output_in_reasoning) {
  chat_parsing plan;
  auto req = chat("hi <think>\n");
  auto r = preprocess_chat(req, card(1000), tk, tmpl, "id", {tool_format::hermes, true}, &plan);
  BOOST_REQUIRE(r);
  BOOST_TEST(!plan.parser.starts_in_reasoning); // the simple template ends with "assistant: "
  // A template whose prompt ends inside <think> (as DeepSeek-R1's).
  class opener final : public tok::chat_template {
  public:
    expected<std::string> render(const std::vector<tok::chat_message>&, bool) const override {
      return std::string("<|Assistant|><think>\n");
    }
    expected<std::string> render(const tok::chat_input&) const override {
      return std::string("<|Assistant|><think>\n");
    }
  } r1;
  r = preprocess_chat(req, card(1000), tk, r1, "id", {tool_format::hermes, true}, &plan);
  BOOST_REQUIRE(r);
  BOOST_TEST(plan.parser.starts_in_reasoning);
  r = preprocess_chat(req, card(1000), tk, r1, "id", {tool_format::hermes, false}, &plan);
  BOOST_REQUIRE(r);
  BOOST_TEST(!plan.parser.starts_in_reasoning); // reasoning parsing off
}

BOOST_AUTO_TEST_CASE(a_call_marker_that_is_a_control_token_keeps_control_text) {
  // Bytes, plus [TOOL_CALLS] as control token 300 (its text is dropped by default).
  class mistral_like final : public tok::tokenizer {
  public:
    std::vector<uint32_t> encode(std::string_view text, bool special) const override {
      if (special && text == "[TOOL_CALLS]")
        return {300};
      return inner_.encode(text, special);
    }
    std::string token_bytes(uint32_t id, bool special) const override {
      return id == 300 ? (special ? "[TOOL_CALLS]" : "") : inner_.token_bytes(id, special);
    }
    uint32_t vocab_size() const noexcept override { return 301; }
    std::vector<uint32_t> stop_token_ids() const override { return {256}; }
    int64_t bos_token_id() const noexcept override { return -1; }

  private:
    tok::byte_tokenizer inner_;
  } mt;
  auto req = parse_chat_request(R"({"model":"m","messages":[{"role":"user","content":"hi"}],
      "tools":[{"type":"function","function":{"name":"f"}}]})");
  BOOST_REQUIRE(test::ok(req));
  chat_parsing plan;
  BOOST_REQUIRE(preprocess_chat(*req, card(1000), mt, tmpl, "id", {tool_format::mistral, false}, &plan));
  BOOST_TEST(plan.include_special);
  BOOST_REQUIRE(preprocess_chat(*req, card(1000), tk, tmpl, "id", {tool_format::mistral, false}, &plan));
  BOOST_TEST(!plan.include_special); // plain text in this vocabulary
  BOOST_REQUIRE(preprocess_chat(*req, card(1000), mt, tmpl, "id", {tool_format::hermes, false}, &plan));
  BOOST_TEST(!plan.include_special);
}

BOOST_AUTO_TEST_SUITE_END()
