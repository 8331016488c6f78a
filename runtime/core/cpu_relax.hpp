// cpu_relax(): the spin-wait hint (x86 pause, ARM yield) for loops that poll
// shared state before they sleep. Used by the CPU kernels' thread pool and the
// router's kv_indexer readers. Header-only; any thread.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dynamo {

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

} // namespace dynamo
