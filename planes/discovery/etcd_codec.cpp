#include "planes/discovery/etcd_codec.hpp"

#include "planes/discovery/record_codec.hpp"
#include "runtime/core/base64.hpp"

#include <nlohmann/json.hpp>

#include <charconv>

namespace dynamo::planes::etcd_codec {
namespace {

using json = nlohmann::json;

constexpr int max_depth = 16;

expected<json> parse_json(std::string_view text, size_t limit) {
  if (text.size() > limit)
    return make_error(errc::malformed_message, "etcd: response of " + std::to_string(text.size()) +
                                                   " bytes exceeds " + std::to_string(limit));
  bool too_deep = false;
  json::parser_callback_t guard = [&too_deep](int depth, json::parse_event_t, json&) {
    if (depth > max_depth)
      too_deep = true;
    return !too_deep; // discard everything once too deep: the DOM stays small
  };
  json j = json::parse(text.begin(), text.end(), guard, /*allow_exceptions=*/false);
  if (too_deep)
    return make_error(errc::malformed_message, "etcd: JSON nests deeper than 16");
  if (j.is_discarded() || !j.is_object())
    return make_error(errc::malformed_message, "etcd: response is not a JSON object");
  return j;
}

caf::error malformed(std::string what) {
  return make_error(errc::malformed_message, "etcd: " + std::move(what));
}

// proto3 JSON: int64 as a string ("7"), absent when 0; numbers are accepted too.
expected<int64_t> get_i64(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null())
    return int64_t{0};
  if (it->is_number_integer())
    return it->get<int64_t>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc{} && end == s.data() + s.size() && !s.empty())
      return v;
  }
  return malformed(std::string{"field '"} + name + "' is not an int64");
}

expected<bool> get_bool(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null())
    return false;
  if (!it->is_boolean())
    return malformed(std::string{"field '"} + name + "' is not a boolean");
  return it->get<bool>();
}

const json* get_object(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it != obj.end() && it->is_object() ? &*it : nullptr;
}

// Errors from etcd itself: {"error": "...", "message": "...", "code": N} on unary
// calls, {"error": {"grpc_code": N, "message": "..."}} inside a stream.
std::optional<caf::error> etcd_error(const json& j) {
  auto it = j.find("error");
  if (it == j.end())
    return std::nullopt;
  std::string msg;
  if (auto m = j.find("message"); m != j.end() && m->is_string())
    msg = m->get<std::string>();
  else if (it->is_object() && it->contains("message") && (*it)["message"].is_string())
    msg = (*it)["message"].get<std::string>();
  else if (it->is_string())
    msg = it->get<std::string>();
  return make_error(errc::io_error, "etcd: " + msg.substr(0, 200));
}

expected<json> parse_reply(std::string_view body) {
  auto j = parse_json(body, max_response_bytes);
  if (!j)
    return j;
  if (auto err = etcd_error(*j))
    return std::move(*err);
  return j;
}

expected<int64_t> header_revision(const json& j) {
  auto* h = get_object(j, "header");
  if (!h)
    return malformed("response has no header");
  return get_i64(*h, "revision");
}

expected<std::string> get_b64(const json& obj, const char* name, size_t limit) {
  auto it = obj.find(name);
  if (it == obj.end())
    return std::string{};
  if (!it->is_string())
    return malformed(std::string{"field '"} + name + "' is not a string");
  auto d = base64_decode(it->get_ref<const std::string&>(), limit);
  if (!d)
    return std::move(d.error());
  return std::string{d->begin(), d->end()};
}

// nullopt + ++unreadable for bad base64; an error for a wrong shape.
expected<std::optional<key_value>> parse_kv(const json& kv, size_t& unreadable) {
  if (!kv.is_object())
    return malformed("kv is not an object");
  auto rev = get_i64(kv, "mod_revision");
  auto lease = get_i64(kv, "lease");
  if (!rev || !lease)
    return malformed("kv has a bad revision or lease");
  for (auto name : {"key", "value"})
    if (kv.contains(name) && !kv[name].is_string())
      return malformed(std::string{"kv field '"} + name + "' is not a string");
  auto key = get_b64(kv, "key", 4096);
  auto value = get_b64(kv, "value", discovery_codec::max_record_bytes);
  if (!key || !value || key->empty()) {
    ++unreadable;
    return std::optional<key_value>{};
  }
  key_value out;
  out.key = std::move(*key);
  out.value.assign(value->begin(), value->end());
  out.mod_revision = *rev;
  out.lease = *lease;
  return std::optional<key_value>{std::move(out)};
}

