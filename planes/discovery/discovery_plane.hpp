// The discovery plane's contract: who serves which endpoint, where, how healthy.
// Records live under a lease kept alive by a background thread; expired ones vanish.
// Backends: files (file_discovery.hpp), etcd (etcd_discovery.hpp), memory (inproc_discovery.hpp).
// Every method is thread-safe; watch callbacks run on the watch thread, must not block.
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"
#include "runtime/core/ids.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::planes {

enum class health_state : uint8_t { ready = 0, unhealthy = 1, draining = 2 };

[[nodiscard]] std::string_view to_string(health_state h) noexcept;

struct instance_record {
  endpoint_id endpoint;
  instance_id instance = 0; ///< 0 at registration: a random id is assigned
  std::string request_address;
  std::string event_address;
  health_state health = health_state::ready;
  std::map<std::string, std::string> metadata;
  bytes payload; ///< opaque, e.g. a msgpack protocol::model_card
  // Lease, maintained by the plane:
  int64_t lease_ttl_ms = 0;
  int64_t renewed_at_ms = 0;

  /// "ns/component/endpoint/<16 hex digits>": the record's key.
  [[nodiscard]] std::string key() const;
  /// Equal apart from the lease fields (what "updated" compares).
  [[nodiscard]] bool same_content(const instance_record& other) const;
};

enum class discovery_event_kind : uint8_t { added, updated, removed };

[[nodiscard]] std::string_view to_string(discovery_event_kind k) noexcept;

struct discovery_event {
  discovery_event_kind kind = discovery_event_kind::added;
  instance_record record; ///< for `removed`: the last record seen
};

using discovery_callback = std::function<void(const discovery_event&)>;

/// A live registration. Destroying it deregisters.
class registration {
public:
  virtual ~registration() = default;
  /// Rewrite the record's health / metadata; errc::closed once deregistered.
  [[nodiscard]] expected<void> set_health(health_state h);
  [[nodiscard]] expected<void> set_metadata(std::map<std::string, std::string> m);
  /// Removes the record now. Idempotent.
  [[nodiscard]] virtual expected<void> deregister() = 0;
  /// The record as last written (instance id and lease filled in).
  [[nodiscard]] virtual instance_record record() const = 0;
  /// Fault injection: stop renewing the lease, as a hung or killed process
  /// would; the record expires one TTL later.
  virtual void stop_keep_alive() = 0;

protected:
  /// Each backend's one write path: applies `change` to the record and stores
  /// it (errc::closed once deregistered).
  [[nodiscard]] virtual expected<void> update(const std::function<void(instance_record&)>& change) = 0;
};

/// An active watch. Destroying it stops the callbacks (waiting for one that is
/// running, unless called from inside the callback).
class discovery_watch {
public:
  virtual ~discovery_watch() = default;
};

struct discovery_options {
  std::chrono::milliseconds lease_ttl{1000};
  std::chrono::milliseconds keep_alive_interval{250};
  std::chrono::milliseconds poll_interval{100};
  /// Records expired this long are deleted by readers (garbage collection).
  std::chrono::milliseconds gc_after{10000};
  /// Wall clock in ms since the epoch; empty: the system clock. Tests inject one.
  std::function<int64_t()> clock;
};

class discovery_plane {
public:
  virtual ~discovery_plane() = default;
  /// Writes `rec` under a new lease. errc::invalid_argument for bad names or
  /// when a live record already has that key; errc::io_error when the store fails.
  [[nodiscard]] virtual expected<std::unique_ptr<registration>>
  register_instance(instance_record rec) = 0;
  /// Live records under `prefix` ("", "ns", "ns/component", "ns/component/endpoint"
  /// or a full key; whole segments match), sorted by key.
  [[nodiscard]] virtual expected<std::vector<instance_record>> list(std::string_view prefix) = 0;
  /// Reports every live record under `prefix` as `added` (first poll), then
  /// added / updated / removed as they happen.
  [[nodiscard]] virtual expected<std::unique_ptr<discovery_watch>>
  watch(std::string_view prefix, discovery_callback callback) = 0;
  /// Stored records that could not be read (each corrupt version counted once).
  [[nodiscard]] virtual uint64_t corrupt_count() const = 0;
};

} // namespace dynamo::planes
