// The wire shapes of etcd's v3 JSON gateway (etcd 3.4: POST /v3/kv/range, put,
// deleterange, txn, /v3/lease/grant|keepalive|revoke, /v3/watch), the key layout of
// discovery records in etcd, and a bounded splitter for the watch stream.
// Used by etcd_discovery only. Pure functions (nlohmann stays in the .cpp); any thread.
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::planes::etcd_codec {

/// Largest JSON response body read (a range over every record of a namespace).
inline constexpr size_t max_response_bytes = size_t{64} << 20;
/// Largest single watch-stream message (one record base64-encoded, plus envelope).
inline constexpr size_t max_watch_message_bytes = size_t{16} << 20;

// ---- key layout: <key_prefix>/instances/<ns>/<component>/<endpoint>/<instance hex>

/// "/dynamo" + "/instances/" + record key.
[[nodiscard]] std::string instance_key(std::string_view key_prefix, std::string_view record_key);

/// [key, range_end) in etcd's sense; range_end empty: the single key.
struct key_range {
  std::string key;
  std::string range_end;
};

/// The range holding the records under `segments` (0..4, as discovery_codec::parse_prefix
/// gives them): whole segments only, so "dyn" does not match "dyn2".
[[nodiscard]] key_range prefix_range(std::string_view key_prefix, const std::vector<std::string>& segments);

/// The record key of an etcd key under `key_prefix`, or nullopt when it is not one.
[[nodiscard]] std::optional<std::string> record_key_of(std::string_view key_prefix, std::string_view etcd_key);

// ---- request bodies (JSON text)

[[nodiscard]] std::string put_body(std::string_view key, const bytes& value, int64_t lease);
/// A transaction that puts `key` only when it does not exist (create_revision == 0).
[[nodiscard]] std::string create_body(std::string_view key, const bytes& value, int64_t lease);
[[nodiscard]] std::string delete_body(std::string_view key);
[[nodiscard]] std::string range_body(const key_range& r);
[[nodiscard]] std::string grant_body(int64_t ttl_s);
/// keepalive and revoke.
[[nodiscard]] std::string lease_body(int64_t lease);
/// POST /v3/auth/authenticate.
[[nodiscard]] std::string authenticate_body(std::string_view name, std::string_view password);
/// A watch from `start_revision` (inclusive).
[[nodiscard]] std::string watch_body(const key_range& r, int64_t start_revision);

// ---- responses. Every parser: errc::malformed_message for anything that is not the
// documented shape (bad JSON, nesting deeper than 16, a wrong type, too large);
// an "error" object from etcd gives errc::io_error with etcd's message.

struct key_value {
  std::string key;
  bytes value;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct range_result {
  int64_t revision = 0;        ///< the store revision the range was read at
  std::vector<key_value> kvs;
  size_t unreadable = 0;       ///< entries whose key or value was not valid base64
};
[[nodiscard]] expected<range_result> parse_range(std::string_view body);

/// A put, deleterange or revoke response: the header's revision.
[[nodiscard]] expected<int64_t> parse_header(std::string_view body);

/// A create_body() transaction: true when the key was created.
[[nodiscard]] expected<bool> parse_created(std::string_view body);

struct lease_grant {
  int64_t id = 0;
  int64_t ttl_s = 0; ///< what etcd granted: at least its minimum TTL
};
[[nodiscard]] expected<lease_grant> parse_grant(std::string_view body);

/// An authenticate response: the token to send as the Authorization header.
[[nodiscard]] expected<std::string> parse_token(std::string_view body);

/// A keepalive response: the lease's remaining TTL in seconds; 0 when etcd no
/// longer knows the lease (it expired or was revoked).
[[nodiscard]] expected<int64_t> parse_keepalive(std::string_view body);

struct watch_event {
  bool deleted = false;
  key_value kv; ///< for a delete: key and mod_revision only
};

struct watch_message {
  int64_t revision = 0;
  bool created = false;
  bool canceled = false;           ///< the watch is over (compaction, an error): list again
  int64_t compact_revision = 0;
  std::vector<watch_event> events;
  size_t unreadable = 0;           ///< events whose key or value was not valid base64
};
/// One message of the /v3/watch stream ({"result": {...}} or {"error": {...}}).
[[nodiscard]] expected<watch_message> parse_watch_message(std::string_view line);

/// The etcd "message" of an error body, or a short prefix of the body.
[[nodiscard]] std::string error_text(std::string_view body);

/// Cuts the watch stream (bytes as they arrive) into newline-separated messages.
/// A message longer than `limit` is dropped up to its newline and counted.
class line_splitter {
public:
  explicit line_splitter(size_t limit = max_watch_message_bytes) : limit_(limit) {}
  /// Appends `chunk`; complete lines (without '\n', blank ones skipped) go to `out`.
  void feed(std::string_view chunk, std::vector<std::string>& out);
  [[nodiscard]] size_t oversized() const noexcept { return oversized_; }

private:
  size_t limit_;
  std::string partial_;
  bool discarding_ = false;
  size_t oversized_ = 0;
};

} // namespace dynamo::planes::etcd_codec
