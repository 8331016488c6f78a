// GPU dequantization of every GGUF type (exact against the CPU reference
// after one rounding) and the cuBLAS GEMM against the CPU matmul.
#include "kernels/dequantize.cuh"
#include "kernels/gemm.cuh"
#include "kernels/reference/dequantize.hpp"
#include "kernels/reference/matmul.hpp"
#include "tests/kernels/cuda/cuda_test_util.hpp"
#include "tests/kernels/test_util.hpp"

#include <cuda_fp16.h>

namespace gpu = dynamo::kernels::gpu;
namespace ref = dynamo::kernels::ref;
using namespace dynamo::kernels::gpu::test;

namespace {

struct cublas_handle {
  cublasHandle_t h = nullptr;
  cublas_handle() { BOOST_REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS); }
  ~cublas_handle() { (void)cublasDestroy(h); }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
};

} // namespace

BOOST_AUTO_TEST_SUITE(dequantize_gemm)

BOOST_AUTO_TEST_CASE(dequantize_every_type_matches_reference_after_one_rounding) {
  for (uint32_t id = 0; id < 64; ++id) {
    const auto type = static_cast<ref::tensor_type>(id);
    if (!ref::is_computed(type)) continue;
    for (const auto out_type : {gpu::half_type::bf16, gpu::half_type::f16}) {
      const uint32_t k = ref::geometry_of(type)->block_elems == 256 ? 512 : 96, n_rows = 5;
      const ref::test::owned_weight w(type, k, n_rows, 11 + uint32_t(type));
      device_buffer<std::byte> src(w.bytes.size());
      CUDA_CHECK(cudaMemcpy(src.get(), w.bytes.data(), w.bytes.size(), cudaMemcpyHostToDevice));
      // Written into the middle of a wider buffer, as when fusing Q|K|V rows.
      const size_t dst_stride = k + 64, row0 = 2;
      device_buffer<uint16_t> dst((n_rows + 3) * dst_stride);
      dst.fill_bytes(0xff);
      gpu::dequantize_args a;
      a.type = type;
      a.src = src.get();
      a.n_rows = n_rows;
      a.k = k;
      a.dst = dst.get() + row0 * dst_stride;
      a.dst_stride = dst_stride;
      a.dst_type = out_type;
      CUDA_CHECK(gpu::launch_dequantize(a, nullptr));
      const auto got = dst.download();
      size_t mismatches = 0;
      for (uint32_t r = 0; r < n_rows; ++r) {
        for (uint32_t i = 0; i < k; ++i) {
          const float v = w.dequantized[size_t(r) * k + i];
          const uint16_t want = out_type == gpu::half_type::bf16 ? ref::fp32_to_bf16(v) : ref::fp32_to_fp16(v);
          mismatches += got[(row0 + r) * dst_stride + i] != want;
        }
        for (size_t i = k; i < dst_stride; ++i) BOOST_TEST_REQUIRE(got[(row0 + r) * dst_stride + i] == 0xffff);
      }
      BOOST_TEST_INFO("type " << ref::type_name(type) << " out " << int(out_type));
      BOOST_TEST(mismatches == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(dequantize_rejects_a_row_length_off_the_block_grid) {
  gpu::dequantize_args a;
  a.type = ref::tensor_type::q4_k;
  a.src = reinterpret_cast<const void*>(0x1000);
  a.dst = reinterpret_cast<void*>(0x1000);
  a.n_rows = 1;
  a.k = 96; // not a multiple of 256
  a.dst_stride = 96;
  BOOST_TEST(gpu::launch_dequantize(a, nullptr) == cudaErrorInvalidValue);
}

BOOST_AUTO_TEST_CASE(gemm_matches_reference_matmul_for_bf16_and_f32_outputs) {
  cublas_handle handle;
  struct shape {
    uint32_t m, n, k;
  };
  for (const shape s : {shape{1, 96, 64}, shape{7, 577, 576}, shape{33, 1536, 576}, shape{5, 64, 1536}}) {
    for (const auto out : {gpu::gemm_out::bf16, gpu::gemm_out::f32}) {
      const size_t x_stride = s.k + 8, w_stride = s.k, y_stride = s.n + 5;
      const auto x = random_bf16_values(size_t(s.m) * x_stride, s.m + s.k);
      const auto w = random_bf16_values(size_t(s.n) * w_stride, s.n + s.k, -0.1f, 0.1f);
      device_buffer<__nv_bfloat16> d_x(to_bf16_vector(x)), d_w(to_bf16_vector(w));
      device_buffer<float> d_y32(size_t(s.m) * y_stride);
      device_buffer<__nv_bfloat16> d_y16(size_t(s.m) * y_stride);
      gpu::gemm_args a;
      a.handle = handle.h;
      a.x = d_x.get();
      a.x_stride = x_stride;
      a.w = d_w.get();
      a.w_stride = w_stride;
      a.y = out == gpu::gemm_out::f32 ? static_cast<void*>(d_y32.get()) : static_cast<void*>(d_y16.get());
      a.y_stride = y_stride;
      a.y_type = out;
      a.m = s.m;
      a.n = s.n;
      a.k = s.k;
      CUDA_CHECK(gpu::launch_gemm(a, nullptr));

      std::vector<float> got(size_t(s.m) * s.n);
      const auto y32 = out == gpu::gemm_out::f32 ? d_y32.download() : std::vector<float>{};
      const auto y16 = out == gpu::gemm_out::bf16 ? to_float_vector(d_y16.download()) : std::vector<float>{};
      for (uint32_t i = 0; i < s.m; ++i) {
        for (uint32_t j = 0; j < s.n; ++j) {
          got[size_t(i) * s.n + j] = out == gpu::gemm_out::f32 ? y32[i * y_stride + j] : y16[i * y_stride + j];
        }
      }
      // The CPU matmul with the same values stored as BF16 weights.
      std::vector<uint16_t> w_bits(size_t(s.n) * s.k);
      for (size_t r = 0; r < s.n; ++r) {
        for (size_t c = 0; c < s.k; ++c) w_bits[r * s.k + c] = ref::fp32_to_bf16(w[r * w_stride + c]);
      }
      const ref::weight_matrix wm{ref::tensor_type::bf16, s.k, s.n, w_bits.data()};
      std::vector<float> want(size_t(s.m) * s.n);
      ref::matmul({x.data(), x_stride, s.m, {&wm, 1}, want.data(), s.n, nullptr, nullptr});
      BOOST_TEST_INFO("m " << s.m << " n " << s.n << " k " << s.k << " out " << int(out));
      BOOST_TEST(nmse(got, want) < (out == gpu::gemm_out::f32 ? 1e-6 : nmse_bf16_out));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
