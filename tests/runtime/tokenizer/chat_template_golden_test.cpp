// Golden renders of real chat templates (data/templates/*.jinja: Llama 3.1 /
// 3.2, Qwen2.5, Qwen3, QwQ, Mistral Nemo, Mistral Small 3.2, DeepSeek R1
// distills, Phi-3.5): every case in data/chat_template_cases.json, rendered by
// Python jinja2 as Hugging Face's apply_chat_template does (see
// make_chat_template_cases.py), must render byte for byte the same through
// the structured chat_input API, or fail where jinja2 raised.
#include "runtime/tokenizer/jinja_chat_template.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

using ojson = nlohmann::ordered_json;

std::string data_path(const std::string& rel) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is not set (run through ctest)");
  return std::string(src) + "/tests/runtime/tokenizer/data/" + rel;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "cannot open " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// "2025-01-15T09:30:05" as the broken-down time strftime_now formats.
std::tm parse_time(const std::string& iso) {
  std::tm t{};
  BOOST_REQUIRE(std::sscanf(iso.c_str(), "%d-%d-%dT%d:%d:%d", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                            &t.tm_min, &t.tm_sec) == 6);
  t.tm_year -= 1900;
  t.tm_mon -= 1;
  std::tm copy = t;
  timegm(&copy); // fills in the weekday and the day of the year
  t.tm_wday = copy.tm_wday;
  t.tm_yday = copy.tm_yday;
  return t;
}

std::string text_or_null(const ojson& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

} // namespace

BOOST_AUTO_TEST_SUITE(chat_template_golden)

BOOST_AUTO_TEST_CASE(real_templates_render_as_jinja2_does) {
  const auto doc = ojson::parse(read_file(data_path("chat_template_cases.json")));
  const auto& cases = doc.at("cases");
  BOOST_REQUIRE_GE(cases.size(), 90u);
  std::map<std::string, std::string> sources;
  size_t rendered = 0, raised = 0;
  for (const auto& c : cases) {
    const std::string file = c.at("template").get<std::string>();
    if (!sources.count(file))
      sources[file] = read_file(data_path("templates/" + file));
    const bool gen = c.at("add_generation_prompt").get<bool>();
    BOOST_TEST_CONTEXT(c.at("name").get<std::string>() << (gen ? " (gen)" : "")) {
      auto t = jinja_chat_template::parse(sources[file], text_or_null(c.at("bos_token")),
                                          text_or_null(c.at("eos_token")));
      BOOST_TEST_REQUIRE(static_cast<bool>(t), error_text(t));
      chat_input in;
      in.messages = c.at("messages");
      in.tools = c.at("tools");
      in.add_generation_prompt = gen;
      in.kwargs = c.at("kwargs");
      in.now = parse_time(c.at("now").get<std::string>());
      auto r = (*t)->render(in);
      if (c.contains("error")) {
        BOOST_TEST(!r, "jinja2 raised " << c.at("error").get<std::string>());
        if (!r)
          BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
        ++raised;
      } else {
        BOOST_TEST_REQUIRE(static_cast<bool>(r), error_text(r));
        BOOST_TEST(*r == c.at("expected").get<std::string>());
        ++rendered;
      }
    }
  }
  BOOST_TEST_MESSAGE(rendered << " renders and " << raised << " errors match jinja2");
}

BOOST_AUTO_TEST_CASE(structured_input_is_validated) {
  auto t = jinja_chat_template::parse("{{ messages[0].role }}", "<s>", "</s>");
  BOOST_REQUIRE(t);
  chat_input in;
  BOOST_TEST(!(*t)->render(in)); // no messages
  in.messages = ojson::array({{{"role", "user"}, {"content", "hi"}}});
  BOOST_TEST((*t)->render(in).value() == "user");
  in.tools = "not a list";
  BOOST_TEST(!(*t)->render(in));
  in.tools = nullptr;
  in.kwargs = {{"messages", 1}};
  auto r = (*t)->render(in);
  BOOST_REQUIRE(!r);
  BOOST_TEST(message_of(r.error()) == "chat template kwarg 'messages' is reserved");
  in.kwargs = ojson::array();
  BOOST_TEST(!(*t)->render(in));
  in.kwargs = ojson::object();
  in.messages = ojson::array({"user"});
  BOOST_TEST(!(*t)->render(in));
}

BOOST_AUTO_TEST_CASE(kwargs_reach_the_template_and_may_override_special_tokens) {
  auto t = jinja_chat_template::parse(
      "{{ bos_token }}{% if enable_thinking is false %}no-think{% endif %}{{ tools is none }}{{ documents }}", "<s>",
      "</s>");
  BOOST_REQUIRE(t);
  chat_input in;
  in.messages = ojson::array({{{"role", "user"}, {"content", "hi"}}});
  BOOST_TEST((*t)->render(in).value() == "<s>TrueNone");
  in.kwargs = {{"enable_thinking", false}, {"bos_token", "[BOS]"}};
  BOOST_TEST((*t)->render(in).value() == "[BOS]no-thinkTrueNone");
}

BOOST_AUTO_TEST_SUITE_END()
