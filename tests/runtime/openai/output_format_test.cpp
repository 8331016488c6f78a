// Output formats: detection from the real chat templates kept as tokenizer
// test data, the override names, and the guided_decoding tool_calls spec.
// Also: golden renders through the request path: every tools / tool-call /
// chat_template_kwargs case of tests/runtime/tokenizer/data/chat_template_cases.json
// (rendered by Python jinja2 as HF's apply_chat_template), sent as an OpenAI
// client sends it (arguments as JSON strings), parsed by parse_chat_request
// and rendered from the request's chat_input, must give jinja2's text.
#include "runtime/openai/output_format.hpp"
#include "runtime/openai/request.hpp"
#include "runtime/tokenizer/jinja_chat_template.hpp"
#include "tests/runtime/openai/test_util.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

using namespace dynamo;
using namespace dynamo::openai;
using ojson = nlohmann::ordered_json;

namespace {

std::string tokenizer_data(const std::string& rel) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is not set (run through ctest)");
  std::ifstream in(std::string(src) + "/tests/runtime/tokenizer/data/" + rel, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot open " << rel);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

output_format detect_file(const std::string& name) {
  return detect_output_format(tokenizer_data("templates/" + name));
}

std::tm pinned_time(const std::string& iso) {
  std::tm t{};
  BOOST_REQUIRE(std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &t.tm_year, &t.tm_mon, &t.tm_mday,
                            &t.tm_hour, &t.tm_min, &t.tm_sec) == 6);
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  std::tm copy = t;
  timegm(&copy);
  t.tm_wday = copy.tm_wday;
  t.tm_yday = copy.tm_yday;
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(output_format_tests)

BOOST_AUTO_TEST_CASE(formats_are_detected_from_real_templates) {
  struct want {
    const char* file;
    tool_format tools;
    bool reasoning;
  };
  for (const want& w : {want{"Qwen-Qwen2.5-7B-Instruct.jinja", tool_format::hermes, false},
                        want{"Qwen-Qwen3-0.6B.jinja", tool_format::hermes, true},
                        want{"Qwen-QwQ-32B.jinja", tool_format::hermes, true},
                        want{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", tool_format::hermes, true},
                        want{"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", tool_format::hermes, true},
                        want{"meta-llama-Llama-3.1-8B-Instruct.jinja", tool_format::llama3_json, false},
                        want{"meta-llama-Llama-3.2-3B-Instruct.jinja", tool_format::llama3_json, false},
                        want{"mistralai-Mistral-Nemo-Instruct-2407.jinja", tool_format::mistral, false},
                        want{"Mistral-Small-3.2-24B-Instruct-2506.jinja", tool_format::mistral, false},
                        want{"microsoft-Phi-3.5-mini-instruct.jinja", tool_format::hermes, false}}) {
    BOOST_TEST_CONTEXT(w.file) {
      auto f = detect_file(w.file);
      BOOST_TEST(tool_format_name(f.tools) == tool_format_name(w.tools));
      BOOST_TEST(f.reasoning == w.reasoning);
    }
  }
  BOOST_TEST((detect_output_format(tok::simple_chat_template{}).tools == tool_format::hermes));
}

BOOST_AUTO_TEST_CASE(overrides_replace_the_detection) {
  output_format qwen3{tool_format::hermes, true};
  auto f = apply_overrides(qwen3, "mistral", "none");
  BOOST_REQUIRE(test::ok(f));
  BOOST_TEST((f->tools == tool_format::mistral));
  BOOST_TEST(!f->reasoning);
  f = apply_overrides({tool_format::hermes, false}, "auto", "think");
  BOOST_REQUIRE(test::ok(f));
  BOOST_TEST((f->tools == tool_format::hermes));
  BOOST_TEST(f->reasoning);
  BOOST_TEST((apply_overrides(qwen3, "", "")->tools == tool_format::hermes));
  BOOST_TEST((apply_overrides(qwen3, "none", "auto")->tools == tool_format::none));
  BOOST_TEST(!apply_overrides(qwen3, "pythonic", "auto"));
  BOOST_TEST(!apply_overrides(qwen3, "auto", "deepseek"));
}

BOOST_AUTO_TEST_CASE(tool_calls_spec_names_the_format) {
  const ojson fns = ojson::array({{{"name", "f"}, {"parameters", {{"type", "object"}}}}});
  auto hermes = ojson::parse(tool_calls_spec(tool_format::hermes, fns, true));
  BOOST_TEST(hermes["functions"] == fns);
  BOOST_TEST(hermes["begin"] == "<tool_call>\n");
  BOOST_TEST(hermes["end"] == "\n</tool_call>");
  BOOST_TEST(hermes["max_calls"] == 0);
  BOOST_TEST(hermes["array"] == false);
  BOOST_TEST(hermes["arguments_key"] == "arguments");
  BOOST_TEST(ojson::parse(tool_calls_spec(tool_format::hermes, fns, false))["max_calls"] == 1);
  auto llama = ojson::parse(tool_calls_spec(tool_format::llama3_json, fns, true));
  BOOST_TEST(llama["arguments_key"] == "parameters");
  BOOST_TEST(llama["max_calls"] == 1);
  BOOST_TEST(llama["begin"] == "");
  auto mistral = ojson::parse(tool_calls_spec(tool_format::mistral, fns, true));
  BOOST_TEST(mistral["begin"] == "[TOOL_CALLS]");
  BOOST_TEST(mistral["array"] == true);
}

BOOST_AUTO_TEST_CASE(requests_with_tools_render_as_jinja2_does) {
  const auto doc = ojson::parse(tokenizer_data("chat_template_cases.json"));
  std::map<std::string, std::shared_ptr<tok::jinja_chat_template>> templates;
  std::set<std::string> covered;
  size_t checked = 0;
  for (const auto& c : doc.at("cases")) {
    bool tools = !c.at("tools").is_null() || !c.at("kwargs").empty();
    for (const auto& m : c.at("messages"))
      tools = tools || m.contains("tool_calls") || m.at("role") == "tool";
    // Skipped: Llama's "ipython" turns (not an OpenAI role), and cases whose
    // arguments are already JSON text: we pass them to the template as an
    // object (as vLLM does), jinja2 rendered the string.
    bool comparable = true;
    for (const auto& m : c.at("messages")) {
      auto roles = chat_roles();
      comparable = comparable && std::find(roles.begin(), roles.end(), m.at("role").get<std::string>()) != roles.end();
      if (m.contains("tool_calls"))
        for (const auto& call : m.at("tool_calls"))
          comparable = comparable && !call.at("function").at("arguments").is_string();
    }
    if (!tools || !comparable || c.contains("error"))
      continue;
    const std::string file = c.at("template").get<std::string>();
    BOOST_TEST_CONTEXT(c.at("name").get<std::string>()) {
      if (!templates.count(file)) {
        auto t = tok::jinja_chat_template::parse(
          tokenizer_data("templates/" + file), c.at("bos_token").is_string() ? c.at("bos_token").get<std::string>() : "",
          c.at("eos_token").is_string() ? c.at("eos_token").get<std::string>() : "");
        BOOST_REQUIRE(t);
        templates[file] = *t;
      }
      // The body an OpenAI client sends: arguments as JSON text.
      ojson messages = c.at("messages");
      for (auto& m : messages)
        if (m.contains("tool_calls"))
          for (auto& call : m["tool_calls"])
            call["function"]["arguments"] = call["function"]["arguments"].dump();
      ojson body{{"model", "m"}, {"messages", messages}};
      if (!c.at("tools").is_null())
        body["tools"] = c.at("tools");
      if (!c.at("kwargs").empty())
        body["chat_template_kwargs"] = c.at("kwargs");
      auto req = parse_chat_request(body.dump());
      BOOST_REQUIRE(test::ok(req));
      tok::chat_input in = req->chat;
      in.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
      in.now = pinned_time(c.at("now").get<std::string>());
      auto text = templates[file]->render(in);
      BOOST_REQUIRE(test::ok(text));
      BOOST_TEST(*text == c.at("expected").get<std::string>());
      covered.insert(file);
      ++checked;
    }
  }
  for (const char* f : {"Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                        "meta-llama-Llama-3.1-8B-Instruct.jinja"})
    BOOST_TEST(covered.count(f) == 1u, f << " has tool cases");
  BOOST_TEST(checked >= 30u);
}

BOOST_AUTO_TEST_SUITE_END()
