// The etcd backend's pure parts: key layout, request bodies, response and watch
// message parsers (shapes recorded from etcd 3.4.23), the stream splitter, and
// the watch view that turns snapshots and messages into discovery events.
#include "planes/discovery/etcd_client.hpp"
#include "planes/discovery/etcd_codec.hpp"
#include "planes/discovery/etcd_view.hpp"
#include "planes/discovery/record_codec.hpp"
#include "runtime/core/base64.hpp"

#include "discovery_backends.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::testing;
namespace ec = dynamo::planes::etcd_codec;

namespace {

std::string b64(std::string_view s) { return base64_encode(s); }
std::string b64(const bytes& b) { return base64_encode(std::span<const uint8_t>{b}); }

// A watch message as etcd 3.4 sends it: PUT events carry no "type".
std::string watch_line(int64_t rev, const std::string& events) {
  return R"({"result":{"header":{"cluster_id":"1","member_id":"2","revision":")" + std::to_string(rev) +
         R"(","raft_term":"2"},"events":[)" + events + "]}}";
}
std::string put_event(const std::string& key, const bytes& value, int64_t rev) {
  return R"({"kv":{"key":")" + b64(key) + R"(","create_revision":")" + std::to_string(rev) +
         R"(","mod_revision":")" + std::to_string(rev) + R"(","version":"1","value":")" + b64(value) +
         R"(","lease":"2324035664327165195"}})";
}
std::string delete_event(const std::string& key, int64_t rev) {
  return R"({"type":"DELETE","kv":{"key":")" + b64(key) + R"(","mod_revision":")" + std::to_string(rev) + R"("}})";
}

instance_record rec_with(instance_id id, health_state h = health_state::ready) {
  auto r = make_record("dyn/backend/generate", id);
  r.health = h;
  r.lease_ttl_ms = 1000;
  r.renewed_at_ms = 5;
  return r;
}

std::string key_of(const instance_record& r) { return ec::instance_key("/dynamo", r.key()); }

