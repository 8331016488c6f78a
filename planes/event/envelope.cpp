#include "planes/event/envelope.hpp"

#include "runtime/protocol/codec.hpp"

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

namespace dynamo::planes {
namespace {

struct wire_envelope {
  uint64_t publisher_id = 0;
  uint64_t sequence = 0;
  std::string topic;
  int64_t published_at_ms = 0;
  std::vector<uint8_t> payload; // msgpack bin
  DYNAMO_MSGPACK_MAP(publisher_id, sequence, topic, published_at_ms, payload);
};

} // namespace

bytes encode_envelope(const event_envelope& env) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk{buf};
  pk.pack_map(5);
  pk.pack(std::string_view{"publisher_id"});
  pk.pack(env.publisher_id);
  pk.pack(std::string_view{"sequence"});
  pk.pack(env.sequence);
  pk.pack(std::string_view{"topic"});
  pk.pack(env.topic);
  pk.pack(std::string_view{"published_at_ms"});
  pk.pack(env.published_at_ms);
  pk.pack(std::string_view{"payload"});
  pk.pack_bin(static_cast<uint32_t>(env.payload.size()));
  pk.pack_bin_body(reinterpret_cast<const char*>(env.payload.data()),
                   static_cast<uint32_t>(env.payload.size()));
  auto* p = reinterpret_cast<const uint8_t*>(buf.data());
  return bytes(p, p + buf.size());
}

expected<event_envelope> decode_envelope(std::span<const uint8_t> data, size_t max_payload_bytes) {
  protocol::unpack_limits lim;
  lim.array = 16;
  lim.map = 16;
  lim.str = max_topic_bytes;
  lim.bin = max_payload_bytes;
  lim.depth = 4;
  auto wire = protocol::decode<wire_envelope>(data, lim);
  if (!wire)
    return std::move(wire.error());
  if (wire->sequence == 0 || wire->topic.empty())
    return make_error(errc::malformed_message, "envelope without sequence or topic");
  return event_envelope{wire->publisher_id, wire->sequence, std::move(wire->topic),
                        wire->published_at_ms, std::move(wire->payload)};
}

sequence_tracker::result sequence_tracker::observe(const event_envelope& env) {
  auto key = std::make_pair(env.publisher_id, env.topic);
  auto it = last_.find(key);
  uint64_t due = it == last_.end() ? 1 : it->second + 1;
  if (env.sequence >= due || env.sequence == 1) { // == 1 below `due`: publisher restarted
    last_[key] = env.sequence;
    return {env.sequence == due ? verdict::in_order : verdict::gap, due};
  }
  return {verdict::stale, due};
}

} // namespace dynamo::planes
