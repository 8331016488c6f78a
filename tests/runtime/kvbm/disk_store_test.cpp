#include "runtime/kvbm/disk_store.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace dynamo;
using namespace dynamo::kvbm;
namespace fs = std::filesystem;

using dynamo::test::temp_dir;

namespace {

std::vector<std::byte> block(size_t n, uint8_t seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return b;
}

disk_store open_store(const fs::path& dir, uint64_t capacity, uint64_t min_free = 0) {
  auto s = disk_store::open({.path = dir.string(), .capacity_blocks = capacity, .min_free_bytes = min_free});
  BOOST_REQUIRE_MESSAGE(s, (s ? "" : describe(s.error())));
  return std::move(*s);
}

} // namespace

BOOST_AUTO_TEST_SUITE(disk_store_suite)

BOOST_AUTO_TEST_CASE(a_written_block_reads_back_verified) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path / "g3", 4);
  const auto b = block(100, 3);
  BOOST_TEST((s.write(42, b).status == write_status::stored));
  BOOST_TEST((s.write(42, b).status == write_status::present));
  BOOST_TEST(s.contains(42));
  BOOST_TEST(fs::file_size(s.path_of(42)) == sizeof(block_file_header) + 100);
  std::vector<std::byte> out(100);
  BOOST_TEST((read_block_file(s.path_of(42), 42, out) == read_status::ok));
  BOOST_TEST(out == b);
  // Asked as another block, or with another length: never these bytes.
  BOOST_TEST((read_block_file(s.path_of(42), 43, out) == read_status::corrupt));
  std::vector<std::byte> longer(101);
  BOOST_TEST((read_block_file(s.path_of(42), 42, longer) == read_status::corrupt));
  BOOST_TEST((read_block_file(s.path_of(7), 7, out) == read_status::missing));
}

BOOST_AUTO_TEST_CASE(corrupt_and_truncated_files_are_misses) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path, 4);
  const auto b = block(64, 9);
  BOOST_REQUIRE((s.write(1, b).status == write_status::stored));
  BOOST_REQUIRE((s.write(2, b).status == write_status::stored));
  { // flip one payload byte of block 1
    std::fstream f(s.path_of(1), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(sizeof(block_file_header) + 10);
    f.put('\x55' ^ static_cast<char>(b[10]));
  }
  fs::resize_file(s.path_of(2), sizeof(block_file_header) + 63);
  std::vector<std::byte> out(64);
  BOOST_TEST((read_block_file(s.path_of(1), 1, out) == read_status::corrupt));
  BOOST_TEST((read_block_file(s.path_of(2), 2, out) == read_status::truncated));
  fs::resize_file(s.path_of(2), 5); // not even a header
  BOOST_TEST((read_block_file(s.path_of(2), 2, out) == read_status::truncated));
  BOOST_TEST(s.erase(1));
  BOOST_TEST(!fs::exists(s.path_of(1)));
  BOOST_TEST(!s.contains(1));
}

BOOST_AUTO_TEST_CASE(full_store_evicts_the_oldest_file) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path, 2);
  const auto b = block(16, 1);
  (void)s.write(1, b);
  (void)s.write(2, b);
  BOOST_TEST(s.touch(1));
  auto r = s.write(3, b);
  BOOST_TEST((r.status == write_status::stored));
  BOOST_TEST(r.evicted == std::vector<uint64_t>{2}, boost::test_tools::per_element());
  BOOST_TEST(!fs::exists(s.path_of(2)));
  BOOST_TEST(fs::exists(s.path_of(1)));
  BOOST_TEST(fs::exists(s.path_of(3)));
}

BOOST_AUTO_TEST_CASE(a_disk_short_of_space_skips_the_write) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path, 2, UINT64_MAX / 2); // no file system has that much free
  auto r = s.write(5, block(16, 1));
  BOOST_TEST((r.status == write_status::disk_full));
  BOOST_TEST(!s.contains(5));
  BOOST_TEST(!fs::exists(s.path_of(5)));
}

BOOST_AUTO_TEST_CASE(opening_removes_stale_block_files_only) {
  temp_dir d("kvbm-test");
  {
    disk_store s = open_store(d.path, 2);
    (void)s.write(1, block(8, 1));
  }
  std::ofstream(d.path / "notes.txt") << "keep me";
  disk_store s = open_store(d.path, 2);
  BOOST_TEST(!s.contains(1));
  BOOST_TEST(!fs::exists(s.path_of(1)));
  BOOST_TEST(fs::exists(d.path / "notes.txt"));
  std::ofstream(d.path / "file") << "x";
  BOOST_TEST(!disk_store::open({.path = (d.path / "file").string(), .capacity_blocks = 1}));
}

BOOST_AUTO_TEST_CASE(policy_only_store_keeps_an_index) {
  disk_store s = open_store("", 1);
  BOOST_TEST(!s.has_files());
  BOOST_TEST((s.write(1, {}).status == write_status::stored));
  auto r = s.write(2, {});
  BOOST_TEST(r.evicted == std::vector<uint64_t>{1}, boost::test_tools::per_element());
  BOOST_TEST(s.contains(2));
}

BOOST_AUTO_TEST_SUITE_END()
