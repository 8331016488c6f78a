// Helpers shared by the kernel tests: seeded random data, weight matrices of
// any type built from random floats, a guard that restores the kernel path,
// and the test-data directory. Test-only; single-threaded use.
#pragma once

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/quantize.hpp"
#include "kernels/reference/tensor_type.hpp"

#include <cstddef>
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

/// True for the super-block types, which owned_weight fills with random bytes.
inline bool random_block_type(tensor_type t) {
  return t == tensor_type::q4_k || t == tensor_type::q5_k || t == tensor_type::q6_k || t == tensor_type::iq4_xs;
}

/// Random bytes for the super-block types (every bit pattern of quants and
/// sub-block scales), with every fp16 scale field set to a small finite value
/// so the blocks dequantize to sane numbers.
inline void randomize_blocks(tensor_type t, std::vector<std::byte>& bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xff);
  std::uniform_real_distribution<float> dist(-0.02f, 0.02f);
  const size_t bb = geometry_of(t)->block_bytes;
  for (size_t off = 0; off + bb <= bytes.size(); off += bb) {
    auto put = [&](size_t at) {
      const uint16_t h = fp32_to_fp16(dist(rng));
      std::memcpy(bytes.data() + off + at, &h, 2);
    };
    if (t == tensor_type::q6_k) {
      put(offsetof(block_q6_k, d));
    } else {
      put(0); // d
      if (t != tensor_type::iq4_xs) put(2); // dmin
    }
  }
}

/// An owned weight matrix [n, k] of type t, quantized from random values.
struct owned_weight {
  std::vector<std::byte> bytes;
  weight_matrix view;
  std::vector<float> dequantized; ///< [n, k]: what the kernel should multiply by

  owned_weight(tensor_type t, uint32_t k, uint32_t n, uint32_t seed) {
    const size_t rb = *row_bytes(t, k);
    bytes.resize(rb * n);
    view = {t, k, n, bytes.data()};
    if (random_block_type(t)) {
      randomize_blocks(t, bytes, seed);
    } else {
      const auto src = random_floats(static_cast<size_t>(k) * n, seed);
      for (uint32_t r = 0; r < n; ++r) {
        (void)quantize_row(t, src.data() + static_cast<size_t>(r) * k, bytes.data() + rb * r, k);
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
