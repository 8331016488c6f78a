#include "actors/worker/kv_handoff.hpp"

#include "runtime/protocol/codec.hpp"

#include <spdlog/spdlog.h>

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

expected<std::vector<protocol::kv_connection_info>>
kv_handoff::receiver_offers(const engine::kv_memory_view& mem) {
  if (!receiver_) {
    planes::kv_receiver_config rc;
    rc.layout = mem.layout;
    rc.region = region_of(mem);
    auto r = planes::make_kv_receiver(cfg_.transport, rc);
    if (!r)
      return r.error();
    receiver_ = std::move(*r);
    spdlog::info("worker {:016x}: KV receiver ready ({})", worker_id_, receiver_->transport());
  }
  return receiver_->offers();
}

void kv_handoff::pull(const protocol::kv_prefill_result& source, protocol::kv_push_request req,
                      std::function<void(caf::error)> done) {
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
  if (!sender_) {
    planes::kv_sender_config sc;
    sc.layout = mem.layout;
    sc.region = region_of(mem);
    auto s = planes::make_kv_sender(cfg_.transport, sc);
    if (!s)
      return done(protocol::failed_status(id, worker_id_, s.error()));
    sender_ = std::move(*s);
  }
  auto offer = planes::select_offer(req.offers, planes::local_host_id(), region_of(mem).memory);
  if (!offer)
    return done(protocol::failed_status(id, worker_id_, offer.error()));
  protocol::kv_transfer_request tr;
  tr.transfer_id = id;
  tr.source_worker_id = worker_id_;
  tr.source_block_ids = req.source_block_ids;
  tr.destination_block_ids = req.destination_block_ids;
  tr.layout = req.layout;
  tr.connection = std::move(*offer);
  sender_->send(tr, cfg_.timeout, std::move(done));
}

std::chrono::microseconds kv_handoff::simulated_time(const protocol::kv_layout& layout,
                                                     size_t blocks) const {
  double bytes = static_cast<double>(layout.bytes_per_block) * static_cast<double>(blocks);
  return std::chrono::microseconds(static_cast<int64_t>(bytes / cfg_.simulated_bandwidth * 1e6));
}

} // namespace dynamo::actors
