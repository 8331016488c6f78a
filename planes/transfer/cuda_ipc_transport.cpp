// CUDA IPC: device-to-device copies into another process's exported region, with a
// tcp control channel carrying done / ack (the data never touches the host).
#include "planes/transfer/cuda_ipc_transport.hpp"

#include "planes/transfer/task_thread.hpp"
#include "planes/transfer/tcp_transport.hpp"
#include "planes/transfer/transfer_common.hpp"

#include "kernels/block_copy.cuh"

#include <cuda_runtime.h>

#include <spdlog/spdlog.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>

#include <unistd.h>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

caf::error cuda_error(cudaError_t e, const std::string& what) {
  return make_error(errc::device_error, fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

// The control channel: a tcp receiver without blocks, fed only done_rma frames.
kv_receiver_config control_config(const kv_receiver_config& c) {
  kv_receiver_config cc;
  cc.layout = c.layout;
  cc.region = kv_region{nullptr, 0, 0, kv_memory::host, 0};
  cc.on_received = c.on_received;
  cc.options = c.options;
  return cc;
}

class cuda_ipc_receiver final : public kv_receiver {
public:
  cuda_ipc_receiver(kv_receiver_config c, std::vector<uint8_t> handle, std::string bus,
                    std::unique_ptr<kv_receiver> control)
      : config_(std::move(c)), handle_(std::move(handle)), bus_(std::move(bus)),
        control_(std::move(control)) {}

  std::string_view transport() const noexcept override { return "cuda-ipc"; }

  std::vector<protocol::kv_connection_info> offers() const override {
    protocol::kv_cuda_ipc_descriptor d;
    d.receiver_id = id_;
    d.ipc_handle = handle_;
    d.pci_bus_id = bus_;
    d.pid = static_cast<uint64_t>(::getpid());
    d.geometry = geometry_of(config_.region, config_.layout);
    d.control = control_->offers().at(0).descriptor;
    return {{"cuda-ipc", local_host_id(), protocol::encode(d)}};
  }

  std::string debug_info() const override {
    return fmt::format("cuda-ipc receiver {:016x}: GPU {} ({}), {} blocks\n{}", id_,
                       config_.region.device, bus_, config_.region.num_blocks,
                       control_->debug_info());
  }

private:
  kv_receiver_config config_;
  uint64_t id_ = new_receiver_id();
  std::vector<uint8_t> handle_;
  std::string bus_;
  std::unique_ptr<kv_receiver> control_;
};

class cuda_ipc_sender final : public kv_sender {
public:
  cuda_ipc_sender(kv_sender_config c, std::unique_ptr<tcp_kv_sender> control, cudaStream_t stream)
      : config_(std::move(c)), control_(std::move(control)), stream_(stream) {}

  ~cuda_ipc_sender() override {
    thread_.reset(); // queued transfers end as cancelled; no copy is issued after this
    cudaSetDevice(config_.region.device);
    cudaStreamSynchronize(stream_);
    for (auto& [id, ptr] : opened_)
      cudaIpcCloseMemHandle(ptr);
    if (run_list_device_ != nullptr)
      cudaFree(run_list_device_);
    if (run_list_host_ != nullptr)
      cudaFreeHost(run_list_host_);
    cudaStreamDestroy(stream_);
  }

  std::string_view transport() const noexcept override { return "cuda-ipc"; }

  void send(const protocol::kv_transfer_request& request, std::chrono::milliseconds timeout,
            kv_status_callback done) override {
    auto started = clock::now();
    thread_->post([this, request, started, timeout, done = std::move(done)](bool cancelled) {
      if (cancelled)
        return done(error_status(request.transfer_id, request.source_worker_id, errc::cancelled,
                                 "kv sender destroyed", started));
      run(request, started, started + timeout, done);
    });
  }

  std::string debug_info() const override {
    return fmt::format("cuda-ipc sender: GPU {}, {} receivers opened\n{}", config_.region.device,
                       opened_count_.load(), control_->debug_info());
  }

private:
  void run(const protocol::kv_transfer_request& req, clock::time_point started,
           clock::time_point deadline, const kv_status_callback& done);
  expected<uint8_t*> open(const protocol::kv_cuda_ipc_descriptor& d);
  expected<void> copy(const protocol::kv_transfer_request& req, uint8_t* dst,
                      const protocol::kv_region_geometry& g, clock::time_point deadline);

  kv_sender_config config_;
  std::unique_ptr<tcp_kv_sender> control_;
  cudaStream_t stream_ = nullptr;
  std::map<uint64_t, void*> opened_; // receiver id -> mapped base (copy thread only)
  std::atomic<size_t> opened_count_{0};
  void* run_list_device_ = nullptr; // the block-copy kernel's run list (copy thread only)
  void* run_list_host_ = nullptr;   // pinned staging for it; the stream is idle between transfers
  size_t run_list_bytes_ = 0;
  std::unique_ptr<task_thread> thread_ = std::make_unique<task_thread>();
};

void cuda_ipc_sender::run(const protocol::kv_transfer_request& req, clock::time_point started,
                          clock::time_point deadline, const kv_status_callback& done) {
  auto fail = [&](const caf::error& e) {
    done(error_status(req.transfer_id, req.source_worker_id, code_of(e), message_of(e), started));
  };
  auto desc = decode_descriptor<protocol::kv_cuda_ipc_descriptor>(req.connection, "cuda-ipc");
  if (!desc)
    return fail(desc.error());
  if (req.connection.host_id != local_host_id())
    return fail(make_error(errc::unsupported, "cuda-ipc receiver is on another host"));
  if (desc->pid == static_cast<uint64_t>(::getpid()))
    return fail(make_error(errc::unsupported,
                           "cuda-ipc receiver is in this process (CUDA IPC needs two processes)"));
  if (desc->ipc_handle.size() != sizeof(cudaIpcMemHandle_t))
    return fail(make_error(errc::malformed_message, "cuda-ipc descriptor: bad handle size"));
  if (auto ok = check_request(req, config_.layout, config_.region, desc->geometry); !ok)
    return fail(ok.error());
  auto dst = open(*desc);
  if (!dst)
    return fail(dst.error());
  if (auto ok = copy(req, *dst, desc->geometry, deadline); !ok)
    return fail(ok.error());
  uint64_t bytes = req.source_block_ids.size() * config_.layout.bytes_per_block;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
  protocol::kv_connection_info control{"tcp", req.connection.host_id, desc->control};
  control_->notify(control, req.transfer_id, req.source_worker_id, req.source_block_ids.size(),
                   bytes, std::max(left, std::chrono::milliseconds{1}), done);
}

expected<uint8_t*> cuda_ipc_sender::open(const protocol::kv_cuda_ipc_descriptor& d) {
  if (auto it = opened_.find(d.receiver_id); it != opened_.end())
    return static_cast<uint8_t*>(it->second);
  if (auto e = cudaSetDevice(config_.region.device); e != cudaSuccess)
    return cuda_error(e, "cudaSetDevice");
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, d.ipc_handle.data(), sizeof handle);
  void* ptr = nullptr;
  if (auto e = cudaIpcOpenMemHandle(&ptr, handle, cudaIpcMemLazyEnablePeerAccess); e != cudaSuccess)
    return cuda_error(e, "cudaIpcOpenMemHandle");
  opened_[d.receiver_id] = ptr;
  opened_count_ = opened_.size();
  return static_cast<uint8_t*>(ptr);
}

// Enqueues every run on the stream, then waits for the stream's event (polling, so
// the deadline holds; a copy already issued still finishes on the device). The
// poll yields rather than sleeps: this thread only copies, and a sleep costs
// 50-100 us of timer slack on a copy that takes a few hundred.
expected<void> cuda_ipc_sender::copy(const protocol::kv_transfer_request& req, uint8_t* dst,
                                     const protocol::kv_region_geometry& g,
                                     clock::time_point deadline) {
  if (auto e = cudaSetDevice(config_.region.device); e != cudaSuccess)
    return cuda_error(e, "cudaSetDevice");
  auto runs = plan_runs(req.source_block_ids, req.destination_block_ids, config_.region.block_stride,
                        g.block_stride, config_.layout.bytes_per_block);
  // One kernel copies every run (a cudaMemcpyAsync per run costs ~5 us of
  // overhead each: 512 KiB blocks then moved at under 100 GB/s). The run list
  // goes to the device on the same stream, from pinned memory.
  if (runs.size() > 65535)
    return make_error(errc::invalid_argument, "cuda-ipc transport: more than 65535 runs in one transfer");
  const size_t list_bytes = runs.size() * sizeof(kernels::gpu::byte_run);
  if (list_bytes > run_list_bytes_) {
    if (run_list_device_ != nullptr)
      cudaFree(run_list_device_);
    if (run_list_host_ != nullptr)
      cudaFreeHost(run_list_host_);
    run_list_device_ = run_list_host_ = nullptr;
    run_list_bytes_ = 0;
    if (auto e = cudaMalloc(&run_list_device_, list_bytes); e != cudaSuccess)
      return cuda_error(e, "cudaMalloc (run list)");
    if (auto e = cudaMallocHost(&run_list_host_, list_bytes); e != cudaSuccess)
      return cuda_error(e, "cudaMallocHost (run list)");
    run_list_bytes_ = list_bytes;
  }
  auto* list = static_cast<kernels::gpu::byte_run*>(run_list_host_);
  uint64_t longest = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    list[i] = {runs[i].src_offset, runs[i].dst_offset, runs[i].length};
    longest = std::max(longest, runs[i].length);
  }
  if (auto e = cudaMemcpyAsync(run_list_device_, run_list_host_, list_bytes, cudaMemcpyHostToDevice, stream_);
      e != cudaSuccess)
    return cuda_error(e, "run list upload");
  kernels::gpu::block_copy_args a;
  a.runs = static_cast<const kernels::gpu::byte_run*>(run_list_device_);
  a.n_runs = static_cast<uint32_t>(runs.size());
  a.longest = longest;
  a.src = config_.region.base;
  a.dst = dst;
  if (auto e = kernels::gpu::launch_block_copy(a, stream_); e != cudaSuccess)
    return cuda_error(e, "block copy");
  cudaEvent_t ev = nullptr;
  if (auto e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming); e != cudaSuccess)
    return cuda_error(e, "cudaEventCreate");
  cudaError_t state = cudaEventRecord(ev, stream_);
  while (state == cudaSuccess) {
    state = cudaEventQuery(ev);
    if (state != cudaErrorNotReady)
      break;
    state = cudaSuccess;
    if (clock::now() >= deadline) {
      cudaEventDestroy(ev);
      return make_error(errc::timeout, fmt::format("kv transfer {}: device copy timed out", req.transfer_id));
    }
    std::this_thread::yield();
  }
  cudaEventDestroy(ev);
  if (state != cudaSuccess)
    return cuda_error(state, "device copy");
  return {};
}

} // namespace

