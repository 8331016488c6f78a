#include "planes/discovery/etcd_view.hpp"

#include "planes/discovery/record_codec.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::planes {

void corrupt_tracker::note_corrupt(const std::string& key, int64_t mod_revision) {
  std::lock_guard lock{mutex_};
  auto [it, inserted] = seen_.try_emplace(key, mod_revision);
  if (inserted || it->second != mod_revision) {
    it->second = mod_revision;
    ++count_;
    spdlog::warn("discovery: skipping unreadable etcd record {}", key);
  }
}

void corrupt_tracker::note_valid(const std::string& key) {
  std::lock_guard lock{mutex_};
  seen_.erase(key);
}

std::optional<instance_record> decode_entry(std::string_view key_prefix, const etcd_codec::key_value& kv,
                                            corrupt_tracker& corrupt) {
  auto record_key = etcd_codec::record_key_of(key_prefix, kv.key);
  if (record_key) {
    if (auto rec = discovery_codec::decode(*record_key, kv.value)) {
      corrupt.note_valid(kv.key);
      return std::move(*rec);
    }
  }
  corrupt.note_corrupt(kv.key, kv.mod_revision);
  return std::nullopt;
}

std::vector<discovery_event> etcd_watch_view::reset(const etcd_codec::range_result& snapshot) {
  corrupt_.note_unreadable(snapshot.unreadable);
  std::map<std::string, instance_record> current;
  for (auto& kv : snapshot.kvs)
    if (auto rec = decode_entry(prefix_, kv, corrupt_))
      current.emplace(kv.key, std::move(*rec));
  std::vector<discovery_event> events;
  for (auto& [key, rec] : known_)
    if (!current.contains(key))
      events.push_back({discovery_event_kind::removed, rec});
  for (auto& [key, rec] : current) {
    auto it = known_.find(key);
    if (it == known_.end())
      events.push_back({discovery_event_kind::added, rec});
    else if (!it->second.same_content(rec))
      events.push_back({discovery_event_kind::updated, rec});
  }
  known_ = std::move(current);
  return events;
}

std::vector<discovery_event> etcd_watch_view::apply(const etcd_codec::watch_message& msg) {
  corrupt_.note_unreadable(msg.unreadable);
  std::vector<discovery_event> events;
  for (auto& ev : msg.events) {
    auto it = known_.find(ev.kv.key);
    std::optional<instance_record> rec;
    if (!ev.deleted)
      rec = decode_entry(prefix_, ev.kv, corrupt_);
    if (!rec) { // deleted, or replaced by something unreadable
      if (it != known_.end()) {
        events.push_back({discovery_event_kind::removed, std::move(it->second)});
        known_.erase(it);
      }
      continue;
    }
    if (it == known_.end()) {
      events.push_back({discovery_event_kind::added, *rec});
      known_.emplace(ev.kv.key, std::move(*rec));
    } else if (!it->second.same_content(*rec)) {
      events.push_back({discovery_event_kind::updated, *rec});
      it->second = std::move(*rec);
    } else {
      it->second = std::move(*rec); // same content, new lease fields
    }
  }
  return events;
}

} // namespace dynamo::planes
