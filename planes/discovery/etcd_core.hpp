// Internal to the etcd backend: the state one etcd_discovery plane shares with
// its registrations and watches (the client, the plane's lease, the records it
// keeps registered, the corrupt count). Lease and registration logic live in
// etcd_discovery.cpp, the watch thread in etcd_watch.cpp. Thread-safe; lock
// order: a registration's mutex, then the lease mutex, then the list mutex.
#pragma once

#include "planes/discovery/etcd_client.hpp"
#include "planes/discovery/etcd_codec.hpp"
#include "planes/discovery/etcd_discovery.hpp"
#include "planes/discovery/etcd_view.hpp"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

namespace dynamo::planes::etcd_detail {

/// One registered record as this process wants it in etcd.
struct reg_state {
  std::mutex mutex; // held across etcd writes: a re-put never resurrects a removed record
  instance_record rec;
  std::string etcd_key;
  bool keep_alive = true;
  bool deregistered = false;
  int64_t written_lease = 0; ///< the lease the stored version is attached to; 0: not stored
  bool dirty = false;        ///< a change that has not reached etcd yet
};

struct lease_info {
  int64_t id = 0;
  int64_t ttl_ms = 0;
};

class core {
public:
  core(std::vector<etcd_endpoint> endpoints, etcd_discovery_options opts);

  [[nodiscard]] etcd_client& client() { return client_; }
  [[nodiscard]] const etcd_discovery_options& options() const { return opts_; }
  [[nodiscard]] corrupt_tracker& corrupt() { return corrupt_; }
  [[nodiscard]] int64_t now() const;

  /// Range read of `r` (bounded, validated).
  [[nodiscard]] expected<etcd_codec::range_result> range(const etcd_codec::key_range& r);

  /// The plane's lease, granted first when there is none.
  [[nodiscard]] expected<lease_info> lease();
  /// A fresh lease of the plane's TTL that nobody renews (stop_keep_alive).
  [[nodiscard]] expected<lease_info> grant();
  /// Writes `st.rec` under the plane's lease (a new lease if etcd forgot it).
  /// `create`: only if the key does not exist (errc::invalid_argument if it does).
  /// Call with st.mutex held. On failure the record is marked dirty.
  [[nodiscard]] expected<void> write(reg_state& st, bool create);
  /// Deletes a key; on failure it is deleted when etcd returns.
  [[nodiscard]] expected<void> remove(const std::string& etcd_key);

  void add(std::shared_ptr<reg_state> st);
  void forget(const reg_state* st);

  /// One keep-alive round: renew the lease, re-put records etcd lost or missed,
  /// retry failed deletes.
  void tick();
  /// At plane shutdown: revoke the lease unless records still use it.
  void shutdown();

private:
  void lease_lost(int64_t id);
  void note_reachable(bool ok, const caf::error* why);

  etcd_client client_;
  etcd_discovery_options opts_;
  corrupt_tracker corrupt_;
  std::mutex lease_mutex_;
  lease_info lease_;
  std::atomic<bool> warned_ttl_{false};
  std::mutex list_mutex_;
  std::vector<std::shared_ptr<reg_state>> regs_;
  std::set<std::string> pending_deletes_;
  bool reachable_ = true; // keep-alive thread only
};

/// Starts a prefix watch on its own thread (etcd_watch.cpp).
[[nodiscard]] std::unique_ptr<discovery_watch> start_watch(std::shared_ptr<core> c,
                                                           std::vector<std::string> segments,
                                                           discovery_callback callback);

} // namespace dynamo::planes::etcd_detail
