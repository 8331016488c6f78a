// spm_tokenizer on a tiny hand-made vocabulary: score-ordered merges with the
// leftmost pair first on ties, the U+2581 space prefix (again after each
// special token), byte fallback, decoding, and special tokens. The real
// vocabularies are checked against llama.cpp's vectors in llama_vocab_test.cpp.
#include "runtime/tokenizer/spm_tokenizer.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

using ids = std::vector<uint32_t>;

// 0 <unk>, 1 <s>, 2 </s>, 3..258 the byte tokens <0x00>..<0xFF>, then `extra`
// normal tokens with their scores.
spm_vocab tiny_vocab(std::vector<std::pair<std::string, float>> extra) {
  spm_vocab v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {2, 3, 3};
  v.scores = {0, 0, 0};
  static constexpr char hex[] = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    v.token_types.push_back(6);
    v.scores.push_back(0);
  }
  for (auto& [text, score] : extra) {
    v.tokens.push_back(text);
    v.token_types.push_back(1);
    v.scores.push_back(score);
  }
  v.ids.unk = 0;
  v.ids.bos = 1;
  v.ids.eos = 2;
  v.add_bos = true;
  return v;
}

std::shared_ptr<spm_tokenizer> make(spm_vocab v) {
  auto t = spm_tokenizer::create(std::move(v));
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  return *t;
}

constexpr uint32_t first_extra = 259;

// "▁" 259, "h" 260, "e" 261, "l" 262, "o" 263, "▁h" 264, "el" 265, "ll" 266,
// "lo" 267, "▁he" 268, "i" 269, "▁hi" 270.
spm_vocab hello_vocab() {
  return tiny_vocab({{"\xE2\x96\x81", -10}, {"h", -10}, {"e", -10}, {"l", -10}, {"o", -10}, {"\xE2\x96\x81h", -3},
                     {"el", -4}, {"ll", -2}, {"lo", -5}, {"\xE2\x96\x81he", -1}, {"i", -10}, {"\xE2\x96\x81hi", -1}});
}

} // namespace

BOOST_AUTO_TEST_SUITE(spm_tokenizer_unit)

BOOST_AUTO_TEST_CASE(highest_scores_merge_first) {
  // ▁ h e l l o: "ll" (-2) first, then "▁h" (-3), then "▁he" (-1) which that
  // made possible; "el" and "lo" went stale when "ll" took their letters.
  auto t = make(hello_vocab());
  BOOST_TEST(t->encode("hello", false) == (ids{268, 266, 263}), boost::test_tools::per_element());
  BOOST_TEST(t->decode(t->encode("hello", false)) == "hello");
}

BOOST_AUTO_TEST_CASE(equal_scores_merge_leftmost_first) {
  auto v = tiny_vocab({{"a", -10}, {"aa", -1}});
  v.add_space_prefix = false;
  BOOST_TEST(make(v)->encode("aaa", false) == (ids{first_extra + 1, first_extra}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(spaces_become_u2581_with_a_prefix_at_the_start_and_after_special_tokens) {
  auto t = make(hello_vocab());
  BOOST_TEST(t->encode("hi hi", false) == (ids{270, 270}), boost::test_tools::per_element());
  BOOST_TEST(t->encode("<s>hi</s>hi", true) == (ids{1, 270, 2, 270}), boost::test_tools::per_element());
  auto v = hello_vocab();
  v.add_space_prefix = false;
  BOOST_TEST(make(v)->encode("hi", false) == (ids{260, 269}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(uncovered_characters_fall_back_to_byte_tokens) {
  auto t = make(hello_vocab());
  // "é" = C3 A9 has no token: <0xC3> <0xA9>, ids 3 + byte.
  BOOST_TEST(t->encode("h\xC3\xA9", false) == (ids{264, 3 + 0xC3, 3 + 0xA9}), boost::test_tools::per_element());
  BOOST_TEST(t->decode(t->encode("h\xC3\xA9", false)) == "h\xC3\xA9");
  BOOST_TEST(t->token_bytes(3 + '\n', false) == "\n");
  // Without byte tokens the unknown token stands in.
  spm_vocab v;
  v.tokens = {"<unk>", "\xE2\x96\x81"};
  v.token_types = {2, 1};
  v.ids.unk = 0;
  BOOST_TEST(make(v)->encode("x", false) == (ids{1, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(decode_drops_only_the_prefixed_space) {
  auto t = make(hello_vocab());
  BOOST_TEST(t->decode(ids{270, 270}) == "hi hi");
  BOOST_TEST(t->token_bytes(270, false) == " hi"); // streaming keeps it
  // As llama.cpp: a leading (hidden) BOS takes the strip, so the space stays.
  BOOST_TEST(t->decode(ids{1, 270}) == " hi");
  BOOST_TEST(t->decode(ids{1, 270}, true) == "<s> hi");
}

BOOST_AUTO_TEST_CASE(bos_eos_and_stop_tokens) {
  auto v = hello_vocab();
  auto t = make(v);
  BOOST_TEST(t->bos_token_id() == 1);
  BOOST_TEST(t->appended_eos_id() == -1);
  BOOST_TEST(t->stop_token_ids() == (ids{2}), boost::test_tools::per_element());
  BOOST_TEST(t->encode_prompt("hi", false) == (ids{1, 270}), boost::test_tools::per_element());
  BOOST_TEST(t->encode_prompt("<s>hi", true) == (ids{1, 270}), boost::test_tools::per_element()); // not twice
  v.add_eos = true;
  v.add_bos = false;
  BOOST_TEST(make(v)->encode_prompt("hi", false) == (ids{270, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(control_texts_are_plain_text_without_parse_special) {
  auto t = make(hello_vocab());
  // "<s>" is spelled by pieces; bytes here since the vocabulary has no "<", "s", ">".
  BOOST_TEST(t->encode("<s>", false) == (ids{259, 3 + '<', 3 + 's', 3 + '>'}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_vocabularies_are_rejected) {
  auto v = hello_vocab();
  v.scores.pop_back();
  BOOST_TEST(!spm_tokenizer::create(v));
  auto w = hello_vocab();
  w.ids.eos = 9999;
  BOOST_TEST(!spm_tokenizer::create(w));
}

BOOST_AUTO_TEST_SUITE_END()
