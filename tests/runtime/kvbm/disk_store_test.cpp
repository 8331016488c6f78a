// The G3 segment store: records round-trip verified, a restart rebuilds the
// index (and what it announces) from sealed segments' footers or, when one is
// missing or bad, by the same scan; torn tails, corrupt records and missing
// segments are misses, capacity eviction frees segments, compaction bounds
// the files, a full disk skips the write, a held directory is not shared.
#include "runtime/kvbm/disk_store.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

using namespace dynamo;
using namespace dynamo::kvbm;
namespace fs = std::filesystem;

using dynamo::test::temp_dir;

namespace {

constexpr uint64_t rec = sizeof(record_header);

std::vector<std::byte> block(size_t n, uint8_t seed) {
  std::vector<std::byte> b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = std::byte(static_cast<uint8_t>(seed + i * 7));
  return b;
}

disk_store open_store(const fs::path& dir, uint64_t capacity, uint64_t segment_bytes = uint64_t{64} << 20,
                      uint64_t min_free = 0, uint64_t tag = 5) {
  auto s = disk_store::open({.path = dir.string(), .capacity_blocks = capacity, .min_free_bytes = min_free,
                             .segment_bytes = segment_bytes, .tag = tag});
  BOOST_REQUIRE_MESSAGE(s, (s ? "" : describe(s.error())));
  return std::move(*s);
}

/// Reads block `hash` from `s` into a buffer of `n` bytes.
read_status read_back(const disk_store& s, uint64_t hash, size_t n, std::vector<std::byte>* out = nullptr) {
  const auto at = s.locate(hash);
  if (!at)
    return read_status::missing;
  std::vector<std::byte> buf(n);
  const read_status st = at->file->read(at->offset, hash, buf);
  if (out != nullptr)
    *out = std::move(buf);
  return st;
}

std::string fmt_pid_dir(long pid) { return "backend-" + std::to_string(pid) + "-0"; }

std::vector<fs::path> segments_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".kvs")
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(disk_store_suite)

BOOST_AUTO_TEST_CASE(a_written_block_reads_back_verified) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path / "g3", 4);
  const auto b = block(100, 3);
  BOOST_TEST((s.write(42, b).status == write_status::stored));
  BOOST_TEST((s.write(42, b).status == write_status::present));
  BOOST_TEST((s.write(43, block(100, 4)).status == write_status::stored));
  BOOST_TEST(s.contains(42));
  const auto at = s.locate(42);
  BOOST_REQUIRE(at);
  BOOST_TEST(at->offset == sizeof(segment_header));
  BOOST_TEST(at->length == 100u);
  BOOST_TEST(s.locate(43)->offset == sizeof(segment_header) + rec + 100); // appended right after
  BOOST_TEST(s.segment_count() == 1u);
  BOOST_TEST(s.file_bytes() == sizeof(segment_header) + 2 * (rec + 100));
  std::vector<std::byte> out;
  BOOST_TEST((read_back(s, 42, 100, &out) == read_status::ok));
  BOOST_TEST(out == b);
  // Asked as another block, or with another length: never these bytes.
  std::vector<std::byte> buf(100);
  BOOST_TEST((at->file->read(at->offset, 43, buf) == read_status::corrupt));
  std::vector<std::byte> longer(101);
  BOOST_TEST((at->file->read(at->offset, 42, longer) == read_status::corrupt));
  BOOST_TEST((read_back(s, 7, 100) == read_status::missing));
}

BOOST_AUTO_TEST_CASE(a_run_of_adjacent_records_reads_in_one_go) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path, 8);
  for (uint64_t h = 1; h <= 4; ++h)
    BOOST_REQUIRE((s.write(h, block(50, static_cast<uint8_t>(h))).status == write_status::stored));
  std::vector<std::vector<std::byte>> out(3, std::vector<std::byte>(50));
  const std::vector<std::span<std::byte>> payloads{out[0], out[1], out[2]};
  const std::vector<uint64_t> hashes{2, 3, 4};
  std::vector<read_status> status(3, read_status::missing);
  const auto at = s.locate(2);
  at->file->read_run(at->offset, hashes, payloads, status);
  for (size_t i = 0; i < 3; ++i) {
    BOOST_TEST((status[i] == read_status::ok));
    BOOST_TEST((out[i] == block(50, static_cast<uint8_t>(2 + i))));
  }
  // Past the end: the records that are there verify, the rest are truncated.
  fs::resize_file(at->file->path(), at->offset + 2 * (rec + 50) + 10);
  at->file->read_run(at->offset, hashes, payloads, status);
  BOOST_TEST((status[0] == read_status::ok));
  BOOST_TEST((status[1] == read_status::ok));
  BOOST_TEST((status[2] == read_status::truncated));
}

