#include "planes/discovery/lease_discovery.hpp"

#include "planes/codec/periodic_thread.hpp"
#include "planes/discovery/record_codec.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

namespace dynamo::planes {
namespace {

namespace dc = discovery_codec;

struct reg_state {
  std::mutex mutex; // held across store writes, so a renewal never resurrects a removed record
  instance_record rec;
  bool keep_alive = true;
  bool deregistered = false;
};

struct watch_state {
  std::vector<std::string> prefix;
  discovery_callback callback;
  std::mutex callback_mutex; // held while callbacks run
  std::atomic<bool> cancelled{false};
  std::map<std::string, instance_record> known; // watch thread only
};

class core {
public:
  core(std::shared_ptr<record_store> store, discovery_options opts)
      : store_(std::move(store)), opts_(std::move(opts)) {}

  [[nodiscard]] int64_t now() const { return opts_.clock ? opts_.clock() : wall_clock_ms(); }
  [[nodiscard]] const discovery_options& options() const { return opts_; }
  [[nodiscard]] record_store& store() { return *store_; }
  [[nodiscard]] uint64_t corrupt_count() const { return corrupt_.load(); }

  /// Live records under `p`; the keys of entries that do not decode go to
  /// `unreadable` when given.
  [[nodiscard]] expected<std::vector<instance_record>> read_live(const std::vector<std::string>& p,
                                                                 std::set<std::string>* unreadable = nullptr);

  void add(std::shared_ptr<reg_state> st) {
    std::lock_guard lock{mutex_};
    regs_.push_back(std::move(st));
  }
  void forget(const reg_state* st) {
    std::lock_guard lock{mutex_};
    std::erase_if(regs_, [&](auto& r) { return r.get() == st; });
  }
  void add(std::shared_ptr<watch_state> w) {
    std::lock_guard lock{mutex_};
    watches_.push_back(std::move(w));
  }
  void forget(const watch_state* w) {
    std::lock_guard lock{mutex_};
    std::erase_if(watches_, [&](auto& x) { return x.get() == w; });
  }

  void renew_all();
  void poll_all();
  [[nodiscard]] bool on_watch_thread() const noexcept {
    return std::this_thread::get_id() == watch_thread_.load();
  }

private:
  void note_corrupt(const std::string& key, const bytes& data);
  void note_valid(const std::string& key);
  void poll(watch_state& w);

