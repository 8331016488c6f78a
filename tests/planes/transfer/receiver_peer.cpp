// The receiver-peer loop: a kv_receiver in its own process, driven over stdin/stdout
// by the process tests and the benchmark. It prints "OFFER <hex msgpack offers>",
// then answers one line per command:
//   WAIT <transfer id> <ms>         -> "STATUS <code> <blocks> <bytes>" | "NONE"
//   VERIFY <seed> <src>:<dst>[,...] -> "OK" | "BAD <dst> <offset>"
//   INFO                            -> debug_info lines prefixed "| ", then "END"
//   QUIT                            -> exits 0
#include "transfer_support.hpp"

#include "runtime/protocol/codec.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>

#if DYNAMO_TRANSFER_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace dynamo::planes::transfer_testing {

namespace {

void say(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

// Reads block `dst` into `out` (device memory is copied back first).
bool read_block(const kv_region& r, uint64_t dst, uint64_t bytes, std::vector<uint8_t>& out) {
  out.resize(bytes);
  auto* src = static_cast<const uint8_t*>(r.base) + dst * r.block_stride;
  if (r.memory == kv_memory::host) {
    std::memcpy(out.data(), src, bytes);
    return true;
  }
#if DYNAMO_TRANSFER_HAVE_CUDA
  return cudaMemcpy(out.data(), src, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
#else
  return false;
#endif
}

std::string verify(const kv_region& r, uint64_t bpb, std::istringstream& in) {
  uint64_t seed = 0;
  std::string pairs;
  in >> seed >> pairs;
  std::istringstream list{pairs};
  std::string pair;
  std::vector<uint8_t> buf;
  while (std::getline(list, pair, ',')) {
    auto colon = pair.find(':');
    if (colon == std::string::npos)
      return "BAD parse";
    uint64_t src = std::stoull(pair.substr(0, colon)), dst = std::stoull(pair.substr(colon + 1));
    if (dst >= r.num_blocks || !read_block(r, dst, bpb, buf))
      return "BAD " + std::to_string(dst) + " read";
    if (auto off = find_mismatch(buf.data(), bpb, block_seed(seed, src)))
      return "BAD " + std::to_string(dst) + " " + std::to_string(*off);
  }
  return "OK";
}

struct device_buffer {
  void* ptr = nullptr;
  ~device_buffer() {
#if DYNAMO_TRANSFER_HAVE_CUDA
    if (ptr)
      cudaFree(ptr);
#endif
  }
};

} // namespace

int run_receiver_peer(const peer_args& args) {
  const uint64_t bpb = args.layout.bytes_per_block;
  host_region host{args.device_memory.empty() ? args.num_blocks : 0, bpb};
  device_buffer device;
  kv_receiver_config config;
  config.layout = args.layout;
  config.region = host.region();
  config.options.ucx = args.ucx;
  if (!args.device_memory.empty()) {
#if DYNAMO_TRANSFER_HAVE_CUDA
    if (cudaMalloc(&device.ptr, args.num_blocks * bpb) != cudaSuccess) {
      say("ERROR cudaMalloc");
      return 1;
    }
    cudaMemset(device.ptr, 0, args.num_blocks * bpb);
    config.region = {device.ptr, args.num_blocks, bpb, kv_memory::cuda_device, 0};
#else
    say("ERROR no CUDA in this build");
    return 1;
#endif
  }
  if (args.allocate) {
    config.allocate_region = true;
    config.region = {nullptr, args.num_blocks, bpb, kv_memory::host, 0};
  }
  status_waiter waiter;
  config.on_received = waiter.callback();
  auto receiver = make_kv_receiver(args.transport, config);
  if (!receiver) {
    say("ERROR " + describe(receiver.error()));
    return 1;
  }
  if (args.allocate)
    config.region = (*receiver)->region();
  say("OFFER " + to_hex(protocol::encode((*receiver)->offers())));
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in{line};
    std::string cmd;
    in >> cmd;
    if (cmd == "WAIT") {
      uint64_t id = 0, ms = 0;
      in >> id >> ms;
      auto s = waiter.wait(id, std::chrono::milliseconds{ms});
      say(s ? "STATUS " + std::to_string(s->code) + " " + std::to_string(s->blocks) + " " +
                  std::to_string(s->bytes)
            : std::string{"NONE"});
    } else if (cmd == "VERIFY") {
      say(verify(config.region, bpb, in));
    } else if (cmd == "INFO") {
      std::istringstream info{(*receiver)->debug_info()};
      for (std::string l; std::getline(info, l);)
        say("| " + l);
      say("END");
    } else if (cmd == "QUIT") {
      return 0;
    } else {
      say("ERROR unknown command");
    }
  }
  return 0;
}

} // namespace dynamo::planes::transfer_testing
