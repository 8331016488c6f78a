// Corrupt, truncated and hostile GGUF images: every one must give an error
// value naming the problem (never a crash or a huge allocation).
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/writer.hpp"

#include "tests/runtime/gguf/test_print.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <random>

using namespace dynamo;
using namespace dynamo::gguf;

namespace {

// Little-endian byte builder for hand-made files.
struct image {
  std::vector<std::byte> b;
  template <class T>
  image& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  image& str(std::string_view s) {
    put<uint64_t>(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    b.insert(b.end(), p, p + s.size());
    return *this;
  }
  image& header(uint64_t n_tensors, uint64_t n_kvs, uint32_t version = 3) {
    return put<uint32_t>(0x46554747u).put<uint32_t>(version).put<uint64_t>(n_tensors).put<uint64_t>(n_kvs);
  }
  image& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).put<uint32_t>(static_cast<uint32_t>(dims.size()));
    for (auto d : dims)
      put<uint64_t>(d);
    return put<uint32_t>(type).put<uint64_t>(offset);
  }
  image& pad(size_t align = 32) {
    b.resize((b.size() + align - 1) / align * align);
    return *this;
  }
  image& zeros(size_t n) {
    b.resize(b.size() + n);
    return *this;
  }
};

// Parses `img`, expects failure with `code` and a message containing `needle`.
void expect_error(const image& img, errc code, std::string_view needle) {
  auto f = file::from_bytes(img.b);
  BOOST_REQUIRE_MESSAGE(!f, "parsed a broken file; wanted: " << needle);
  BOOST_TEST(code_of(f.error()) == code, describe(f.error()));
  BOOST_TEST(message_of(f.error()).find(needle) != std::string::npos,
             "message '" << message_of(f.error()) << "' lacks '" << needle << "'");
}

std::vector<std::byte> small_valid_file() {
  writer w;
  w.set_string("general.architecture", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "cd"});
  w.set_u32("llama.block_count", 2);
  std::vector<float> x(64, 0.25f);
  (void)w.add_tensor("blk.0.attn_q.weight", {32, 2}, tensor_type::q4_1, x);
  (void)w.add_tensor("output_norm.weight", {32}, tensor_type::f32, std::span<const float>(x).first(32));
  return w.bytes();
}

} // namespace

BOOST_AUTO_TEST_SUITE(corrupt_files)

BOOST_AUTO_TEST_CASE(bad_magic_and_tiny_files_are_not_gguf) {
  expect_error(image{}, errc::corrupt_file, "not a GGUF file");
  expect_error(image{}.put<uint32_t>(0x46554747u).put<uint16_t>(3), errc::corrupt_file, "truncated: version");
  expect_error(image{}.put<uint32_t>(0x4655474Bu).put<uint32_t>(3).zeros(16), errc::corrupt_file, "bad magic");
}

BOOST_AUTO_TEST_CASE(unsupported_versions_and_byte_order_are_named) {
  expect_error(image{}.header(0, 0, 1), errc::unsupported, "GGUF version 1 not supported");
  expect_error(image{}.header(0, 0, 4), errc::unsupported, "GGUF version 4");
  expect_error(image{}.header(0, 0, 0x03000000u), errc::unsupported, "big-endian");
}

BOOST_AUTO_TEST_CASE(version_2_is_accepted) {
  auto f = file::from_bytes(image{}.header(0, 0, 2).b);
  BOOST_REQUIRE(f);
  BOOST_TEST((*f)->version() == 2u);
  BOOST_TEST((*f)->tensors().empty());
}

