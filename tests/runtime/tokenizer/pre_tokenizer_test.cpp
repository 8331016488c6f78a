#include "runtime/tokenizer/pre_tokenizer.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace dynamo::tok;

namespace {

std::vector<std::string> split(pre_tokenizer k, std::string_view text) {
  std::vector<std::string> out;
  for (auto p : pre_tokenize(k, text))
    out.emplace_back(p);
  return out;
}

using pieces = std::vector<std::string>;

} // namespace

BOOST_AUTO_TEST_SUITE(pre_tokenizers)

BOOST_AUTO_TEST_CASE(names_map_to_pre_tokenizers) {
  BOOST_TEST((pre_tokenizer_from_name("smollm") == pre_tokenizer::smollm));
  BOOST_TEST((pre_tokenizer_from_name("llama-bpe") == pre_tokenizer::llama3));
  BOOST_TEST((pre_tokenizer_from_name("gpt-2") == pre_tokenizer::gpt2));
  BOOST_TEST((pre_tokenizer_from_name("qwen2") == pre_tokenizer::qwen2));
  BOOST_TEST(!pre_tokenizer_from_name("deepseek-llm"));
}

BOOST_AUTO_TEST_CASE(gpt2_splits_words_numbers_punctuation_and_contractions) {
  BOOST_TEST(split(pre_tokenizer::gpt2, "Hello, world! it's 2024") ==
                 (pieces{"Hello", ",", " world", "!", " it", "'s", " 2024"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::gpt2, "DON'T") == (pieces{"DON", "'", "T"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gpt2_whitespace_runs_leave_one_space_for_the_next_word) {
  BOOST_TEST(split(pre_tokenizer::gpt2, "a   b") == (pieces{"a", "  ", " b"}), boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::gpt2, "a \n\nb  ") == (pieces{"a", " \n", "\n", "b", "  "}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(smollm_isolates_every_digit) {
  BOOST_TEST(split(pre_tokenizer::smollm, "x 123  4") == (pieces{"x", " ", "1", "2", "3", "  ", "4"}),
             boost::test_tools::per_element());
  // The GPT-2 pattern runs between digits as if each stretch were the whole text.
  BOOST_TEST(split(pre_tokenizer::smollm, "a  1") == (pieces{"a", "  ", "1"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(llama3_groups_digits_by_three_and_attaches_a_prefix_to_words) {
  BOOST_TEST(split(pre_tokenizer::llama3, "1234567 (hello) DON'T") ==
                 (pieces{"123", "456", "7", " (", "hello", ")", " DON", "'T"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::llama3, "x;\n\n  \ny  z") == (pieces{"x", ";\n\n", "  \n", "y", " ", " z"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::qwen2, "x123") == (pieces{"x", "1", "2", "3"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(pieces_cover_the_text_even_with_invalid_utf8) {
  const std::string text = "ab\xFF\xFE cd\xE4\xB8";
  std::string joined;
  for (auto p : pre_tokenize(pre_tokenizer::smollm, text))
    joined += p;
  BOOST_TEST(joined == text);
  BOOST_TEST(pre_tokenize(pre_tokenizer::llama3, "").empty());
}

BOOST_AUTO_TEST_SUITE_END()
