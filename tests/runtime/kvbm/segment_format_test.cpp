// The disk tier's record format and read plan: headers verify, a record read
// as another block or length is corrupt, and adjacent records coalesce into
// runs bounded by bytes and records; a sealed segment's footer round-trips and
// any byte of it wrong (or the file another size or segment) rejects it.
#include "runtime/kvbm/segment_format.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <vector>

using namespace dynamo::kvbm;

namespace {

constexpr uint64_t rec = sizeof(record_header);

/// Each run as 10 * first + count.
std::vector<uint32_t> as_pairs(const std::vector<read_run>& runs) {
  std::vector<uint32_t> out;
  for (const read_run& r : runs)
    out.push_back(10 * r.first + r.count);
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(segment_format_suite)

BOOST_AUTO_TEST_CASE(headers_verify_and_name_their_block) {
  const std::vector<std::byte> payload(10, std::byte{7});
  const record_header h = make_record_header(42, 41, 9, payload);
  BOOST_TEST(valid(h));
  BOOST_TEST(h.parent().value() == 41u);
  BOOST_TEST(!make_record_header(42, std::nullopt, 9, payload).parent().has_value());
  BOOST_TEST((verify(h, 42, payload) == read_status::ok));
  BOOST_TEST((verify(h, 43, payload) == read_status::corrupt));
  std::vector<std::byte> other = payload;
  other[3] = std::byte{8};
  BOOST_TEST((verify(h, 42, other) == read_status::corrupt));
  record_header torn = h;
  torn.length = 11; // a header whose own checksum fails
  BOOST_TEST(!valid(torn));
  const segment_header s = make_segment_header(5, 1);
  BOOST_TEST(valid(s));
  segment_header bad = s;
  bad.tag = 6;
  BOOST_TEST(!valid(bad));
  BOOST_TEST(segment_tag(std::span<const char>{"m", 1}, 100) != segment_tag(std::span<const char>{"m", 1}, 101));
}

BOOST_AUTO_TEST_CASE(adjacent_records_coalesce_within_the_limits) {
  // Segment 1: records at 32, 32+74, 32+148 (10-byte payloads), a gap, then 400.
  // Segment 2: one at 32. Given out of order.
  const std::vector<record_span> spans{{1, 32 + 2 * (rec + 10), 10}, {2, 32, 10}, {1, 32, 10},
                                       {1, 400, 10},                 {1, 32 + rec + 10, 10}};
  std::vector<uint32_t> items{0, 1, 2, 3, 4};
  auto runs = plan_reads(spans, items, 1 << 20, 512);
  BOOST_TEST(items == std::vector<uint32_t>({2, 4, 0, 3, 1}), boost::test_tools::per_element());
  BOOST_TEST(as_pairs(runs) == std::vector<uint32_t>({3, 31, 41}),
             boost::test_tools::per_element());
  runs = plan_reads(spans, items, 2 * (rec + 10), 512); // two records a read
  BOOST_TEST(as_pairs(runs) == std::vector<uint32_t>({2, 21, 31, 41}),
             boost::test_tools::per_element());
  runs = plan_reads(spans, items, 1, 512); // at least one record each
  BOOST_TEST(runs.size() == 5u);
  runs = plan_reads(spans, items, 1 << 20, 1);
  BOOST_TEST(runs.size() == 5u);
}

namespace {

/// A segment's tail as seal() writes it: the footer, the headers, the footer.
std::vector<std::byte> footer_bytes(const segment_footer& f, const std::vector<record_header>& hs) {
  std::vector<std::byte> out(f.bytes());
  std::memcpy(out.data(), &f, sizeof f);
  std::memcpy(out.data() + sizeof f, hs.data(), hs.size() * sizeof(record_header));
  std::memcpy(out.data() + out.size() - sizeof f, &f, sizeof f);
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_footer_round_trips_and_any_wrong_byte_rejects_it) {
  const std::vector<std::byte> a(10, std::byte{1}), b(30, std::byte{2});
  const std::vector<record_header> hs{make_record_header(7, std::nullopt, 70, a), make_record_header(8, 7, 80, b)};
  const uint64_t records_end = sizeof(segment_header) + 2 * rec + 40;
  const segment_footer f = make_segment_footer(3, records_end, hs);
  BOOST_TEST(f.bytes() == 2 * sizeof(segment_footer) + 2 * rec);
  const std::vector<std::byte> tail = footer_bytes(f, hs);
  const uint64_t size = records_end + tail.size();
  const auto got = parse_segment_footer(tail, size, 3);
  BOOST_REQUIRE(got.has_value());
  BOOST_REQUIRE_EQUAL(got->size(), 2u);
  BOOST_TEST(std::memcmp(got->data(), hs.data(), 2 * sizeof(record_header)) == 0);
  // Read with bytes of the last record before it: the same.
  std::vector<std::byte> longer(5 + tail.size(), std::byte{9});
  std::memcpy(longer.data() + 5, tail.data(), tail.size());
  BOOST_TEST(parse_segment_footer(longer, size, 3).has_value());
  BOOST_TEST(!parse_segment_footer(tail, size, 4).has_value());     // another segment's
  BOOST_TEST(!parse_segment_footer(tail, size + 1, 3).has_value()); // the file goes on after it
  BOOST_TEST(!parse_segment_footer(std::span(tail).subspan(1), size, 3).has_value()); // torn
  for (size_t i = 0; i < tail.size(); ++i) {
    std::vector<std::byte> bad = tail;
    bad[i] ^= std::byte{0x20};
    BOOST_TEST(!parse_segment_footer(bad, size, 3).has_value(), "byte " << i);
  }
  // Lengths that do not add up to where the footer starts.
  const segment_footer off = make_segment_footer(3, records_end + 1, hs);
  BOOST_TEST(!parse_segment_footer(footer_bytes(off, hs), size + 1, 3).has_value());
  // An empty segment's footer lists nothing.
  const segment_footer none = make_segment_footer(3, sizeof(segment_header), {});
  const auto empty = parse_segment_footer(footer_bytes(none, {}), sizeof(segment_header) + none.bytes(), 3);
  BOOST_REQUIRE(empty.has_value());
  BOOST_TEST(empty->empty());
}

BOOST_AUTO_TEST_CASE(a_live_index_round_trips_and_any_wrong_byte_rejects_it) {
  live_index li;
  li.tag = 77;
  li.segments = {{3, 1000}, {4, sizeof(segment_header)}};
  li.records = {{3, 32, 0, 0}, {3, 200, 2, 0}, {4, 32, 1, 0}};
  const std::vector<std::byte> bytes = encode_live_index(li);
  BOOST_REQUIRE_EQUAL(bytes.size(), 48u + 2 * 16 + 3 * 24);
  auto back = parse_live_index(bytes);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->tag == 77u);
  BOOST_REQUIRE_EQUAL(back->segments.size(), 2u);
  BOOST_TEST(back->segments[0].end == 1000u);
  BOOST_REQUIRE_EQUAL(back->records.size(), 3u);
  BOOST_TEST(back->records[1].offset == 200u);
  BOOST_TEST(back->records[1].priority == 2u);
  BOOST_TEST(back->records[2].segment == 4u);
  for (size_t k = 0; k < bytes.size(); ++k) { // any byte wrong
    std::vector<std::byte> bad = bytes;
    bad[k] ^= std::byte{0x10};
    BOOST_TEST(!parse_live_index(bad).has_value(), "byte " << k);
  }
  for (size_t n = 0; n < bytes.size(); ++n) // cut anywhere
    BOOST_TEST(!parse_live_index(std::span{bytes}.first(n)).has_value(), "length " << n);
  std::vector<std::byte> longer = bytes;
  longer.push_back(std::byte{0});
  BOOST_TEST(!parse_live_index(longer).has_value());
  // An empty store's index is valid too.
  auto empty = parse_live_index(encode_live_index(live_index{}));
  BOOST_REQUIRE(empty.has_value());
  BOOST_TEST(empty->records.empty());
}

BOOST_AUTO_TEST_SUITE_END()
