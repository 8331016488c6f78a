#include "kernels/reference/matmul.hpp"
#include "kernels/reference/repack.hpp"
#include "kernels/reference/simd_kernels.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

namespace {

const tensor_type lane_types[] = {tensor_type::q4_0,   tensor_type::q4_1, tensor_type::q5_0, tensor_type::q5_1,
                                  tensor_type::iq4_nl, tensor_type::q8_0, tensor_type::iq4_xs, tensor_type::q4_k,
                                  tensor_type::q5_k,   tensor_type::q6_k};

/// Row lengths of the tests: whole groups, and SmolLM2-135M's 576 (2 tail
/// blocks) and Qwen2.5-0.5B's 896 (4), whose rows end in a tail.
const uint32_t lane_widths[] = {512, 576, 896};

/// True when rows of k values of type t exist (the K-quants need k % 256 == 0).
bool fits(tensor_type t, uint32_t k) { return k % geometry_of(t)->block_elems == 0; }

/// `w` with `lanes` attached as its lane copy, `stride` bytes per row.
weight_matrix with_lanes(weight_matrix w, const std::vector<std::byte>& lanes, size_t stride) {
  w.lanes = lanes.data();
  w.lanes_stride = stride;
  return w;
}

/// A random weight with its lane-layout copy attached.
struct lane_weight {
  test::owned_weight w;
  std::vector<std::byte> lanes;
  weight_matrix view;