BOOST_AUTO_TEST_CASE(a_restart_rebuilds_the_index_and_lists_parents_first) {
  temp_dir d("kvbm-test");
  {
    disk_store s = open_store(d.path, 8, 2 * (rec + 40) + sizeof(segment_header)); // 2 records a segment
    BOOST_REQUIRE((s.write(12, block(40, 12), 0, 11, 112).status == write_status::stored)); // child first
    BOOST_REQUIRE((s.write(11, block(40, 11), 0, std::nullopt, 111).status == write_status::stored));
    BOOST_REQUIRE((s.write(13, block(40, 13), 0, 12, 113).status == write_status::stored));
    BOOST_REQUIRE((s.write(20, block(40, 20), 0, 99, 120).status == write_status::stored)); // parent never on disk
    BOOST_TEST(s.segment_count() == 2u);
    BOOST_TEST(s.restored().empty());
  }
  disk_store s = open_store(d.path, 8, 2 * (rec + 40) + sizeof(segment_header));
  BOOST_TEST(s.size() == 4u);
  for (const uint64_t h : {11, 12, 13, 20}) {
    std::vector<std::byte> out;
    BOOST_TEST((read_back(s, h, 40, &out) == read_status::ok), "block " << h);
    BOOST_TEST((out == block(40, static_cast<uint8_t>(h))));
  }
  const auto& r = s.restored();
  BOOST_REQUIRE_EQUAL(r.size(), 4u);
  BOOST_TEST(r[0].sequence_hash == 11u);
  BOOST_TEST(!r[0].parent.has_value());
  BOOST_TEST(r[0].tokens_hash == 111u);
  BOOST_TEST(r[1].sequence_hash == 12u);
  BOOST_TEST(*r[1].parent == 11u);
  BOOST_TEST(r[1].tokens_hash == 112u);
  BOOST_TEST(r[2].sequence_hash == 13u);
  BOOST_TEST(r[3].sequence_hash == 20u);
  BOOST_TEST(*r[3].parent == 99u);
  // The policy's order is the write order: the oldest leaf goes first.
  BOOST_TEST(s.eviction_order() == std::vector<uint64_t>({13, 20}), boost::test_tools::per_element());
  // New records go to a new segment; the old ones stay readable.
  BOOST_TEST((s.write(30, block(40, 30)).status == write_status::stored));
  BOOST_TEST(s.segment_count() == 3u);
  BOOST_TEST(s.locate(30)->offset == sizeof(segment_header));
}

BOOST_AUTO_TEST_CASE(another_tag_and_the_old_block_files_are_removed_at_open) {
  temp_dir d("kvbm-test");
  {
    disk_store s = open_store(d.path, 4, uint64_t{64} << 20, 0, /*tag=*/5);
    (void)s.write(1, block(8, 1));
  }
  std::ofstream(d.path / "notes.txt") << "keep me";
  std::ofstream(d.path / "00000000000000aa.kvb") << "old format";
  disk_store s = open_store(d.path, 4, uint64_t{64} << 20, 0, /*tag=*/6); // another model
  BOOST_TEST(!s.contains(1));
  BOOST_TEST(segments_in(d.path).empty());
  BOOST_TEST(!fs::exists(d.path / "00000000000000aa.kvb"));
  BOOST_TEST(fs::exists(d.path / "notes.txt"));
  std::ofstream(d.path / "file") << "x";
  BOOST_TEST(!disk_store::open({.path = (d.path / "file").string(), .capacity_blocks = 1}));
}

