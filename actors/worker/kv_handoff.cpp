#include "actors/worker/kv_handoff.hpp"

#include "runtime/protocol/codec.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace dynamo::actors {

planes::kv_region region_of(const engine::kv_memory_view& mem) {
  planes::kv_region r;
  r.base = mem.base;
  r.num_blocks = mem.num_blocks;
  r.block_stride = mem.block_stride;
  r.memory = mem.on_device ? planes::kv_memory::cuda_device : planes::kv_memory::host;
  r.device = mem.device;
  return r;
}

kv_handoff::kv_handoff(kv_handoff_config cfg, uint64_t worker_id,
                       std::shared_ptr<planes::request_client> client)
  : cfg_(std::move(cfg)), worker_id_(worker_id), client_(std::move(client)) {}

kv_handoff::~kv_handoff() = default;

uint32_t kv_handoff::staging_slots(const engine::kv_memory_view& mem) const noexcept {
  const uint64_t slots = cfg_.staging_bytes / std::max<uint64_t>(1, mem.layout.bytes_per_block);
  return static_cast<uint32_t>(std::clamp<uint64_t>(slots, 1, mem.num_blocks));
}

bool kv_handoff::staged(const engine::kv_memory_view& mem) const noexcept {
  using protocol::kv_transport_kind;
  return mem.on_device && (cfg_.transport == kv_transport_kind::ucx || cfg_.transport == kv_transport_kind::tcp);
}

expected<std::vector<protocol::kv_connection_info>>
kv_handoff::receiver_offers(const engine::kv_memory_view& mem) {
  if (!receiver_) {
    planes::kv_receiver_config rc;
    rc.layout = mem.layout;
    rc.region = region_of(mem);
    rc.options.tcp.bind_host = cfg_.bind_host;
    rc.options.tcp.advertise_host = cfg_.advertise_host;
    // ucx allocates the slots itself, in shared memory: a prefill worker on this
    // host then copies its blocks straight in (one copy, several threads).
    const bool ucx_slots = staged(mem) && cfg_.transport == protocol::kv_transport_kind::ucx;
    if (staged(mem)) {
      recv_device_ = rc.region;
      if (ucx_slots) {
        rc.allocate_region = true;
        rc.region = {nullptr, staging_slots(mem), mem.layout.bytes_per_block, planes::kv_memory::host, 0};
      } else {
        recv_staging_ = std::make_shared<planes::kv_staging_pool>(staging_slots(mem), mem.layout.bytes_per_block);
        rc.region = recv_staging_->region();
      }
    }
    auto r = planes::make_kv_receiver(cfg_.transport, rc);
    if (!r)
      return r.error();
    receiver_ = std::move(*r);
    if (ucx_slots) // the pool keeps the receiver, and so the slots, alive
      recv_staging_ = std::make_shared<planes::kv_staging_pool>(receiver_->region(), receiver_);
    spdlog::info("worker {:016x}: KV receiver ready ({})", worker_id_, receiver_->transport());
  }
  return receiver_->offers();
}

void kv_handoff::pull(const protocol::kv_prefill_result& source, protocol::kv_push_request req,
                      std::function<void(caf::error)> done) {
  if (recv_staging_ && !req.destination_block_ids.empty()) {
    // The prefill worker writes into staging slots; they are copied into the
    // device blocks once every byte has landed.
    auto slots = recv_staging_->acquire(req.destination_block_ids.size());
    if (!slots)
      return done(make_error(errc::overloaded, "kv staging: no free host slots for the transfer"));
    auto device_blocks = std::move(req.destination_block_ids);
    req.destination_block_ids = *slots;
    done = [pool = recv_staging_, device = recv_device_, slots = *slots, device_blocks = std::move(device_blocks),
            quarantine = cfg_.timeout, done = std::move(done)](caf::error err) {
      if (err) {
        pool->release_later(slots, quarantine); // the push may still be landing in them
      } else {
        if (auto copied = pool->scatter(slots, device, device_blocks); !copied)
          err = copied.error();
        pool->release(slots);
      }
      done(std::move(err));
    };
  }
  auto result = std::make_shared<std::optional<protocol::kv_transfer_status>>();
  (void) client_->call(
    source.transfer_address, source.transfer_endpoint, protocol::encode(req),
    [result](planes::bytes item) {
      if (auto st = protocol::decode<protocol::kv_transfer_status>(item))
        *result = *st;
    },
    [result, done = std::move(done)](const caf::error& err) {
      if (err)
        return done(err);
      if (!*result)
        return done(make_error(errc::malformed_message, "kv_push ended without a status"));
      done(protocol::status_error(**result));
    });
}

void kv_handoff::push(const engine::kv_memory_view& mem, const protocol::kv_push_request& req,
                      std::function<void(protocol::kv_transfer_status)> done) {
  uint64_t id = next_transfer_++;
  const bool staging = staged(mem);
  if (!sender_) {
    planes::kv_sender_config sc;
    sc.layout = mem.layout;
    sc.region = region_of(mem);
    if (staging) {
      send_staging_ = std::make_shared<planes::kv_staging_pool>(staging_slots(mem), mem.layout.bytes_per_block);
      sc.region = send_staging_->region();
    }
    auto s = planes::make_kv_sender(cfg_.transport, sc);
    if (!s)
      return done(protocol::failed_status(id, worker_id_, s.error()));
    sender_ = std::move(*s);
  }
  // Staged: the transport sees host memory (the slots), not the device.
  auto offer = planes::select_offer(req.offers, planes::local_host_id(),
                                    staging ? planes::kv_memory::host : region_of(mem).memory);
  if (!offer)
    return done(protocol::failed_status(id, worker_id_, offer.error()));
  protocol::kv_transfer_request tr;
  tr.transfer_id = id;
  tr.source_worker_id = worker_id_;
  tr.source_block_ids = req.source_block_ids;
  tr.destination_block_ids = req.destination_block_ids;
  tr.layout = req.layout;
  tr.connection = std::move(*offer);
  if (staging && !tr.source_block_ids.empty()) {
    auto slots = send_staging_->acquire(tr.source_block_ids.size());
    if (!slots)
      return done(protocol::failed_status(
          id, worker_id_, make_error(errc::overloaded, "kv staging: no free host slots for the transfer")));
    if (auto copied = send_staging_->gather(region_of(mem), tr.source_block_ids, *slots); !copied) {
      send_staging_->release(*slots);
      return done(protocol::failed_status(id, worker_id_, copied.error()));
    }
    tr.source_block_ids = *slots;
    done = [pool = send_staging_, slots = *slots, quarantine = cfg_.timeout,
            done = std::move(done)](protocol::kv_transfer_status st) {
      if (st.ok())
        pool->release(slots);
      else
        pool->release_later(slots, quarantine); // a failed send may still be reading them
      done(std::move(st));
    };
  }
  sender_->send(tr, cfg_.timeout, std::move(done));
}

std::chrono::microseconds kv_handoff::simulated_time(const protocol::kv_layout& layout,
                                                     size_t blocks) const {
  double bytes = static_cast<double>(layout.bytes_per_block) * static_cast<double>(blocks);
  return std::chrono::microseconds(static_cast<int64_t>(bytes / cfg_.simulated_bandwidth * 1e6));
}

} // namespace dynamo::actors
