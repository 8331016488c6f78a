// kernels_cuda_tests: every CUDA kernel against its CPU reference. Without a
// usable device the binary prints why and exits 77, which CTest reports as
// skipped (SKIP_RETURN_CODE), so `ctest -L gpu` passes cleanly on CPU machines.
#define BOOST_TEST_NO_MAIN
#define BOOST_TEST_ALTERNATIVE_INIT_API
#include "kernels/cuda_check.cuh"

#include <boost/test/unit_test.hpp>

#include <cstdio>

namespace {
bool init_suite() {
  boost::unit_test::framework::master_test_suite().p_name.value = "kernels_cuda";
  return true;
}
} // namespace

int main(int argc, char* argv[]) {
  if (!dynamo::kernels::gpu::cuda_available()) {
    std::puts("kernels_cuda_tests: no usable CUDA device; skipped");
    return 77;
  }
  return boost::unit_test::unit_test_main(&init_suite, argc, argv);
}
