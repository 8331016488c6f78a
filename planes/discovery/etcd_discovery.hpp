// The etcd discovery backend (Dynamo's default; etcd 3.4's v3 JSON gateway): records
// under one lease per plane that a keep-alive thread renews, prefix watches (no
// polling) on a thread each; layout in planes/README.md. Called by apps/common's
// make_discovery. Thread-safe; watch callbacks run on their watch's thread, must not block.
#pragma once

#include "planes/discovery/discovery_plane.hpp"
#include "planes/discovery/etcd_client.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace dynamo::planes {

struct etcd_discovery_options {
  std::vector<std::string> endpoints{"http://127.0.0.1:2379"}; ///< http(s)://; tried in order on failure
  etcd_security security; ///< TLS files and credentials (https endpoints, etcd auth)
  std::string key_prefix = "/dynamo"; ///< '/'-led, no trailing '/'
  /// lease_ttl: rounded up to whole seconds (etcd raises it to its minimum TTL,
  /// 1.5 x election timeout: 2 s at etcd's defaults); keep_alive_interval: how
  /// often the lease is renewed (TTL/3 by apps); clock: the renewed_at_ms stamp.
  discovery_options base;
  std::chrono::milliseconds request_timeout{2000};
  /// Reconnect delays double from 50 ms up to this while etcd is unreachable.
  std::chrono::milliseconds max_backoff{1000};
};

/// $ETCD_ENDPOINTS (comma-separated, as Dynamo reads it), else http://127.0.0.1:2379.
[[nodiscard]] std::vector<std::string> default_etcd_endpoints();

/// errc::config_error for no or malformed endpoints, a bad key prefix or bad
/// intervals. Connects lazily: etcd need not be up yet. A wrong password or
/// an unreadable CA or client certificate fails each etcd call (errc::config_error
/// or errc::io_error), so register_instance reports it.
///
/// While etcd is unreachable the plane keeps its last view (watches report
/// nothing), register_instance fails with errc::io_error or errc::timeout, and
/// health/metadata changes are kept and written when etcd returns. When it
/// returns, records are written again (under a new lease if the old one expired)
/// and every watch lists its prefix again and reports the difference.
/// corrupt_count() also counts watch-stream messages that did not parse.
[[nodiscard]] expected<std::unique_ptr<discovery_plane>> make_etcd_discovery(etcd_discovery_options options);

} // namespace dynamo::planes
