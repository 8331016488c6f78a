#include "kernels/reference/kv_store.hpp"
#include "kernels/reference/paged_attention.hpp"
#include "kernels/reference/simd_kernels.hpp"
#include "tests/kernels/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace dynamo::kernels::ref;
namespace test = dynamo::kernels::ref::test;

namespace {

/// A 2-layer paged cache laid out [block][layer][k|v][kv_head][slot][dim];
/// the tests use layer 1 so that block_stride and the v offset matter.
struct toy_cache {
  uint32_t num_blocks, block_size, n_kv, hd;
  kv_dtype dtype;
  std::vector<std::byte> mem;

  toy_cache(uint32_t nb, uint32_t bs, uint32_t nkv, uint32_t d, kv_dtype t)
      : num_blocks(nb), block_size(bs), n_kv(nkv), hd(d), dtype(t),
        mem(size_t(nb) * 2 * 2 * bs * nkv * d * kv_dtype_bytes(t), std::byte{0xff}) {}

  [[nodiscard]] paged_kv_view layer1() {
    const size_t per_kv = size_t(block_size) * n_kv * hd; // elements of K (or V) per block+layer
    const size_t esz = kv_dtype_bytes(dtype);
    paged_kv_view v;
    v.k = mem.data() + (2 * per_kv) * esz;
    v.v = mem.data() + (3 * per_kv) * esz;
    v.dtype = dtype;
    v.block_stride = 4 * per_kv;
    v.block_size = block_size;
    v.n_kv_head = n_kv;
    v.head_dim = hd;
    return v;
  }
};

struct toy_sequence {
  uint32_t start_pos, n_query;
  std::vector<uint32_t> blocks;
  std::vector<float> k, v; ///< [start_pos + n_query, n_kv, hd], all positions
  std::vector<float> q;    ///< [n_query, n_head, hd]
};

float round_kv(float x, kv_dtype t) { return t == kv_dtype::f16 ? fp16_to_fp32(fp32_to_fp16(x)) : x; }

/// Contiguous (unpaged) attention in double, for one sequence.
std::vector<double> naive_attention(const toy_sequence& s, uint32_t n_head, uint32_t n_kv, uint32_t hd,
                                    kv_dtype t) {
  std::vector<double> out(size_t(s.n_query) * n_head * hd, 0.0);
  const double scale = 1.0 / std::sqrt(double(hd));
  for (uint32_t i = 0; i < s.n_query; ++i) {
    const uint32_t n_keys = s.start_pos + i + 1;
    for (uint32_t h = 0; h < n_head; ++h) {
      const uint32_t kvh = h / (n_head / n_kv);
      std::vector<double> sc(n_keys);
      double mx = -1e300;
      for (uint32_t j = 0; j < n_keys; ++j) {
        double d = 0.0;
        for (uint32_t e = 0; e < hd; ++e) {
          d += double(s.q[(size_t(i) * n_head + h) * hd + e]) * round_kv(s.k[(size_t(j) * n_kv + kvh) * hd + e], t);
        }
        sc[j] = d * scale;
        mx = std::max(mx, sc[j]);
      }
      double z = 0.0;
      for (auto& x : sc) z += (x = std::exp(x - mx));
      for (uint32_t j = 0; j < n_keys; ++j) {
        for (uint32_t e = 0; e < hd; ++e) {
          out[(size_t(i) * n_head + h) * hd + e] += sc[j] / z * round_kv(s.v[(size_t(j) * n_kv + kvh) * hd + e], t);
        }
      }
    }
  }
  return out;
}

void check_attention(uint32_t n_head, uint32_t n_kv, uint32_t hd, kv_dtype dtype, thread_pool* pool) {
  const uint32_t bs = 4;
  toy_cache cache(12, bs, n_kv, hd, dtype);
  // A prefill chunk after 3 cached tokens, a decode at position 9, and a
  // fresh prompt, all with scattered, non-contiguous blocks.
  std::vector<toy_sequence> seqs = {{3, 5, {7, 2}, {}, {}, {}},
                                    {9, 1, {0, 11, 5}, {}, {}, {}},
                                    {0, 6, {9, 4}, {}, {}, {}}};
  const paged_kv_view kv = cache.layer1();
  uint32_t seed = 100;
  for (auto& s : seqs) {
    const uint32_t n_pos = s.start_pos + s.n_query;
    s.k = test::random_floats(size_t(n_pos) * n_kv * hd, ++seed);
    s.v = test::random_floats(size_t(n_pos) * n_kv * hd, ++seed);
    s.q = test::random_floats(size_t(s.n_query) * n_head * hd, ++seed, -2.0f, 2.0f);
    std::vector<uint32_t> slots(n_pos);
    for (uint32_t p = 0; p < n_pos; ++p) slots[p] = s.blocks[p / bs] * bs + p % bs;
    kv_store({s.k.data(), n_kv * hd, s.v.data(), n_kv * hd, slots.data(), n_pos, kv});
  }
  // All query tokens in one buffer, in sequence order.
  std::vector<float> q;
  std::vector<attention_sequence> as;
  for (auto& s : seqs) {
    as.push_back({uint32_t(q.size() / (n_head * hd)), s.n_query, s.start_pos, s.blocks.data(),
                  uint32_t(s.blocks.size())});
    q.insert(q.end(), s.q.begin(), s.q.end());
  }
  const uint32_t stride = n_head * hd;
  std::vector<float> out(q.size(), NAN);
  paged_attention({q.data(), stride, out.data(), stride, n_head, 1.0f / std::sqrt(float(hd)), as, kv, pool});
  const double tol = 2e-5;
  for (size_t si = 0; si < seqs.size(); ++si) {
    const auto want = naive_attention(seqs[si], n_head, n_kv, hd, dtype);
    const float* got = out.data() + size_t(as[si].q_offset) * stride;
    for (size_t i = 0; i < want.size(); ++i) {
      BOOST_TEST_REQUIRE(std::fabs(got[i] - want[i]) <= tol, "seq " << si << " elem " << i << ": " << got[i] << " vs " << want[i]);
    }
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(paged_attention_op)

BOOST_AUTO_TEST_CASE(scattered_block_tables_equal_contiguous_attention) {
  thread_pool pool(3);
  for (const cpu_isa isa : test::runnable_isas()) {
    test::isa_guard guard(isa);
    for (const kv_dtype t : {kv_dtype::f32, kv_dtype::f16}) {
      BOOST_TEST_CONTEXT("isa " << to_string(isa) << " dtype " << int(t)) {
        check_attention(6, 2, 16, t, &pool);   // GQA group 3
        check_attention(9, 3, 64, t, nullptr); // SmolLM2 head shape
        check_attention(4, 4, 20, t, &pool);   // MHA, head_dim not a multiple of 8
        check_attention(5, 1, 12, t, nullptr); // MQA
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(row_kernels_have_the_bits_of_dot_and_axpy) {
  for (const cpu_isa isa : test::runnable_isas()) {
    test::isa_guard guard(isa);
    const auto& kt = detail::active_kernels();
    for (const uint32_t n : {1u, 7u, 8u, 16u, 20u, 64u, 72u, 128u, 137u}) {
      for (const uint32_t rows : {1u, 3u, 4u, 5u, 9u, 13u, 16u}) {
        for (const uint32_t n_q : {1u, 2u, 3u, 4u, 7u, 10u}) {
          BOOST_TEST_CONTEXT("isa " << to_string(isa) << " n " << n << " rows " << rows << " queries " << n_q) {
            const size_t stride = n + 3;
            const auto qs = test::random_floats(size_t(n_q) * stride, n + n_q, -2.0f, 2.0f);
            const auto k = test::random_floats(rows * stride, n + rows);
            std::vector<const float*> q(n_q);
            std::vector<float> got(size_t(n_q) * rows, NAN);
            std::vector<float*> out(n_q);
            for (uint32_t t = 0; t < n_q; ++t) {
              q[t] = qs.data() + t * stride;
              out[t] = got.data() + size_t(t) * rows;
            }
            kt.dot_rows(q.data(), n_q, k.data(), stride, rows, n, 0.125f, out.data());
            for (uint32_t t = 0; t < n_q; ++t)
              for (uint32_t j = 0; j < rows; ++j)
                BOOST_TEST_REQUIRE(out[t][j] == kt.dot(q[t], k.data() + j * stride, n) * 0.125f);
            const auto ps = test::random_floats(size_t(n_q) * rows, 2 * n + rows);
            const auto y0 = test::random_floats(size_t(n_q) * n, 3 * n);
            auto y_rows = y0, y_each = y0;
            std::vector<const float*> p(n_q);
            std::vector<float*> y(n_q);
            for (uint32_t t = 0; t < n_q; ++t) {
              p[t] = ps.data() + size_t(t) * rows;
              y[t] = y_rows.data() + size_t(t) * n;
            }
            kt.axpy_rows(p.data(), n_q, k.data(), stride, rows, y.data(), n);
            for (uint32_t t = 0; t < n_q; ++t)
              for (uint32_t j = 0; j < rows; ++j) kt.axpy_f32(p[t][j], k.data() + j * stride, y_each.data() + size_t(t) * n, n);
            BOOST_TEST_REQUIRE(y_rows == y_each, boost::test_tools::per_element());
            // fp16 rows read in place: the bits of converting them (exact), then the fp32 kernels.
            std::vector<uint16_t> k16(k.size());
            kt.store_f16(k.data(), k16.data(), static_cast<uint32_t>(k.size()));
            std::vector<float> k32(k.size());
            for (size_t e = 0; e < k.size(); ++e) k32[e] = fp16_to_fp32(k16[e]);
            std::vector<float> got16(got.size(), NAN), want16(got.size(), NAN);
            std::vector<float*> out16(n_q), want_out(n_q);
            for (uint32_t t = 0; t < n_q; ++t) {
              out16[t] = got16.data() + size_t(t) * rows;
              want_out[t] = want16.data() + size_t(t) * rows;
            }
            kt.dot_rows_f16(q.data(), n_q, k16.data(), stride, rows, n, 0.125f, out16.data());
            kt.dot_rows(q.data(), n_q, k32.data(), stride, rows, n, 0.125f, want_out.data());
            BOOST_TEST_REQUIRE(std::memcmp(got16.data(), want16.data(), got16.size() * sizeof(float)) == 0);
            auto y16 = y0, y32 = y0;
            std::vector<float*> y16p(n_q), y32p(n_q);
            for (uint32_t t = 0; t < n_q; ++t) {
              y16p[t] = y16.data() + size_t(t) * n;
              y32p[t] = y32.data() + size_t(t) * n;
            }
            kt.axpy_rows_f16(p.data(), n_q, k16.data(), stride, rows, y16p.data(), n);
            kt.axpy_rows(p.data(), n_q, k32.data(), stride, rows, y32p.data(), n);
            BOOST_TEST_REQUIRE(std::memcmp(y16.data(), y32.data(), y16.size() * sizeof(float)) == 0);
          }
        }
      }
    }
  }
}

// The attention softmax's e^(x - m): the plain path's bits on every path, at
// every length (full vectors and padded tails), within 2 ulp of e^(x - m).
BOOST_AUTO_TEST_CASE(exp_row_has_the_same_bits_on_every_path) {
  for (const uint32_t n : {1u, 3u, 4u, 5u, 8u, 15u, 16u, 17u, 100u}) {
    const auto x = test::random_floats(n, n, -100.0f, 20.0f);
    auto want = x;
    detail::scalar_kernels().exp_row(want.data(), n, 20.5f);
    for (uint32_t i = 0; i < n; ++i) {
      const double e = std::exp(double(x[i] - 20.5f)); // the difference rounded to float, as in softmax
      BOOST_TEST_REQUIRE(std::fabs(want[i] - e) <= 2 * std::numeric_limits<float>::epsilon() * e + 1e-44);
    }
    for (const cpu_isa isa : test::runnable_isas()) {
      test::isa_guard guard(isa);
      auto got = x;
      detail::active_kernels().exp_row(got.data(), n, 20.5f);
      BOOST_TEST_REQUIRE(std::memcmp(got.data(), want.data(), n * sizeof(float)) == 0, "isa " << to_string(isa) << " n " << n);
    }
  }
}

// A prompt of 37 tokens in one call against each token alone (as a decode
// at its position): the same bits, whatever query block a token falls in.
BOOST_AUTO_TEST_CASE(a_query_token_result_does_not_depend_on_its_batch) {
  const uint32_t n_head = 4, n_kv = 2, hd = 128, n_tok = 37;
  for (const cpu_isa isa : test::runnable_isas()) {
    test::isa_guard guard(isa);
    for (const kv_dtype t : {kv_dtype::f32, kv_dtype::f16}) {
      for (const uint32_t bs : {4u, 16u}) {
        BOOST_TEST_CONTEXT("isa " << to_string(isa) << " dtype " << int(t) << " block " << bs) {
          const uint32_t n_blocks = (n_tok + bs - 1) / bs;
          toy_cache cache(n_blocks + 2, bs, n_kv, hd, t);
          std::vector<uint32_t> table(n_blocks);
          for (uint32_t b = 0; b < n_blocks; ++b) table[b] = (b * 5 + 1) % (n_blocks + 2);
          const paged_kv_view kv = cache.layer1();
          const auto k = test::random_floats(size_t(n_tok) * n_kv * hd, 1);
          const auto v = test::random_floats(size_t(n_tok) * n_kv * hd, 2);
          const auto q = test::random_floats(size_t(n_tok) * n_head * hd, 3, -2.0f, 2.0f);
          std::vector<uint32_t> slots(n_tok);
          for (uint32_t p = 0; p < n_tok; ++p) slots[p] = table[p / bs] * bs + p % bs;
          kv_store({k.data(), n_kv * hd, v.data(), n_kv * hd, slots.data(), n_tok, kv});
          const uint32_t stride = n_head * hd;
          const float scale = 1.0f / std::sqrt(float(hd));
          std::vector<float> all(q.size(), NAN), alone(q.size(), NAN);
          const attention_sequence prompt{0, n_tok, 0, table.data(), n_blocks};
          paged_attention({q.data(), stride, all.data(), stride, n_head, scale, {&prompt, 1}, kv, nullptr});
          for (uint32_t i = 0; i < n_tok; ++i) {
            const attention_sequence one{0, 1, i, table.data(), n_blocks};
            paged_attention({q.data() + size_t(i) * stride, stride, alone.data() + size_t(i) * stride, stride, n_head,
                             scale, {&one, 1}, kv, nullptr});
          }
          BOOST_TEST_REQUIRE(all == alone, boost::test_tools::per_element());
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(kv_store_writes_each_token_to_its_slot) {
  const uint32_t n_kv = 2, hd = 8, bs = 4;
  for (const kv_dtype t : {kv_dtype::f32, kv_dtype::f16}) {
    toy_cache cache(5, bs, n_kv, hd, t);
    const paged_kv_view kv = cache.layer1();
    const auto k = test::random_floats(3 * n_kv * hd, 1), v = test::random_floats(3 * n_kv * hd, 2);
    const uint32_t slots[] = {4 * bs + 3, 0, 2 * bs + 1}; // block 4 slot 3, block 0 slot 0, block 2 slot 1
    kv_store({k.data(), n_kv * hd, v.data(), n_kv * hd, slots, 3, kv});
    for (uint32_t tok = 0; tok < 3; ++tok) {
      for (uint32_t h = 0; h < n_kv; ++h) {
        for (uint32_t e = 0; e < hd; ++e) {
          const size_t off = kv.offset(slots[tok] / bs, slots[tok] % bs, h) + e;
          const float kw = k[(tok * n_kv + h) * hd + e], vw = v[(tok * n_kv + h) * hd + e];
          if (t == kv_dtype::f32) {
            BOOST_TEST_REQUIRE(static_cast<const float*>(kv.k)[off] == kw);
            BOOST_TEST_REQUIRE(static_cast<const float*>(kv.v)[off] == vw);
          } else {
            BOOST_TEST_REQUIRE(static_cast<const uint16_t*>(kv.k)[off] == fp32_to_fp16(kw));
            BOOST_TEST_REQUIRE(static_cast<const uint16_t*>(kv.v)[off] == fp32_to_fp16(vw));
          }
        }
      }
    }
    // Slot 1 of block 0 was not written: still the 0xff fill.
    BOOST_TEST(static_cast<const uint8_t*>(kv.k)[kv.offset(0, 1, 0) * kv_dtype_bytes(t)] == 0xff);
  }
}

BOOST_AUTO_TEST_SUITE_END()
