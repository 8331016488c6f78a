#include "planes/transfer/inproc_transport.hpp"

#include "planes/transfer/task_thread.hpp"
#include "planes/transfer/transfer_common.hpp"

#include <fmt/format.h>

#if DYNAMO_TRANSFER_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace dynamo::planes {

namespace {

using namespace transfer_detail;

// What a sender reaches through the registry. `mutex` is held during a copy and
// during on_received, so a closing receiver waits for both.
struct inproc_target {
  uint64_t id = 0;
  kv_receiver_config config;
  std::mutex mutex;
  std::condition_variable cv;
  bool paused = false;
  bool closed = false;
};

std::mutex registry_mutex;
std::unordered_map<uint64_t, std::weak_ptr<inproc_target>>& registry() {
  static std::unordered_map<uint64_t, std::weak_ptr<inproc_target>> map;
  return map;
}

std::shared_ptr<inproc_target> find_target(uint64_t id) {
  std::lock_guard lock{registry_mutex};
  auto it = registry().find(id);
  return it == registry().end() ? nullptr : it->second.lock();
}

class inproc_receiver_impl final : public inproc_receiver {
public:
  explicit inproc_receiver_impl(std::shared_ptr<inproc_target> t) : target_(std::move(t)) {
    std::lock_guard lock{registry_mutex};
    registry()[target_->id] = target_;
  }

  ~inproc_receiver_impl() override {
    {
      std::lock_guard lock{registry_mutex};
      registry().erase(target_->id);
    }
    std::lock_guard lock{target_->mutex}; // waits for a copy in progress
    target_->closed = true;
    target_->cv.notify_all();
  }

  std::string_view transport() const noexcept override { return "inproc"; }

  std::vector<protocol::kv_connection_info> offers() const override {
    protocol::kv_inproc_descriptor d{target_->id,
                                     geometry_of(target_->config.region, target_->config.layout)};
    return {{"inproc", local_host_id(), protocol::encode(d)}};
  }

  std::string debug_info() const override {
    return fmt::format("inproc receiver {:016x}: {} blocks, stride {}", target_->id,
                       target_->config.region.num_blocks, target_->config.region.block_stride);
  }

  void set_paused(bool paused) override {
    std::lock_guard lock{target_->mutex};
    target_->paused = paused;
    target_->cv.notify_all();
  }

private:
  std::shared_ptr<inproc_target> target_;
};

class inproc_sender final : public kv_sender {
public:
  explicit inproc_sender(kv_sender_config c) : config_(std::move(c)) {}

  std::string_view transport() const noexcept override { return "inproc"; }

  void send(const protocol::kv_transfer_request& request, std::chrono::milliseconds timeout,
            kv_status_callback done) override {
    auto started = clock::now();
    thread_.post([this, request, started, deadline = started + timeout,
                  done = std::move(done)](bool cancelled) {
      if (cancelled) {
        done(error_status(request.transfer_id, request.source_worker_id, errc::cancelled,
                          "kv sender destroyed", started));
        return;
      }
      done(run(request, started, deadline));
    });
  }

  std::string debug_info() const override {
    return fmt::format("inproc sender: {} blocks", config_.region.num_blocks);
  }

private:
  protocol::kv_transfer_status run(const protocol::kv_transfer_request& req,
                                   clock::time_point started, clock::time_point deadline) {
    auto fail = [&](const caf::error& err) {
      return error_status(req.transfer_id, req.source_worker_id, code_of(err), message_of(err),
                          started);
    };
    auto desc = decode_descriptor<protocol::kv_inproc_descriptor>(req.connection, "inproc");
    if (!desc)
      return fail(desc.error());
    if (auto ok = check_request(req, config_.layout, config_.region, desc->geometry); !ok)
      return fail(ok.error());
    auto target = find_target(desc->receiver_id);
    if (!target)
      return fail(make_error(errc::disconnected, "inproc receiver gone"));
    std::unique_lock lock{target->mutex};
    if (!target->cv.wait_until(lock, deadline, [&] { return !target->paused || target->closed; }))
      return fail(make_error(errc::timeout, "inproc receiver did not take the transfer in time"));
    if (target->closed)
      return fail(make_error(errc::disconnected, "inproc receiver gone"));
    // The descriptor's geometry must be the live receiver's, not a stale copy.
    const auto& region = target->config.region;
    if (region.num_blocks != desc->geometry.num_blocks ||
        region.block_stride != desc->geometry.block_stride)
      return fail(make_error(errc::invalid_argument, "inproc descriptor does not match receiver"));
    const auto bpb = config_.layout.bytes_per_block;
    auto runs = plan_runs(req.source_block_ids, req.destination_block_ids,
                          config_.region.block_stride, region.block_stride, bpb);
    auto* src = static_cast<const uint8_t*>(config_.region.base);
    auto* dst = static_cast<uint8_t*>(region.base);
    uint64_t bytes = 0;
    const bool device = config_.region.memory == kv_memory::cuda_device || region.memory == kv_memory::cuda_device;
#if DYNAMO_TRANSFER_HAVE_CUDA
    if (device) {
      const int dev = config_.region.memory == kv_memory::cuda_device ? config_.region.device : region.device;
      if (auto e = cudaSetDevice(dev); e != cudaSuccess)
        return fail(make_error(errc::device_error, fmt::format("inproc transport: cudaSetDevice: {}",
                                                               cudaGetErrorString(e))));
    }
#endif
    for (const auto& r : runs) {
      if (device) {
#if DYNAMO_TRANSFER_HAVE_CUDA
        // Unified addressing: one call covers device-device and host-device copies.
        if (auto e = cudaMemcpy(dst + r.dst_offset, src + r.src_offset, r.length, cudaMemcpyDefault); e != cudaSuccess)
          return fail(make_error(errc::device_error, fmt::format("inproc transport: cudaMemcpy: {}",
                                                                 cudaGetErrorString(e))));
#endif
      } else {
        std::memcpy(dst + r.dst_offset, src + r.src_offset, r.length);
      }
      bytes += r.length;
    }
    auto status = ok_status(req.transfer_id, req.source_worker_id, req.source_block_ids.size(),
                            bytes, started);
    if (target->config.on_received)
      target->config.on_received(status);
    return status;
  }

  kv_sender_config config_;
  task_thread thread_; // last member: stops before config_ goes away
};

// Host memory always; device memory (copied with cudaMemcpy) in CUDA builds,
// so two CUDA workers of one process can hand KV over without IPC.
expected<void> check_memory(const kv_region& region) {
#if DYNAMO_TRANSFER_HAVE_CUDA
  if (region.memory == kv_memory::host || region.memory == kv_memory::cuda_device)
    return {};
#else
  if (region.memory == kv_memory::host)
    return {};
#endif
  return make_error(errc::unsupported, "inproc transport: host memory only in a build without CUDA");
}

} // namespace

expected<std::unique_ptr<inproc_receiver>> make_inproc_receiver(kv_receiver_config config) {
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (auto ok = check_memory(config.region); !ok)
    return ok.error();
  auto t = std::make_shared<inproc_target>();
  t->id = new_receiver_id();
  t->config = std::move(config);
  return std::unique_ptr<inproc_receiver>{new inproc_receiver_impl{std::move(t)}};
}

expected<std::unique_ptr<kv_sender>> make_inproc_sender(kv_sender_config config) {
  if (auto ok = check_region(config.region, config.layout); !ok)
    return ok.error();
  if (auto ok = check_memory(config.region); !ok)
    return ok.error();
  return std::unique_ptr<kv_sender>{new inproc_sender{std::move(config)}};
}

} // namespace dynamo::planes
