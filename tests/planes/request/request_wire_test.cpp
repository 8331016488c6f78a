#include "planes/request/request_wire.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::planes;
namespace rw = dynamo::planes::request_wire;

BOOST_AUTO_TEST_SUITE(request_wire)

BOOST_AUTO_TEST_CASE(header_round_trips_with_big_endian_stream_id) {
  auto h = rw::encode_header(rw::kind::item, 0x0102030405060708ull);
  const std::array<uint8_t, 10> want{1, 16, 1, 2, 3, 4, 5, 6, 7, 8};
  BOOST_TEST(h == want);
  auto back = rw::decode_header(h);
  BOOST_REQUIRE(back);
  BOOST_TEST(static_cast<int>(back->kind) == static_cast<int>(rw::kind::item));
  BOOST_TEST(back->stream_id == 0x0102030405060708ull);
}

BOOST_AUTO_TEST_CASE(header_with_wrong_size_version_or_kind_is_rejected) {
  auto h = rw::encode_header(rw::kind::request, 7);
  BOOST_TEST(!rw::decode_header(std::span<const uint8_t>{h.data(), 9}));
  auto bad_version = h;
  bad_version[0] = 2;
  BOOST_TEST(!rw::decode_header(bad_version));
  auto bad_kind = h;
  bad_kind[1] = 99;
  BOOST_TEST(!rw::decode_header(bad_kind));
  std::vector<uint8_t> longer(h.begin(), h.end());
  longer.push_back(0);
  BOOST_TEST(!rw::decode_header(longer));
}

BOOST_AUTO_TEST_CASE(body_frame_counts_match_the_documented_layout) {
  BOOST_TEST(rw::body_frames(rw::kind::request) == 2u);
  BOOST_TEST(rw::body_frames(rw::kind::cancel) == 0u);
  BOOST_TEST(rw::body_frames(rw::kind::ping) == 1u);
  BOOST_TEST(rw::body_frames(rw::kind::item) == 1u);
  BOOST_TEST(rw::body_frames(rw::kind::end) == 0u);
  BOOST_TEST(rw::body_frames(rw::kind::error) == 1u);
  BOOST_TEST(rw::body_frames(rw::kind::pong) == 1u);
  BOOST_TEST(rw::is_client_kind(rw::kind::ping));
  BOOST_TEST(!rw::is_client_kind(rw::kind::pong));
}

BOOST_AUTO_TEST_CASE(stream_ids_round_trip_and_ragged_lists_are_rejected) {
  std::vector<uint64_t> ids{1, 0xffffffffffffffffull, 42};
  auto b = rw::encode_ids(ids);
  BOOST_TEST(b.size() == 24u);
  auto back = rw::decode_ids(b);
  BOOST_REQUIRE(back);
  BOOST_TEST(*back == ids);
  b.pop_back();
  BOOST_TEST(!rw::decode_ids(b));
  BOOST_TEST(rw::decode_ids(std::span<const uint8_t>{})->empty());
}

BOOST_AUTO_TEST_CASE(errors_keep_code_and_message) {
  auto b = rw::encode_error(make_error(errc::not_found, "no endpoint x"));
  BOOST_TEST(b.front() == static_cast<uint8_t>(errc::not_found));
  auto back = rw::decode_error(b);
  BOOST_REQUIRE(back);
  BOOST_TEST(static_cast<int>(code_of(*back)) == static_cast<int>(errc::not_found));
  BOOST_TEST(message_of(*back) == "no endpoint x");
  BOOST_TEST(!rw::decode_error(std::span<const uint8_t>{}));
  const std::array<uint8_t, 2> zero_code{0, 'x'};
  BOOST_TEST(!rw::decode_error(zero_code));
}

BOOST_AUTO_TEST_SUITE_END()