bool cuda_device_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

expected<std::unique_ptr<kv_receiver>> make_cuda_ipc_receiver(kv_receiver_config config) {
  if (config.region.memory != kv_memory::cuda_device)
    return make_error(errc::unsupported, "cuda-ipc transport: the region must be device memory");
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (!cuda_device_available())
    return make_error(errc::unsupported, "cuda-ipc transport: no CUDA device");
  if (auto e = cudaSetDevice(config.region.device); e != cudaSuccess)
    return cuda_error(e, "cudaSetDevice");
  cudaIpcMemHandle_t handle;
  if (auto e = cudaIpcGetMemHandle(&handle, config.region.base); e != cudaSuccess)
    return cuda_error(e, "cudaIpcGetMemHandle (the region must be a cudaMalloc allocation)");
  char bus[32] = {};
  if (auto e = cudaDeviceGetPCIBusId(bus, sizeof bus, config.region.device); e != cudaSuccess)
    return cuda_error(e, "cudaDeviceGetPCIBusId");
  auto control = make_tcp_receiver(control_config(config));
  if (!control)
    return control.error();
  std::vector<uint8_t> bytes(sizeof handle);
  std::memcpy(bytes.data(), &handle, sizeof handle);
  return std::unique_ptr<kv_receiver>{
      new cuda_ipc_receiver{std::move(config), std::move(bytes), bus, std::move(*control)}};
}

expected<std::unique_ptr<kv_sender>> make_cuda_ipc_sender(kv_sender_config config) {
  if (config.region.memory != kv_memory::cuda_device)
    return make_error(errc::unsupported, "cuda-ipc transport: the region must be device memory");
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (!cuda_device_available())
    return make_error(errc::unsupported, "cuda-ipc transport: no CUDA device");
  if (auto e = cudaSetDevice(config.region.device); e != cudaSuccess)
    return cuda_error(e, "cudaSetDevice");
  cudaStream_t stream = nullptr;
  if (auto e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess)
    return cuda_error(e, "cudaStreamCreate");
  kv_sender_config control_cfg{config.layout, kv_region{nullptr, 0, 0, kv_memory::host, 0},
                               config.options};
  auto control = make_tcp_sender(std::move(control_cfg));
  if (!control) {
    cudaStreamDestroy(stream);
    return control.error();
  }
  return std::unique_ptr<kv_sender>{new cuda_ipc_sender{std::move(config), std::move(*control), stream}};
}

} // namespace dynamo::planes
