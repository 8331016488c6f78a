// The two discovery backends under one shape for the contract suite (files in a
// temp dir, the in-memory store), a manual clock, and a watch recorder.
#pragma once

#include "planes/discovery/file_discovery.hpp"
#include "planes/discovery/inproc_discovery.hpp"

#include "../support/support.hpp"

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace dynamo::planes::testing {

/// A wall clock that moves only when told to.
struct manual_clock {
  std::shared_ptr<std::atomic<int64_t>> ms = std::make_shared<std::atomic<int64_t>>(1'000'000);
  [[nodiscard]] std::function<int64_t()> fn() const {
    return [t = ms] { return t->load(); };
  }
  void advance(std::chrono::milliseconds d) { *ms += d.count(); }
  [[nodiscard]] int64_t now() const { return ms->load(); }
};

/// Short intervals so that polls and renewals happen within milliseconds.
inline discovery_options fast_options(std::function<int64_t()> clock = {}) {
  discovery_options o;
  o.lease_ttl = std::chrono::milliseconds{1000};
  o.keep_alive_interval = std::chrono::milliseconds{50};
  o.poll_interval = std::chrono::milliseconds{20};
  o.gc_after = std::chrono::milliseconds{5000};
  o.clock = std::move(clock);
  return o;
}

struct file_backend {
  temp_dir dir;
  std::unique_ptr<discovery_plane> plane(discovery_options o = fast_options()) {
    auto p = make_file_discovery(dir.path(), std::move(o));
    BOOST_REQUIRE_MESSAGE(p, "file discovery failed");
    return std::move(*p);
  }
  void store_raw(const std::string& key, const bytes& data) {
    auto path = std::filesystem::path{dir.path()} / key;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream{path, std::ios::binary}.write(reinterpret_cast<const char*>(data.data()),
                                                static_cast<std::streamsize>(data.size()));
  }
  bool exists(const std::string& key) {
    return std::filesystem::exists(std::filesystem::path{dir.path()} / key);
  }
};

struct memory_backend {
  std::shared_ptr<inproc_discovery_store> store = make_inproc_discovery_store();
  std::unique_ptr<discovery_plane> plane(discovery_options o = fast_options()) {
    auto p = make_inproc_discovery(store, std::move(o));
    BOOST_REQUIRE_MESSAGE(p, "inproc discovery failed");
    return std::move(*p);
  }
  void store_raw(const std::string& key, const bytes& data) { store->put_raw(key, data); }
  bool exists(const std::string& key) { return store->get(key).has_value(); }
};

using discovery_backends = std::tuple<file_backend, memory_backend>;

/// Records watch events as "<kind> <key> <health>" lines; callbacks keep it alive.
class watch_recorder {
public:
  [[nodiscard]] discovery_callback callback() {
    return [r = r_](const discovery_event& ev) {
      std::lock_guard lock{r->mutex};
      r->lines.push_back(std::string{to_string(ev.kind)} + " " + ev.record.key() + " " +
                         std::string{to_string(ev.record.health)});
      r->events.push_back(ev);
    };
  }
  [[nodiscard]] std::vector<std::string> lines() const {
    std::lock_guard lock{r_->mutex};
    return r_->lines;
  }
  [[nodiscard]] std::vector<discovery_event> events() const {
    std::lock_guard lock{r_->mutex};
    return r_->events;
  }
  [[nodiscard]] size_t size() const {
    std::lock_guard lock{r_->mutex};
    return r_->lines.size();
  }
  [[nodiscard]] bool wait_size(size_t n) const {
    return wait_until([&] { return size() >= n; });
  }

private:
  struct record {
    mutable std::mutex mutex;
    std::vector<std::string> lines;
    std::vector<discovery_event> events;
  };
  std::shared_ptr<record> r_ = std::make_shared<record>();
};

inline instance_record make_record(const std::string& endpoint_path, instance_id id = 0) {
  instance_record rec;
  rec.endpoint = *endpoint_id::parse(endpoint_path);
  rec.instance = id;
  rec.request_address = "tcp://127.0.0.1:5555";
  rec.event_address = "tcp://127.0.0.1:5556";
  rec.metadata = {{"model", "smollm2"}, {"block_size", "16"}};
  rec.payload = {0x81, 0xa1, 'x', 0x01};
  return rec;
}

} // namespace dynamo::planes::testing
