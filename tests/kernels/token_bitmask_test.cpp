// The grammar-mask reference (kernels/reference/token_bitmask): cleared bits
// and ids past the mask become -inf, set bits keep their logit, per row.
#include "kernels/reference/token_bitmask.hpp"

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

namespace ref = dynamo::kernels::ref;

BOOST_AUTO_TEST_SUITE(token_bitmask)

BOOST_AUTO_TEST_CASE(masks_cleared_bits_and_ids_past_the_mask) {
  const uint32_t vocab = 150, stride = 152;
  std::vector<float> logits(2 * stride);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = float(i);
  // Row 0: ids 0, 63, 64 and 127 allowed; the mask has 2 words, so 128.. are masked.
  // Row 1: everything in the 2 words allowed.
  std::vector<uint64_t> mask = {1ull | 1ull << 63, 1ull | 1ull << 63, ~0ull, ~0ull};
  ref::apply_token_bitmask({logits.data(), stride, vocab, mask.data(), 2, 2});
  for (uint32_t t = 0; t < vocab; ++t) {
    const bool row0 = t == 0 || t == 63 || t == 64 || t == 127;
    BOOST_TEST_CONTEXT("token " << t) {
      BOOST_TEST((row0 ? logits[t] == float(t) : std::isinf(logits[t]) && logits[t] < 0));
      BOOST_TEST((t < 128 ? logits[stride + t] == float(stride + t) : std::isinf(logits[stride + t])));
    }
  }
  BOOST_TEST(logits[150] == 150.0f); // past n_vocab: the row's padding is not touched
  BOOST_TEST(logits[151] == 151.0f);
}

BOOST_AUTO_TEST_SUITE_END()
