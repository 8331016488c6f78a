// The grammar mask of structured outputs: logits of tokens whose bit is clear
// in a per-row bitmask (bit id of word id / 64) become -inf; ids past the
// mask's words are masked too (a logits row longer than the tokenizer's
// vocabulary). CPU reference of kernels/token_bitmask.cu and what the CPU
// sampler runs; pure function over caller buffers, any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dynamo::kernels::ref {

struct token_bitmask_args {
  float* logits = nullptr;        ///< [n_rows, n_vocab]; row r at logits + r * logits_stride; in place
  size_t logits_stride = 0;
  uint32_t n_vocab = 0;
  const uint64_t* mask = nullptr; ///< [n_rows, mask_words]; row r at mask + r * mask_words
  uint32_t mask_words = 0;
  uint32_t n_rows = 0;
};

void apply_token_bitmask(const token_bitmask_args& args);

} // namespace dynamo::kernels::ref