BOOST_AUTO_TEST_CASE(a_torn_tail_is_ignored_and_a_corrupt_header_ends_the_scan) {
  const uint64_t end = sizeof(segment_header) + 4 * (rec + 30);
  // Four records in one segment never sealed (the store stopped while writing it).
  auto four = [&](const temp_dir& d) {
    {
      disk_store s = open_store(d.path, 8);
      for (uint64_t h = 1; h <= 4; ++h)
        (void)s.write(h, block(30, static_cast<uint8_t>(h)));
    }
    const fs::path seg = segments_in(d.path).at(0);
    BOOST_REQUIRE_EQUAL(fs::file_size(seg), end);
    return seg;
  };
  {
    temp_dir d("kvbm-test");
    fs::resize_file(four(d), end - 5); // a crash mid-record: record 4 is torn
    disk_store s = open_store(d.path, 8);
    BOOST_TEST(s.rebuilt().segments_scanned == 1u);
    BOOST_TEST(s.size() == 3u);
    BOOST_TEST(!s.contains(4));
    BOOST_TEST((read_back(s, 3, 30) == read_status::ok));
  }
  {
    // Garbage after it fills record 4's payload and is no header itself: the
    // scan keeps record 4, whose payload fails its checksum when read.
    temp_dir d("kvbm-test");
    const fs::path seg = four(d);
    fs::resize_file(seg, end - 5);
    std::ofstream(seg, std::ios::binary | std::ios::app) << "garbage that is no header at all, long enough";
    disk_store s = open_store(d.path, 8);
    BOOST_TEST(s.size() == 4u);
    BOOST_TEST((read_back(s, 4, 30) == read_status::corrupt));
    BOOST_TEST((read_back(s, 3, 30) == read_status::ok));
  }
  temp_dir d("kvbm-test");
  { // one flipped byte in record 2's header: the scan trusts nothing from there on
    std::fstream f(four(d), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(sizeof(segment_header) + rec + 30 + 8));
    f.put('\x5a');
  }
  disk_store s = open_store(d.path, 8);
  BOOST_TEST(s.size() == 1u);
  BOOST_TEST(s.contains(1));
}

