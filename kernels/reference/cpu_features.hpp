// Which instruction-set path the CPU kernels take, detected once at run time
// (the binary is built without -march flags and runs on any x86-64). Tests and
// benchmarks may force a lower path. Reads are lock-free; set it before use.
#pragma once

#include <string_view>

namespace dynamo::kernels::ref {

/// Kernel paths, lowest to highest. `avx2` needs AVX2+FMA+F16C; `avx2_vnni`
/// additionally uses 256-bit VPDPWSSD and mask registers (AVX512-VNNI, -VL, -BW);
/// `amx` is avx2_vnni plus AMX-INT8 tile products for K-quant prefill (needs
/// the OS to grant the tile state: arch_prctl(ARCH_REQ_XCOMP_PERM) on Linux,
/// asked once at detection).
enum class cpu_isa { scalar = 0, avx2 = 1, avx2_vnni = 2, amx = 3 };

[[nodiscard]] std::string_view to_string(cpu_isa isa) noexcept;

/// The best path this CPU and OS support.
[[nodiscard]] cpu_isa detected_isa() noexcept;

/// The path the kernels use now: detected_isa() unless lowered by set_isa().
[[nodiscard]] cpu_isa active_isa() noexcept;

/// Forces a path; values above detected_isa() are clamped to it. Returns the
/// path now in use. Not for concurrent use with running kernels.
cpu_isa set_isa(cpu_isa isa) noexcept;

} // namespace dynamo::kernels::ref
