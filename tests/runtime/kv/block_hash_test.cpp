#include "runtime/kv/block_hash.hpp"

#include <boost/test/unit_test.hpp>

#include <numeric>

using namespace dynamo::kv;

BOOST_AUTO_TEST_SUITE(block_hash)

// Dynamo's published vector (lib/llm/src/block_manager/block/registry.rs):
// tokens 1..10, block size 4, seed 1337.
BOOST_AUTO_TEST_CASE(matches_dynamo_published_vector) {
  std::vector<uint32_t> tokens(10);
  std::iota(tokens.begin(), tokens.end(), 1u);
  auto seq = sequence_hashes_of_tokens(tokens, 4);
  BOOST_REQUIRE_EQUAL(seq.size(), 2u); // [9, 10] is a partial block
  BOOST_TEST(seq[0] == 14643705804678351452ull);
  BOOST_TEST(seq[1] == 4945711292740353085ull);
}

BOOST_AUTO_TEST_CASE(matches_recomputed_vectors) {
  std::vector<uint32_t> b{5, 6, 7, 8};
  BOOST_TEST(local_block_hash(b) == 16777012769546811212ull);
  std::vector<uint32_t> tokens(8);
  std::iota(tokens.begin(), tokens.end(), 0u);
  auto local = local_block_hashes(tokens, 4);
  BOOST_REQUIRE_EQUAL(local.size(), 2u);
  BOOST_TEST(local[0] == 9143094415614847814ull);
  BOOST_TEST(local[1] == 12124091508212882195ull);
  BOOST_TEST(sequence_hashes(local)[1] == 9510318385840434533ull);
}

BOOST_AUTO_TEST_CASE(first_sequence_hash_is_the_local_hash) {
  std::vector<uint32_t> tokens{1, 2, 3, 4};
  BOOST_TEST(sequence_hashes_of_tokens(tokens, 4)[0] == local_block_hash(tokens));
  BOOST_TEST(local_block_hashes(tokens, 0).empty());
  BOOST_TEST(local_block_hashes(tokens, 5).empty());
}

BOOST_AUTO_TEST_SUITE_END()
