#include "runtime/kv/block_count.hpp"

#include <boost/test/unit_test.hpp>

using dynamo::kv::blocks_for_tokens;

BOOST_AUTO_TEST_SUITE(block_count)

BOOST_AUTO_TEST_CASE(a_partial_last_block_counts) {
  BOOST_TEST(blocks_for_tokens(0, 16) == 0u);
  BOOST_TEST(blocks_for_tokens(1, 16) == 1u);
  BOOST_TEST(blocks_for_tokens(16, 16) == 1u);
  BOOST_TEST(blocks_for_tokens(17, 16) == 2u);
  BOOST_TEST(blocks_for_tokens(7, 1) == 7u);
  // Past 32 bits of tokens the count does not wrap.
  BOOST_TEST(blocks_for_tokens(uint64_t{1} << 36, 64) == (uint64_t{1} << 30));
}

BOOST_AUTO_TEST_SUITE_END()
