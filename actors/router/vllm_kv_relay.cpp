#include "actors/router/vllm_kv_relay.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>

namespace dynamo::actors {

expected<std::optional<vllm_kv_relay_config>>
vllm_kv_relay_config_of(const std::map<std::string, std::string>& metadata, uint64_t worker_id,
                        uint32_t kv_block_size) {
  auto get = [&](std::string_view key) -> std::string {
    auto it = metadata.find(std::string{key});
    return it == metadata.end() ? std::string{} : it->second;
  };
  vllm_kv_relay_config c;
  c.endpoint = get(protocol::zmq_kv_events_key);
  if (c.endpoint.empty())
    return std::optional<vllm_kv_relay_config>{};
  c.replay_endpoint = get(protocol::zmq_kv_replay_key);
  c.topic = get(protocol::zmq_kv_topic_key);
  c.relay.worker_id = worker_id;
  c.relay.kv_block_size = kv_block_size;
  c.relay.replay = !c.replay_endpoint.empty();
  if (auto rank = get(protocol::zmq_kv_dp_rank_key); !rank.empty()) {
    auto [end, ec] = std::from_chars(rank.data(), rank.data() + rank.size(), c.relay.dp_rank);
    if (ec != std::errc{} || end != rank.data() + rank.size())
      return make_error(errc::config_error,
                        fmt::format("{}: '{}' is not a data-parallel rank",
                                    protocol::zmq_kv_dp_rank_key, rank));
  }
  return std::optional<vllm_kv_relay_config>{std::move(c)};
}

vllm_kv_relay::vllm_kv_relay(vllm_kv_relay_config config, sink to_router)
    : config_(std::move(config)), sink_(std::move(to_router)), relay_(config_.relay) {}

vllm_kv_relay::~vllm_kv_relay() { source_.reset(); } // no callback outlives the relay

expected<std::unique_ptr<vllm_kv_relay>> vllm_kv_relay::start(vllm_kv_relay_config config,
                                                              sink to_router) {
  std::unique_ptr<vllm_kv_relay> r(new vllm_kv_relay(std::move(config), std::move(to_router)));
  auto* self = r.get();
  planes::zmq_vllm_source_options o;
  o.endpoint = self->config_.endpoint;
  o.replay_endpoint = self->config_.replay_endpoint;
  o.topic = self->config_.topic;
  o.replay_timeout = self->config_.replay_timeout;
  o.callbacks.on_message = [self](std::span<const std::span<const uint8_t>> frames) {
    std::lock_guard lk{self->mtx_};
    self->deliver(self->relay_.on_message(frames));
  };
  o.callbacks.on_replay_batch = [self](uint64_t seq, std::span<const uint8_t> payload) {
    std::lock_guard lk{self->mtx_};
    self->deliver(self->relay_.on_replay_batch(seq, payload));
  };
  o.callbacks.on_replay_end = [self](bool complete) {
    std::lock_guard lk{self->mtx_};
    self->deliver(self->relay_.on_replay_end(complete));
  };
  // Callbacks run only once the source exists, on its own thread, which takes
  // mtx_ first: source_ is set before any of them can read it.
  std::unique_lock lk{self->mtx_};
  auto source = planes::make_zmq_vllm_source(std::move(o));
  if (!source)
    return source.error();
  self->source_ = std::move(*source);
  lk.unlock();
  spdlog::info("vllm kv relay {:016x}: subscribed to {} (replay {}, topic '{}', block size {})",
               self->config_.relay.worker_id, self->config_.endpoint,
               self->config_.replay_endpoint.empty() ? "none" : self->config_.replay_endpoint,
               self->config_.topic, self->config_.relay.kv_block_size);
  return r;
}

void vllm_kv_relay::deliver(route::vllm_relay_step step) {
  if (!step.events.empty() && sink_)
    sink_(std::move(step.events));
  if (!step.replay_from)
    return;
  if (auto ok = source_->request_replay(*step.replay_from); !ok) {
    spdlog::warn("vllm kv relay {:016x}: {}", config_.relay.worker_id, describe(ok.error()));
    deliver(relay_.on_replay_end(false));
  }
}

protocol::kv_replay vllm_kv_relay::answer(const protocol::kv_resync_request& request) const {
  std::lock_guard lk{mtx_};
  return relay_.answer(request);
}

route::vllm_relay_stats vllm_kv_relay::stats() const {
  std::lock_guard lk{mtx_};
  return relay_.stats();
}

planes::vllm_source_stats vllm_kv_relay::source_stats() const {
  return source_->stats();
}

} // namespace dynamo::actors
