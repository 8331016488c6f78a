// Helpers for the GPU kernel tests: owned device buffers, bf16/fp16 rounding
// on the host, normalised MSE (llama.cpp test-backend-ops' metric) and a
// CUDA-result check. Test-only; single-threaded use; needs a device.
#pragma once

#include "kernels/cuda_check.cuh"
#include "kernels/reference/tensor_type.hpp"

#include <boost/test/unit_test.hpp>

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace dynamo::kernels::gpu::test {

#define CUDA_CHECK(expr)                                                                                          \
  do {                                                                                                            \
    const cudaError_t cuda_check_err_ = (expr);                                                                   \
    BOOST_REQUIRE_MESSAGE(cuda_check_err_ == cudaSuccess, #expr << ": " << cudaGetErrorString(cuda_check_err_));  \
  } while (0)

/// A device allocation of n elements of T, freed on scope exit.
template <class T>
class device_buffer {
public:
  explicit device_buffer(size_t n) : n_(n) {
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), (n == 0 ? 1 : n) * sizeof(T)));
  }
  explicit device_buffer(const std::vector<T>& host) : device_buffer(host.size()) { upload(host); }
  ~device_buffer() { (void)cudaFree(p_); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void upload(const std::vector<T>& host) {
    BOOST_REQUIRE_LE(host.size(), n_);
    CUDA_CHECK(cudaMemcpy(p_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  void fill_bytes(int byte) { CUDA_CHECK(cudaMemset(p_, byte, n_ * sizeof(T))); }
  [[nodiscard]] std::vector<T> download() const {
    std::vector<T> host(n_);
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  [[nodiscard]] T* get() const noexcept { return p_; }
  [[nodiscard]] size_t size() const noexcept { return n_; }

private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

/// Float rounded to bf16 on the host (ref::fp32_to_bf16, round to nearest even).
inline float round_bf16(float f) { return ref::bf16_to_fp32(ref::fp32_to_bf16(f)); }

inline std::vector<__nv_bfloat16> to_bf16_vector(const std::vector<float>& v) {
  std::vector<__nv_bfloat16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16_rn(v[i]);
  return out;
}
inline std::vector<float> to_float_vector(const std::vector<__nv_bfloat16>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __bfloat162float(v[i]);
  return out;
}

/// Random floats already rounded to bf16, so host and device see the same values.
inline std::vector<float> random_bf16_values(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = round_bf16(dist(rng));
  return v;
}

/// sum (a - b)^2 / sum b^2, over the elements where `use` (if given) is true.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    err += d * d;
    ref += double(want[i]) * double(want[i]);
  }
  return ref == 0.0 ? err : err / ref;
}

/// Per-dtype NMSE thresholds (test-backend-ops uses 1e-7 for f32 ops; one
/// bf16 rounding of the output alone costs ~1e-6).
inline constexpr double nmse_bf16_out = 5e-5;
inline constexpr double nmse_f32_out = 1e-8;

} // namespace dynamo::kernels::gpu::test
