#include "runtime/openai/request.hpp"

#include <boost/test/unit_test.hpp>

#include <random>

using namespace dynamo::openai;

BOOST_AUTO_TEST_SUITE(parser_robustness)

// Seeded byte flips, truncations and insertions of valid bodies: every result
// must be a value or an error value; nothing may throw or crash.
BOOST_AUTO_TEST_CASE(mutated_bodies_give_values_or_errors_never_exceptions) {
  const std::string chat = R"({"model":"m","messages":[{"role":"user","content":[{"type":"text",)"
                           R"("text":"hi"}]}],"max_tokens":5,"stop":["a"],"stream":true,)"
                           R"("stream_options":{"include_usage":true},"temperature":0.5})";
  const std::string completion = R"({"model":"m","prompt":[[1,2,3]],"top_k":4,"seed":-3})";
  std::mt19937 rng{1234};
  size_t values = 0;
  size_t errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string body = (i % 2) ? chat : completion;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      size_t pos = rng() % body.size();
      switch (rng() % 4) {
        case 0: body[pos] = static_cast<char>(rng() % 256); break;
        case 1: body.resize(pos); break;
        case 2: body.insert(pos, 1, "{}[]\",:0-e.\\"[rng() % 12]); break;
        default: body.erase(pos, 1);
      }
    }
    BOOST_REQUIRE_NO_THROW({
      auto a = parse_chat_request(body);
      auto b = parse_completion_request(body);
      (a ? values : errors) += 1;
      (b ? values : errors) += 1;
    });
  }
  BOOST_TEST(values > 0u); // some mutations stay valid
  BOOST_TEST(errors > 0u);
}

BOOST_AUTO_TEST_SUITE_END()