  std::shared_ptr<record_store> store_;
  discovery_options opts_;
  std::atomic<uint64_t> corrupt_{0};
  std::mutex corrupt_mutex_;
  std::unordered_map<std::string, size_t> corrupt_seen_; // key -> hash of the bad bytes
  std::mutex mutex_;
  std::vector<std::shared_ptr<reg_state>> regs_;
  std::vector<std::shared_ptr<watch_state>> watches_;
  std::atomic<std::thread::id> watch_thread_{};
};

void core::note_corrupt(const std::string& key, const bytes& data) {
  auto h = std::hash<std::string_view>{}(
      std::string_view{reinterpret_cast<const char*>(data.data()), data.size()});
  std::lock_guard lock{corrupt_mutex_};
  auto [it, inserted] = corrupt_seen_.try_emplace(key, h);
  if (inserted || it->second != h) {
    it->second = h;
    ++corrupt_;
    spdlog::warn("discovery: skipping unreadable record {}", key);
  }
}

void core::note_valid(const std::string& key) {
  std::lock_guard lock{corrupt_mutex_};
  corrupt_seen_.erase(key);
}

expected<std::vector<instance_record>> core::read_live(const std::vector<std::string>& prefix,
                                                       std::set<std::string>* unreadable) {
  auto entries = store_->scan(prefix);
  if (!entries)
    return std::move(entries.error());
  auto t = now();
  std::vector<instance_record> out;
  for (auto& e : *entries) {
    auto rec = e.unreadable ? expected<instance_record>{make_error(errc::malformed_message, "")}
                            : dc::decode(e.key, e.data);
    if (!rec) {
      note_corrupt(e.key, e.data);
      if (unreadable != nullptr)
        unreadable->insert(e.key);
      continue;
    }
    note_valid(e.key);
    if (!dc::expired(*rec, t)) {
      out.push_back(std::move(*rec));
    } else if (rec->renewed_at_ms + rec->lease_ttl_ms + opts_.gc_after.count() < t) {
      (void)store_->remove(e.key); // long dead: garbage-collect
    }
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.key() < b.key(); });
  return out;
}

void core::renew_all() {
  std::vector<std::shared_ptr<reg_state>> regs;
  {
    std::lock_guard lock{mutex_};
    regs = regs_;
  }
  for (auto& st : regs) {
    std::lock_guard lock{st->mutex};
    if (st->deregistered || !st->keep_alive)
      continue;
    st->rec.renewed_at_ms = now();
    if (auto ok = store_->put(st->rec.key(), dc::encode(st->rec)); !ok)
      spdlog::warn("discovery: lease renewal of {} failed: {}", st->rec.key(), describe(ok.error()));
  }
}

void core::poll_all() {
  watch_thread_ = std::this_thread::get_id();
  std::vector<std::shared_ptr<watch_state>> watches;
  {
    std::lock_guard lock{mutex_};
    watches = watches_;
  }
  for (auto& w : watches)
    poll(*w);
}

void core::poll(watch_state& w) {
  std::lock_guard lock{w.callback_mutex};
  if (w.cancelled)
    return;
  std::set<std::string> unreadable;
  auto live = read_live(w.prefix, &unreadable);
  if (!live) {
    spdlog::warn("discovery: watch scan failed: {}", describe(live.error()));
    return;
  }
  std::map<std::string, instance_record> current;
  for (auto& r : *live)
    current.emplace(r.key(), std::move(r));
  // A known record whose entry stops decoding (torn, overwritten by someone
  // else) is no news: its last good version stays until its lease runs out,
  // so a worker does not leave and rejoin at every rewrite.
  const int64_t t = now();
  for (const auto& [key, rec] : w.known)
    if (unreadable.contains(key) && !dc::expired(rec, t))
      current.emplace(key, rec);
  std::vector<discovery_event> events;
  for (auto& [key, rec] : w.known)
    if (!current.contains(key))
      events.push_back({discovery_event_kind::removed, rec});
  for (auto& [key, rec] : current) {
    auto it = w.known.find(key);
    if (it == w.known.end())
      events.push_back({discovery_event_kind::added, rec});
    else if (!it->second.same_content(rec))
      events.push_back({discovery_event_kind::updated, rec});
  }
  w.known = std::move(current);
  for (auto& ev : events) {
    if (w.cancelled)
      return;
    try {
      w.callback(ev);
    } catch (const std::exception& e) {
      spdlog::error("discovery: watch callback threw: {}", e.what());
    }
  }
}

class reg_handle final : public registration {
public:
  reg_handle(std::shared_ptr<core> c, std::shared_ptr<reg_state> st)
      : core_(std::move(c)), st_(std::move(st)) {}
  ~reg_handle() override { (void)deregister(); }

  [[nodiscard]] expected<void> deregister() override {
    {
      std::lock_guard lock{st_->mutex};
      if (st_->deregistered)
        return {};
      st_->deregistered = true;
      if (auto ok = core_->store().remove(st_->rec.key()); !ok)
        return ok;
    }
    core_->forget(st_.get());
    return {};
  }
  [[nodiscard]] instance_record record() const override {
    std::lock_guard lock{st_->mutex};
    return st_->rec;
  }
  void stop_keep_alive() override {
    std::lock_guard lock{st_->mutex};
    st_->keep_alive = false;
  }

private:
  [[nodiscard]] expected<void> update(const std::function<void(instance_record&)>& change) override {
    std::lock_guard lock{st_->mutex};
    if (st_->deregistered)
      return make_error(errc::closed, "registration already removed");
    change(st_->rec);
    st_->rec.renewed_at_ms = core_->now();
    return core_->store().put(st_->rec.key(), discovery_codec::encode(st_->rec));
  }

