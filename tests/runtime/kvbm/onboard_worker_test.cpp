#include "runtime/kvbm/onboard_worker.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

using namespace dynamo;
using namespace dynamo::kvbm;
using dynamo::test::temp_dir;

namespace {

constexpr uint64_t block_size = 4096;
constexpr uint32_t blocks = 24;

std::vector<std::byte> pattern(uint64_t hash) {
  std::vector<std::byte> b(block_size);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = std::byte(static_cast<uint8_t>(hash * 31 + i * 7));
  return b;
}

/// G1 of `blocks` blocks, and a disk store holding blocks 100..100+blocks-1.
struct fixture {
  temp_dir dir{"kvbm-onboard"};
  std::vector<std::byte> g1 = std::vector<std::byte>(blocks * block_size);
  disk_store disk = [&] {
    auto s = disk_store::open({.path = dir.path.string(), .capacity_blocks = 64, .min_free_bytes = 0});
    BOOST_REQUIRE(s);
    return std::move(*s);
  }();
  fixture() {
    for (uint64_t h = 100; h < 100 + blocks; ++h)
      BOOST_REQUIRE((disk.write(h, pattern(h)).status == write_status::stored));
  }
  g1_view view() { return {g1.data(), block_size, block_size, blocks}; }
  std::span<const std::byte> g1_block(uint32_t id) const { return {g1.data() + id * block_size, block_size}; }
};

/// Every block from disk except block 3 (a host slab); block 100+5 has no
/// record and block 100+9's is corrupt. Destinations are reversed.
onboard_job mixed_job(const fixture& f) {
  onboard_job job{"r1", {}};
  for (uint32_t i = 0; i < blocks; ++i) {
    const uint64_t h = 100 + i;
    onboard_item it{blocks - 1 - i, h, nullptr, f.disk.locate(h).value_or(disk_location{})};
    if (i == 3) {
      it.slab = std::make_shared<const std::vector<std::byte>>(pattern(h));
      it.disk = {};
    }
    if (i == 5)
      it.disk = {};
    job.items.push_back(std::move(it));
  }
  return job;
}

/// Flips one payload byte of block `hash`'s record.
void corrupt(const fixture& f, uint64_t hash) {
  const auto at = f.disk.locate(hash);
  BOOST_REQUIRE(at);
  std::fstream file(at->file->path(), std::ios::binary | std::ios::in | std::ios::out);
  file.seekp(static_cast<std::streamoff>(at->offset + sizeof(record_header) + 100));
  file.put('!');
}

} // namespace

BOOST_AUTO_TEST_SUITE(onboard_worker_suite)

BOOST_AUTO_TEST_CASE(coalesced_parallel_reads_land_every_block_and_report_each_failure) {
  const uint64_t record = sizeof(record_header) + block_size;
  // Largest read: everything (runs 100-102, 104, 106-123), or two records (12 reads).
  for (const auto& [read_bytes, reads] : {std::pair{uint64_t{1} << 30, 3u}, std::pair{2 * record, 12u}})
  for (const unsigned readers : {1u, 4u, 8u}) {
    BOOST_TEST_CONTEXT("disk_readers " << readers << ", read bytes " << read_bytes) {
      fixture f;
      corrupt(f, 109);
      onboard_worker w(f.view(), /*threaded=*/true, readers, read_bytes);
      w.submit(mixed_job(f));
      w.drain();
      const std::vector<onboard_done> done = w.poll();
      BOOST_REQUIRE_EQUAL(done.size(), 1u);
      const onboard_done& d = done[0];
      BOOST_TEST(d.request_id == "r1");
      BOOST_TEST(!d.ok);
      BOOST_REQUIRE_EQUAL(d.disk_failures.size(), 2u);
      BOOST_TEST(d.disk_failures[0].first == 105u);
      BOOST_TEST((d.disk_failures[0].second == read_status::missing));
      BOOST_TEST(d.disk_failures[1].first == 109u);
      BOOST_TEST((d.disk_failures[1].second == read_status::corrupt));
      BOOST_TEST(d.disk_bytes == (blocks - 3) * block_size); // neither failure nor the slab
      BOOST_TEST(d.disk_seconds > 0);
      BOOST_TEST(d.disk_reads == reads);
      for (uint32_t i = 0; i < blocks; ++i) {
        if (i == 5 || i == 9)
          continue;
        const auto want = pattern(100 + i);
        const auto got = f.g1_block(blocks - 1 - i);
        BOOST_TEST(std::equal(got.begin(), got.end(), want.begin(), want.end()), "block " << i);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_destination_out_of_range_is_refused_not_written) {
  fixture f;
  onboard_worker w(f.view(), /*threaded=*/false, 4);
  onboard_job job{"r2", {{blocks, 100, nullptr, *f.disk.locate(100)}, {0, 101, nullptr, *f.disk.locate(101)}}};
  w.submit(std::move(job));
  const auto done = w.poll();
  BOOST_REQUIRE_EQUAL(done.size(), 1u);
  BOOST_TEST(!done[0].ok);
  BOOST_TEST(done[0].disk_failures.empty());
  BOOST_TEST(done[0].disk_bytes == block_size); // block 101 still landed
  const auto want = pattern(101);
  BOOST_TEST(std::equal(f.g1_block(0).begin(), f.g1_block(0).end(), want.begin(), want.end()));
}

BOOST_AUTO_TEST_SUITE_END()