std::vector<std::string> lines_of(const std::vector<discovery_event>& evs) {
  std::vector<std::string> out;
  for (auto& e : evs)
    out.push_back(std::string{to_string(e.kind)} + " " + e.record.key() + " " + std::string{to_string(e.record.health)});
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(etcd_codec_suite)

BOOST_AUTO_TEST_CASE(keys_and_prefix_ranges_match_whole_segments) {
  BOOST_TEST(ec::instance_key("/dynamo", "dyn/backend/generate/0000000000000001") ==
             "/dynamo/instances/dyn/backend/generate/0000000000000001");
  auto all = ec::prefix_range("/dynamo", {});
  BOOST_TEST(all.key == "/dynamo/instances/");
  BOOST_TEST(all.range_end == "/dynamo/instances0");
  auto ns = ec::prefix_range("/dynamo", {"dyn"});
  BOOST_TEST(ns.key == "/dynamo/instances/dyn/"); // not "dyn2/..."
  BOOST_TEST(ns.range_end == "/dynamo/instances/dyn0");
  auto one = ec::prefix_range("/dynamo", {"dyn", "backend", "generate", "0000000000000001"});
  BOOST_TEST(one.key == "/dynamo/instances/dyn/backend/generate/0000000000000001");
  BOOST_TEST(one.range_end.empty());
  BOOST_TEST(*ec::record_key_of("/dynamo", "/dynamo/instances/dyn/a/b/c") == "dyn/a/b/c");
  BOOST_TEST(!ec::record_key_of("/dynamo", "/dynamo/instances/"));
  BOOST_TEST(!ec::record_key_of("/dynamo", "/other/instances/dyn/a/b/c"));
}

BOOST_AUTO_TEST_CASE(request_bodies_are_the_gateway_json) {
  BOOST_TEST(ec::put_body("/k", bytes{'x'}, 0) == R"({"key":"L2s=","value":"eA=="})");
  BOOST_TEST(ec::put_body("/k", bytes{'x'}, 7) == R"({"key":"L2s=","lease":"7","value":"eA=="})");
  BOOST_TEST(ec::delete_body("/k") == R"({"key":"L2s="})");
  BOOST_TEST(ec::grant_body(2) == R"({"TTL":"2"})");
  BOOST_TEST(ec::lease_body(9) == R"({"ID":"9"})");
  BOOST_TEST(ec::range_body({"/a/", "/a0"}) == R"({"key":"L2Ev","range_end":"L2Ew"})");
  BOOST_TEST(ec::watch_body({"/a/", "/a0"}, 12) ==
             R"({"create_request":{"key":"L2Ev","range_end":"L2Ew","start_revision":"12"}})");
  BOOST_TEST(ec::create_body("/k", bytes{'x'}, 7) ==
             R"({"compare":[{"create_revision":"0","key":"L2s=","result":"EQUAL","target":"CREATE"}],)"
             R"("success":[{"request_put":{"key":"L2s=","lease":"7","value":"eA=="}}]})");
}

BOOST_AUTO_TEST_CASE(responses_recorded_from_etcd_parse) {
  auto range = ec::parse_range(
      R"({"header":{"cluster_id":"3249","member_id":"3319","revision":"2","raft_term":"2"},)"
      R"("kvs":[{"key":"L2R5bi9h","create_revision":"2","mod_revision":"2","version":"1","value":"eA=="}],"count":"1"})");
  BOOST_REQUIRE(range);
  BOOST_TEST(range->revision == 2);
  BOOST_REQUIRE_EQUAL(range->kvs.size(), 1u);
  BOOST_TEST(range->kvs[0].key == "/dyn/a");
  BOOST_TEST(range->kvs[0].value == bytes{'x'});
  BOOST_TEST(range->kvs[0].mod_revision == 2);
  auto empty = ec::parse_range(R"({"header":{"revision":"5"}})");
  BOOST_REQUIRE(empty);
  BOOST_TEST(empty->kvs.empty());
  BOOST_TEST(*ec::parse_header(R"({"header":{"revision":"3","raft_term":"2"}})") == 3);
  auto grant = ec::parse_grant(R"({"header":{"revision":"1"},"ID":"2324035664327165189","TTL":"1"})");
  BOOST_REQUIRE(grant);
  BOOST_TEST(grant->id == 2324035664327165189);
  BOOST_TEST(grant->ttl_s == 1);
  BOOST_TEST(*ec::parse_keepalive(R"({"result":{"header":{"revision":"3"},"ID":"23","TTL":"2"}})") == 2);
  BOOST_TEST(*ec::parse_keepalive(R"({"result":{"header":{"revision":"6"},"ID":"77"}})") == 0); // unknown lease
  BOOST_TEST(*ec::parse_created(R"({"header":{"revision":"6"},"succeeded":true,"responses":[]})"));
  BOOST_TEST(!*ec::parse_created(R"({"header":{"revision":"6"},"responses":[]})"));
  auto err = ec::parse_header(R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
  BOOST_TEST(code_of(err.error()) == errc::io_error);
  BOOST_TEST(message_of(err.error()) == "etcd: etcdserver: requested lease not found");
}

BOOST_AUTO_TEST_CASE(auth_bodies_and_tokens) {
  BOOST_TEST(ec::authenticate_body("dynamo", "p\"w") == R"({"name":"dynamo","password":"p\"w"})");
  BOOST_TEST(*ec::parse_token(R"({"header":{"revision":"9"},"token":"oAfMeXTDqonUyxPx.13"})") == "oAfMeXTDqonUyxPx.13");
  BOOST_TEST(!ec::parse_token(R"({"header":{"revision":"9"}})"));
  BOOST_TEST(!ec::parse_token(R"({"token":""})"));
  BOOST_TEST(!ec::parse_token(R"({"token":"a\r\nX-Evil: 1"})")); // it goes into a header line
  BOOST_TEST(!ec::parse_token(R"({"error":"etcdserver: authentication failed","code":3})"));
}

BOOST_AUTO_TEST_CASE(watch_messages_parse_puts_deletes_and_cancellation) {
  auto created = ec::parse_watch_message(R"({"result":{"header":{"revision":"5"},"created":true}})");
  BOOST_REQUIRE(created);
  BOOST_TEST(created->created);
  BOOST_TEST(created->events.empty());
  auto msg = ec::parse_watch_message(watch_line(6, put_event("/a", bytes{'y'}, 6) + "," + delete_event("/b", 6)));
  BOOST_REQUIRE(msg);
  BOOST_TEST(msg->revision == 6);
  BOOST_REQUIRE_EQUAL(msg->events.size(), 2u);
  BOOST_TEST(!msg->events[0].deleted);
  BOOST_TEST(msg->events[0].kv.key == "/a");
  BOOST_TEST(msg->events[0].kv.value == bytes{'y'});
  BOOST_TEST(msg->events[0].kv.lease == 2324035664327165195);
  BOOST_TEST(msg->events[1].deleted);
  BOOST_TEST(msg->events[1].kv.key == "/b");
  auto cancelled = ec::parse_watch_message(
      R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"6"}})");
  BOOST_REQUIRE(cancelled);
  BOOST_TEST(cancelled->canceled);
  BOOST_TEST(cancelled->compact_revision == 6);
  auto stream_error = ec::parse_watch_message(R"({"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader"}})");
  BOOST_TEST(code_of(stream_error.error()) == errc::io_error);
}

