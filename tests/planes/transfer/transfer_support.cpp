#include "transfer_support.hpp"

#include "runtime/protocol/codec.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>

#include <unistd.h>

#if DYNAMO_TRANSFER_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace dynamo::planes::transfer_testing {

namespace {

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

} // namespace

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  uint64_t state = seed;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = splitmix(state);
    std::memcpy(p + i, &v, 8);
  }
  if (i < n) {
    uint64_t v = splitmix(state);
    std::memcpy(p + i, &v, n - i);
  }
}

std::optional<size_t> find_mismatch(const uint8_t* p, size_t n, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = splitmix(state);
    uint8_t expect[8];
    std::memcpy(expect, &v, 8);
    for (size_t k = 0; k < 8 && i + k < n; ++k) {
      if (p[i + k] != expect[k])
        return i + k;
    }
  }
  return std::nullopt;
}

uint64_t block_seed(uint64_t seed, uint64_t block) {
  return seed * 0x100000001b3ull ^ (block + 1) * 0xc2b2ae3d27d4eb4full;
}

host_region::host_region(uint64_t num_blocks, uint64_t stride) {
  region_.num_blocks = num_blocks;
  region_.block_stride = stride;
  size_t bytes = std::max<uint64_t>(num_blocks * stride, 1);
  bytes = (bytes + 4095) / 4096 * 4096;
  region_.base = std::aligned_alloc(4096, bytes);
  std::memset(region_.base, 0, bytes);
}

host_region::~host_region() {
  std::free(region_.base);
}

#if DYNAMO_TRANSFER_HAVE_CUDA
device_blocks::~device_blocks() {
  if (region_.base != nullptr)
    (void)cudaFree(region_.base);
}

std::string device_blocks::upload(const kv_region& host) {
  const size_t bytes = host.num_blocks * host.block_stride;
  void* ptr = nullptr;
  if (auto err = cudaMalloc(&ptr, bytes); err != cudaSuccess)
    return std::string("cudaMalloc: ") + cudaGetErrorString(err);
  region_ = {ptr, host.num_blocks, host.block_stride, kv_memory::cuda_device, 0};
  if (auto err = cudaMemcpy(ptr, host.base, bytes, cudaMemcpyHostToDevice); err != cudaSuccess)
    return std::string("cudaMemcpy: ") + cudaGetErrorString(err);
  return {};
}
#endif

uint8_t* host_region::block(uint64_t i) const noexcept {
  return static_cast<uint8_t*>(region_.base) + i * region_.block_stride;
}

void host_region::fill_all(uint64_t seed) {
  for (uint64_t i = 0; i < region_.num_blocks; ++i)
    fill_pattern(block(i), region_.block_stride, block_seed(seed, i));
}

kv_status_callback status_waiter::callback() {
  return [s = s_](const protocol::kv_transfer_status& st) {
    std::lock_guard lock{s->mutex};
    s->got.emplace(st.transfer_id, st);
    s->cv.notify_all();
  };
}

std::optional<protocol::kv_transfer_status> status_waiter::wait(uint64_t id,
                                                                std::chrono::milliseconds deadline) {
  std::unique_lock lock{s_->mutex};
  if (!s_->cv.wait_for(lock, deadline, [&] { return s_->got.count(id) > 0; }))
    return std::nullopt;
  return s_->got.find(id)->second;
}

size_t status_waiter::count(uint64_t id) const {
  std::lock_guard lock{s_->mutex};
  return s_->got.count(id);
}

std::string to_hex(const std::vector<uint8_t>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

std::optional<std::vector<uint8_t>> from_hex(const std::string& text) {
  if (text.size() % 2 != 0)
    return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  };
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0)
      return std::nullopt;
    out.push_back(static_cast<uint8_t>(hi << 4 | lo));
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const transport_backend& b) {
  return os << b.name;
}

kv_transport_options options_for(const transport_backend& b) {
  kv_transport_options o;
  o.ucx.method = b.method;
  o.ucx.batch_runs = b.batch_runs;
  o.ucx.error_mode = b.error_mode;
  return o;
}

protocol::kv_transfer_request make_transfer_request(uint64_t id, uint64_t source_worker,
                                                    std::vector<uint32_t> source,
                                                    std::vector<uint32_t> destination,
                                                    const protocol::kv_layout& layout,
                                                    protocol::kv_connection_info connection) {
  protocol::kv_transfer_request r;
  r.transfer_id = id;
  r.source_worker_id = source_worker;
  r.source_block_ids = std::move(source);
  r.destination_block_ids = std::move(destination);
  r.layout = layout;
  r.connection = std::move(connection);
  return r;
}

std::vector<std::string> to_argv(const peer_args& a) {
  const auto& l = a.layout;
  return {a.transport,
          std::to_string(a.num_blocks),
          std::to_string(l.num_layers),
          std::to_string(l.block_size),
          std::to_string(l.num_kv_heads),
          std::to_string(l.head_dim),
          std::string{protocol::to_string(l.dtype)},
          a.ucx.method == ucx_method::put ? "put" : "am",
          a.ucx.error_mode == ucx_error_mode::peer ? "peer" : "none",
          a.ucx.tls.empty() ? "-" : a.ucx.tls,
          a.device_memory.empty() ? "host" : a.device_memory,
          std::to_string(a.ucx.progress_spin.count()),
          std::to_string(a.ucx.batch_runs),
          a.allocate ? "allocate" : "given"};
}

std::optional<peer_args> parse_peer_args(int argc, char** argv, int first) {
  if (argc - first != 14)
    return std::nullopt;
  try {
    peer_args a;
    char** v = argv + first;
    a.transport = v[0];
    a.num_blocks = std::stoull(v[1]);
    std::string dt = v[6];
    auto dtype = dt == "f32" ? protocol::kv_dtype::f32
                             : dt == "bf16" ? protocol::kv_dtype::bf16 : protocol::kv_dtype::f16;
    a.layout = protocol::make_block_major_layout(std::stoul(v[2]), std::stoul(v[3]), std::stoul(v[4]),
                                                 std::stoul(v[5]), dtype);
    a.ucx.method = std::string{v[7]} == "put" ? ucx_method::put : ucx_method::am;
    a.ucx.error_mode = std::string{v[8]} == "peer" ? ucx_error_mode::peer : ucx_error_mode::none;
    a.ucx.tls = std::string{v[9]} == "-" ? "" : v[9];
    a.device_memory = std::string{v[10]} == "host" ? "" : v[10];
    a.ucx.progress_spin = std::chrono::microseconds{std::stoll(v[11])};
    a.ucx.batch_runs = static_cast<uint32_t>(std::stoul(v[12]));
    a.allocate = std::string{v[13]} == "allocate";
    return a;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<spawned_peer> spawn_peer(const std::string& program,
                                       const std::vector<std::string>& args) {
  auto child = child_process::spawn(program, args, '[');
  if (!child)
    return std::nullopt;
  auto line = child->read_line(60s);
  if (!line || line->rfind("OFFER ", 0) != 0) {
    std::cerr << "peer did not offer: " << line.value_or("<nothing>") << "\n";
    return std::nullopt;
  }
  auto bytes = from_hex(line->substr(6));
  if (!bytes)
    return std::nullopt;
  auto offers = protocol::decode<std::vector<protocol::kv_connection_info>>(*bytes);
  if (!offers)
    return std::nullopt;
  return spawned_peer{std::move(*child), std::move(*offers)};
}

} // namespace dynamo::planes::transfer_testing
