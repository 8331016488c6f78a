#include "planes/codec/wire.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo::planes;

BOOST_AUTO_TEST_SUITE(wire)

BOOST_AUTO_TEST_CASE(u64_is_written_big_endian_and_read_back) {
  bytes out;
  append_u64_be(out, 0x0102030405060708ull);
  BOOST_TEST(out == (bytes{1, 2, 3, 4, 5, 6, 7, 8}));
  BOOST_TEST(get_u64_be(out.data()) == 0x0102030405060708ull);
  uint8_t buf[8];
  put_u64_be(buf, ~0ull);
  BOOST_TEST(get_u64_be(buf) == ~0ull);
}

BOOST_AUTO_TEST_CASE(default_limit_is_32_mib_and_the_clock_is_epoch_ms) {
  BOOST_TEST(default_max_message_bytes == 33554432u);
  BOOST_TEST(wall_clock_ms() > 1600000000000); // after 2020
}

BOOST_AUTO_TEST_SUITE_END()