BOOST_AUTO_TEST_CASE(huge_counts_are_rejected_before_allocating) {
  expect_error(image{}.header(0, 1ull << 62), errc::corrupt_file, "metadata count 4611686018427387904 cannot fit");
  expect_error(image{}.header(1ull << 60, 0), errc::corrupt_file, "tensor count 1152921504606846976 cannot fit");
  expect_error(image{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(4).put<uint64_t>(1ull << 61),
               errc::corrupt_file, "array of 2305843009213693952 u32 exceeds");
  expect_error(image{}.header(0, 1).str("k").put<uint32_t>(8).put<uint64_t>(~0ull), errc::corrupt_file,
               "truncated: value of 'k' of length 18446744073709551615");
  expect_error(image{}.header(0, 1).put<uint64_t>(1ull << 40).zeros(8), errc::corrupt_file,
               "truncated: key of metadata #0");
}

// Arrays that fit the file but not memory: 1 byte per u8 element on disk, ~40
// in memory. The budget counts all arrays together, so splitting does not help.
BOOST_AUTO_TEST_CASE(metadata_arrays_past_the_element_budget_are_rejected) {
  const uint64_t half = max_metadata_array_elements / 2;
  image ok;
  ok.header(0, 2).str("a").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(half).zeros(half);
  ok.str("b").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(half).zeros(half);
  BOOST_TEST(static_cast<bool>(file::from_bytes(ok.b))); // exactly the budget
  image over;
  over.header(0, 2).str("a").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(half).zeros(half);
  over.str("b").put<uint32_t>(9).put<uint32_t>(0).put<uint64_t>(half + 1).zeros(half + 1);
  expect_error(over, errc::corrupt_file, "metadata 'b': array of 4194305 elements exceeds the file's budget");
}

BOOST_AUTO_TEST_CASE(bad_value_types_nesting_and_bools_are_rejected) {
  expect_error(image{}.header(0, 1).str("k").put<uint32_t>(13).put<uint32_t>(0), errc::corrupt_file,
               "metadata 'k': unknown value type 13");
  expect_error(image{}.header(0, 1).str("k").put<uint32_t>(9).put<uint32_t>(77).put<uint64_t>(0), errc::corrupt_file,
               "unknown array element type 77");
  expect_error(image{}.header(0, 1).str("k").put<uint32_t>(7).put<uint8_t>(2).zeros(3), errc::corrupt_file,
               "bool byte 2");
  image deep;
  deep.header(0, 1).str("deep").put<uint32_t>(9);
  for (int i = 0; i < 20; ++i)
    deep.put<uint32_t>(9).put<uint64_t>(1);
  expect_error(deep, errc::corrupt_file, "nested deeper than 8");
}

BOOST_AUTO_TEST_CASE(duplicate_keys_and_tensor_names_are_rejected) {
  expect_error(image{}.header(0, 2).str("k").put<uint32_t>(4).put<uint32_t>(1).str("k").put<uint32_t>(4).put<uint32_t>(2),
               errc::corrupt_file, "duplicate metadata key 'k'");
  expect_error(image{}.header(2, 0).tensor("t", {32}, 0, 0).tensor("t", {32}, 0, 128).pad().zeros(256),
               errc::corrupt_file, "duplicate tensor name 't'");
}

BOOST_AUTO_TEST_CASE(bad_alignment_is_rejected) {
  expect_error(image{}.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(24), errc::corrupt_file,
               "general.alignment 24 is not a power of two");
  expect_error(image{}.header(0, 1).str("general.alignment").put<uint32_t>(4).put<uint32_t>(0), errc::corrupt_file,
               "not a power of two");
}

BOOST_AUTO_TEST_CASE(bad_tensor_infos_name_the_tensor) {
  expect_error(image{}.header(1, 0).tensor("blk.0.x", {32}, 99, 0).pad().zeros(128), errc::unsupported,
               "tensor 'blk.0.x': unknown ggml type 99");
  expect_error(image{}.header(1, 0).tensor("t5", {1, 1, 1, 1, 32}, 0, 0).pad().zeros(128), errc::corrupt_file,
               "tensor 't5': 5 dimensions");
  expect_error(image{}.header(1, 0).tensor("q", {48, 2}, 8, 0).pad().zeros(128), errc::corrupt_file,
               "tensor 'q': ne[0] = 48 is not a multiple of the Q8_0 block size 32");
  expect_error(image{}.header(1, 0).tensor("o", {32}, 0, 16).pad().zeros(256), errc::corrupt_file,
               "tensor 'o': offset 16 is not a multiple of the alignment 32");
  expect_error(image{}.header(1, 0).tensor("big", {1ull << 32, 1ull << 32}, 0, 0).pad(), errc::corrupt_file,
               "tensor 'big': element count overflows");
}

BOOST_AUTO_TEST_CASE(tensor_data_past_the_end_is_reported_with_its_range) {
  image img;
  img.header(1, 0).tensor("blk.3.attn_q.weight", {32, 4}, 0, 0).pad();
  const size_t data_at = img.b.size();
  img.zeros(100); // needs 512
  std::string want = "tensor 'blk.3.attn_q.weight': data [0, 0+512) exceeds file size " +
                     std::to_string(data_at + 100);
  expect_error(img, errc::corrupt_file, want);
  expect_error(image{}.header(1, 0).tensor("far", {32}, 0, 1ull << 62).pad().zeros(128), errc::corrupt_file,
               "tensor 'far': data [4611686018427387904");
}

// Found by fuzz/fuzz_gguf.cpp: a zero-byte tensor (ne[1] = 0) in a file whose
// header ends within `alignment` bytes of the file end put the data section
// past the end; the reader accepted it and tensor_data() took a subspan
// beyond the image (undefined behaviour). The first image is the fuzzer's.
BOOST_AUTO_TEST_CASE(data_section_past_the_end_with_tensors_is_an_error) {
  const unsigned char fuzzed[] = {
      0x47, 0x47, 0x55, 0x46, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7d, 0x20, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfe,
      0xff, 0xff, 0xd4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,
      0x04, 0x19, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x83, 0x00, 0x00, 0x00, 0xc1, 0x00,
  };
  std::vector<std::byte> b(sizeof fuzzed);
  std::memcpy(b.data(), fuzzed, sizeof fuzzed);
  auto f = file::from_bytes(std::move(b));
  BOOST_REQUIRE(!f);
  BOOST_TEST(code_of(f.error()) == errc::corrupt_file);
  expect_error(image{}.header(1, 0).tensor("empty", {32, 0}, 0, 0), errc::corrupt_file,
               "data section at");
}

// Found by fuzz/fuzz_gguf.cpp: a tensor with ne[0] = 0 is accepted (it holds
// no bytes); dequantizing one of its rows passed a null output pointer to
// memcpy (UBSan: nonnull), and dequantize() walked all ne[1..3] rows of nothing.
BOOST_AUTO_TEST_CASE(zero_width_tensors_dequantize_to_nothing) {
  auto f = file::from_bytes(image{}.header(1, 0).tensor("z", {0, 1ull << 40}, 0, 0).pad().b);
  BOOST_REQUIRE(f);
  const tensor_info& t = (*f)->tensors()[0];
  BOOST_TEST(t.n_rows() == (1ull << 40));
  BOOST_TEST(bool((*f)->dequantize_row(t, 5, std::span<float>{})));
  auto all = (*f)->dequantize(t); // returns at once, not after 2^40 empty rows
  BOOST_REQUIRE(all);
  BOOST_TEST(all->empty());
}

BOOST_AUTO_TEST_CASE(every_truncation_of_a_valid_file_is_an_error) {
  const auto full = small_valid_file();
  BOOST_REQUIRE(file::from_bytes(full));
  for (size_t n = 0; n < full.size(); ++n) {
    auto f = file::from_bytes(std::vector<std::byte>(full.begin(), full.begin() + static_cast<long>(n)));
    BOOST_TEST_REQUIRE(!f, "prefix of " << n << " bytes parsed");
    BOOST_TEST(code_of(f.error()) == errc::corrupt_file, "prefix " << n << ": " << describe(f.error()));
  }
}

BOOST_AUTO_TEST_CASE(random_byte_flips_never_crash) {
  const auto full = small_valid_file();
  std::mt19937 rng(1234);
  int parsed = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    auto bytes = full;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k)
      bytes[rng() % bytes.size()] = static_cast<std::byte>(rng() & 0xFF);
    auto f = file::from_bytes(std::move(bytes));
    if (f) {
      ++parsed; // whatever parsed must be internally consistent
      for (const auto& t : (*f)->tensors())
        BOOST_TEST((*f)->tensor_data(t).size() == t.n_bytes);
    } else {
      ++rejected;
      BOOST_TEST(!message_of(f.error()).empty());
    }
  }
  BOOST_TEST(parsed > 0);
  BOOST_TEST(rejected > 0);
}

BOOST_AUTO_TEST_SUITE_END()