BOOST_AUTO_TEST_CASE(malformed_responses_are_error_values) {
  const std::string bad[] = {
    "", "not json", "[1,2]", "\"str\"", R"({"header":{"revision":"5"})", // truncated
    R"({"header":{"revision":true}})", R"({"header":{"revision":"12x"}})", R"({"kvs":[]})",
    R"({"header":{"revision":"5"},"kvs":{}})", R"({"header":{"revision":"5"},"kvs":[7]})",
    R"({"header":{"revision":"5"},"kvs":[{"key":5}]})",
    std::string(20, '[') + std::string(20, ']'),
    R"({"a":)" + std::string(5000, '[') + std::string(5000, ']') + "}"};
  for (auto& b : bad) {
    auto r = ec::parse_range(b);
    BOOST_TEST(!r, b.substr(0, 40));
    if (!r)
      BOOST_TEST((code_of(r.error()) == errc::malformed_message), b.substr(0, 40));
    BOOST_TEST(!ec::parse_watch_message(b), b.substr(0, 40));
  }
  BOOST_TEST(!ec::parse_watch_message(R"({"result":{"header":{"revision":"5"},"events":[{"type":"PATCH","kv":{}}]}})"));
  BOOST_TEST(!ec::parse_watch_message(R"({"result":{"header":{"revision":"5"},"events":[{"type":"PUT"}]}})"));
  BOOST_TEST(!ec::parse_grant(R"({"header":{"revision":"1"},"ID":"0","TTL":"1"})"));
  BOOST_TEST(!ec::parse_keepalive(R"({"header":{"revision":"1"}})"));
  std::string huge = R"({"header":{"revision":"5"},"x":")" + std::string(ec::max_watch_message_bytes, 'a') + "\"}";
  BOOST_TEST(!ec::parse_watch_message(huge));
}

BOOST_AUTO_TEST_CASE(bad_base64_entries_are_counted_not_fatal) {
  auto r = ec::parse_range(R"({"header":{"revision":"5"},"kvs":[{"key":"!!!!","value":"eA=="},)"
                           R"({"key":"L2E=","value":"e"},{"key":"L2I=","value":"eA=="}]})");
  BOOST_REQUIRE(r);
  BOOST_TEST(r->unreadable == 2u);
  BOOST_REQUIRE_EQUAL(r->kvs.size(), 1u);
  BOOST_TEST(r->kvs[0].key == "/b");
  auto w = ec::parse_watch_message(watch_line(7, R"({"kv":{"key":"%%%%","value":"eA=="}})"));
  BOOST_REQUIRE(w);
  BOOST_TEST(w->unreadable == 1u);
  BOOST_TEST(w->events.empty());
}

BOOST_AUTO_TEST_CASE(the_splitter_cuts_lines_across_chunks_and_drops_oversized_ones) {
  ec::line_splitter split{10};
  std::vector<std::string> out;
  split.feed("{\"a\":1}\n{\"b\"", out);
  split.feed(":2}\n\n  \r\n", out);
  BOOST_TEST(out == (std::vector<std::string>{"{\"a\":1}", "{\"b\":2}"}), boost::test_tools::per_element());
  out.clear();
  split.feed("0123456789", out); // 10: fits
  split.feed("\n0123456", out);
  split.feed("789ab", out);      // over 10 without a newline: dropped
  split.feed("cdef\nok\n", out);
  BOOST_TEST(out == (std::vector<std::string>{"0123456789", "ok"}), boost::test_tools::per_element());
  BOOST_TEST(split.oversized() == 1u);
}

