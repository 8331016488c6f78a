// Feature coverage of the Jinja subset: every case in data/jinja_cases.json
// (rendered by Python jinja2 with HF's settings, see make_jinja_cases.py)
// must render to the same text, or fail (to parse or to render) where jinja2
// raised.
#include "runtime/tokenizer/jinja_chat_template.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>

using namespace dynamo;
using namespace dynamo::tok;

BOOST_AUTO_TEST_SUITE(jinja_cases)

BOOST_AUTO_TEST_CASE(every_case_matches_jinja2) {
  const char* src = std::getenv("DYNAMO_SOURCE_DIR");
  BOOST_REQUIRE_MESSAGE(src, "DYNAMO_SOURCE_DIR is not set (run through ctest)");
  std::ifstream in(std::string(src) + "/tests/runtime/tokenizer/data/jinja_cases.json");
  BOOST_REQUIRE(in);
  const auto doc = nlohmann::ordered_json::parse(in);
  const auto& cases = doc.at("cases");
  BOOST_REQUIRE(cases.size() >= 100u);
  for (const auto& c : cases) {
    const std::string name = c.at("name").get<std::string>();
    BOOST_TEST_CONTEXT(name << (c.at("add_generation_prompt").get<bool>() ? " (gen)" : "")) {
      auto t = jinja_chat_template::parse(c.at("template").get<std::string>(), c.at("bos_token").get<std::string>(),
                                          c.at("eos_token").get<std::string>());
      if (!t && c.contains("error")) {
        BOOST_TEST(code_of(t.error()) == errc::invalid_argument);
        continue;
      }
      BOOST_TEST_REQUIRE(static_cast<bool>(t), error_text(t));
      chat_input input;
      input.messages = c.at("messages");
      input.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
      std::tm now{};
      BOOST_REQUIRE(std::sscanf(c.at("now").get<std::string>().c_str(), "%d-%d-%dT%d:%d:%d", &now.tm_year,
                                &now.tm_mon, &now.tm_mday, &now.tm_hour, &now.tm_min, &now.tm_sec) == 6);
      now.tm_year -= 1900;
      now.tm_mon -= 1;
      std::tm filled = now;
      timegm(&filled); // weekday and day of the year
      now.tm_wday = filled.tm_wday;
      now.tm_yday = filled.tm_yday;
      input.now = now;
      auto r = (*t)->render(input);
      if (c.contains("error")) {
        BOOST_TEST(!r, "jinja2 raised " << c.at("error").get<std::string>());
        if (!r)
          BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
      } else {
        BOOST_TEST_REQUIRE(static_cast<bool>(r), error_text(r));
        BOOST_TEST(*r == c.at("expected").get<std::string>());
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
