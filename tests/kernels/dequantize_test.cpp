// dequantize_row for every computed type: hand-built blocks whose expected
// floats follow from the format's definition, and random blocks against the
// PyPI gguf package's numpy dequantizer (data/dequant_fixture.txt).
#include "kernels/reference/dequantize.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

namespace {

template <class Block>
std::vector<float> dequant_block(tensor_type t, const Block& b, size_t n) {
  std::vector<float> out(n);
  dequantize_row(t, &b, out.data(), n);
  return out;
}

// Sub-block scales and mins of the K-quant tests; 4..7 use the high bits
// stored in bytes 0..7 of `scales`.
const uint8_t k_sc[8] = {1, 2, 3, 4, 33, 50, 63, 17};
const uint8_t k_mn[8] = {0, 5, 10, 60, 48, 7, 31, 16};

void pack_k_scales(uint8_t* s) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>(k_sc[j] | ((k_sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>(k_mn[j] | ((k_mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((k_sc[j + 4] & 15) | ((k_mn[j + 4] & 15) << 4));
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(hand_built_blocks)

BOOST_AUTO_TEST_CASE(q4_0_low_nibbles_are_the_first_half) {
  block_q4_0 b{};
  b.d = 0x3800; // 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequant_block(tensor_type::q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    BOOST_TEST(y[j] == 0.5f * static_cast<float>(j - 8));
    BOOST_TEST(y[j + 16] == 0.5f * static_cast<float>(7 - j));
  }
}

BOOST_AUTO_TEST_CASE(q4_1_adds_the_min) {
  block_q4_1 b{};
  b.d = 0x3400; // 0.25
  b.m = 0xBC00; // -1
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(((j * 7) & 15) | ((j ^ 5) << 4));
  auto y = dequant_block(tensor_type::q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    BOOST_TEST(y[j] == 0.25f * static_cast<float>((j * 7) & 15) - 1.0f);
    BOOST_TEST(y[j + 16] == 0.25f * static_cast<float>(j ^ 5) - 1.0f);
  }
  BOOST_TEST(y[16] == 0.25f); // (0 ^ 5) * 0.25 - 1
}

BOOST_AUTO_TEST_CASE(q5_0_and_q5_1_take_bit_4_from_qh_little_endian) {
  const uint32_t qh = 0xA5C3F00Fu;
  block_q5_0 a{};
  a.d = 0x3800; // 0.5
  block_q5_1 b{};
  b.d = 0x3400; // 0.25
  b.m = 0xC000; // -2
  std::memcpy(a.qh, &qh, 4);
  std::memcpy(b.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) a.qs[j] = b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto ya = dequant_block(tensor_type::q5_0, a, 32);
  const auto yb = dequant_block(tensor_type::q5_1, b, 32);
  for (int e = 0; e < 32; ++e) {
    const int q = (e < 16 ? e : 31 - e) + 16 * static_cast<int>((qh >> e) & 1);
    BOOST_TEST(ya[e] == 0.5f * static_cast<float>(q - 16), "element " << e);
    BOOST_TEST(yb[e] == 0.25f * static_cast<float>(q) - 2.0f, "element " << e);
  }
  BOOST_TEST(ya[0] == 0.0f);  // bit 0 set: (0 + 16 - 16) * 0.5
  BOOST_TEST(ya[4] == -6.0f); // bit 4 clear: (4 - 16) * 0.5
}

BOOST_AUTO_TEST_CASE(q8_0_is_signed) {
  block_q8_0 b{};
  b.d = 0x4000; // 2
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  auto y = dequant_block(tensor_type::q8_0, b, 32);
  BOOST_TEST(y[0] == -256.0f);
  BOOST_TEST(y[16] == 0.0f);
  BOOST_TEST(y[31] == 240.0f);
}

BOOST_AUTO_TEST_CASE(q4_k_and_q5_k_unpack_six_bit_scales_and_mins) {
  block_q4_k b4{};
  block_q5_k b5{};
  b4.d = b5.d = 0x3C00;       // 1
  b4.dmin = b5.dmin = 0x3800; // 0.5
  pack_k_scales(b4.scales);
  pack_k_scales(b5.scales);
  for (int i = 0; i < 128; ++i) b4.qs[i] = b5.qs[i] = static_cast<uint8_t>((i % 16) | (((i / 3) % 16) << 4));
  for (int l = 0; l < 32; ++l) b5.qh[l] = static_cast<uint8_t>(l * 29 + 3);
  const auto y4 = dequant_block(tensor_type::q4_k, b4, 256);
  const auto y5 = dequant_block(tensor_type::q5_k, b5, 256);
  // Element e: chunk c = e / 64 of 32 bytes; the first 32 take the low nibbles
  // (sub-block 2c), the next 32 the high ones (2c + 1); Q5_K's bit 4 is bit
  // `sub` of qh[e % 32].
  for (int e = 0; e < 256; ++e) {
    const int c = e / 64, r = e % 64, sub = 2 * c + r / 32, byte = 32 * c + r % 32;
    const int q = r < 32 ? (byte % 16) : ((byte / 3) % 16);
    const int q5 = q + 16 * ((b5.qh[r % 32] >> sub) & 1);
    const float m = 0.5f * static_cast<float>(k_mn[sub]);
    BOOST_TEST(y4[e] == static_cast<float>(k_sc[sub]) * static_cast<float>(q) - m, "element " << e);
    BOOST_TEST(y5[e] == static_cast<float>(k_sc[sub]) * static_cast<float>(q5) - m, "element " << e);
  }
  BOOST_TEST(y4[128] == -24.0f); // chunk 2 low: q = 0, min 48 * 0.5
}

BOOST_AUTO_TEST_CASE(q6_k_reads_d_at_the_end_and_signed_scales) {
  block_q6_k b{};
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>((i * 5) & 0xFF);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>((i * 37 + 11) & 0xFF);
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i - 8);
  b.d = 0x3800; // 0.5
  auto y = dequant_block(tensor_type::q6_k, b, 256);
  // Element e: half h, group g of 32 (0..3), lane l; nibble from ql, 2 bits from qh, scale per 16.
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const int qlb = b.ql[64 * h + l + (g % 2) * 32];
    const int lo = g < 2 ? (qlb & 15) : (qlb >> 4);
    const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
    const int scale = b.scales[8 * h + l / 16 + 2 * g];
    const float expect = 0.5f * static_cast<float>(scale) * static_cast<float>((lo | (hi << 4)) - 32);
    BOOST_TEST(y[e] == expect, "element " << e);
  }
}

BOOST_AUTO_TEST_CASE(iq4_nl_and_iq4_xs_map_nibbles_through_the_non_linear_levels) {
  const float levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  block_iq4_nl nl{};
  nl.d = 0x3400; // 0.25
  for (int j = 0; j < 16; ++j) nl.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = dequant_block(tensor_type::iq4_nl, nl, 32);
  for (int j = 0; j < 16; ++j) {
    BOOST_TEST(y[j] == 0.25f * levels[j]);
    BOOST_TEST(y[j + 16] == 0.25f * levels[15 - j]);
  }
  // IQ4_XS: 6-bit sub-block scales ls (value d * (ls - 32)), split in nibbles and 2-bit pairs.
  const int ls[8] = {0, 1, 31, 32, 33, 47, 63, 20};
  block_iq4_xs xs{};
  xs.d = 0x3800; // 0.5
  for (int j = 0; j < 8; ++j) {
    xs.scales_l[j / 2] |= static_cast<uint8_t>((ls[j] & 15) << (4 * (j % 2)));
    xs.scales_h |= static_cast<uint16_t>((ls[j] >> 4) << (2 * j));
    for (int l = 0; l < 16; ++l) xs.qs[16 * j + l] = static_cast<uint8_t>(((l + j) & 15) | (((3 * l + j) & 15) << 4));
  }
  const auto z = dequant_block(tensor_type::iq4_xs, xs, 256);
  for (int j = 0; j < 8; ++j) {
    const float dl = 0.5f * static_cast<float>(ls[j] - 32);
    for (int l = 0; l < 16; ++l) {
      BOOST_TEST(z[32 * j + l] == dl * levels[(l + j) & 15], "sub-block " << j << " lane " << l);
      BOOST_TEST(z[32 * j + 16 + l] == dl * levels[(3 * l + j) & 15], "sub-block " << j << " lane " << l);
    }
  }
}

BOOST_AUTO_TEST_CASE(f16_and_bf16_rows_widen_exactly) {
  const uint16_t h[2] = {0x3C00, 0xC500}; // 1, -5
  float y[2];
  dequantize_row(tensor_type::f16, h, y, 2);
  BOOST_TEST(y[0] == 1.0f);
  BOOST_TEST(y[1] == -5.0f);
  const uint16_t bf[2] = {0x4049, 0xBF80}; // 3.140625, -1
  dequantize_row(tensor_type::bf16, bf, y, 2);
  BOOST_TEST(y[0] == 3.140625f);
  BOOST_TEST(y[1] == -1.0f);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(dequantize_vs_gguf_py)

BOOST_AUTO_TEST_CASE(random_blocks_of_every_quant_type_match_the_gguf_python_package) {
  // data/dequant_fixture.txt comes from make_dequant_fixture.py (gguf.quants).
  std::ifstream in(test::source_dir() + "/tests/kernels/data/dequant_fixture.txt");
  BOOST_REQUIRE_MESSAGE(in.good(), "missing tests/kernels/data/dequant_fixture.txt");
  std::vector<tensor_type> seen;
  std::string name, hex, floats;
  uint32_t n = 0;
  while (in >> name >> n) {
    in >> hex;
    std::getline(in, floats); // rest of the hex line
    std::getline(in, floats);
    std::vector<std::byte> raw(hex.size() / 2);
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::byte>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    std::istringstream fs(floats);
    std::vector<float> want(n);
    for (auto& w : want) fs >> w;
    const auto t = type_from_name(name);
    BOOST_REQUIRE_MESSAGE(t && is_computed(*t), "fixture type " << name);
    BOOST_TEST_CONTEXT("type " << name) {
      BOOST_REQUIRE_EQUAL(raw.size(), *row_bytes(*t, n));
      std::vector<float> got(n);
      dequantize_row(*t, raw.data(), got.data(), n);
      for (uint32_t i = 0; i < n; ++i) BOOST_REQUIRE_EQUAL(got[i], want[i]);
    }
    seen.push_back(*t);
  }
  // Every computed block type is in the fixture (F32/F16/BF16 are checked by dequant_check.py).
  for (uint32_t id = 0; id < 64; ++id) {
    const auto t = static_cast<tensor_type>(id);
    if (!is_computed(t) || geometry_of(t)->block_elems == 1) continue;
    BOOST_TEST((std::find(seen.begin(), seen.end(), t) != seen.end()), "type " << type_name(t) << " missing");
  }
}

BOOST_AUTO_TEST_SUITE_END()
