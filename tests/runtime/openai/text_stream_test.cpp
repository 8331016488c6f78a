#include "runtime/openai/text_stream.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::openai;
using protocol::engine_output;
using protocol::finish_reason;

namespace {

engine_output chunk(std::string_view text, finish_reason f = finish_reason::none,
                    uint32_t cached = 0) {
  engine_output out;
  for (unsigned char c : text)
    out.token_ids.push_back(c);
  out.finish = f;
  out.cached_tokens = cached;
  return out;
}

const tok::byte_tokenizer tk;

} // namespace

BOOST_AUTO_TEST_SUITE(text_stream_suite)

BOOST_AUTO_TEST_CASE(passes_text_through_and_finishes_with_backend_reason) {
  text_stream s{tk, {}};
  auto a = s.push(chunk("Hel", finish_reason::none, 5));
  BOOST_TEST(a.text == "Hel");
  BOOST_TEST(a.tokens == 3u);
  BOOST_TEST(!a.done);
  auto b = s.push(chunk("lo", finish_reason::length));
  BOOST_TEST(b.text == "lo");
  BOOST_TEST(b.done);
  BOOST_TEST(static_cast<int>(b.finish) == static_cast<int>(finish_reason::length));
  BOOST_TEST(!b.cancel_backend);
  BOOST_TEST(s.completion_tokens() == 5u);
  BOOST_TEST(s.cached_tokens() == 5u);
}

BOOST_AUTO_TEST_CASE(eos_token_counts_but_adds_no_text) {
  text_stream s{tk, {}};
  engine_output out = chunk("ok");
  out.token_ids.push_back(tok::byte_tokenizer::eos_id);
  out.finish = finish_reason::stop;
  auto st = s.push(out);
  BOOST_TEST(st.text == "ok");
  BOOST_TEST(st.tokens == 3u);
  BOOST_TEST(st.done);
}

BOOST_AUTO_TEST_CASE(stop_string_cuts_output_and_asks_to_cancel) {
  text_stream s{tk, {"END"}};
  auto a = s.push(chunk("abcE"));
  BOOST_TEST(a.text == "abc"); // "E" is held back: it may start "END"
  auto b = s.push(chunk("NDtail"));
  BOOST_TEST(b.text == "");
  BOOST_TEST(b.done);
  BOOST_TEST(static_cast<int>(b.finish) == static_cast<int>(finish_reason::stop));
  BOOST_TEST(b.cancel_backend);
  BOOST_TEST(b.tokens == 2u); // N, D: the tokens after the match are not counted
  BOOST_TEST(s.completion_tokens() == 6u);
  auto late = s.push(chunk("more", finish_reason::length));
  BOOST_TEST(late.text.empty());
  BOOST_TEST(!late.done);
}

BOOST_AUTO_TEST_CASE(held_back_prefix_is_released_at_the_end) {
  text_stream s{tk, {"END"}};
  auto a = s.push(chunk("xEN"));
  BOOST_TEST(a.text == "x");
  auto b = s.push(chunk("", finish_reason::stop));
  BOOST_TEST(b.text == "EN");
  BOOST_TEST(b.done);
}

BOOST_AUTO_TEST_CASE(stop_string_in_the_final_chunk_needs_no_cancel) {
  text_stream s{tk, {"!"}};
  auto a = s.push(chunk("hi!x", finish_reason::length));
  BOOST_TEST(a.text == "hi");
  BOOST_TEST(static_cast<int>(a.finish) == static_cast<int>(finish_reason::stop));
  BOOST_TEST(!a.cancel_backend);
}

BOOST_AUTO_TEST_CASE(split_utf8_waits_for_the_whole_character) {
  text_stream s{tk, {}};
  auto a = s.push(chunk("a\xE2\x9C"));
  BOOST_TEST(a.text == "a");
  auto b = s.push(chunk("\x93", finish_reason::stop));
  BOOST_TEST(b.text == "\xE2\x9C\x93");
}

BOOST_AUTO_TEST_SUITE_END()