  lane_weight(tensor_type t, uint32_t k, uint32_t n, uint32_t seed)
      : w(t, k, n, seed), lanes(repack_lanes(w.view)), view(with_lanes(w.view, lanes, lanes_row_bytes(t, k))) {}
};

std::vector<float> run(const weight_matrix& w, const std::vector<float>& x, uint32_t n_tokens, thread_pool* pool) {
  std::vector<float> y(static_cast<size_t>(n_tokens) * w.n, NAN);
  matmul({x.data(), w.k, n_tokens, {&w, 1}, y.data(), w.n, pool, nullptr});
  return y;
}

/// |y - exact| <= what int16 activation blocks and fp32 sums may cost.
void check_near_exact(const test::owned_weight& w, const std::vector<float>& x, uint32_t n_tokens,
                      const std::vector<float>& y) {
  const uint32_t k = w.view.k, n = w.view.n;
  for (uint32_t t = 0; t < n_tokens; ++t) {
    for (uint32_t r = 0; r < n; ++r) {
      double acc = 0.0, mag = 0.0, err = 0.0;
      for (uint32_t b = 0; b < k; b += 32) {
        double amax = 0.0, wsum = 0.0;
        for (uint32_t i = b; i < b + 32; ++i) {
          const double wi = w.dequantized[static_cast<size_t>(r) * k + i], xi = x[static_cast<size_t>(t) * k + i];
          acc += wi * xi;
          mag += std::fabs(wi * xi);
          amax = std::max(amax, std::fabs(xi));
          wsum += std::fabs(wi);
        }
        err += wsum * amax / 32767.0 * 0.5;
      }
      BOOST_TEST_REQUIRE(std::fabs(y[t * n + r] - acc) <= err + 1e-5 * mag + 1e-6);
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(repack_op)

BOOST_AUTO_TEST_CASE(the_lane_layout_holds_the_same_values) {
  for (const uint32_t k : lane_widths) {
    for (const tensor_type t : lane_types) {
      if (!fits(t, k)) continue;
      const lane_weight lw(t, k, 3, 5);
      BOOST_TEST(lw.lanes.size() == 3 * lanes_row_bytes(t, k));
      std::vector<float> got(k);
      for (uint32_t r = 0; r < 3; ++r) {
        dequantize_lanes_row(t, lw.lanes.data() + r * lw.view.lanes_stride, got.data(), k);
        BOOST_TEST(std::memcmp(got.data(), lw.w.dequantized.data() + r * k, k * sizeof(float)) == 0,
                   type_name(t) << " k " << k);
      }
    }
  }
  BOOST_TEST(!has_lanes(tensor_type::f16));
  BOOST_TEST(lanes_row_bytes(tensor_type::f16, 512) == 0u);
  BOOST_TEST(lanes_row_bytes(tensor_type::q4_0, 512) == 2 * 8 * sizeof(block_q4_0)); // same bytes as the rows
  BOOST_TEST(lanes_row_bytes(tensor_type::q8_0, 576) == 18 * sizeof(block_q8_0));    // 2 groups, 2 tail blocks
  BOOST_TEST(lanes_row_bytes(tensor_type::q5_1, 896) == 28 * sizeof(block_q5_1));
}

BOOST_AUTO_TEST_CASE(q5_0_groups_move_each_fifth_bit_to_its_lane) {
  // Bit e of block j's qh is bit e / 4 of lane byte 4j + e % 4, as in Q5_K.
  const lane_weight lw(tensor_type::q5_0, 256, 1, 4);
  const auto* in = static_cast<const block_q5_0*>(lw.w.view.row(0));
  const auto& g = *reinterpret_cast<const block_q5_0_lanes*>(lw.lanes.data());
  for (uint32_t j = 0; j < 8; ++j) {
    uint32_t h;
    std::memcpy(&h, in[j].qh, 4);
    for (const uint32_t e : {0u, 13u, 31u}) BOOST_TEST(((g.qh[4 * j + e % 4] >> (e / 4)) & 1u) == ((h >> e) & 1u));
    BOOST_TEST(g.d[j] == in[j].d);
  }
}

BOOST_AUTO_TEST_CASE(q4_0_groups_keep_each_block_scale_and_nibbles) {
  // Block j of group 0: scale at d[j], element e at the Q4_K lane nibble.
  const lane_weight lw(tensor_type::q4_0, 256, 1, 4);
  const auto* in = static_cast<const block_q4_0*>(lw.w.view.row(0));
  const auto& g = *reinterpret_cast<const block_q4_0_lanes*>(lw.lanes.data());
  for (uint32_t j = 0; j < 8; ++j) {
    BOOST_TEST(g.d[j] == in[j].d);
    // Element 5 (low nibble of qs[5]) is vector 1, the high nibble of byte 4j + 1;
    // element 16 (high nibble of qs[0]) is vector 4, the low nibble of byte 64 + 4j.
    BOOST_TEST((g.qs[4 * j + 1] >> 4) == (in[j].qs[5] & 0x0f));
    BOOST_TEST((g.qs[64 + 4 * j] & 0x0f) == (in[j].qs[0] >> 4));
  }
}

BOOST_AUTO_TEST_CASE(q5_k_keeps_the_q4_k_lanes_and_moves_each_fifth_bit_to_its_lane) {
  const lane_weight lw(tensor_type::q5_k, 256, 1, 11);
  const auto& in = *static_cast<const block_q5_k*>(lw.w.view.row(0));
  const auto& g = *reinterpret_cast<const block_q5_k_lanes*>(lw.lanes.data());
  block_q4_k as_q4{in.d, in.dmin, {}, {}};
  std::memcpy(as_q4.scales, in.scales, sizeof in.scales);
  std::memcpy(as_q4.qs, in.qs, sizeof in.qs);
  const auto low = repack_lanes({tensor_type::q4_k, 256, 1, &as_q4});
  BOOST_TEST(std::memcmp(&g.low, low.data(), sizeof g.low) == 0);
  for (uint32_t j = 0; j < 8; ++j) {
    // Element 13 of sub-block j (bit j of in.qh[13]) is vector 3, lane byte 4j + 1.
    BOOST_TEST(((g.qh[4 * j + 1] >> 3) & 1) == ((in.qh[13] >> j) & 1));
    BOOST_TEST(((g.qh[4 * j + 3] >> 7) & 1) == ((in.qh[31] >> j) & 1));
  }
  BOOST_TEST(lanes_row_bytes(tensor_type::q5_k, 512) == 2 * (sizeof(block_q5_k) + 4));
}

BOOST_AUTO_TEST_CASE(q8_0_bytes_of_every_value_incl_minus_128_give_the_same_bits_on_every_path) {
  // The quantizer never writes -128; files may. Random bytes cover it.
  const uint32_t k = 512, n = 5, n_tokens = 3;
  test::owned_weight w(tensor_type::q8_0, k, n, 12);
  auto* blocks = reinterpret_cast<block_q8_0*>(w.bytes.data());
  std::mt19937 rng(14);
  for (size_t i = 0; i < w.bytes.size() / sizeof(block_q8_0); ++i) {
    for (uint32_t e = 0; e < 32; ++e) blocks[i].qs[e] = static_cast<int8_t>(rng() & 0xff);
  }
  std::fill_n(blocks[0].qs, 32, int8_t{-128}); // a whole block at the extreme, and one element
  blocks[17].qs[9] = -128;
  for (uint32_t r = 0; r < n; ++r) dequantize_row(w.view.type, w.view.row(r), w.dequantized.data() + r * k, k);
  const auto lanes = repack_lanes(w.view);
  const weight_matrix view = with_lanes(w.view, lanes, lanes_row_bytes(tensor_type::q8_0, k));
  auto x = test::random_floats(n_tokens * k, 13, -3.0f, 3.0f);
  for (size_t i = 0; i < x.size(); i += 31) x[i] *= 300.0f;
  std::vector<float> want;
  {
    test::isa_guard g(cpu_isa::scalar);
    want = run(view, x, n_tokens, nullptr);
  }
  check_near_exact(w, x, n_tokens, want);
  for (const cpu_isa isa : test::runnable_isas()) {
    test::isa_guard g(isa);
    const auto got = run(view, x, n_tokens, nullptr);
    BOOST_TEST(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0, to_string(isa));
  }
}

BOOST_AUTO_TEST_CASE(rows_shorter_than_a_group_keep_the_row_layout) {
  // Q4_0 rows of 224 values get no copy, and a lane pointer set anyway is
  // not read: the row kernels give their own bits.
  const uint32_t k = 224, n = 6, n_tokens = 5;
  const test::owned_weight w(tensor_type::q4_0, k, n, 3);
  BOOST_TEST(!lanes_fit(tensor_type::q4_0, k));
  BOOST_TEST(repack_lanes(w.view).empty());
  const std::vector<std::byte> zeros(n * k, std::byte{0});
  const weight_matrix with = with_lanes(w.view, zeros, k);
  const auto x = test::random_floats(n_tokens * k, 6);
  for (const cpu_isa isa : test::runnable_isas()) {
    test::isa_guard g(isa);
    const auto rows = run(w.view, x, n_tokens, nullptr), got = run(with, x, n_tokens, nullptr);
    BOOST_TEST(std::memcmp(rows.data(), got.data(), rows.size() * sizeof(float)) == 0, to_string(isa));
    BOOST_TEST(std::abs(rows[0]) > 0.0f);
  }
}

BOOST_AUTO_TEST_CASE(a_tail_is_the_file_blocks_and_every_lane_kernel_reads_it_from_the_copy) {
  // 576 = 2 groups + 2 blocks: the tail bytes are the row's last 2 blocks;
  // a copy whose tail scales are zeroed gives what a row with those blocks
  // zeroed gives (the tail is read from the copy, never from `data`).
  const uint32_t k = 576, n = 3, n_tokens = 2;
  for (const tensor_type t : lane_types) {
    if (!fits(t, k)) continue;
    lane_weight lw(t, k, n, 17);
    const size_t rb = lw.w.view.stride(), tail = 2 * (rb / 18);
    test::owned_weight zeroed(t, k, n, 17);
    for (uint32_t r = 0; r < n; ++r) {
      BOOST_TEST(std::memcmp(lw.lanes.data() + r * rb + rb - tail, lw.w.bytes.data() + r * rb + rb - tail, tail) == 0);
      std::fill_n(lw.lanes.begin() + static_cast<std::ptrdiff_t>(r * rb + rb - tail), tail, std::byte{0});
      std::fill_n(zeroed.bytes.begin() + static_cast<std::ptrdiff_t>(r * rb + rb - tail), tail, std::byte{0});
    }
    const lane_weight want_w(t, k, n, 17);
    const auto zeroed_lanes = repack_lanes(zeroed.view);
    const weight_matrix want_view = with_lanes(zeroed.view, zeroed_lanes, rb);
    const auto x = test::random_floats(n_tokens * k, 18);
    for (const cpu_isa isa : test::runnable_isas()) {
      test::isa_guard g(isa);
      const auto want = run(want_view, x, n_tokens, nullptr), got = run(lw.view, x, n_tokens, nullptr);
      BOOST_TEST(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0, type_name(t) << " " << to_string(isa));
      const auto full = run(want_w.view, x, n_tokens, nullptr);
      BOOST_TEST(std::memcmp(want.data(), full.data(), want.size() * sizeof(float)) != 0, type_name(t)); // the tail counts
    }
  }
}

BOOST_AUTO_TEST_CASE(lane_activations_hold_the_int16_values_and_offset_sums) {
  const uint32_t nb = 16;
  std::vector<detail::block_q16_act> q(nb);
  const auto x = test::random_floats(nb * 32, 3, -2.0f, 2.0f);
  detail::scalar_kernels().quantize_act(x.data(), q.data(), nb);
  std::vector<detail::block_q16_lanes> b(nb / 8);
  std::vector<float> d(nb), s(nb);
  detail::lanes_act(q.data(), nb, b.data(), d.data(), s.data());
  for (uint32_t i = 0; i < nb; ++i) {
    const uint32_t g = i / 8, j = i % 8;
    int32_t half[2] = {0, 0}, high = 0;
    for (uint32_t e = 0; e < 32; ++e) {
      const uint32_t v = e / 4, at = 4 * j + e % 4;
      BOOST_TEST_REQUIRE(256 * b[g].hi[v][at] + b[g].lo[v][at] == q[i].qs[e]);
      half[e / 16] += q[i].qs[e];
      high += b[g].hi[v][at];
    }
    BOOST_TEST(b[g].m32[0][j] == -32 * half[0]);
    BOOST_TEST(b[g].m32[1][j] == -32 * half[1]);
    BOOST_TEST(b[g].mh[j] == -32768 * high);
    BOOST_TEST((d[i] == q[i].d && s[i] == q[i].s));
  }
}

BOOST_AUTO_TEST_CASE(every_path_gives_the_scalar_lane_kernels_bits_near_the_exact_product) {
  struct shape {
    uint32_t n_tokens, k, n;
  };
  // Token counts that use every kernel width (1..4) and several token tiles.
  // 576 and 896: rows that end in a tail (2 and 4 blocks), for the 32-value types.
  // 16+ tokens: the AMX tile kernels (K-quants), with partial row groups and token tiles.
  const shape shapes[] = {{1, 256, 3}, {3, 512, 17}, {9, 768, 10}, {21, 1536, 9}, {6, 256, 4},  {1, 576, 5},
                          {7, 576, 9}, {2, 896, 6},  {5, 864, 3},  {16, 256, 16}, {40, 768, 35}};
  thread_pool pool(2);
  for (const tensor_type t : lane_types) {
    for (const shape& s : shapes) {
      if (!fits(t, s.k)) continue;
      const lane_weight lw(t, s.k, s.n, s.k + s.n);
      auto x = test::random_floats(static_cast<size_t>(s.n_tokens) * s.k, s.n, -3.0f, 3.0f);
      for (size_t i = 0; i < x.size(); i += 97) x[i] *= 300.0f;
      std::vector<float> want;
      {
        test::isa_guard g(cpu_isa::scalar);
        want = run(lw.view, x, s.n_tokens, nullptr);
      }
      BOOST_TEST_CONTEXT("type " << type_name(t) << " shape " << s.n_tokens << "x" << s.k << "x" << s.n) {
        check_near_exact(lw.w, x, s.n_tokens, want);
        for (const cpu_isa isa : test::runnable_isas()) {
          test::isa_guard g(isa);
          const auto got = run(lw.view, x, s.n_tokens, &pool);
          BOOST_TEST(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0, to_string(isa));
        }
      }
    }
  }
}

/// n_tokens random tokens of k values (some entries 300x the rest) as the
/// int16 blocks q and their lane form xl, for calling the kernels directly.
struct lane_activations {
  std::vector<detail::block_q16_act> q;
  std::vector<detail::block_q16_lanes> b;
  std::vector<float> ds;
  std::vector<detail::act_lanes> xl;

  lane_activations(uint32_t n_tokens, uint32_t k, uint32_t seed, size_t spike_every)
      : q(n_tokens * (k / 32)), b(n_tokens * (k / 32) / 8), ds(2 * n_tokens * (k / 32)), xl(n_tokens) {
    const uint32_t nb = k / 32;
    auto x = test::random_floats(n_tokens * k, seed, -3.0f, 3.0f);
    for (size_t i = 0; i < x.size(); i += spike_every) x[i] *= 300.0f;
    for (uint32_t t = 0; t < n_tokens; ++t) {
      detail::block_q16_act* qt = q.data() + t * nb;
      detail::scalar_kernels().quantize_act(x.data() + t * k, qt, nb);
      float* d = ds.data() + 2 * t * nb;
      detail::lanes_act(qt, nb, b.data() + t * (nb / 8), d, d + nb);
      xl[t] = {b.data() + t * (nb / 8), d, d + nb, qt};
    }
  }
};

BOOST_AUTO_TEST_CASE(every_row_and_token_count_of_one_kernel_call_gives_the_scalar_bits) {
  // The VNNI path's K-quant kernels take two rows per 512-bit vector and an
  // odd last row alone: every n_rows 1..9 and nt 1..4 of a direct call
  // against the scalar kernel, rows past n_rows left alone. 576 and 896:
  // the 32-value block types' tails (2 and 4 blocks) at every width too.
  const uint32_t max_rows = 9, nt_max = detail::max_dot_tokens;
  for (const uint32_t k : lane_widths) {
    const uint32_t nb = k / 32;
    const lane_activations act(nt_max, k, 41, 53);
    const auto& xl = act.xl;
    for (const tensor_type t : lane_types) {
      if (!fits(t, k)) continue;
      const lane_weight lw(t, k, max_rows, 43);
      const detail::dot_l_fn want_dot = detail::lanes_dot(detail::scalar_kernels(), t);
      for (const cpu_isa isa : test::runnable_isas()) {
        test::isa_guard g(isa);
        const detail::dot_l_fn dot = detail::lanes_dot(detail::active_kernels(), t);
        for (uint32_t n_rows = 1; n_rows <= max_rows; ++n_rows) {
          for (uint32_t nt = 1; nt <= nt_max; ++nt) {
            std::vector<float> want(nt_max * max_rows, NAN), got(want);
            want_dot(lw.lanes.data(), lw.view.lanes_stride, n_rows, xl.data(), nt, nb, want.data(), max_rows);
            dot(lw.lanes.data(), lw.view.lanes_stride, n_rows, xl.data(), nt, nb, got.data(), max_rows);
            BOOST_TEST(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0,
                       type_name(t) << " k " << k << " " << to_string(isa) << " rows " << n_rows << " tokens " << nt);
          }
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_row_and_token_count_of_one_tile_call_gives_the_scalar_bits) {
  // The AMX tile kernels take 16 rows against all tokens of a call: every
  // n_rows 1..16 and token counts around the 16-token tiles, against the
  // scalar lane kernel; rows past n_rows and tokens past the count left alone.
  if (detected_isa() < cpu_isa::amx) {
    BOOST_TEST_MESSAGE("skipped: no AMX-INT8 here (or the OS does not grant the tile state)");
    return;
  }
  const uint32_t max_rows = 17, max_tokens = 34;
  const uint32_t token_counts[] = {1, 15, 16, 17, 33};
  for (const uint32_t k : {256u, 1024u}) {
    const uint32_t nb = k / 32;
    const lane_activations act(max_tokens, k, 51, 59);
    const auto& xl = act.xl;
    for (const tensor_type t : {tensor_type::q4_k, tensor_type::q5_k, tensor_type::q6_k}) {
      const lane_weight lw(t, k, max_rows, 47);
      const detail::dot_l_fn want_dot = detail::lanes_dot(detail::scalar_kernels(), t);
      const detail::dot_t_fn dot = detail::tiles_dot(*detail::amx_kernels(), t);
      BOOST_TEST_REQUIRE(dot != nullptr);
      for (const uint32_t nt : token_counts) {
        std::vector<detail::block_q16_tile> tiles((nt + 15) / 16 * nb);
        detail::tiles_act(act.q.data(), nt, nb, tiles.data());
        for (uint32_t n_rows = 1; n_rows <= 16; ++n_rows) {
          std::vector<float> want(max_tokens * max_rows, NAN), got(want);
          for (uint32_t t0 = 0; t0 < nt; t0 += detail::max_dot_tokens) {
            want_dot(lw.lanes.data(), lw.view.lanes_stride, n_rows, xl.data() + t0,
                     std::min(detail::max_dot_tokens, nt - t0), nb, want.data() + t0 * max_rows, max_rows);
          }
          dot(lw.lanes.data(), lw.view.lanes_stride, n_rows, {tiles.data(), nt}, nb, got.data(), max_rows);
          BOOST_TEST(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0,
                     type_name(t) << " k " << k << " rows " << n_rows << " tokens " << nt);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(tile_activations_hold_the_int16_values_and_scales) {
  const uint32_t nb = 3, n_tokens = 19; // two tiles, the second padded with zeros
  const auto x = test::random_floats(n_tokens * nb * 32, 5, -2.0f, 2.0f);
  std::vector<detail::block_q16_act> q(n_tokens * nb);
  for (uint32_t t = 0; t < n_tokens; ++t) detail::scalar_kernels().quantize_act(x.data() + t * nb * 32, q.data() + t * nb, nb);
  std::vector<detail::block_q16_tile> tiles(2 * nb);
  detail::tiles_act(q.data(), n_tokens, nb, tiles.data());
  // The vectorized form (AMX table) writes the same bytes, for 1..19 tokens.
  for (const cpu_isa isa : test::runnable_isas()) {
    test::isa_guard guard(isa);
    const auto fast = detail::active_kernels().tiles_act;
    if (fast == nullptr) continue;
    for (uint32_t nt = 1; nt <= n_tokens; ++nt) {
      std::vector<detail::block_q16_tile> want(2 * nb), got(2 * nb);
      std::memset(want.data(), 0x5a, want.size() * sizeof(want[0]));
      std::memset(got.data(), 0x5a, got.size() * sizeof(got[0]));
      detail::tiles_act(q.data(), nt, nb, want.data());
      fast(q.data(), nt, nb, got.data());
      BOOST_TEST(std::memcmp(want.data(), got.data(), want.size() * sizeof(want[0])) == 0, "tokens " << nt);
    }
  }
  for (uint32_t u = 0; u < 2; ++u) {
    for (uint32_t i = 0; i < nb; ++i) {
      const detail::block_q16_tile& b = tiles[u * nb + i];
      for (uint32_t n = 0; n < 16; ++n) {
        const uint32_t t = 16 * u + n;
        for (uint32_t e = 0; e < 32; ++e) {
          const int want = t < n_tokens ? q[t * nb + i].qs[e] : 0;
          BOOST_TEST_REQUIRE(256 * b.hi[e / 4][4 * n + e % 4] + b.lo[e / 4][4 * n + e % 4] == want);
        }
        BOOST_TEST(b.d[n] == (t < n_tokens ? q[t * nb + i].d : 0.0f));
        BOOST_TEST(b.s[n] == (t < n_tokens ? q[t * nb + i].s : 0.0f));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_token_result_does_not_depend_on_the_rest_of_the_batch) {
  // 40 tokens: on the AMX path the K-quants take the tile kernels, one token
  // alone the lane kernels; the bits must not change.
  const uint32_t k = 512, n = 13;
  for (const uint32_t n_tokens : {7u, 40u}) {
    for (const tensor_type t : lane_types) {
      const lane_weight lw(t, k, n, 9);
      const auto x = test::random_floats(n_tokens * k, 10);
      const auto all = run(lw.view, x, n_tokens, nullptr);
      for (uint32_t tok = 0; tok < n_tokens; ++tok) {
        const std::vector<float> one_x(x.begin() + tok * k, x.begin() + (tok + 1) * k);
        const auto one = run(lw.view, one_x, 1, nullptr);
        BOOST_TEST(std::memcmp(one.data(), all.data() + tok * n, n * sizeof(float)) == 0,
                   type_name(t) << " token " << tok << " of " << n_tokens);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_matmul_reads_the_lane_copy_when_there_is_one) {
  for (const tensor_type t : lane_types) {
    lane_weight lw(t, 256, 4, 7);
    const auto x = test::random_floats(2 * 256, 8);
    std::fill(lw.lanes.begin(), lw.lanes.end(), std::byte{0}); // every scale 0
    for (const cpu_isa isa : test::runnable_isas()) {
      test::isa_guard g(isa);
      for (const float v : run(lw.view, x, 2, nullptr)) BOOST_TEST(v == 0.0f, type_name(t) << " " << to_string(isa));
    }
  }
}

BOOST_AUTO_TEST_CASE(reference_mode_and_other_weights_ignore_the_lanes) {
  // fp32_activations dequantizes `data`; a call mixing a lane weight with a
  // row-layout one writes each output as a separate call would.
  const uint32_t k = 256, n = 5, n_tokens = 3;
  const lane_weight lw(tensor_type::q4_k, k, n, 1);
  const test::owned_weight other(tensor_type::q4_0, k, 4, 2);
  const auto x = test::random_floats(n_tokens * k, 3);
  std::vector<float> ref_lanes(n_tokens * n), ref_rows(n_tokens * n);
  matmul_args a{x.data(), k, n_tokens, {&lw.view, 1}, ref_lanes.data(), n, nullptr, nullptr};
  a.fp32_activations = true;
  matmul(a);
  a.weights = {&lw.w.view, 1};
  a.y = ref_rows.data();
  matmul(a);
  BOOST_TEST(std::memcmp(ref_lanes.data(), ref_rows.data(), ref_rows.size() * sizeof(float)) == 0);

  const weight_matrix both[] = {lw.view, other.view};
  std::vector<float> y(n_tokens * (n + 4));
  matmul({x.data(), k, n_tokens, both, y.data(), n + 4, nullptr, nullptr});
  const auto a_only = run(lw.view, x, n_tokens, nullptr), b_only = run(other.view, x, n_tokens, nullptr);
  for (uint32_t t = 0; t < n_tokens; ++t) {
    BOOST_TEST(std::memcmp(y.data() + t * (n + 4), a_only.data() + t * n, n * sizeof(float)) == 0);
    BOOST_TEST(std::memcmp(y.data() + t * (n + 4) + n, b_only.data() + t * 4, 4 * sizeof(float)) == 0);
  }
}

BOOST_AUTO_TEST_SUITE_END()
