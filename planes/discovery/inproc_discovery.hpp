// The in-memory fake of the discovery plane: the same lease logic as the file
// backend over a shared map instead of files, so several "processes" in one
// test share a store. Inject discovery_options::clock to test lease expiry
// without sleeping. Thread-safe.
#pragma once

#include "planes/discovery/discovery_plane.hpp"
#include "planes/discovery/record_store.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace dynamo::planes {

/// The shared in-memory store (one per simulated host).
class inproc_discovery_store final : public record_store {
public:
  [[nodiscard]] expected<void> put(const std::string& key, const bytes& data) override;
  [[nodiscard]] expected<void> remove(const std::string& key) override;
  [[nodiscard]] std::optional<bytes> get(const std::string& key) override;
  [[nodiscard]] expected<std::vector<entry>> scan(const std::vector<std::string>& prefix) override;
  /// Test hook: stores raw bytes (e.g. a corrupt record) under `key`.
  void put_raw(const std::string& key, bytes data);

private:
  std::mutex mutex_;
  std::map<std::string, bytes> records_;
};

[[nodiscard]] std::shared_ptr<inproc_discovery_store> make_inproc_discovery_store();

/// errc::config_error for bad options.
[[nodiscard]] expected<std::unique_ptr<discovery_plane>>
make_inproc_discovery(std::shared_ptr<inproc_discovery_store> store, discovery_options options = {});

} // namespace dynamo::planes
