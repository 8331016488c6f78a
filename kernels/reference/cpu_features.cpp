#include "kernels/reference/cpu_features.hpp"

#include <algorithm>
#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace dynamo::kernels::ref {
namespace {

cpu_isa detect() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
  // does not know "f16c" (the libFuzzer build uses clang).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
  if (!avx2) return cpu_isa::scalar;
  // AVX-VNNI-only CPUs (no AVX-512) take the plain AVX2 path: one VNNI
  // variant is enough, and it is the one server CPUs have.
  const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl") &&
                    __builtin_cpu_supports("avx512bw");
  return vnni ? cpu_isa::avx2_vnni : cpu_isa::avx2;
#else
  return cpu_isa::scalar;
#endif
}

std::atomic<int>& active_slot() noexcept {
  static std::atomic<int> slot{static_cast<int>(detected_isa())};
  return slot;
}

} // namespace

std::string_view to_string(cpu_isa isa) noexcept {
  switch (isa) {
    case cpu_isa::scalar: return "scalar";
    case cpu_isa::avx2: return "avx2";
    case cpu_isa::avx2_vnni: return "avx2_vnni";
  }
  return "unknown";
}

cpu_isa detected_isa() noexcept {
  static const cpu_isa isa = detect();
  return isa;
}

cpu_isa active_isa() noexcept {
  return static_cast<cpu_isa>(active_slot().load(std::memory_order_relaxed));
}

cpu_isa set_isa(cpu_isa isa) noexcept {
  const cpu_isa clamped = std::min(isa, detected_isa());
  active_slot().store(static_cast<int>(clamped), std::memory_order_relaxed);
  return clamped;
}

} // namespace dynamo::kernels::ref
