// bpe_tokenizer on a tiny hand-made vocabulary: merge priority, special and
// user-defined tokens, decoding, EOG detection and input validation.
#include "runtime/tokenizer/bpe_tokenizer.hpp"
#include "runtime/tokenizer/unicode.hpp"
#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::tok;

namespace {

using ids = std::vector<uint32_t>;

// Ids 0..255: the byte-level alphabet in byte order; then `extra` tokens.
bpe_vocab tiny_vocab(std::vector<std::string> extra, std::vector<std::string> merges,
                     std::vector<int32_t> extra_types = {}) {
  bpe_vocab v;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    append_utf8(s, byte_to_codepoint(static_cast<uint8_t>(b)));
    v.tokens.push_back(s);
  }
  v.token_types.assign(256, 1);
  for (size_t i = 0; i < extra.size(); ++i) {
    v.tokens.push_back(extra[i]);
    v.token_types.push_back(i < extra_types.size() ? extra_types[i] : 1);
  }
  v.merges = std::move(merges);
  return v;
}

std::shared_ptr<bpe_tokenizer> make(bpe_vocab v) {
  auto t = bpe_tokenizer::create(std::move(v));
  BOOST_REQUIRE_MESSAGE(t, error_text(t));
  return *t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(bpe_tokenizer_unit)

BOOST_AUTO_TEST_CASE(byte_map_is_gpt2s_and_reversible) {
  BOOST_TEST(static_cast<uint32_t>(byte_to_codepoint('A')) == 0x41u);
  BOOST_TEST(static_cast<uint32_t>(byte_to_codepoint(' ')) == 0x120u);  // Ġ
  BOOST_TEST(static_cast<uint32_t>(byte_to_codepoint('\n')) == 0x10Au); // Ċ
  BOOST_TEST(static_cast<uint32_t>(byte_to_codepoint(0)) == 0x100u);    // Ā
  BOOST_TEST(static_cast<uint32_t>(byte_to_codepoint(0xAD)) == 0x143u);
  for (int b = 0; b < 256; ++b)
    BOOST_TEST(codepoint_to_byte(byte_to_codepoint(static_cast<uint8_t>(b))) == b);
  BOOST_TEST(codepoint_to_byte(U'中') == -1);
}

BOOST_AUTO_TEST_CASE(without_merges_every_byte_is_a_token) {
  auto t = make(tiny_vocab({}, {}));
  BOOST_TEST(t->encode("Hi é", false) == (ids{'H', 'i', ' ', 0xC3, 0xA9}), boost::test_tools::per_element());
  BOOST_TEST(t->decode(t->encode("Hi é", false)) == "Hi é");
}

BOOST_AUTO_TEST_CASE(merges_apply_by_rank_not_position) {
  // rank 0: "b c", rank 1: "a b". In "abc" the later pair merges first.
  auto t = make(tiny_vocab({"bc", "ab"}, {"b c", "a b"}));
  BOOST_TEST(t->encode("abc", false) == (ids{'a', 256}), boost::test_tools::per_element());
  auto u = make(tiny_vocab({"ab", "bc"}, {"a b", "b c"}));
  BOOST_TEST(u->encode("abc", false) == (ids{256, 'c'}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(equal_ranks_merge_leftmost_first_and_chain) {
  auto t = make(tiny_vocab({"aa", "aaaa"}, {"a a", "aa aa"}));
  BOOST_TEST(t->encode("aaa", false) == (ids{256, 'a'}), boost::test_tools::per_element());
  BOOST_TEST(t->encode("aaaaa", false) == (ids{257, 'a'}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(merges_stay_inside_pre_tokenizer_pieces) {
  auto t = make(tiny_vocab({"Ġa", "aĠ"}, {"a Ġ", "Ġ a"}));
  // " a" is one piece: "Ġ a" merges; "a " would span two pieces ("a", " ") and must not.
  BOOST_TEST(t->encode("a a", false) == (ids{'a', 256}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(long_words_merge_without_quadratic_blowup) {
  auto t = make(tiny_vocab({"aa", "aaaa", "aaaaaaaa"}, {"a a", "aa aa", "aaaa aaaa"}));
  const std::string word(100000, 'a');
  auto out = t->encode(word, false);
  BOOST_TEST(out.size() == 12500u);
  BOOST_TEST(std::all_of(out.begin(), out.end(), [](uint32_t id) { return id == 258; }));
}

BOOST_AUTO_TEST_CASE(control_tokens_match_whole_only_with_parse_special) {
  auto t = make(tiny_vocab({"<|s|>", "<|s|>x"}, {}, {3, 3}));
  BOOST_TEST(t->encode("a<|s|>b", true) == (ids{'a', 256, 'b'}), boost::test_tools::per_element());
  BOOST_TEST(t->encode("<|s|>x", true) == (ids{257}), boost::test_tools::per_element()); // longest match
  BOOST_TEST(t->encode("<|s|", true) == (ids{'<', '|', 's', '|'}), boost::test_tools::per_element());
  BOOST_TEST(t->encode("<|s|>", false).size() == 5u);
  BOOST_TEST(t->token_bytes(256, false) == "");
  BOOST_TEST(t->token_bytes(256, true) == "<|s|>");
  BOOST_TEST(t->decode(t->encode("a<|s|>b", true)) == "ab");
  BOOST_TEST(t->decode(t->encode("a<|s|>b", true), true) == "a<|s|>b");
}

BOOST_AUTO_TEST_CASE(user_defined_tokens_always_match_and_decode_as_text) {
  auto t = make(tiny_vocab({"<tool>", "héllo"}, {}, {4, 4}));
  BOOST_TEST(t->encode("x<tool>y", false) == (ids{'x', 256, 'y'}), boost::test_tools::per_element());
  BOOST_TEST(t->encode("héllo", false) == (ids{257}), boost::test_tools::per_element());
  BOOST_TEST(t->token_bytes(257, false) == "héllo"); // plain text, not byte-mapped
}

BOOST_AUTO_TEST_CASE(eog_covers_eos_eot_and_end_texts) {
  auto v = tiny_vocab({"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|eot_id|>", "<|im_end|>x"}, {},
                      {3, 3, 3, 3, 1});
  v.ids.bos = 257;
  v.ids.eos = 65; // any id can be declared EOS
  auto t = make(v);
  BOOST_TEST(t->stop_token_ids() == (ids{65, 256, 258, 259}), boost::test_tools::per_element());
  BOOST_TEST(t->is_eog(258));
  BOOST_TEST(!t->is_eog(257));
  BOOST_TEST(t->bos_token_id() == -1); // add_bos is off
  v.add_bos = true;
  BOOST_TEST(make(v)->bos_token_id() == 257);
}

BOOST_AUTO_TEST_CASE(llama3_skips_merges_for_whole_token_pieces) {
  // "abc" is in the vocabulary but no merge path builds it.
  auto v = tiny_vocab({"abc"}, {});
  auto gpt2 = make(v);
  BOOST_TEST(gpt2->encode("abc", false).size() == 3u);
  v.pre = pre_tokenizer::llama3;
  BOOST_TEST(make(v)->encode("abc", false).size() == 3u); // DBRX / Smaug: the Llama 3 pattern, merges kept
  v.ignore_merges = true;
  BOOST_TEST(make(v)->encode("abc", false) == (ids{256}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(invalid_vocabularies_are_rejected_with_a_reason) {
  auto bad_merge = bpe_tokenizer::create(tiny_vocab({}, {"a b"}));
  BOOST_REQUIRE(!bad_merge);
  BOOST_TEST(code_of(bad_merge.error()) == errc::invalid_argument);
  BOOST_TEST(message_of(bad_merge.error()) == "tokenizer: merge #0 'a b' names a token missing from the vocabulary");
  BOOST_TEST(!bpe_tokenizer::create(tiny_vocab({"ab"}, {"ab"})));
  auto v = tiny_vocab({}, {});
  v.ids.eos = 999;
  auto bad_id = bpe_tokenizer::create(v);
  BOOST_REQUIRE(!bad_id);
  BOOST_TEST(message_of(bad_id.error()).find("eos token id 999 out of range") != std::string::npos);
  BOOST_TEST(!bpe_tokenizer::create(bpe_vocab{}));
  auto w = tiny_vocab({}, {});
  w.token_types.pop_back();
  BOOST_TEST(!bpe_tokenizer::create(w));
}

BOOST_AUTO_TEST_CASE(decode_cleans_spaces_as_llama_cpp_when_the_model_asks) {
  auto v = tiny_vocab({}, {});
  const std::string text = "Hello , world ! It 's a ' test ' x ' ' y we 're I 'll";
  BOOST_TEST(make(v)->decode(make(v)->encode(text, false)) == text);
  v.clean_spaces = true;
  auto t = make(v);
  // " ," " !" lose the space; " ' " loses both; " 's" " 're" lose it, " 'll" keeps
  // it; the second of " ' ' " keeps its space before (llama.cpp blanked it).
  BOOST_TEST(t->decode(t->encode(text, false)) == "Hello, world! It's a'test'x'' y we're I 'll");
}

BOOST_AUTO_TEST_CASE(end_of_turn_texts_become_control_and_stop_generation) {
  // User-defined tokens named like end-of-turn or FIM tokens are control in
  // llama.cpp: matched only with parse_special, hidden when decoding.
  auto t = make(tiny_vocab({"<|im_end|>", "<|fim_pad|>", "<tool>"}, {}, {4, 4, 4}));
  BOOST_TEST(t->stop_token_ids() == (ids{256, 257}), boost::test_tools::per_element());
  BOOST_TEST(t->encode("<|im_end|>", false).size() == 10u);
  BOOST_TEST(t->encode("<|im_end|><tool>", true) == (ids{256, 258}), boost::test_tools::per_element());
  BOOST_TEST(t->token_bytes(256, false) == "");
  BOOST_TEST(t->token_bytes(258, false) == "<tool>");
}

BOOST_AUTO_TEST_CASE(harmony_end_is_not_end_of_generation) {
  auto t = make(tiny_vocab({"<|end|>", "<|return|>", "<|call|>"}, {}, {3, 3, 3}));
  BOOST_TEST(t->stop_token_ids() == (ids{257, 258}), boost::test_tools::per_element());
  BOOST_TEST(t->token_bytes(256, false) == "<|end|>"); // now user-defined: always shown
  auto u = make(tiny_vocab({"<|end|>"}, {}, {3}));
  BOOST_TEST(u->stop_token_ids() == (ids{256}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(phi3_drops_spaces_after_special_tokens) {
  auto v = tiny_vocab({"<|end|>", "<|user|>"}, {}, {3, 3});
  v.rstrip_specials = true;
  auto t = make(v);
  BOOST_TEST(t->encode("<|user|>  hi<|end|>\nx", true) == (ids{257, 'h', 'i', 256, 'x'}),
             boost::test_tools::per_element());
  v.rstrip_specials = false;
  BOOST_TEST(make(v)->encode("<|user|> hi", true).size() == 4u);
}

BOOST_AUTO_TEST_CASE(longer_special_tokens_win_wherever_they_are) {
  // Longest first over the whole text (llama.cpp's partition), not leftmost first.
  auto t = make(tiny_vocab({"<a>", "a><b>"}, {}, {3, 3}));
  BOOST_TEST(t->encode("<a><b>", true) == (ids{'<', 257}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(add_bos_and_add_eos_shape_prompts) {
  auto v = tiny_vocab({"<s>", "</s>"}, {}, {3, 3});
  v.ids.bos = 256;
  v.ids.eos = 257;
  v.add_bos = true;
  v.add_eos = true;
  auto t = make(v);
  BOOST_TEST(t->encode_prompt("a", false) == (ids{256, 'a', 257}), boost::test_tools::per_element());
  BOOST_TEST(t->encode_prompt("<s>a", true) == (ids{256, 'a', 257}), boost::test_tools::per_element());
  BOOST_TEST(t->appended_eos_id() == 257);
  v.ids.eos.reset(); // asked for, but there is no EOS to add
  BOOST_TEST(make(v)->appended_eos_id() == -1);
}

BOOST_AUTO_TEST_CASE(unknown_ids_decode_to_nothing) {
  auto t = make(tiny_vocab({}, {}));
  BOOST_TEST(t->token_bytes(100000, true) == "");
  BOOST_TEST(t->vocab_size() == 256u);
}

BOOST_AUTO_TEST_SUITE_END()