BOOST_AUTO_TEST_CASE(endpoints_parse_and_bad_ones_are_config_errors) {
  auto e = parse_etcd_endpoint("http://127.0.0.1:2379");
  BOOST_REQUIRE(e);
  BOOST_TEST(e->host == "127.0.0.1");
  BOOST_TEST(e->port == 2379);
  BOOST_TEST(parse_etcd_endpoint("http://etcd-0.local:2379/")->host == "etcd-0.local");
  BOOST_TEST(parse_etcd_endpoint("http://[::1]:2379")->host == "::1");
  BOOST_TEST(parse_etcd_endpoint("http://h")->port == 2379);
  auto s = parse_etcd_endpoint("https://etcd-0.local");
  BOOST_REQUIRE(s);
  BOOST_TEST(s->tls);
  BOOST_TEST(s->port == 2379);
  BOOST_TEST(s->url() == "https://etcd-0.local:2379");
  BOOST_TEST(!e->tls);
  for (auto bad : {"ftp://h:2379", "http://h:0", "http://h:99999", "http://h:23x", ":2379",
                   "http://h:2379/v3", "http://user@h:2379", "h:2379"})
    BOOST_TEST((code_of(parse_etcd_endpoint(bad).error()) == errc::config_error), bad);
}

BOOST_AUTO_TEST_CASE(the_view_reports_snapshot_differences_and_stream_events) {
  corrupt_tracker corrupt;
  etcd_watch_view view{"/dynamo", corrupt};
  auto r1 = rec_with(1), r2 = rec_with(2);
  ec::range_result snap{10, {{key_of(r2), discovery_codec::encode(r2), 9, 0}, {key_of(r1), discovery_codec::encode(r1), 8, 0}}, 0};
  BOOST_TEST(lines_of(view.reset(snap)) ==
             (std::vector<std::string>{"added dyn/backend/generate/0000000000000001 ready",
                                       "added dyn/backend/generate/0000000000000002 ready"}),
             boost::test_tools::per_element());
  // Stream: r1 drains, r2 goes, r3 comes, r1 rewritten with the same content (lease stamp only).
  auto r1d = rec_with(1, health_state::draining), r3 = rec_with(3);
  auto r1d_again = r1d;
  r1d_again.renewed_at_ms = 99;
  auto msg = ec::parse_watch_message(watch_line(
      11, put_event(key_of(r1d), discovery_codec::encode(r1d), 11) + "," + delete_event(key_of(r2), 11) + "," +
              put_event(key_of(r3), discovery_codec::encode(r3), 11) + "," +
              put_event(key_of(r1d_again), discovery_codec::encode(r1d_again), 11)));
  BOOST_REQUIRE(msg);
  BOOST_TEST(lines_of(view.apply(*msg)) ==
             (std::vector<std::string>{"updated dyn/backend/generate/0000000000000001 draining",
                                       "removed dyn/backend/generate/0000000000000002 ready",
                                       "added dyn/backend/generate/0000000000000003 ready"}),
             boost::test_tools::per_element());
  // A delete of something never seen: nothing. A put of garbage over r3: removed, counted.
  auto bad = ec::parse_watch_message(watch_line(12, delete_event(key_of(rec_with(9)), 12) + "," +
                                                        put_event(key_of(r3), bytes{0xc1}, 12)));
  BOOST_REQUIRE(bad);
  BOOST_TEST(lines_of(view.apply(*bad)) ==
             (std::vector<std::string>{"removed dyn/backend/generate/0000000000000003 ready"}));
  BOOST_TEST(corrupt.count() == 1u);
  // After a reconnect: a snapshot without r1 but with r2 back.
  ec::range_result again{20, {{key_of(r2), discovery_codec::encode(r2), 19, 0}, {key_of(r3), bytes{0xc1}, 12, 0}}, 0};
  BOOST_TEST(lines_of(view.reset(again)) ==
             (std::vector<std::string>{"removed dyn/backend/generate/0000000000000001 draining",
                                       "added dyn/backend/generate/0000000000000002 ready"}),
             boost::test_tools::per_element());
  BOOST_TEST(corrupt.count() == 1u); // the same bad version is counted once
  BOOST_TEST(view.size() == 1u);
}

BOOST_AUTO_TEST_CASE(entries_under_the_wrong_key_are_corrupt) {
  corrupt_tracker corrupt;
  auto r = rec_with(1);
  BOOST_TEST(decode_entry("/dynamo", {key_of(r), discovery_codec::encode(r), 3, 0}, corrupt).has_value());
  BOOST_TEST(!decode_entry("/dynamo", {key_of(rec_with(2)), discovery_codec::encode(r), 4, 0}, corrupt));
  BOOST_TEST(!decode_entry("/dynamo", {"/dynamo/instances/x", discovery_codec::encode(r), 5, 0}, corrupt));
  BOOST_TEST(corrupt.count() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
