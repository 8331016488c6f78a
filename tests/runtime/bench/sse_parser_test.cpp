#include "runtime/bench/sse_parser.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::bench;

BOOST_AUTO_TEST_SUITE(sse)

BOOST_AUTO_TEST_CASE(events_split_across_pieces) {
  sse_parser p;
  auto a = p.feed("data: {\"a\"");
  BOOST_TEST(a.empty());
  auto b = p.feed(":1}\n\ndata: [DO");
  BOOST_REQUIRE_EQUAL(b.size(), 1u);
  BOOST_TEST(b[0].data == "{\"a\":1}");
  auto c = p.feed("NE]\r\n\r\n");
  BOOST_REQUIRE_EQUAL(c.size(), 1u);
  BOOST_TEST(c[0].data == "[DONE]");
}

BOOST_AUTO_TEST_CASE(named_events_comments_and_multiline_data) {
  sse_parser p;
  auto ev = p.feed(": keep-alive\n\nevent: error\ndata: line1\ndata: line2\n\n");
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].event == "error");
  BOOST_TEST(ev[0].data == "line1\nline2");
}

// Found by fuzz/fuzz_sse.cpp (what the server writes must read back the same):
// an empty first data line was dropped ("data:\ndata: x" is "\nx"), and a bare
// CR, which SSE also counts as a line end, was kept inside the line.
BOOST_AUTO_TEST_CASE(empty_data_lines_and_bare_cr_line_ends) {
  sse_parser p;
  auto ev = p.feed("data: \ndata: x\n\n");
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].data == "\nx");
  ev = p.feed("event: e\rdata: a\rdata: b\r\r");
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].event == "e");
  BOOST_TEST(ev[0].data == "a\nb");
}

BOOST_AUTO_TEST_CASE(crlf_split_between_pieces_is_one_line_end) {
  sse_parser p;
  BOOST_TEST(p.feed("data: a\r").empty());
  BOOST_TEST(p.feed("\n").empty()); // the LF of the CRLF, not an empty line
  auto ev = p.feed("\r\n");
  BOOST_REQUIRE_EQUAL(ev.size(), 1u);
  BOOST_TEST(ev[0].data == "a");
}

BOOST_AUTO_TEST_SUITE_END()
