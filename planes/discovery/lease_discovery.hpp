// The discovery plane over any record_store: leases renewed by a keep-alive
// thread, readers that skip expired and corrupt records (and delete records
// expired past gc_after), and watches polled by a watch thread. The file and
// in-memory backends are this plus their store. Thread-safe.
#pragma once

#include "planes/discovery/discovery_plane.hpp"
#include "planes/discovery/record_store.hpp"

#include <memory>

namespace dynamo::planes {

/// errc::config_error for non-positive intervals or a keep-alive not shorter than the TTL.
[[nodiscard]] expected<std::unique_ptr<discovery_plane>>
make_lease_discovery(std::shared_ptr<record_store> store, discovery_options options);

} // namespace dynamo::planes
