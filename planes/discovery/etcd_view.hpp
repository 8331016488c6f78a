// What an etcd watch has seen: the live records under its prefix, rebuilt from a
// range snapshot after every (re)connect and updated by watch-stream messages,
// turned into discovery events; plus the corrupt-record count shared by a plane's
// list() and watches. Used by etcd_discovery. A view belongs to one watch thread;
// the tracker is thread-safe.
#pragma once

#include "planes/discovery/discovery_plane.hpp"
#include "planes/discovery/etcd_codec.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dynamo::planes {

/// Counts stored records that could not be read, each version once (by mod_revision).
class corrupt_tracker {
public:
  void note_corrupt(const std::string& key, int64_t mod_revision);
  void note_valid(const std::string& key);
  void note_unreadable(size_t n) { count_ += n; } ///< entries without a usable key
  [[nodiscard]] uint64_t count() const noexcept { return count_.load(); }

private:
  std::atomic<uint64_t> count_{0};
  std::mutex mutex_;
  std::unordered_map<std::string, int64_t> seen_;
};

/// Decodes one etcd entry under `key_prefix` into a record, or notes it corrupt.
[[nodiscard]] std::optional<instance_record>
decode_entry(std::string_view key_prefix, const etcd_codec::key_value& kv, corrupt_tracker& corrupt);

class etcd_watch_view {
public:
  etcd_watch_view(std::string key_prefix, corrupt_tracker& corrupt)
      : prefix_(std::move(key_prefix)), corrupt_(corrupt) {}

  /// Replaces the view with a snapshot; events: what differs from the last view
  /// (all `added`, sorted by key, the first time).
  [[nodiscard]] std::vector<discovery_event> reset(const etcd_codec::range_result& snapshot);
  /// Applies a watch message's events in order. A put that does not decode
  /// removes the record (readers skip corrupt records).
  [[nodiscard]] std::vector<discovery_event> apply(const etcd_codec::watch_message& msg);

  [[nodiscard]] size_t size() const noexcept { return known_.size(); }

private:
  std::string prefix_;
  corrupt_tracker& corrupt_;
  std::map<std::string, instance_record> known_; // by etcd key
};

} // namespace dynamo::planes
