// The run-list copy kernel against a memcpy per run on the host: 16-byte runs
// longer than one CTA's chunk, odd offsets and lengths (the byte path), and
// bytes outside every run left untouched.
#include "kernels/block_copy.cuh"
#include "tests/kernels/cuda/cuda_test_util.hpp"

#include <cstring>

namespace gpu = dynamo::kernels::gpu;
using namespace dynamo::kernels::gpu::test;

namespace {

void check_runs(const std::vector<gpu::byte_run>& runs, size_t src_bytes, size_t dst_bytes) {
  std::vector<uint8_t> src(src_bytes), dst(dst_bytes, 0xee);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + i / 977);
  std::vector<uint8_t> want = dst;
  uint64_t longest = 0;
  for (const auto& r : runs) {
    std::memcpy(want.data() + r.dst_offset, src.data() + r.src_offset, r.length);
    longest = std::max(longest, r.length);
  }
  device_buffer<uint8_t> d_src(src), d_dst(dst), d_runs(runs.size() * sizeof(gpu::byte_run));
  CUDA_CHECK(cudaMemcpy(d_runs.get(), runs.data(), runs.size() * sizeof(gpu::byte_run), cudaMemcpyHostToDevice));
  gpu::block_copy_args a;
  a.runs = reinterpret_cast<const gpu::byte_run*>(d_runs.get());
  a.n_runs = static_cast<uint32_t>(runs.size());
  a.longest = longest;
  a.src = d_src.get();
  a.dst = d_dst.get();
  CUDA_CHECK(gpu::launch_block_copy(a, nullptr));
  BOOST_TEST(d_dst.download() == want);
}

} // namespace

BOOST_AUTO_TEST_SUITE(block_copy_cuda)

BOOST_AUTO_TEST_CASE(aligned_runs_longer_than_a_chunk_land_where_asked) {
  const uint64_t block = 192 * 1024; // three 64 KiB chunks per run
  check_runs({{0, 5 * block, block}, {3 * block, 0, block}, {block, 2 * block, 2 * block}}, 4 * block, 6 * block);
}

BOOST_AUTO_TEST_CASE(aligned_runs_that_end_mid_chunk_copy_their_tails) {
  // Lengths that are not multiples of a chunk or of one unrolled sweep (4 x 256 x 16 bytes).
  check_runs({{0, 0, 16 * 1000}, {16 * 2000, 16 * 5000, 48}, {16 * 3000, 16 * 7001, 65536 + 16 * 37}},
             16 * 8000, 16 * 13000);
}

BOOST_AUTO_TEST_CASE(odd_offsets_and_lengths_take_the_byte_path) {
  check_runs({{1, 7, 100003}, {200000, 150001, 3}, {17, 300000, 65536 + 5}}, 400000, 400000);
}

BOOST_AUTO_TEST_CASE(empty_and_invalid_lists) {
  gpu::block_copy_args a;
  BOOST_TEST(gpu::launch_block_copy(a, nullptr) == cudaSuccess); // nothing to do
  a.n_runs = 1;
  a.longest = 16;
  BOOST_TEST(gpu::launch_block_copy(a, nullptr) == cudaErrorInvalidValue); // null pointers
}

BOOST_AUTO_TEST_SUITE_END()
