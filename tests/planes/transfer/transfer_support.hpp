// Helpers shared by the transfer tests, the receiver peer process and the transfer
// benchmark: seeded block patterns, an owned host region, a status waiter, a child
// process with line-based stdin/stdout, and the receiver-peer command loop.
// status_waiter is thread-safe; the rest belongs to one thread.
#pragma once

#include "tests/support/child_process.hpp"

#include "planes/transfer/kv_transport.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <sys/types.h>

namespace dynamo::planes::transfer_testing {

using namespace std::chrono_literals;

/// Fills [p, p + n) with bytes derived from `seed` (splitmix64 stream).
void fill_pattern(uint8_t* p, size_t n, uint64_t seed);
/// Offset of the first byte differing from fill_pattern(seed), or nullopt.
[[nodiscard]] std::optional<size_t> find_mismatch(const uint8_t* p, size_t n, uint64_t seed);
/// The pattern seed of source block `block` in a run seeded `seed`.
[[nodiscard]] uint64_t block_seed(uint64_t seed, uint64_t block);

/// A page-aligned host buffer of `num_blocks` blocks at `stride` bytes.
class host_region {
public:
  host_region(uint64_t num_blocks, uint64_t stride);
  ~host_region();
  host_region(const host_region&) = delete;
  host_region& operator=(const host_region&) = delete;
  [[nodiscard]] const kv_region& region() const noexcept { return region_; }
  [[nodiscard]] uint8_t* block(uint64_t i) const noexcept;
  /// Fills block i with the pattern of block_seed(seed, i), for every block.
  void fill_all(uint64_t seed);

private:
  kv_region region_;
};

#if DYNAMO_TRANSFER_HAVE_CUDA
/// A device copy of host blocks (the cuda-ipc and device inproc tests, the
/// bench's cuda-ipc path): cudaMalloc'ed by upload(), freed on destruction.
class device_blocks {
public:
  device_blocks() = default;
  ~device_blocks();
  device_blocks(const device_blocks&) = delete;
  device_blocks& operator=(const device_blocks&) = delete;
  /// Copies `host` to the device; empty on success, else what CUDA refused.
  [[nodiscard]] std::string upload(const kv_region& host);
  /// The device blocks (memory cuda_device, device 0), once uploaded.
  [[nodiscard]] const kv_region& region() const noexcept { return region_; }

private:
  kv_region region_;
};
#endif

/// Collects kv_transfer_status values by transfer id.
class status_waiter {
public:
  [[nodiscard]] kv_status_callback callback();
  /// The status of `transfer_id` once it arrived, or nullopt after `deadline`.
  [[nodiscard]] std::optional<protocol::kv_transfer_status> wait(uint64_t transfer_id,
                                                                 std::chrono::milliseconds deadline = 20s);
  [[nodiscard]] size_t count(uint64_t transfer_id) const;

private:
  struct state {
    mutable std::mutex mutex;
    std::condition_variable cv;
    std::multimap<uint64_t, protocol::kv_transfer_status> got;
  };
  std::shared_ptr<state> s_ = std::make_shared<state>();
};

/// A child process with pipes on stdin and stdout (spawn with log prefix '[' to
/// skip UCX's own log lines, which it writes to stdout). The destructor SIGKILLs it.
using child_process = test::child_process;

/// The error text of a failed expected (test messages are built eagerly), else "".
template <class T>
[[nodiscard]] std::string why(const expected<T>& e) {
  return e ? std::string{} : describe(e.error());
}

[[nodiscard]] std::string to_hex(const std::vector<uint8_t>& bytes);
[[nodiscard]] std::optional<std::vector<uint8_t>> from_hex(const std::string& text);

/// One transport configuration the data-driven tests run over.
struct transport_backend {
  std::string name;
  std::string transport;
  ucx_method method = ucx_method::am;
  uint32_t batch_runs = 1;
  ucx_error_mode error_mode = ucx_error_mode::none;
  bool allocate = false; ///< the receiver allocates its region (UCX shared memory)
};
std::ostream& operator<<(std::ostream& os, const transport_backend& b);
/// The transport options `b` names.
[[nodiscard]] kv_transport_options options_for(const transport_backend& b);

/// A transfer of `source` blocks into `destination` blocks over `connection`.
[[nodiscard]] protocol::kv_transfer_request make_transfer_request(
    uint64_t id, uint64_t source_worker, std::vector<uint32_t> source, std::vector<uint32_t> destination,
    const protocol::kv_layout& layout, protocol::kv_connection_info connection);

/// The receiver-peer arguments: transport, blocks, layout dims, UCX knobs.
struct peer_args {
  std::string transport = "tcp";
  uint64_t num_blocks = 16;
  protocol::kv_layout layout;
  ucx_transport_options ucx;
  std::string device_memory; ///< "cuda" for a cuda-ipc receiver in device memory
  bool allocate = false;     ///< kv_receiver_config::allocate_region
};
[[nodiscard]] std::vector<std::string> to_argv(const peer_args& a);
[[nodiscard]] std::optional<peer_args> parse_peer_args(int argc, char** argv, int first);

/// The peer's command loop on stdin/stdout (see peer_main.cpp). Returns the exit code.
int run_receiver_peer(const peer_args& args);

/// Starts `program` `args...` as a receiver peer and reads its offers.
struct spawned_peer {
  child_process process;
  std::vector<protocol::kv_connection_info> offers;
};
[[nodiscard]] std::optional<spawned_peer> spawn_peer(const std::string& program,
                                                     const std::vector<std::string>& args);

} // namespace dynamo::planes::transfer_testing

namespace dynamo {
inline std::ostream& boost_test_print_type(std::ostream& os, errc code) {
  return os << to_string(code);
}
} // namespace dynamo
