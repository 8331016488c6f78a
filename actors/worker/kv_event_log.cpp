#include "actors/worker/kv_event_log.hpp"

#include "runtime/protocol/codec.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::actors {

kv_event_log::kv_event_log(uint64_t worker_id, std::shared_ptr<planes::event_publisher> publisher)
  : worker_id_(worker_id), publisher_(std::move(publisher)), buffer_({worker_id, 0}) {}

void kv_event_log::publish_locked(protocol::kv_event ev) {
  ev.event_id = next_id_++;
  if (auto ok = buffer_.record(ev); !ok)
    spdlog::warn("worker {:016x}: kv event #{} not recorded: {}", worker_id_, ev.event_id, describe(ok.error()));
  protocol::router_event re{worker_id_, std::move(ev)};
  if (auto ok = publisher_->publish(kv_events_topic, protocol::encode(re)); !ok)
    spdlog::warn("worker {:016x}: kv event not published: {}", worker_id_, describe(ok.error()));
}

void kv_event_log::publish(std::vector<protocol::kv_event> events) {
  std::lock_guard lk{mtx_};
  for (auto& ev : events)
    publish_locked(std::move(ev));
}

void kv_event_log::publish_cleared() {
  protocol::kv_event ev;
  ev.kind = protocol::kv_event_kind::cleared;
  std::lock_guard lk{mtx_};
  publish_locked(std::move(ev));
}

protocol::kv_replay kv_event_log::answer(const protocol::kv_resync_request& req) const {
  std::lock_guard lk{mtx_};
  return buffer_.query(req);
}

expected<void> kv_event_log::serve(planes::request_server& server, const std::string& endpoint_path,
                                   std::shared_ptr<kv_event_log> log) {
  return server.serve(endpoint_path, [log](planes::bytes request, planes::response_stream_ptr stream) {
    auto req = protocol::decode<protocol::kv_resync_request>(request);
    if (!req)
      return stream->fail(req.error());
    (void) stream->send(protocol::encode(log->answer(*req)));
    stream->finish();
  });
}

} // namespace dynamo::actors
