#include "kernels/reference/cpu_features.hpp"

#include <algorithm>
#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace dynamo::kernels::ref {
namespace {

/// AMX-TILE and AMX-INT8 in CPUID, the tile state enabled in XCR0, and the
/// kernel's permission for this process to use it (Linux >= 5.16 asks for it:
/// without it the first tile instruction faults). Anything missing: false.
bool amx_usable() noexcept {
#if defined(__linux__) && defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool tile = (edx & (1u << 24)) != 0, int8 = (edx & (1u << 25)) != 0;
  if (!tile || !int8) return false;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & bit_OSXSAVE) == 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  constexpr unsigned tile_bits = (1u << 17) | (1u << 18); // XTILECFG, XTILEDATA
  if ((xcr0_lo & tile_bits) != tile_bits) return false;
  constexpr long arch_get_xcomp_perm = 0x1022, arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
  if (syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) != 0) return false;
  unsigned long perm = 0;
  if (syscall(SYS_arch_prctl, arch_get_xcomp_perm, &perm) != 0) return false;
  return (perm & (1ul << xfeature_xtiledata)) != 0;
#else
  return false;
#endif
}

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
  if (!vnni) return cpu_isa::avx2;
  return amx_usable() ? cpu_isa::amx : cpu_isa::avx2_vnni;
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
    case cpu_isa::amx: return "amx";
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
