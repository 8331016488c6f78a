// gguf::writer -> gguf::file round trips: metadata of every type, typed
// accessors, tensors of every writable type, alignment, mmap from disk.
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/writer.hpp"

#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/quantize.hpp"

#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace dynamo;
using namespace dynamo::gguf;

namespace {

std::shared_ptr<const file> parse(const writer& w) {
  auto f = file::from_bytes(w.bytes());
  BOOST_REQUIRE_MESSAGE(f, error_text(f));
  return *f;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * static_cast<float>(static_cast<int>(i * 37 % 101) - 50);
  return v;
}

template <class T>
std::vector<std::byte> le(T v) {
  std::vector<std::byte> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

void append(std::vector<std::byte>& out, const std::vector<std::byte>& more) {
  out.insert(out.end(), more.begin(), more.end());
}

} // namespace

BOOST_AUTO_TEST_SUITE(reader_metadata)

BOOST_AUTO_TEST_CASE(every_scalar_type_round_trips) {
  writer w;
  w.set_u8("a.u8", 200);
  w.set_u32("a.u32", 4000000000u);
  w.set_i32("a.i32", -7);
  w.set_u64("a.u64", 1ull << 40);
  w.set_i64("a.i64", -(1ll << 40));
  w.set_f32("a.f32", 1.5f);
  w.set_f64("a.f64", 0.1);
  w.set_bool("a.bool", true);
  w.set_string("a.str", "héllo");
  auto f = parse(w);
  BOOST_TEST(f->version() == 3u);
  BOOST_TEST(f->metadata().size() == 9u);
  BOOST_TEST(f->metadata()[0].key == "a.u8");
  BOOST_TEST(*f->get_u32("a.u8") == 200u);
  BOOST_TEST(*f->get_u32("a.u32") == 4000000000u);
  BOOST_TEST(*f->get_i32("a.i32") == -7);
  BOOST_TEST(*f->get_u64("a.u64") == 1ull << 40);
  BOOST_TEST(*f->get_i64("a.i64") == -(1ll << 40));
  BOOST_TEST(*f->get_f32("a.f32") == 1.5f);
  BOOST_TEST(*f->get_f32("a.f64") == 0.1f);
  BOOST_TEST(*f->get_bool("a.bool"));
  BOOST_TEST(*f->get_string("a.str") == "héllo");
  BOOST_TEST(f->find("a.u8")->type() == value_type::u8);
}

BOOST_AUTO_TEST_CASE(integers_of_any_width_are_accepted_when_in_range) {
  writer w;
  w.set_u8("small", 7);
  w.set_u64("big", 1ull << 33);
  w.set_i32("neg", -1);
  w.set_i64("pos64", 12);
  auto f = parse(w);
  BOOST_TEST(*f->get_u64("small") == 7u);
  BOOST_TEST(*f->get_i32("small") == 7);
  BOOST_TEST(*f->get_u32("pos64") == 12u);
  BOOST_TEST(*f->get_i64("big") == 1ll << 33);
  BOOST_TEST(*f->get_f32("small") == 7.0f); // an integer where a number is expected
  auto too_big = f->get_u32("big");
  BOOST_TEST(code_of(too_big.error()) == errc::corrupt_file);
  BOOST_TEST(message_of(too_big.error()).find("'big'") != std::string::npos);
  BOOST_TEST(code_of(f->get_u64("neg").error()) == errc::corrupt_file);
}

BOOST_AUTO_TEST_CASE(missing_keys_are_not_found_and_wrong_types_name_the_key) {
  writer w;
  w.set_string("s", "x");
  auto f = parse(w);
  auto m = f->get_u32("nope");
  BOOST_TEST(code_of(m.error()) == errc::not_found);
  BOOST_TEST(message_of(m.error()).find("nope") != std::string::npos);
  auto t = f->get_u32("s");
  BOOST_TEST(code_of(t.error()) == errc::corrupt_file);
  BOOST_TEST(message_of(t.error()) == "metadata key 's' is string \"x\", expected an unsigned integer in range");
  BOOST_TEST(code_of(f->get_string_array("s").error()) == errc::corrupt_file);
}

BOOST_AUTO_TEST_CASE(fallback_accessors_apply_only_to_absent_keys) {
  writer w;
  w.set_string("s", "x");
  auto f = parse(w);
  BOOST_TEST(*f->get_u32("absent", 42) == 42u);
  BOOST_TEST(*f->get_f32("absent", 0.5f) == 0.5f);
  BOOST_TEST(*f->get_bool("absent", true));
  BOOST_TEST(*f->get_string("absent", "dflt") == "dflt");
  BOOST_TEST(*f->get_string("s", "dflt") == "x");
  BOOST_TEST(!f->get_u32("s", 1)); // present with the wrong type stays an error
}

BOOST_AUTO_TEST_CASE(arrays_round_trip) {
  writer w;
  w.set_string_array("toks", {"a", "", "<|im_end|>"});
  const int32_t types[] = {1, 3, -2};
  w.set_i32_array("types", types);
  const float scores[] = {0.5f, -1.0f};
  w.set_f32_array("scores", scores);
  auto f = parse(w);
  BOOST_TEST(*f->get_string_array("toks") == (std::vector<std::string_view>{"a", "", "<|im_end|>"}),
             boost::test_tools::per_element());
  BOOST_TEST(*f->get_int_array("types") == (std::vector<int64_t>{1, 3, -2}), boost::test_tools::per_element());
  BOOST_TEST(*f->get_f32_array("scores") == (std::vector<float>{0.5f, -1.0f}), boost::test_tools::per_element());
  BOOST_TEST((*f->get_array("toks"))->elem_type == value_type::string);
  BOOST_TEST(code_of(f->get_int_array("toks").error()) == errc::corrupt_file);
}

BOOST_AUTO_TEST_CASE(nested_arrays_parse) {
  // [[1u16, 2u16], [], [3u16]]
  std::vector<std::byte> p;
  append(p, le<uint32_t>(9));
  append(p, le<uint64_t>(3));
  for (std::vector<uint16_t> inner : {std::vector<uint16_t>{1, 2}, std::vector<uint16_t>{}, std::vector<uint16_t>{3}}) {
    append(p, le<uint32_t>(2));
    append(p, le<uint64_t>(inner.size()));
    for (auto v : inner)
      append(p, le<uint16_t>(v));
  }
  writer w;
  w.set_encoded("nested", value_type::array, p);
  auto f = parse(w);
  auto outer = *f->get_array("nested");
  BOOST_REQUIRE_EQUAL(outer->items.size(), 3u);
  BOOST_TEST(outer->elem_type == value_type::array);
  const auto* first = outer->items[0].to_array();
  BOOST_REQUIRE(first);
  BOOST_TEST(first->items.size() == 2u);
  BOOST_TEST(*first->items[1].to_uint() == 2u);
  BOOST_TEST(outer->items[1].to_array()->items.empty());
  BOOST_TEST(f->find("nested")->summary() == "[[1, 2], [], [3]]");
}

BOOST_AUTO_TEST_CASE(setting_a_key_twice_replaces_it) {
  writer w;
  w.set_u32("k", 1);
  w.set_string("k", "two");
  auto f = parse(w);
  BOOST_TEST(f->metadata().size() == 1u);
  BOOST_TEST(*f->get_string("k") == "two");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reader_tensors)

BOOST_AUTO_TEST_CASE(tensors_of_every_writable_type_round_trip) {
  writer w;
  const uint64_t n0 = 256; // a whole number of blocks of every type
  const auto x = ramp(n0 * 3, 0.01f);
  std::vector<tensor_type> types;
  for (uint32_t id = 0; id < 64; ++id)
    if (kernels::ref::can_quantize(static_cast<tensor_type>(id)))
      types.push_back(static_cast<tensor_type>(id));
  BOOST_TEST(types.size() >= 6u);
  for (auto t : types)
    BOOST_REQUIRE(w.add_tensor("w." + type_name(t), {n0, 3}, t, x));
  auto f = parse(w);
  BOOST_TEST(f->tensors().size() == types.size());
  BOOST_TEST(f->data_offset() % 32 == 0u);
  for (auto t : types) {
    const auto* info = f->find_tensor("w." + type_name(t));
    BOOST_REQUIRE(info);
    BOOST_TEST(info->type == t);
    BOOST_TEST(info->n_dims == 2u);
    BOOST_TEST(info->ne[0] == n0);
    BOOST_TEST(info->ne[1] == 3u);
    BOOST_TEST(info->n_rows() == 3u);
    BOOST_TEST(info->offset % 32 == 0u);
    const uint64_t rb = *row_bytes(t, n0);
    BOOST_TEST(info->n_bytes == rb * 3);
    // The file holds exactly what the quantizer produced, row by row.
    std::vector<std::byte> q(rb * 3);
    std::vector<float> expect(x.size());
    for (uint64_t r = 0; r < 3; ++r) {
      BOOST_REQUIRE(kernels::ref::quantize_row(t, x.data() + r * n0, q.data() + r * rb, n0));
      kernels::ref::dequantize_row(t, q.data() + r * rb, expect.data() + r * n0, n0);
    }
    auto data = f->tensor_data(*info);
    BOOST_TEST(std::memcmp(data.data(), q.data(), q.size()) == 0);
    auto all = f->dequantize(*info);
    BOOST_REQUIRE(all);
    BOOST_TEST(*all == expect, boost::test_tools::per_element());
    std::vector<float> row(n0);
    BOOST_REQUIRE(f->dequantize_row(*info, 2, row));
    BOOST_TEST(std::equal(row.begin(), row.end(), expect.begin() + 2 * n0));
  }
  BOOST_TEST(!f->find_tensor("absent"));
}

BOOST_AUTO_TEST_CASE(custom_alignment_is_written_and_honoured) {
  writer w(64);
  BOOST_REQUIRE(w.add_tensor("a", {32}, tensor_type::f32, ramp(32, 1.0f)));
  BOOST_REQUIRE(w.add_tensor("b", {32}, tensor_type::q8_0, ramp(32, 1.0f)));
  auto f = parse(w);
  BOOST_TEST(f->alignment() == 64u);
  BOOST_TEST(*f->get_u32("general.alignment") == 64u);
  BOOST_TEST(f->data_offset() % 64 == 0u);
  BOOST_TEST(f->find_tensor("b")->offset == 128u); // 128 bytes of F32, already aligned
  BOOST_TEST(f->find_tensor("a")->n_dims == 1u);
}

BOOST_AUTO_TEST_CASE(raw_k_quant_tensors_dequantize_through_the_file) {
  kernels::ref::block_q6_k blk{};
  blk.d = 0x3C00; // 1
  for (auto& s : blk.scales)
    s = 1;
  for (auto& q : blk.ql)
    q = 0x11; // low = high = 1, qh = 0 -> value 1 - 32 = -31
  std::vector<std::byte> raw(sizeof blk);
  std::memcpy(raw.data(), &blk, sizeof blk);
  writer w;
  BOOST_REQUIRE(w.add_raw_tensor("k", {256}, tensor_type::q6_k, raw));
  auto f = parse(w);
  auto y = *f->dequantize(*f->find_tensor("k"));
  BOOST_TEST(y.size() == 256u);
  BOOST_TEST(std::all_of(y.begin(), y.end(), [](float v) { return v == -31.0f; }));
}

BOOST_AUTO_TEST_CASE(writer_rejects_bad_shapes_and_duplicates) {
  writer w;
  auto x = ramp(64, 1.0f);
  BOOST_TEST(code_of(w.add_tensor("a", {63}, tensor_type::f32, x).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(w.add_tensor("a", {2, 32}, tensor_type::q4_k, x).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(w.add_tensor("a", {256}, static_cast<tensor_type>(10), ramp(256, 1.0f)).error()) ==
             errc::unsupported); // Q2_K: sized, not produced
  BOOST_TEST(code_of(w.add_tensor("a", {1, 1, 1, 1, 64}, tensor_type::f32, x).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(w.add_tensor("a", {16, 4}, tensor_type::q8_0, x).error()) == errc::invalid_argument);
  BOOST_REQUIRE(w.add_tensor("a", {64}, tensor_type::f32, x));
  BOOST_TEST(code_of(w.add_tensor("a", {64}, tensor_type::f32, x).error()) == errc::invalid_argument);
  BOOST_TEST(code_of(w.add_raw_tensor("r", {32}, tensor_type::q8_0, std::vector<std::byte>(33)).error()) ==
             errc::invalid_argument);
}

BOOST_AUTO_TEST_CASE(files_on_disk_are_mapped) {
  writer w;
  w.set_string("general.architecture", "llama");
  BOOST_REQUIRE(w.add_tensor("t", {32, 2}, tensor_type::q4_1, ramp(64, 0.1f)));
  auto path = std::filesystem::temp_directory_path() / ("dynamo_gguf_test_" + std::to_string(::getpid()) + ".gguf");
  BOOST_REQUIRE(w.write(path.string()));
  auto f = file::open(path.string());
  std::filesystem::remove(path);
  BOOST_REQUIRE_MESSAGE(f, error_text(f));
  BOOST_TEST((*f)->size() == w.bytes().size());
  BOOST_TEST(*(*f)->get_string("general.architecture") == "llama");
  auto mem = parse(w);
  BOOST_TEST(*(*f)->dequantize(*(*f)->find_tensor("t")) == *mem->dequantize(*mem->find_tensor("t")),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(missing_files_are_not_found) {
  auto f = file::open("/nonexistent/dir/model.gguf");
  BOOST_TEST(code_of(f.error()) == errc::not_found);
  BOOST_TEST(message_of(f.error()).find("/nonexistent/dir/model.gguf") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(row_access_is_bounds_checked) {
  writer w;
  BOOST_REQUIRE(w.add_tensor("t", {32, 2}, tensor_type::q8_0, ramp(64, 0.1f)));
  auto f = parse(w);
  std::vector<float> row(32);
  BOOST_TEST(code_of(f->dequantize_row(*f->find_tensor("t"), 2, row).error()) == errc::invalid_argument);
  row.resize(31);
  BOOST_TEST(code_of(f->dequantize_row(*f->find_tensor("t"), 0, row).error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(reader_pages)

namespace {

constexpr size_t page = 4096;

/// Kilobytes of `addr`'s mapping resident in this process (/proc/self/smaps "Rss:").
long rss_kib_of_mapping(const void* addr) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(addr);
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= a && a < hi;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      return std::stol(line.substr(4));
    }
  }
  return -1;
}

} // namespace

BOOST_AUTO_TEST_CASE(whole_pages_inside_is_the_largest_page_aligned_interior) {
  const size_t n_pages = 6;
  std::unique_ptr<std::byte, void (*)(void*)> buf(static_cast<std::byte*>(std::aligned_alloc(page, n_pages * page)),
                                                  std::free);
  BOOST_REQUIRE(buf != nullptr);
  const std::span<const std::byte> all(buf.get(), n_pages * page);
  // Spot checks: aligned, unaligned at both ends, shorter than a page, straddling one boundary, empty.
  BOOST_TEST(whole_pages_inside(all.subspan(0, 2 * page), page).data() == all.data());
  BOOST_TEST(whole_pages_inside(all.subspan(0, 2 * page), page).size() == 2 * page);
  BOOST_TEST(whole_pages_inside(all.subspan(100, 3 * page - 95), page).data() == all.data() + page);
  BOOST_TEST(whole_pages_inside(all.subspan(100, 3 * page - 95), page).size() == 2 * page);
  BOOST_TEST(whole_pages_inside(all.subspan(100, 100), page).empty());
  BOOST_TEST(whole_pages_inside(all.subspan(page - 10, 20), page).empty());
  BOOST_TEST(whole_pages_inside(all.subspan(1, page), page).empty());
  BOOST_TEST(whole_pages_inside(all.subspan(7, 0), page).empty());
  // Every start and length around the boundaries against counting the pages one by one.
  for (size_t off : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, page - 1, page, page + 1}) {
    for (size_t len : {size_t{0}, size_t{1}, page - 1, page, page + 1, 2 * page - 1, 2 * page, 3 * page + 7}) {
      BOOST_TEST_CONTEXT("offset " << off << " length " << len) {
        const auto range = all.subspan(off, len);
        const auto got = whole_pages_inside(range, page);
        size_t first = n_pages, count = 0;
        for (size_t p = 0; p < n_pages; ++p) {
          if (p * page >= off && (p + 1) * page <= off + len) {
            first = std::min(first, p);
            ++count;
          }
        }
        BOOST_TEST(got.size() == count * page);
        if (count > 0) BOOST_TEST(got.data() == all.data() + first * page);
        BOOST_TEST(reinterpret_cast<uintptr_t>(got.data()) % page == 0u);
        BOOST_TEST((got.empty() || (got.data() >= range.data() && got.data() + got.size() <= range.data() + len)));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(release_leaves_in_memory_images_alone) {
  // The image's bytes live on the heap: MADV_DONTNEED there would zero them.
  writer w;
  BOOST_REQUIRE(w.add_tensor("t", {4096, 4}, tensor_type::f32, ramp(4 * 4096, 0.5f)));
  auto f = parse(w);
  const tensor_info& t = *f->find_tensor("t");
  const auto before = *f->dequantize(t);
  f->release_pages(f->tensor_data(t));
  BOOST_TEST(*f->dequantize(t) == before, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(released_pages_of_a_mapped_file_leave_rss_and_read_back_the_same) {
  writer w;
  BOOST_REQUIRE(w.add_tensor("t", {4096, 16}, tensor_type::f32, ramp(16 * 4096, 0.25f)));
  auto path = std::filesystem::temp_directory_path() / ("dynamo_gguf_pages_" + std::to_string(::getpid()) + ".gguf");
  BOOST_REQUIRE(w.write(path.string()));
  auto f = file::open(path.string());
  std::filesystem::remove(path);
  BOOST_REQUIRE_MESSAGE(f, error_text(f));
  const tensor_info& t = *(*f)->find_tensor("t");
  const auto data = (*f)->tensor_data(t);
  const auto expected = *parse(w)->dequantize(*parse(w)->find_tensor("t"));
  BOOST_TEST(*(*f)->dequantize(t) == expected, boost::test_tools::per_element()); // every page resident
  const long before = rss_kib_of_mapping(data.data());
  const auto pages = whole_pages_inside(data, static_cast<size_t>(::sysconf(_SC_PAGESIZE)));
  BOOST_REQUIRE(!pages.empty());
  (*f)->release_pages(data);
  const long after = rss_kib_of_mapping(data.data());
  BOOST_TEST(after >= 0);
  BOOST_TEST(after <= before - static_cast<long>(pages.size() / 1024));
  BOOST_TEST(*(*f)->dequantize(t) == expected, boost::test_tools::per_element()); // faulted back in
}

BOOST_AUTO_TEST_SUITE_END()
