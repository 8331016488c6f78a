#include "runtime/tokenizer/detokenizer.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::tok;

BOOST_AUTO_TEST_SUITE(detokenizer)

BOOST_AUTO_TEST_CASE(byte_tokenizer_round_trips) {
  byte_tokenizer tk;
  std::string text = "héllo, wörld ✓";
  auto ids = tk.encode(text, false);
  BOOST_TEST(ids.size() == text.size());
  BOOST_TEST(tk.decode(ids) == text);
  BOOST_TEST(tk.stop_token_ids() == std::vector<uint32_t>{byte_tokenizer::eos_id});
}

BOOST_AUTO_TEST_CASE(never_emits_half_a_character) {
  byte_tokenizer tk;
  incremental_detokenizer dt(tk);
  std::string text = "a✓b"; // ✓ is E2 9C 93
  auto ids = tk.encode(text, false);
  std::vector<std::string> pieces;
  for (auto id : ids)
    pieces.push_back(dt.push(id));
  BOOST_REQUIRE_EQUAL(pieces.size(), 5u);
  BOOST_TEST(pieces[0] == "a");
  BOOST_TEST(pieces[1] == "");
  BOOST_TEST(pieces[2] == "");
  BOOST_TEST(pieces[3] == "✓");
  BOOST_TEST(pieces[4] == "b");
  BOOST_TEST(dt.flush() == "");
}

BOOST_AUTO_TEST_CASE(invalid_bytes_become_replacement_characters) {
  byte_tokenizer tk;
  incremental_detokenizer dt(tk);
  BOOST_TEST(dt.push(0xFF) == "\xEF\xBF\xBD");
  BOOST_TEST(dt.push(0xE2) == "");         // valid lead, waits
  BOOST_TEST(dt.push('x') == "\xEF\xBF\xBDx"); // broken sequence
  BOOST_TEST(dt.push(0xE2) == "");
  BOOST_TEST(dt.flush() == "\xEF\xBF\xBD"); // incomplete tail at end of stream
}

BOOST_AUTO_TEST_CASE(rejects_overlongs_and_surrogates) {
  std::string overlong = "\xE0\x80\x80";
  BOOST_TEST(utf8_complete_prefix(overlong) == 9u);
  BOOST_TEST(overlong.find("\x80") == std::string::npos);
  std::string surrogate = "\xED\xA0\x80";
  BOOST_TEST(utf8_complete_prefix(surrogate) == 9u);
  BOOST_TEST(surrogate.substr(0, 3) == "\xEF\xBF\xBD");
}

BOOST_AUTO_TEST_CASE(stop_string_cuts_output) {
  stop_matcher m({"END", "\n\n"});
  auto a = m.push("hello E");
  BOOST_TEST(a.text == "hello ");
  BOOST_TEST(!a.stopped);
  auto b = m.push("N");
  BOOST_TEST(b.text == "");
  auto c = m.push("D and more");
  BOOST_TEST(c.text == "");
  BOOST_TEST(c.stopped);
  BOOST_TEST(m.push("ignored").text == "");
}

BOOST_AUTO_TEST_CASE(false_prefix_is_released) {
  stop_matcher m({"END"});
  BOOST_TEST(m.push("EN").text == "");
  BOOST_TEST(m.push("X").text == "ENX");
  BOOST_TEST(m.push("E").text == "");
  BOOST_TEST(m.flush() == "E");
}

BOOST_AUTO_TEST_CASE(earliest_stop_wins_within_one_chunk) {
  stop_matcher m({"b", "a"});
  auto r = m.push("xxabyy");
  BOOST_TEST(r.stopped);
  BOOST_TEST(r.text == "xx");
}

BOOST_AUTO_TEST_SUITE_END()
