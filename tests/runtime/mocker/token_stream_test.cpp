#include "runtime/mocker/token_stream.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include <set>

using namespace dynamo;

BOOST_AUTO_TEST_SUITE(token_stream)

BOOST_AUTO_TEST_CASE(next_token_is_printable_ascii_and_pure) {
  std::set<uint32_t> seen;
  for (uint32_t prev = 0; prev < 300; ++prev)
    for (uint32_t pos = 0; pos < 200; ++pos) {
      const uint32_t t = mocker::next_token(prev, pos);
      BOOST_REQUIRE(t >= 32u && t <= 126u);
      BOOST_REQUIRE_EQUAL(t, mocker::next_token(prev, pos));
      seen.insert(t);
    }
  BOOST_TEST(seen.size() == 95u); // every printable character occurs
}

BOOST_AUTO_TEST_CASE(scripted_reply_is_the_last_complete_mock_reply) {
  auto ids = [](std::string_view s) { return std::vector<uint32_t>(s.begin(), s.end()); };
  BOOST_TEST(!mocker::scripted_reply(ids("no script here")));
  BOOST_TEST(!mocker::scripted_reply(ids("<mock_reply>open only")));
  auto r = mocker::scripted_reply(ids("a<mock_reply>one</mock_reply> b <mock_reply>two</mock_reply>\n"));
  BOOST_REQUIRE(r);
  BOOST_TEST(*r == ids("two"), boost::test_tools::per_element());
  r = mocker::scripted_reply(ids("<mock_reply></mock_reply>"));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->empty());
}

BOOST_AUTO_TEST_CASE(next_token_depends_on_previous_token_and_position) {
  BOOST_TEST(mocker::next_token(65, 10) != mocker::next_token(66, 10));
  BOOST_TEST(mocker::next_token(65, 10) != mocker::next_token(65, 11));
}

BOOST_AUTO_TEST_CASE(continuation_resumes_exactly_from_any_point) {
  const std::vector<uint32_t> prompt{72, 105, 33};
  const auto full = mocker::continuation(prompt, 12);
  auto resumed = prompt;
  resumed.insert(resumed.end(), full.begin(), full.begin() + 5);
  const auto tail = mocker::continuation(resumed, 7);
  BOOST_TEST(std::vector<uint32_t>(full.begin() + 5, full.end()) == tail,
             boost::test_tools::per_element());
  BOOST_TEST(mocker::continuation(prompt, 0).empty());
}

BOOST_AUTO_TEST_CASE(text_reads_through_the_byte_tokenizer) {
  tok::byte_tokenizer t;
  const auto prompt = t.encode("Hello", false);
  const std::string text = t.decode(mocker::continuation(prompt, 16));
  BOOST_TEST(text.size() == 16u);
  for (char c : text)
    BOOST_TEST((c >= 32 && c <= 126));
}

BOOST_AUTO_TEST_SUITE_END()
