#include "planes/discovery/record_codec.hpp"

#include "runtime/protocol/codec.hpp"

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

namespace dynamo::planes {

std::string_view to_string(health_state h) noexcept {
  switch (h) {
    case health_state::ready: return "ready";
    case health_state::unhealthy: return "unhealthy";
    case health_state::draining: return "draining";
  }
  return "unknown";
}

std::string_view to_string(discovery_event_kind k) noexcept {
  switch (k) {
    case discovery_event_kind::added: return "added";
    case discovery_event_kind::updated: return "updated";
    case discovery_event_kind::removed: return "removed";
  }
  return "unknown";
}

std::string instance_record::key() const {
  return instance_path(endpoint, instance);
}

expected<void> registration::set_health(health_state h) {
  return update([h](instance_record& r) { r.health = h; });
}

expected<void> registration::set_metadata(std::map<std::string, std::string> m) {
  return update([&m](instance_record& r) { r.metadata = std::move(m); });
}

bool instance_record::same_content(const instance_record& o) const {
  return endpoint == o.endpoint && instance == o.instance &&
         request_address == o.request_address && event_address == o.event_address &&
         health == o.health && metadata == o.metadata && payload == o.payload;
}

namespace discovery_codec {
namespace {

struct wire_record {
  uint32_t format = 1;
  std::string namespace_name;
  std::string component_name;
  std::string endpoint_name;
  uint64_t instance_id = 0;
  std::string request_address;
  std::string event_address;
  uint8_t health = 0;
  std::map<std::string, std::string> metadata;
  std::vector<uint8_t> payload; // msgpack bin
  int64_t lease_ttl_ms = 0;
  int64_t renewed_at_ms = 0;
  DYNAMO_MSGPACK_MAP(format, namespace_name, component_name, endpoint_name, instance_id,
                     request_address, event_address, health, metadata, payload, lease_ttl_ms,
                     renewed_at_ms);
};

bool is_hex16(std::string_view s) noexcept {
  if (s.size() != 16)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

} // namespace

bytes encode(const instance_record& rec) {
  wire_record w;
  w.namespace_name = rec.endpoint.namespace_name;
  w.component_name = rec.endpoint.component_name;
  w.endpoint_name = rec.endpoint.endpoint_name;
  w.instance_id = rec.instance;
  w.request_address = rec.request_address;
  w.event_address = rec.event_address;
  w.health = static_cast<uint8_t>(rec.health);
  w.metadata = rec.metadata;
  w.payload = rec.payload;
  w.lease_ttl_ms = rec.lease_ttl_ms;
  w.renewed_at_ms = rec.renewed_at_ms;
  return protocol::encode(w);
}

expected<instance_record> decode(std::string_view key, std::span<const uint8_t> data) {
  if (data.size() > max_record_bytes)
    return make_error(errc::malformed_message, "record too large");
  protocol::unpack_limits lim;
  lim.array = 64;
  lim.map = 1024;
  lim.str = 64u << 10;
  lim.bin = max_record_bytes;
  lim.depth = 4;
  auto w = protocol::decode<wire_record>(data, lim);
  if (!w)
    return std::move(w.error());
  instance_record rec;
  rec.endpoint = endpoint_id{w->namespace_name, w->component_name, w->endpoint_name};
  rec.instance = w->instance_id;
  rec.request_address = std::move(w->request_address);
  rec.event_address = std::move(w->event_address);
  rec.health = static_cast<health_state>(w->health);
  rec.metadata = std::move(w->metadata);
  rec.payload = std::move(w->payload);
  rec.lease_ttl_ms = w->lease_ttl_ms;
  rec.renewed_at_ms = w->renewed_at_ms;
  if (w->format != 1 || w->health > 2 || rec.instance == 0 || rec.lease_ttl_ms <= 0 ||
      !is_valid_name(rec.endpoint.namespace_name) ||
      !is_valid_name(rec.endpoint.component_name) || !is_valid_name(rec.endpoint.endpoint_name))
    return make_error(errc::malformed_message, "invalid record fields");
  if (rec.key() != key)
    return make_error(errc::malformed_message, "record does not match its key");
  return rec;
}

expected<std::vector<std::string>> parse_prefix(std::string_view prefix) {
  std::vector<std::string> out;
  while (!prefix.empty()) {
    auto slash = prefix.find('/');
    auto seg = prefix.substr(0, slash);
    bool ok = out.size() < 3 ? is_valid_name(seg) : (out.size() == 3 && is_hex16(seg));
    if (!ok)
      return make_error(errc::invalid_argument,
                        "discovery prefix must be ns[/component[/endpoint[/instance-hex]]]");
    out.emplace_back(seg);
    if (slash == std::string_view::npos)
      break;
    prefix.remove_prefix(slash + 1);
    if (prefix.empty())
      return make_error(errc::invalid_argument, "discovery prefix ends with '/'");
  }
  return out;
}

bool key_matches(std::string_view key, const std::vector<std::string>& prefix) {
  for (auto& seg : prefix) {
    auto slash = key.find('/');
    if (key.substr(0, slash) != seg)
      return false;
    key = slash == std::string_view::npos ? std::string_view{} : key.substr(slash + 1);
  }
  return true;
}

bool expired(const instance_record& rec, int64_t now_ms) noexcept {
  return rec.renewed_at_ms + rec.lease_ttl_ms < now_ms;
}

} // namespace discovery_codec
} // namespace dynamo::planes
