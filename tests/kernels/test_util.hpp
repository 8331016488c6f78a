// Helpers shared by the kernel tests: seeded random data, weight matrices of
// any type built from random floats, a guard that restores the kernel path,
// and the test-data directory. Test-only; single-threaded use.
#pragma once

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/weight_types.hpp"

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace dynamo::kernels::ref::test {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

/// Random bytes for the k-quants, with every fp16 scale field set to a small
/// finite value so the block dequantizes to sane numbers.
inline void randomize_kquant(weight_type t, std::vector<std::byte>& bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  std::uniform_real_distribution<float> dist(-0.02f, 0.02f);
  const size_t bb = block_bytes(t);
  for (size_t off = 0; off + bb <= bytes.size(); off += bb) {
    auto put = [&](size_t at) {
      const uint16_t h = fp32_to_fp16(dist(rng));
      std::memcpy(bytes.data() + off + at, &h, 2);
    };
    if (t == weight_type::q4_k) {
      put(0);
      put(2);
    } else {
      put(208);
    }
  }
}

/// An owned weight matrix [n, k] of type t, quantized from random values.
struct owned_weight {
  std::vector<std::byte> bytes;
  weight_matrix view;
  std::vector<float> dequantized; ///< [n, k]: what the kernel should multiply by

  owned_weight(weight_type t, uint32_t k, uint32_t n, uint32_t seed) {
    bytes.resize(row_bytes(t, k) * n);
    view = {t, k, n, bytes.data()};
    if (t == weight_type::q4_k || t == weight_type::q6_k) {
      randomize_kquant(t, bytes, seed);
    } else {
      const auto src = random_floats(static_cast<size_t>(k) * n, seed);
      for (uint32_t r = 0; r < n; ++r) {
        (void)quantize_row(t, src.data() + static_cast<size_t>(r) * k,
                           bytes.data() + row_bytes(t, k) * r, k);
      }
    }
    dequantized.resize(static_cast<size_t>(k) * n);
    for (uint32_t r = 0; r < n; ++r) {
      dequantize_row(t, view.row(r), dequantized.data() + static_cast<size_t>(r) * k, k);
    }
  }
};

/// Forces a kernel path for a scope, then restores the detected one.
struct isa_guard {
  explicit isa_guard(cpu_isa isa) : active(set_isa(isa)) {}
  ~isa_guard() { set_isa(detected_isa()); }
  isa_guard(const isa_guard&) = delete;
  isa_guard& operator=(const isa_guard&) = delete;
  cpu_isa active;
};

/// Every path this machine can run, scalar first.
inline std::vector<cpu_isa> runnable_isas() {
  std::vector<cpu_isa> out;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) out.push_back(static_cast<cpu_isa>(i));
  return out;
}

inline std::string source_dir() {
  const char* s = std::getenv("DYNAMO_SOURCE_DIR");
  return s != nullptr ? s : ".";
}

} // namespace dynamo::kernels::ref::test