std::string b64(std::string_view s) { return base64_encode(s); }
std::string b64(const bytes& b) { return base64_encode(std::span<const uint8_t>{b}); }

json range_json(const key_range& r) {
  json j{{"key", b64(r.key)}};
  if (!r.range_end.empty())
    j["range_end"] = b64(r.range_end);
  return j;
}

json put_json(std::string_view key, const bytes& value, int64_t lease) {
  json j{{"key", b64(key)}, {"value", b64(value)}};
  if (lease != 0)
    j["lease"] = std::to_string(lease);
  return j;
}

} // namespace

std::string instance_key(std::string_view key_prefix, std::string_view record_key) {
  std::string out{key_prefix};
  out += "/instances/";
  out += record_key;
  return out;
}

key_range prefix_range(std::string_view key_prefix, const std::vector<std::string>& segments) {
  key_range r;
  r.key = std::string{key_prefix} + "/instances/";
  for (size_t i = 0; i < segments.size(); ++i) {
    r.key += segments[i];
    if (i + 1 < segments.size())
      r.key += '/';
  }
  if (segments.size() >= 4)
    return r; // a full record key
  if (!segments.empty())
    r.key += '/';
  r.range_end = r.key;
  r.range_end.back() = static_cast<char>(r.range_end.back() + 1); // "…/" -> "…0"
  return r;
}

std::optional<std::string> record_key_of(std::string_view key_prefix, std::string_view etcd_key) {
  auto head = std::string{key_prefix} + "/instances/";
  if (!etcd_key.starts_with(head) || etcd_key.size() == head.size())
    return std::nullopt;
  return std::string{etcd_key.substr(head.size())};
}

std::string put_body(std::string_view key, const bytes& value, int64_t lease) {
  return put_json(key, value, lease).dump();
}

std::string create_body(std::string_view key, const bytes& value, int64_t lease) {
  json cmp{{"key", b64(key)}, {"target", "CREATE"}, {"result", "EQUAL"}, {"create_revision", "0"}};
  json j{{"compare", json::array({cmp})},
         {"success", json::array({json{{"request_put", put_json(key, value, lease)}}})}};
  return j.dump();
}

std::string delete_body(std::string_view key) { return json{{"key", b64(key)}}.dump(); }

std::string range_body(const key_range& r) { return range_json(r).dump(); }

std::string grant_body(int64_t ttl_s) { return json{{"TTL", std::to_string(ttl_s)}}.dump(); }

std::string lease_body(int64_t lease) { return json{{"ID", std::to_string(lease)}}.dump(); }