namespace {

/// Where segment `path`'s footer starts (its records' end), read from the file's last bytes.
uint64_t records_end_of(const fs::path& path) {
  segment_footer f;
  std::ifstream in(path, std::ios::binary);
  in.seekg(-static_cast<std::streamoff>(sizeof f), std::ios::end);
  in.read(reinterpret_cast<char*>(&f), sizeof f);
  BOOST_REQUIRE(f.magic == segment_footer::magic_value);
  return f.records_end;
}

/// What a store restored and where each block lies: "hash@segment:offset" in restored() order.
std::vector<std::string> restored_places(const disk_store& s) {
  std::vector<std::string> out;
  for (const restored_block& b : s.restored()) {
    const auto at = s.locate(b.sequence_hash);
    out.push_back(std::to_string(b.sequence_hash) + "<" + (b.parent ? std::to_string(*b.parent) : "-") + "@" +
                  (at ? std::to_string(at->file->id()) + ":" + std::to_string(at->offset) : "none"));
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(sealed_segments_are_read_by_their_footer) {
  temp_dir d("kvbm-test");
  const uint64_t seg_bytes = sizeof(segment_header) + 2 * (rec + 40); // two records a segment
  {
    disk_store s = open_store(d.path, 16, seg_bytes);
    for (uint64_t h = 1; h <= 7; ++h)
      (void)s.write(h, block(40, static_cast<uint8_t>(h)), 0, h > 1 ? std::optional{h - 1} : std::nullopt, 100 + h);
    BOOST_REQUIRE_EQUAL(s.segment_count(), 4u);
  }
  // Three sealed when the next opened, each ending in its footer; the fourth not.
  const auto segs = segments_in(d.path);
  for (size_t k = 0; k < 3; ++k)
    BOOST_TEST(fs::file_size(segs[k]) == seg_bytes + 2 * sizeof(segment_footer) + 2 * rec);
  BOOST_TEST(fs::file_size(segs[3]) == sizeof(segment_header) + rec + 40);
  std::vector<std::string> first;
  {
    disk_store s = open_store(d.path, 16, seg_bytes);
    BOOST_TEST(s.rebuilt().segments_from_footer == 3u);
    BOOST_TEST(s.rebuilt().segments_scanned == 1u);
    BOOST_TEST(s.size() == 7u);
    for (uint64_t h = 1; h <= 7; ++h)
      BOOST_TEST((read_back(s, h, 40) == read_status::ok), "block " << h);
    BOOST_TEST(s.restored().at(6).tokens_hash == 107u);
    BOOST_TEST(*s.restored().at(6).parent == 6u);
    first = restored_places(s);
  }
  // The scanned one was sealed at open: now every segment has a footer.
  disk_store s = open_store(d.path, 16, seg_bytes);
  BOOST_TEST(s.rebuilt().segments_from_footer == 4u);
  BOOST_TEST(s.rebuilt().segments_scanned == 0u);
  BOOST_TEST(restored_places(s) == first, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_bad_footer_falls_back_to_the_scan_with_the_same_index) {
  temp_dir d("kvbm-test");
  const uint64_t seg_bytes = sizeof(segment_header) + 2 * (rec + 40);
  std::vector<std::string> by_footer;
  {
    disk_store s = open_store(d.path, 16, seg_bytes);
    for (uint64_t h = 1; h <= 8; ++h)
      (void)s.write(h, block(40, static_cast<uint8_t>(h)), 0, h > 1 ? std::optional{h - 1} : std::nullopt, 100 + h);
  }
  {
    disk_store s = open_store(d.path, 16, seg_bytes); // seals the last one
    (void)s;
  }
  {
    disk_store s = open_store(d.path, 16, seg_bytes);
    BOOST_REQUIRE_EQUAL(s.rebuilt().segments_from_footer, 4u);
    by_footer = restored_places(s);
  }
  const auto segs = segments_in(d.path);
  { // segment 1: one flipped byte in a listed header
    std::fstream f(segs[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(records_end_of(segs[0]) + sizeof(segment_footer) + 20));
    f.put('\x33');
  }
  fs::resize_file(segs[1], fs::file_size(segs[1]) - 10);  // segment 2: torn
  fs::resize_file(segs[2], records_end_of(segs[2]));      // segment 3: none
  { // segment 4: its last copy flipped
    std::fstream f(segs[3], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x01');
  }
  disk_store s = open_store(d.path, 16, seg_bytes);
  BOOST_TEST(s.rebuilt().segments_from_footer == 0u);
  BOOST_TEST(s.rebuilt().segments_scanned == 4u);
  BOOST_TEST(restored_places(s) == by_footer, boost::test_tools::per_element());
  for (uint64_t h = 1; h <= 8; ++h)
    BOOST_TEST((read_back(s, h, 40) == read_status::ok), "block " << h);
}

BOOST_AUTO_TEST_CASE(corrupt_truncated_and_missing_records_are_misses) {
  temp_dir d("kvbm-test");
  const uint64_t seg_bytes = sizeof(segment_header) + 2 * (rec + 64);
  {
    disk_store s = open_store(d.path, 8, seg_bytes);
    for (uint64_t h = 1; h <= 6; ++h) // three segments of two
      (void)s.write(h, block(64, static_cast<uint8_t>(h)));
    BOOST_REQUIRE_EQUAL(s.segment_count(), 3u);
  }
  fs::remove(segments_in(d.path).at(1)); // blocks 3 and 4
  disk_store s = open_store(d.path, 8, seg_bytes);
  BOOST_TEST(s.size() == 4u);
  BOOST_TEST(!s.contains(3));
  BOOST_TEST(!s.contains(4));
  BOOST_TEST((read_back(s, 5, 64) == read_status::ok));
  const auto one = s.locate(1);
  { // one flipped payload byte of block 1
    std::fstream f(one->file->path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(one->offset + rec + 10));
    f.put(static_cast<char>(0x55 ^ std::to_integer<int>(block(64, 1)[10])));
  }
  BOOST_TEST((read_back(s, 1, 64) == read_status::corrupt));
  BOOST_TEST((read_back(s, 2, 64) == read_status::ok));
  const auto six = s.locate(6);
  fs::resize_file(six->file->path(), six->offset + rec + 63); // cut short under a running store
  BOOST_TEST((read_back(s, 6, 64) == read_status::truncated));
  BOOST_TEST(s.erase(1));
  BOOST_TEST(!s.contains(1));
  BOOST_TEST(!s.locate(1));
}

BOOST_AUTO_TEST_CASE(a_full_store_evicts_lru_and_frees_dead_segments) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path, 2, sizeof(segment_header) + rec + 16); // one record a segment
  const auto b = block(16, 1);
  (void)s.write(1, b);
  (void)s.write(2, b);
  BOOST_TEST(s.touch(1));
  auto r = s.write(3, b);
  BOOST_TEST((r.status == write_status::stored));
  BOOST_TEST(r.evicted == std::vector<uint64_t>{2}, boost::test_tools::per_element());
  BOOST_TEST(!s.locate(2));
  BOOST_TEST(s.segment_count() == 2u); // block 2's segment is gone
  BOOST_TEST(segments_in(d.path).size() == 2u);
  BOOST_TEST((read_back(s, 1, 16) == read_status::ok));
  BOOST_TEST((read_back(s, 3, 16) == read_status::ok));
}

BOOST_AUTO_TEST_CASE(compaction_bounds_the_files_and_keeps_hot_blocks) {
  temp_dir d("kvbm-test");
  const uint64_t r = rec + 100;
  const uint64_t seg_bytes = sizeof(segment_header) + 4 * r; // four records a segment
  disk_store s = open_store(d.path, 5, seg_bytes);
  // A hot block opens each of the first four segments; the cold blocks after
  // it are evicted (LRU), which leaves every segment with one live record.
  const std::vector<uint64_t> hot{1000, 1001, 1002, 1003};
  size_t hot_written = 0;
  for (uint64_t step = 0; step < 60; ++step) {
    for (size_t k = 0; k < hot_written; ++k)
      BOOST_REQUIRE(s.touch(hot[k]));
    const bool is_hot = step % 4 == 0 && hot_written < hot.size();
    const uint64_t h = is_hot ? hot[hot_written++] : step;
    BOOST_REQUIRE((s.write(h, block(100, static_cast<uint8_t>(h))).status == write_status::stored));
    // Live records, the holes of at most two segments, the active segment, one being emptied.
    BOOST_TEST(s.file_bytes() <= 5 * r + 4 * seg_bytes, "after step " << step);
  }
  BOOST_TEST(s.size() == 5u);
  for (const uint64_t h : hot) {
    std::vector<std::byte> out;
    BOOST_TEST((read_back(s, h, 100, &out) == read_status::ok), "block " << h);
    BOOST_TEST((out == block(100, static_cast<uint8_t>(h))));
  }
  BOOST_TEST(s.locate(1000)->file->id() > 1u); // moved forward: its first segment is gone
  BOOST_TEST(s.segment_count() <= 4u);
}

namespace {

/// "hash@segment:offset" of each block `s` holds.
std::vector<std::string> places_of(const disk_store& s, const std::vector<uint64_t>& hashes) {
  std::vector<std::string> out;
  for (const uint64_t h : hashes)
    if (const auto at = s.locate(h))
      out.push_back(std::to_string(h) + "@" + std::to_string(at->file->id()) + ":" + std::to_string(at->offset));
  return out;
}

} // namespace

BOOST_AUTO_TEST_CASE(compaction_reading_on_its_own_thread_ends_as_inline) {
  temp_dir a("kvbm-test"), b("kvbm-test");
  const uint64_t seg_bytes = sizeof(segment_header) + 4 * (rec + 100);
  disk_store inline_store = open_store(a.path, 5, seg_bytes);
  auto opened = disk_store::open({.path = b.path.string(), .capacity_blocks = 5, .min_free_bytes = 0,
                                  .segment_bytes = seg_bytes, .tag = 5, .async_compaction = true});
  BOOST_REQUIRE(opened);
  disk_store async_store = std::move(*opened); // moved while idle; its compactions start below
  const std::vector<uint64_t> hot{1000, 1001, 1002, 1003};
  std::vector<uint64_t> all = hot;
  size_t hot_written = 0, compactions = 0;
  for (uint64_t step = 0; step < 60; ++step) { // the compaction scenario above, on both stores
    for (size_t k = 0; k < hot_written; ++k)
      BOOST_REQUIRE((inline_store.touch(hot[k]) && async_store.touch(hot[k])));
    const bool is_hot = step % 4 == 0 && hot_written < hot.size();
    const uint64_t h = is_hot ? hot[hot_written++] : step;
    all.push_back(h);
    const auto bytes = block(100, static_cast<uint8_t>(h));
    const auto ri = inline_store.write(h, bytes);
    const auto ra = async_store.write(h, bytes);
    BOOST_TEST((ri.status == ra.status));
    BOOST_TEST(ri.evicted == ra.evicted, boost::test_tools::per_element());
    if (async_store.compacting()) {
      ++compactions;
      BOOST_TEST(async_store.finish_compaction().empty());
      BOOST_TEST(!async_store.compacting());
    }
    BOOST_TEST(places_of(async_store, all) == places_of(inline_store, all), boost::test_tools::per_element());
  }
  BOOST_TEST(compactions > 0u);
  BOOST_TEST(async_store.segment_count() == inline_store.segment_count());
  for (const uint64_t h : hot)
    BOOST_TEST((read_back(async_store, h, 100) == read_status::ok), "block " << h);
}

BOOST_AUTO_TEST_CASE(a_block_evicted_while_its_compaction_reads_is_not_copied) {
  temp_dir d("kvbm-test");
  const uint64_t seg_bytes = sizeof(segment_header) + 4 * (rec + 100);
  auto opened = disk_store::open({.path = d.path.string(), .capacity_blocks = 5, .min_free_bytes = 0,
                                  .segment_bytes = seg_bytes, .tag = 5, .async_compaction = true});
  BOOST_REQUIRE(opened);
  disk_store s = std::move(*opened);
  const std::vector<uint64_t> hot{1000, 1001, 1002, 1003};
  size_t hot_written = 0;
  uint64_t step = 0;
  for (; step < 60 && !s.compacting(); ++step) {
    for (size_t k = 0; k < hot_written; ++k)
      BOOST_REQUIRE(s.touch(hot[k]));
    const bool is_hot = step % 4 == 0 && hot_written < hot.size();
    const uint64_t h = is_hot ? hot[hot_written++] : step;
    BOOST_REQUIRE((s.write(h, block(100, static_cast<uint8_t>(h))).status == write_status::stored));
  }
  BOOST_REQUIRE(s.compacting());
  // The victim is the emptiest sealed segment: block 1000's, the oldest, alone live there.
  const auto before = s.locate(1000);
  BOOST_REQUIRE(before);
  const uint64_t victim = before->file->id();
  std::vector<uint64_t> all;
  for (uint64_t h = 0; h < step; ++h)
    all.push_back(h);
  all.insert(all.end(), hot.begin() + 1, hot.end());
  for (const uint64_t h : all)
    BOOST_TEST((!s.locate(h) || s.locate(h)->file->id() != victim), "block " << h); // 1000 alone there
  const auto unmoved = places_of(s, all);
  BOOST_TEST(s.erase(1000)); // while its record is being read (its segment goes)
  BOOST_TEST(s.finish_compaction().empty());
  BOOST_TEST(!s.contains(1000));
  BOOST_TEST(!s.locate(1000)); // not copied back in
  BOOST_TEST(places_of(s, all) == unmoved, boost::test_tools::per_element()); // and nothing else moved
}

BOOST_AUTO_TEST_CASE(segments_compaction_wrote_restore_by_footer_as_by_scan) {
  temp_dir d("kvbm-test");
  const uint64_t seg_bytes = sizeof(segment_header) + 4 * (rec + 100);
  const std::vector<uint64_t> hot{1000, 1001, 1002, 1003};
  {
    disk_store s = open_store(d.path, 5, seg_bytes);
    size_t hot_written = 0;
    for (uint64_t step = 0; step < 60; ++step) { // as above: compaction copies the hot blocks forward
      for (size_t k = 0; k < hot_written; ++k)
        BOOST_REQUIRE(s.touch(hot[k]));
      const bool is_hot = step % 4 == 0 && hot_written < hot.size();
      const uint64_t h = is_hot ? hot[hot_written++] : step;
      BOOST_REQUIRE((s.write(h, block(100, static_cast<uint8_t>(h))).status == write_status::stored));
    }
    BOOST_REQUIRE(s.locate(1000)->file->id() > 1u);
  }
  std::vector<std::string> by_footer;
  {
    const size_t segments = segments_in(d.path).size();
    disk_store s = open_store(d.path, 5, seg_bytes);
    BOOST_TEST(s.rebuilt().segments_from_footer + 1 == segments); // the one being written is scanned
    BOOST_TEST(s.rebuilt().segments_scanned == 1u);
    by_footer = restored_places(s);
    BOOST_TEST(by_footer.size() == 5u);
    for (const restored_block& b : s.restored())
      BOOST_TEST((read_back(s, b.sequence_hash, 100) == read_status::ok), "block " << b.sequence_hash);
  }
  for (const fs::path& seg : segments_in(d.path))
    fs::resize_file(seg, records_end_of(seg)); // every footer gone
  disk_store s = open_store(d.path, 5, seg_bytes);
  BOOST_TEST(s.rebuilt().segments_from_footer == 0u);
  BOOST_TEST(restored_places(s) == by_footer, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_disk_short_of_space_skips_the_write) {
  temp_dir d("kvbm-test");
  disk_store s = open_store(d.path, 2, uint64_t{64} << 20, UINT64_MAX / 2); // no file system has that much free
  auto r = s.write(5, block(16, 1));
  BOOST_TEST((r.status == write_status::disk_full));
  BOOST_TEST(!s.contains(5));
  BOOST_TEST(s.segment_count() == 0u);
}

BOOST_AUTO_TEST_CASE(a_directory_held_by_a_live_store_is_not_shared) {
  temp_dir d("kvbm-test");
  disk_store a = open_store(d.path / "g3", 2);
  disk_store b = open_store(d.path / "g3", 2);
  BOOST_TEST(a.directory() == (d.path / "g3").string());
  BOOST_TEST(b.directory() == (d.path / "g3").string() + ".1");
  (void)b.write(1, block(8, 1));
  BOOST_TEST(!a.contains(1));
}

BOOST_AUTO_TEST_CASE(stale_directories_of_the_old_layout_are_removed) {
  temp_dir d("kvbm-test");
  auto dir = [&](const std::string& name, std::vector<std::string> files) {
    fs::create_directories(d.path / name);
    for (const std::string& f : files)
      std::ofstream(d.path / name / f) << "x";
  };
  dir("backend-4001-0", {"00000000000000aa.kvb", "00000000000000ab.kvb.tmp"}); // process gone: removed
  dir("backend-4001-1", {"00000000000000ac.kvb"});                             // removed
  dir("backend-4002-0", {"00000000000000ad.kvb"});      // process alive: kept
  dir("backend-4003-0", {"00000000000000ae.kvb", "notes.txt"}); // not only block files: kept
  dir("backend-4004-0", {});                            // nothing to remove: kept
  dir("backend-7", {"LOCK", "seg-0000000000000001.kvs"}); // the new layout: kept
  dir("backend-9-0", {"LOCK", "seg-0000000000000001.kvs"}); // pool "backend-9", engine 0: kept
  dir("other-4001-0", {"00000000000000af.kvb"});        // another pool: kept
  dir("backend-x-0", {"00000000000000b0.kvb"});         // not a pid: kept
  std::ofstream(d.path / "backend-4005-0") << "a file";  // not a directory: kept
  std::vector<long> asked;
  const auto removed = remove_stale_block_dirs(d.path.string(), "backend", [&](long pid) {
    asked.push_back(pid);
    return pid == 4002;
  });
  std::vector<std::string> names;
  for (const std::string& r : removed)
    names.push_back(fs::path(r).filename().string());
  std::sort(names.begin(), names.end());
  BOOST_TEST(names == std::vector<std::string>({"backend-4001-0", "backend-4001-1"}), boost::test_tools::per_element());
  BOOST_TEST(!fs::exists(d.path / "backend-4001-0"));
  for (const char* kept : {"backend-4002-0", "backend-4003-0/notes.txt", "backend-4003-0/00000000000000ae.kvb",
                           "backend-4004-0", "backend-7/LOCK", "backend-9-0/LOCK", "backend-9-0/seg-0000000000000001.kvs",
                           "other-4001-0", "backend-x-0", "backend-4005-0"})
    BOOST_TEST(fs::exists(d.path / kept), kept);
  std::sort(asked.begin(), asked.end());
  asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
  BOOST_TEST(asked == std::vector<long>({9, 4001, 4002, 4003, 4004}), boost::test_tools::per_element());
  // By default a pid is alive unless kill() says there is no such process: ours is.
  fs::remove_all(d.path / "backend-4002-0");
  dir(fmt_pid_dir(::getpid()), {"00000000000000b1.kvb"});
  BOOST_TEST(remove_stale_block_dirs(d.path.string(), "backend").empty());
  BOOST_TEST(fs::exists(d.path / fmt_pid_dir(::getpid()) / "00000000000000b1.kvb"));
}

BOOST_AUTO_TEST_CASE(policy_only_store_keeps_an_index) {
  disk_store s = open_store("", 1);
  BOOST_TEST(!s.has_files());
  BOOST_TEST((s.write(1, {}).status == write_status::stored));
  auto r = s.write(2, {});
  BOOST_TEST(r.evicted == std::vector<uint64_t>{1}, boost::test_tools::per_element());
  BOOST_TEST(s.contains(2));
  BOOST_TEST(!s.locate(2));
}

BOOST_AUTO_TEST_CASE(a_clean_restart_keeps_evictions_recency_and_priorities) {
  temp_dir d("kvbm-test");
  const auto b = block(16, 1);
  {
    disk_store s = open_store(d.path, 3); // one segment holds them all
    (void)s.write(1, b);
    (void)s.write(2, b);
    (void)s.write(9, b, 1); // a higher priority goes last whatever its age
    BOOST_TEST(s.touch(1));
    auto r = s.write(3, b); // evicts 2: a hole its segment still holds
    BOOST_TEST(r.evicted == std::vector<uint64_t>{2}, boost::test_tools::per_element());
    BOOST_TEST(s.touch(1));
    BOOST_TEST(s.eviction_order() == std::vector<uint64_t>({3, 1, 9}), boost::test_tools::per_element());
  }
  BOOST_TEST(fs::exists(d.path / "LIVE"));
  {
    disk_store s = open_store(d.path, 3);
    BOOST_TEST(!fs::exists(d.path / "LIVE")); // it holds only until the next write
    BOOST_TEST(s.rebuilt().live_index);
    BOOST_TEST(s.rebuilt().evicted_records == 1u);
    BOOST_TEST(s.size() == 3u);
    BOOST_TEST(!s.locate(2));
    BOOST_TEST(s.eviction_order() == std::vector<uint64_t>({3, 1, 9}), boost::test_tools::per_element());
    BOOST_TEST(s.restored().size() == 3u);
    BOOST_TEST((read_back(s, 1, 16) == read_status::ok));
  }
  // Without it (a crash), every record of the footers comes back in write
  // order: the evicted block 2 returns and, over the capacity, block 1 goes.
  BOOST_REQUIRE(fs::remove(d.path / "LIVE"));
  disk_store s = open_store(d.path, 3);
  BOOST_TEST(!s.rebuilt().live_index);
  BOOST_TEST(s.rebuilt().evicted_records == 0u);
  BOOST_TEST(s.locate(2).has_value());
  BOOST_TEST(!s.locate(1).has_value());
  BOOST_TEST(s.eviction_order() == std::vector<uint64_t>({2, 9, 3}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_live_index_that_does_not_match_the_segments_is_ignored) {
  temp_dir d("kvbm-test");
  const auto b = block(16, 1);
  {
    disk_store s = open_store(d.path, 2);
    (void)s.write(1, b);
    (void)s.write(2, b);
    (void)s.write(3, b); // evicts 1
  }
  // The segment lost its last record after the index was written: the index
  // no longer describes it, so the segment alone decides.
  const fs::path seg = segments_in(d.path).at(0);
  fs::resize_file(seg, fs::file_size(seg) - 1);
  {
    disk_store s = open_store(d.path, 2);
    BOOST_TEST(!s.rebuilt().live_index);
    BOOST_TEST(!fs::exists(d.path / "LIVE"));
    BOOST_TEST(s.locate(1).has_value()); // the footer-less scan brings 1 back
    BOOST_TEST(s.locate(2).has_value());
    BOOST_TEST(!s.locate(3).has_value()); // torn
  }
  // A damaged index: the same.
  {
    std::fstream f(d.path / "LIVE", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(60);
    f.put('\x7f');
  }
  disk_store s = open_store(d.path, 2);
  BOOST_TEST(!s.rebuilt().live_index);
  BOOST_TEST(s.size() == 2u);
}

BOOST_AUTO_TEST_SUITE_END()
