#include "planes/http/parse.hpp"

#include <boost/test/unit_test.hpp>

#include <string>

using namespace dynamo::http;

BOOST_AUTO_TEST_SUITE(parse_suite)

BOOST_AUTO_TEST_CASE(a_request_in_one_piece_or_many_parses_the_same) {
  const std::string bytes = "POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\n"
                            "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
                            "GET / HTTP/1.1\r\n\r\n";
  for (size_t piece : {size_t{0}, size_t{1}, size_t{7}}) {
    auto p = parse_request(bytes, {}, piece);
    BOOST_REQUIRE(p.req);
    BOOST_TEST(p.req->method == "POST");
    BOOST_TEST(p.req->path == "/v1/chat/completions");
    BOOST_TEST(p.req->query == "x=1");
    BOOST_TEST(p.req->body == "{}");
    BOOST_TEST(p.req->header("content-type") == "application/json");
    BOOST_TEST(p.req->version == 11u);
    BOOST_TEST(p.consumed == bytes.find("GET /")); // the next request is left alone
  }
}

BOOST_AUTO_TEST_CASE(chunked_bodies_are_joined) {
  auto p = parse_request("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "2\r\n{\"\r\n1\r\n}\r\n0\r\n\r\n",
                         {}, 3);
  BOOST_REQUIRE(p.req);
  BOOST_TEST(p.req->body == "{\"}");
}

// Boost 1.74's Beast asserted that this case cannot happen (boostorg/beast#2861;
// planes/http/parse.cpp): fails in builds with assertions on (the sanitizer tree)
// without the handler there.
BOOST_AUTO_TEST_CASE(an_empty_chunked_body_arriving_byte_by_byte_parses) {
  const std::string bytes = "POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n";
  auto p = parse_request(bytes, {}, 1);
  BOOST_REQUIRE(p.req);
  BOOST_TEST(p.req->body.empty());
  BOOST_TEST(p.consumed == bytes.size());
}

BOOST_AUTO_TEST_CASE(limits_and_garbage_answer_with_the_server_statuses) {
  parse_limits small;
  small.body_limit = 4;
  small.header_limit = 64;
  auto body = parse_request("POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", small);
  BOOST_TEST(!body.req);
  BOOST_TEST(body.status == 413u);
  auto header = parse_request("GET /a HTTP/1.1\r\nX: " + std::string(100, 'y') + "\r\n\r\n", small);
  BOOST_TEST(header.status == 431u);
  auto junk = parse_request("GET /a HTTQ/1.1\r\n\r\n", {});
  BOOST_TEST(junk.status == 400u);
  auto cut = parse_request("POST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel", {});
  BOOST_TEST(!cut.req);
  BOOST_TEST(cut.status == 0u); // more bytes needed, nothing to answer yet
}

BOOST_AUTO_TEST_SUITE_END()