std::string authenticate_body(std::string_view name, std::string_view password) {
  return json{{"name", name}, {"password", password}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string watch_body(const key_range& r, int64_t start_revision) {
  auto req = range_json(r);
  req["start_revision"] = std::to_string(start_revision);
  return json{{"create_request", std::move(req)}}.dump();
}

expected<range_result> parse_range(std::string_view body) {
  auto j = parse_reply(body);
  if (!j)
    return std::move(j.error());
  auto rev = header_revision(*j);
  if (!rev)
    return std::move(rev.error());
  range_result out;
  out.revision = *rev;
  auto it = j->find("kvs");
  if (it == j->end())
    return out;
  if (!it->is_array())
    return malformed("kvs is not an array");
  for (auto& kv : *it) {
    auto parsed = parse_kv(kv, out.unreadable);
    if (!parsed)
      return std::move(parsed.error());
    if (*parsed)
      out.kvs.push_back(std::move(**parsed));
  }
  return out;
}

expected<int64_t> parse_header(std::string_view body) {
  auto j = parse_reply(body);
  if (!j)
    return std::move(j.error());
  return header_revision(*j);
}

expected<bool> parse_created(std::string_view body) {
  auto j = parse_reply(body);
  if (!j)
    return std::move(j.error());
  if (auto rev = header_revision(*j); !rev)
    return std::move(rev.error());
  return get_bool(*j, "succeeded");
}

expected<lease_grant> parse_grant(std::string_view body) {
  auto j = parse_reply(body);
  if (!j)
    return std::move(j.error());
  auto id = get_i64(*j, "ID");
  auto ttl = get_i64(*j, "TTL");
  if (!id || !ttl)
    return malformed("lease grant has a bad ID or TTL");
  if (*id == 0 || *ttl <= 0)
    return malformed("lease grant without an ID or TTL");
  return lease_grant{*id, *ttl};
}

expected<std::string> parse_token(std::string_view body) {
  auto j = parse_reply(body);
  if (!j)
    return std::move(j.error());
  auto it = j->find("token");
  if (it == j->end() || !it->is_string() || it->get<std::string>().empty())
    return malformed("authenticate response has no token");
  auto token = it->get<std::string>();
  for (char c : token)
    if (c < 0x21 || c > 0x7e) // it goes into a header line
      return malformed("authenticate response: the token is not visible ASCII");
  return token;
}

expected<int64_t> parse_keepalive(std::string_view body) {
  auto j = parse_reply(body);
  if (!j)
    return std::move(j.error());
  auto* result = get_object(*j, "result");
  if (!result)
    return malformed("keepalive response has no result");
  auto ttl = get_i64(*result, "TTL");
  if (!ttl)
    return std::move(ttl.error());
  return std::max<int64_t>(0, *ttl);
}

expected<watch_message> parse_watch_message(std::string_view line) {
  auto j = parse_json(line, max_watch_message_bytes);
  if (!j)
    return std::move(j.error());
  if (auto err = etcd_error(*j))
    return std::move(*err);
  auto* r = get_object(*j, "result");
  if (!r)
    return malformed("watch message has no result");
  watch_message out;
  auto rev = header_revision(*r);
  auto created = get_bool(*r, "created");
  auto canceled = get_bool(*r, "canceled");
  auto compact = get_i64(*r, "compact_revision");
  if (!rev || !created || !canceled || !compact)
    return malformed("watch message has a bad header or flags");
  out.revision = *rev;
  out.created = *created;
  out.canceled = *canceled;
  out.compact_revision = *compact;
  auto it = r->find("events");
  if (it == r->end())
    return out;
  if (!it->is_array())
    return malformed("watch events is not an array");
  for (auto& ev : *it) {
    if (!ev.is_object() || !ev.contains("kv"))
      return malformed("watch event without kv");
    watch_event e;
    if (auto t = ev.find("type"); t != ev.end()) {
      if (!t->is_string() || (*t != "PUT" && *t != "DELETE"))
        return malformed("watch event has an unknown type");
      e.deleted = *t == "DELETE";
    }
    auto kv = parse_kv(ev["kv"], out.unreadable);
    if (!kv)
      return std::move(kv.error());
    if (!*kv)
      continue;
    e.kv = std::move(**kv);
    out.events.push_back(std::move(e));
  }
  return out;
}

std::string error_text(std::string_view body) {
  auto j = parse_json(body, 1 << 20);
  if (j)
    if (auto err = etcd_error(*j))
      return message_of(*err);
  return std::string{body.substr(0, 200)};
}

void line_splitter::feed(std::string_view chunk, std::vector<std::string>& out) {
  while (!chunk.empty()) {
    auto nl = chunk.find('\n');
    auto piece = chunk.substr(0, nl);
    if (!discarding_) {
      if (partial_.size() + piece.size() > limit_) {
        partial_.clear();
        discarding_ = true;
        ++oversized_;
      } else {
        partial_.append(piece);
      }
    }
    if (nl == std::string_view::npos)
      return;
    if (!discarding_ && partial_.find_first_not_of(" \r\t") != std::string::npos)
      out.push_back(std::move(partial_));
    partial_.clear();
    discarding_ = false;
    chunk.remove_prefix(nl + 1);
  }
}

} // namespace dynamo::planes::etcd_codec
