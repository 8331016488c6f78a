// The grammar-mask kernel against its CPU reference: random masks over
// several rows (a row subset, out of order), a mask shorter than the
// vocabulary (ids past it masked), bit for bit.
#include "kernels/reference/token_bitmask.hpp"
#include "kernels/token_bitmask.cuh"
#include "tests/kernels/cuda/cuda_test_util.hpp"

#include <cstring>

namespace gpu = dynamo::kernels::gpu;
namespace ref = dynamo::kernels::ref;
using namespace dynamo::kernels::gpu::test;

BOOST_AUTO_TEST_SUITE(token_bitmask_cuda)

BOOST_AUTO_TEST_CASE(matches_the_cpu_reference) {
  for (const uint32_t vocab : {1u, 63u, 64u, 1000u, 49152u, 151936u}) {
    std::mt19937_64 rng(vocab);
    const uint32_t n_rows = 5, stride = vocab + 3;
    const uint32_t words = (vocab + 63) / 64 - (vocab > 200 ? 1 : 0); // the large ones end early
    std::vector<float> logits(size_t(n_rows) * stride);
    for (auto& x : logits) x = std::uniform_real_distribution<float>(-5, 5)(rng);
    const std::vector<uint32_t> rows = {3, 0, 4}; // masked rows; 1 and 2 untouched
    std::vector<uint64_t> masks(rows.size() * words);
    for (auto& w : masks) w = rng() & rng(); // about a quarter of the bits set
    // CPU: one mask row at a time, on the rows it names.
    std::vector<float> want = logits;
    for (size_t r = 0; r < rows.size(); ++r)
      ref::apply_token_bitmask({want.data() + size_t(rows[r]) * stride, stride, vocab, masks.data() + r * words, words, 1});
    device_buffer<float> d_logits(logits);
    device_buffer<uint64_t> d_masks(masks);
    device_buffer<uint32_t> d_rows(rows);
    gpu::token_bitmask_args a;
    a.logits = d_logits.get();
    a.logits_stride = stride;
    a.n_vocab = vocab;
    a.mask = d_masks.get();
    a.rows = d_rows.get();
    a.mask_words = words;
    a.n_rows = uint32_t(rows.size());
    CUDA_CHECK(gpu::launch_token_bitmask(a, nullptr));
    const std::vector<float> got = d_logits.download();
    BOOST_TEST_CONTEXT("vocab " << vocab) {
      BOOST_TEST(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
