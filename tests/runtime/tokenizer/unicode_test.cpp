#include "runtime/tokenizer/unicode.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::tok;

BOOST_AUTO_TEST_SUITE(unicode)

BOOST_AUTO_TEST_CASE(classifies_letters_numbers_and_whitespace) {
  BOOST_TEST((classify('a') == char_class::letter));
  BOOST_TEST((classify(U'é') == char_class::letter));
  BOOST_TEST((classify(U'中') == char_class::letter));   // Lo
  BOOST_TEST((classify(U'ー') == char_class::letter));   // Lm
  BOOST_TEST((classify(0x1D400) == char_class::letter)); // mathematical bold A (plane 1)
  BOOST_TEST((classify('7') == char_class::number));
  BOOST_TEST((classify(U'٣') == char_class::number)); // Arabic-Indic digit (Nd)
  BOOST_TEST((classify(U'Ⅻ') == char_class::number)); // Nl
  BOOST_TEST((classify(U'½') == char_class::number)); // No
  BOOST_TEST((classify(U'²') == char_class::number)); // No
  for (char32_t ws : {U' ', U'\t', U'\n', U'\r', U'\v', U'\f', U'\u0085', U'\u00a0', U'\u2028', U'\u3000'})
    BOOST_TEST((classify(ws) == char_class::whitespace));
  for (char32_t other : {U'!', U'\'', U'€', U'❤', U'\u200d', U'\u001c', U'\u0000', char32_t{0x1F980}})
    BOOST_TEST((classify(other) == char_class::other));
  BOOST_TEST((classify(invalid_cp) == char_class::other));
}

BOOST_AUTO_TEST_CASE(general_categories_for_the_finer_patterns) {
  using uc = unicode_category;
  const std::pair<char32_t, uc> cases[] = {
      {U'A', uc::lu}, {U'É', uc::lu}, {U'a', uc::ll}, {U'ß', uc::ll}, {U'ǅ', uc::lt}, {U'ʰ', uc::lm},
      {U'中', uc::lo}, {U'\u0301', uc::mark}, {U'\u0903', uc::mark}, {U'٣', uc::number}, {U'!', uc::punctuation},
      {U'「', uc::punctuation}, {U'$', uc::symbol}, {U'+', uc::symbol}, {U'€', uc::symbol},
      {char32_t{0x1F980}, uc::symbol}, {U'\u00a0', uc::separator}, {U'\u200d', uc::control},
      {U'\n', uc::control}, {char32_t{0x0378}, uc::undefined}, {invalid_cp, uc::symbol}};
  for (auto [cp, cat] : cases)
    BOOST_TEST((char_info_of(cp).cat == cat), "U+" << std::hex << static_cast<uint32_t>(cp));
  BOOST_TEST(char_info_of(U'\u3000').space);
  BOOST_TEST(char_info_of(U'\u0085').space);
  BOOST_TEST(!char_info_of(U'\u200b').space);
  BOOST_TEST(char_info_of(char32_t{0x1D400}).letter()); // a plane-1 letter (table lookup past the BMP)
}

BOOST_AUTO_TEST_CASE(decodes_utf8_and_isolates_invalid_bytes) {
  const std::string s = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA6\x80";
  auto a = decode_utf8(s, 0), e = decode_utf8(s, 1), z = decode_utf8(s, 3), crab = decode_utf8(s, 6);
  BOOST_TEST((a.cp == U'a' && a.len == 1));
  BOOST_TEST((e.cp == U'é' && e.len == 2));
  BOOST_TEST((z.cp == U'中' && z.len == 3));
  BOOST_TEST((crab.cp == 0x1F980 && crab.len == 4));
  for (std::string bad : {"\x80", "\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE4\xB8", "\xFF"}) {
    auto c = decode_utf8(bad, 0);
    BOOST_TEST((c.cp == invalid_cp && c.len == 1));
  }
}

BOOST_AUTO_TEST_CASE(encodes_utf8) {
  std::string out;
  for (char32_t c : {U'a', U'é', U'中', char32_t{0x1F980}})
    append_utf8(out, c);
  BOOST_TEST(out == "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\xA6\x80");
}

BOOST_AUTO_TEST_SUITE_END()
