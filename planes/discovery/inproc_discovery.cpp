#include "planes/discovery/inproc_discovery.hpp"

#include "planes/discovery/lease_discovery.hpp"
#include "planes/discovery/record_codec.hpp"

namespace dynamo::planes {

expected<void> inproc_discovery_store::put(const std::string& key, const bytes& data) {
  put_raw(key, data);
  return {};
}

expected<void> inproc_discovery_store::remove(const std::string& key) {
  std::lock_guard lock{mutex_};
  records_.erase(key);
  return {};
}

std::optional<bytes> inproc_discovery_store::get(const std::string& key) {
  std::lock_guard lock{mutex_};
  auto it = records_.find(key);
  if (it == records_.end())
    return std::nullopt;
  return it->second;
}

expected<std::vector<record_store::entry>>
inproc_discovery_store::scan(const std::vector<std::string>& prefix) {
  std::lock_guard lock{mutex_};
  std::vector<entry> out;
  for (auto& [key, data] : records_)
    if (discovery_codec::key_matches(key, prefix))
      out.push_back({key, data, false});
  return out;
}

void inproc_discovery_store::put_raw(const std::string& key, bytes data) {
  std::lock_guard lock{mutex_};
  records_[key] = std::move(data);
}

std::shared_ptr<inproc_discovery_store> make_inproc_discovery_store() {
  return std::make_shared<inproc_discovery_store>();
}

expected<std::unique_ptr<discovery_plane>>
make_inproc_discovery(std::shared_ptr<inproc_discovery_store> store, discovery_options options) {
  return make_lease_discovery(std::move(store), std::move(options));
}

} // namespace dynamo::planes
