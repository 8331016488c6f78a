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
  BOOST_TEST((pre_tokenizer_from_name("deepseek-llm") == pre_tokenizer::deepseek_llm));
  BOOST_TEST((pre_tokenizer_from_name("tekken") == pre_tokenizer::tekken));
  BOOST_TEST(!pre_tokenizer_from_name("no-such-pre"));
  const auto llama = pre_tokenizer_by_name("llama-bpe");
  BOOST_TEST((llama && llama->ignore_merges && llama->add_bos && llama->clean_spaces));
  const auto dbrx = pre_tokenizer_by_name("dbrx"); // the Llama 3 pattern without its flags
  BOOST_TEST((dbrx && dbrx->kind == pre_tokenizer::llama3 && !dbrx->ignore_merges && !dbrx->add_bos));
  BOOST_TEST(supported_pre_tokenizer_names().find("qwen2, ") != std::string::npos);
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

// Expected pieces below are the tokenizer.json regexes as Python's `regex`
// module splits (matches and the text between them both become pieces).
BOOST_AUTO_TEST_CASE(tekken_splits_words_at_case_changes) {
  BOOST_TEST(split(pre_tokenizer::tekken, "HelloWorld naïveCafé ÉCOLE приветМир e\u0301x 123/ab\n\n x") ==
                 (pieces{"Hello", "World", " naïve", "Café", " ÉCOLE", " привет", "Мир", " e\u0301x", " ", "1", "2",
                         "3", "/ab", "\n\n", " x"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(gpt4o_keeps_contractions_on_words_and_groups_digits_by_three) {
  BOOST_TEST(split(pre_tokenizer::gpt4o, "I'M HTTPServer's 12345 they'LL") ==
                 (pieces{"I'M", " HTTPServer's", " ", "123", "45", " they'LL"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(qwen35_keeps_combining_marks_in_words) {
  BOOST_TEST(split(pre_tokenizer::qwen35, "caf e\u0301 x\u0301\u0301 9") ==
                 (pieces{"caf", " e\u0301", " x\u0301\u0301", " ", "9"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::qwen2, "e\u0301x") == (pieces{"e", "\u0301x"}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(deepseek_sequences_split_step_by_step) {
  BOOST_TEST(split(pre_tokenizer::deepseek_coder, "foo(bar)\n 中文123 x") ==
                 (pieces{"foo", "(", "bar", ")", "\n", " ", "中文", "1", "2", "3", " x"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::deepseek_llm, "Hello, Мир!  \n你好 12  ") ==
                 (pieces{"Hello", ",", " Мир", "!", "  ", "\n", "你好", " ", "12", "  "}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::deepseek_llm, "a  b") == (pieces{"a", " ", " b"}), boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::deepseek3, "(hello) 12345 日本語テキスト.cpp ;\n") ==
                 (pieces{"(hello", ")", " ", "123", "45", " ", "日本語テキスト", ".cpp", " ;\n"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(falcon_default_and_bloom_sequences) {
  BOOST_TEST(split(pre_tokenizer::falcon, "x+=1234;`y`") == (pieces{"x", "+=", "123", "4", ";`", "y", "`"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::default_bpe, "x+=12345;`y`") == (pieces{"x", "+=", "123", "45", ";", "`", "y", "`"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::bloom, "Hello, world. (Foo|bar)  baz") ==
                 (pieces{"Hello", ",", " world", ". (", "Foo", "|", "bar", ") ", " baz"}),
             boost::test_tools::per_element());
  BOOST_TEST(split(pre_tokenizer::viking, "abc123 def") == (pieces{"abc", "1", "2", "3", " def"}),
             boost::test_tools::per_element());
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
