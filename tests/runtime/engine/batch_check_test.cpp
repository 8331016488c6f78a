#include "runtime/engine/batch_check.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using engine::batch;
using engine::batch_entry;
using engine::check_batch;

namespace {

const engine::kv_geometry geo{4, 8};

batch_entry entry(uint64_t id, uint32_t start, uint32_t n, std::vector<uint32_t> table, bool sample) {
  batch_entry e;
  e.seq_id = id;
  e.tokens.assign(n, 1);
  e.start_pos = start;
  e.block_table = std::move(table);
  e.sample = sample;
  e.sample_position = start + n;
  return e;
}

batch of(std::vector<batch_entry> entries) {
  batch b;
  for (auto& e : entries)
    b.num_tokens += static_cast<uint32_t>(e.tokens.size());
  b.entries = std::move(entries);
  return b;
}

bool rejected(const batch& b) {
  auto r = check_batch(b, geo);
  return !r && code_of(r.error()) == errc::internal;
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_check)

BOOST_AUTO_TEST_CASE(accepts_a_well_formed_batch) {
  BOOST_TEST(static_cast<bool>(check_batch(of({entry(1, 8, 1, {0, 1, 2}, true), entry(2, 0, 8, {3, 4}, false)}), geo)));
  BOOST_TEST(static_cast<bool>(check_batch(batch{}, geo)));
}

BOOST_AUTO_TEST_CASE(rejects_a_table_that_does_not_cover_the_new_tokens) {
  BOOST_TEST(rejected(of({entry(1, 7, 2, {0, 1}, true)})));
}

BOOST_AUTO_TEST_CASE(rejects_out_of_range_block_ids) {
  BOOST_TEST(rejected(of({entry(1, 0, 2, {8}, true)})));
}

BOOST_AUTO_TEST_CASE(rejects_wrong_num_tokens_empty_entries_and_repeated_sequences) {
  auto b = of({entry(1, 0, 2, {0}, true)});
  b.num_tokens = 3;
  BOOST_TEST(rejected(b));
  BOOST_TEST(rejected(of({entry(1, 0, 0, {0}, true)})));
  BOOST_TEST(rejected(of({entry(1, 0, 2, {0}, false), entry(1, 2, 1, {0}, true)})));
}

BOOST_AUTO_TEST_CASE(rejects_a_wrong_sample_position) {
  auto e = entry(1, 0, 2, {0}, true);
  e.sample_position = 1;
  BOOST_TEST(rejected(of({e})));
}

BOOST_AUTO_TEST_SUITE_END()
