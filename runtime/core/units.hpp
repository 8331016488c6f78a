// Byte sizes given in the units flags and the cluster config use (MiB, GiB,
// fractional allowed) turned into bytes, in one place. Header-only, pure:
// any thread.
#pragma once

#include <cstdint>

namespace dynamo {

inline constexpr double bytes_per_mib = 1024.0 * 1024.0;
inline constexpr double bytes_per_gib = 1024.0 * bytes_per_mib;

/// `mib` MiB in bytes, rounded down (a negative size is 0).
[[nodiscard]] constexpr uint64_t mib_to_bytes(double mib) noexcept {
  return mib > 0 ? static_cast<uint64_t>(mib * bytes_per_mib) : 0;
}
/// `gib` GiB in bytes, rounded down (a negative size is 0).
[[nodiscard]] constexpr uint64_t gib_to_bytes(double gib) noexcept {
  return gib > 0 ? static_cast<uint64_t>(gib * bytes_per_gib) : 0;
}

} // namespace dynamo
