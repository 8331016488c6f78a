// Numerically stable softmax in fp32, in place: x = exp(x - max) / sum.
// Used by paged attention and by the sampler. Pure function, any thread.
#pragma once

#include <cstdint>

namespace dynamo::kernels::ref {

/// REQUIRES: n >= 1 and no NaN in x. When the maximum is infinite (all -inf,
/// or some +inf) the result is uniform over the entries equal to it.
void softmax(float* x, uint32_t n);

} // namespace dynamo::kernels::ref
