// The disk tier's record format and read plan: headers verify, a record read
// as another block or length is corrupt, and adjacent records coalesce into
// runs bounded by bytes and records.
#include "runtime/kvbm/segment_format.hpp"

#include <boost/test/unit_test.hpp>

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

BOOST_AUTO_TEST_SUITE_END()
