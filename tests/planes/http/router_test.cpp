#include "planes/http/responder.hpp"
#include "planes/http/router.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::http;

namespace {

handler tagged(int& hit, int tag) {
  return [&hit, tag](request, std::shared_ptr<http_responder>) { hit = tag; };
}

} // namespace

BOOST_AUTO_TEST_SUITE(router_suite)

BOOST_AUTO_TEST_CASE(exact_routes_match_method_and_path) {
  int hit = 0;
  router r;
  r.add("GET", "/a", tagged(hit, 1));
  r.add("POST", "/a", tagged(hit, 2));
  auto m = r.match("POST", "/a");
  BOOST_REQUIRE(m.found);
  (*m.found)({}, nullptr);
  BOOST_TEST(hit == 2);
  BOOST_TEST(m.allow == "GET, POST");
}

BOOST_AUTO_TEST_CASE(known_path_with_wrong_method_is_not_a_404) {
  router r;
  int hit = 0;
  r.add("GET", "/a", tagged(hit, 1));
  auto m = r.match("DELETE", "/a");
  BOOST_TEST(!m.found);
  BOOST_TEST(m.path_known);
  BOOST_TEST(m.allow == "GET");
  auto none = r.match("GET", "/b");
  BOOST_TEST(!none.found);
  BOOST_TEST(!none.path_known);
}

BOOST_AUTO_TEST_CASE(prefix_routes_need_something_after_the_prefix) {
  int hit = 0;
  router r;
  r.add("GET", "/v1/models", tagged(hit, 1));
  r.add_prefix("GET", "/v1/models/", tagged(hit, 2));
  r.add_prefix("GET", "/v1/", tagged(hit, 3));
  (*r.match("GET", "/v1/models").found)({}, nullptr);
  BOOST_TEST(hit == 1);
  (*r.match("GET", "/v1/models/org/name").found)({}, nullptr);
  BOOST_TEST(hit == 2); // the longest prefix wins
  (*r.match("GET", "/v1/other").found)({}, nullptr);
  BOOST_TEST(hit == 3);
  BOOST_TEST(!r.match("GET", "/v1/").found);
}

BOOST_AUTO_TEST_CASE(request_headers_are_case_insensitive) {
  request req;
  req.headers = {{"Content-Type", "application/json"}};
  BOOST_TEST(req.header("content-type") == "application/json");
  BOOST_TEST(req.header("x-missing") == "");
}

BOOST_AUTO_TEST_CASE(percent_decoding_keeps_invalid_escapes) {
  BOOST_TEST(percent_decode("org%2Fname") == "org/name");
  BOOST_TEST(percent_decode("a%zzb%4") == "a%zzb%4");
  BOOST_TEST(percent_decode("a+b%20c") == "a+b c");
}

BOOST_AUTO_TEST_CASE(sse_events_prefix_every_data_line) {
  BOOST_TEST(format_sse_event("{\"a\":1}") == "data: {\"a\":1}\n\n");
  BOOST_TEST(format_sse_event("x\ny", "error") == "event: error\ndata: x\ndata: y\n\n");
  BOOST_TEST(format_sse_event("") == "data: \n\n");
}

// Found by fuzz/fuzz_sse.cpp: SSE ends lines at CR, LF and CRLF, so a bare CR
// in data started a line the reader took as a field, and a line end in the
// event name injected fields ("x\ndata: evil").
BOOST_AUTO_TEST_CASE(sse_events_split_data_on_every_line_end_and_cut_event_names) {
  BOOST_TEST(format_sse_event("a\rdata: b\r\nc") == "data: a\ndata: data: b\ndata: c\n\n");
  BOOST_TEST(format_sse_event("a\r") == "data: a\ndata: \n\n");
  BOOST_TEST(format_sse_event("d", "x\ndata: evil") == "event: x\ndata: d\n\n");
  BOOST_TEST(format_sse_event("d", "\rx") == "data: d\n\n");
}

BOOST_AUTO_TEST_CASE(json_media_types_ignore_case_and_parameters) {
  for (auto t : {"application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8",
                 " application/json ", "application/vnd.api+json"})
    BOOST_TEST(is_json_media_type(t), t);
  for (auto t : {"", "text/plain", "text/json", "application/x-www-form-urlencoded", "multipart/form-data",
                 "application/jsonx", "application/+json", "application", "json"})
    BOOST_TEST(!is_json_media_type(t), t);
}

BOOST_AUTO_TEST_SUITE_END()