  std::shared_ptr<core> core_;
  std::shared_ptr<reg_state> st_;
};

class watch_handle final : public discovery_watch {
public:
  watch_handle(std::shared_ptr<core> c, std::shared_ptr<watch_state> w)
      : core_(std::move(c)), w_(std::move(w)) {}
  ~watch_handle() override {
    w_->cancelled = true;
    core_->forget(w_.get());
    if (!core_->on_watch_thread()) {
      std::lock_guard lock{w_->callback_mutex}; // wait for a callback that is running
    }
  }

private:
  std::shared_ptr<core> core_;
  std::shared_ptr<watch_state> w_;
};

class lease_discovery final : public discovery_plane {
public:
  lease_discovery(std::shared_ptr<record_store> store, discovery_options opts)
      : core_(std::make_shared<core>(std::move(store), opts)),
        keep_alive_("discovery-keepalive", opts.keep_alive_interval, [c = core_] { c->renew_all(); }),
        watcher_("discovery-watch", opts.poll_interval, [c = core_] { c->poll_all(); }) {}

  [[nodiscard]] expected<std::unique_ptr<registration>>
  register_instance(instance_record rec) override;

  [[nodiscard]] expected<std::vector<instance_record>> list(std::string_view prefix) override {
    auto p = discovery_codec::parse_prefix(prefix);
    if (!p)
      return std::move(p.error());
    return core_->read_live(*p);
  }

  [[nodiscard]] expected<std::unique_ptr<discovery_watch>>
  watch(std::string_view prefix, discovery_callback callback) override {
    auto p = discovery_codec::parse_prefix(prefix);
    if (!p)
      return std::move(p.error());
    if (!callback)
      return make_error(errc::invalid_argument, "watch needs a callback");
    auto w = std::make_shared<watch_state>();
    w->prefix = std::move(*p);
    w->callback = std::move(callback);
    core_->add(w);
    watcher_.wake(); // the initial snapshot comes at once
    return std::unique_ptr<discovery_watch>{std::make_unique<watch_handle>(core_, w)};
  }

  [[nodiscard]] uint64_t corrupt_count() const override { return core_->corrupt_count(); }

private:
  std::shared_ptr<core> core_;
  periodic_thread keep_alive_;
  periodic_thread watcher_;
};

expected<std::unique_ptr<registration>> lease_discovery::register_instance(instance_record rec) {
  auto& ep = rec.endpoint;
  if (!is_valid_name(ep.namespace_name) || !is_valid_name(ep.component_name) ||
      !is_valid_name(ep.endpoint_name))
    return make_error(errc::invalid_argument, "endpoint names must match [a-z0-9_-]+");
  if (rec.instance == 0)
    rec.instance = new_instance_id();
  auto key = rec.key();
  if (auto existing = core_->store().get(key)) {
    auto old = discovery_codec::decode(key, *existing);
    if (old && !discovery_codec::expired(*old, core_->now()))
      return make_error(errc::invalid_argument, "instance already registered: " + key);
  }
  rec.lease_ttl_ms = core_->options().lease_ttl.count();
  rec.renewed_at_ms = core_->now();
  if (auto ok = core_->store().put(key, discovery_codec::encode(rec)); !ok)
    return std::move(ok.error());
  auto st = std::make_shared<reg_state>();
  st->rec = std::move(rec);
  core_->add(st);
  return std::unique_ptr<registration>{std::make_unique<reg_handle>(core_, std::move(st))};
}

} // namespace

expected<std::unique_ptr<discovery_plane>> make_lease_discovery(std::shared_ptr<record_store> store,
                                                                discovery_options options) {
  using std::chrono::milliseconds;
  if (options.lease_ttl <= milliseconds{0} || options.keep_alive_interval <= milliseconds{0} ||
      options.poll_interval <= milliseconds{0} || options.gc_after < milliseconds{0})
    return make_error(errc::config_error, "discovery intervals must be positive");
  if (options.keep_alive_interval >= options.lease_ttl)
    return make_error(errc::config_error, "discovery keep_alive_interval must be below lease_ttl");
  return std::unique_ptr<discovery_plane>{
      std::make_unique<lease_discovery>(std::move(store), std::move(options))};
}

} // namespace dynamo::planes
