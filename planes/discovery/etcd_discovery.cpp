#include "planes/discovery/etcd_discovery.hpp"

#include "planes/codec/periodic_thread.hpp"
#include "planes/discovery/etcd_core.hpp"
#include "planes/discovery/record_codec.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

namespace dynamo::planes {
namespace etcd_detail {

namespace ec = etcd_codec;

core::core(std::vector<etcd_endpoint> endpoints, etcd_discovery_options opts)
    : client_(std::move(endpoints), opts.request_timeout, opts.security), opts_(std::move(opts)) {}

int64_t core::now() const { return opts_.base.clock ? opts_.base.clock() : wall_clock_ms(); }

expected<ec::range_result> core::range(const ec::key_range& r) {
  auto body = client_.call("/v3/kv/range", ec::range_body(r));
  if (!body)
    return std::move(body.error());
  return ec::parse_range(*body);
}

expected<lease_info> core::grant() {
  auto ttl_s = std::max<int64_t>(1, (opts_.base.lease_ttl.count() + 999) / 1000);
  auto body = client_.call("/v3/lease/grant", ec::grant_body(ttl_s));
  if (!body)
    return std::move(body.error());
  auto g = ec::parse_grant(*body);
  if (!g)
    return std::move(g.error());
  if (g->ttl_s > ttl_s && !warned_ttl_.exchange(true)) {
    spdlog::warn("discovery: etcd granted a {} s lease for the {} ms asked (its minimum TTL is 1.5 x "
                 "its election timeout)", g->ttl_s, opts_.base.lease_ttl.count());
  }
  return lease_info{g->id, g->ttl_s * 1000};
}

expected<lease_info> core::lease() {
  std::lock_guard lock{lease_mutex_};
  if (lease_.id != 0)
    return lease_;
  auto g = grant();
  if (!g)
    return g;
  lease_ = *g;
  return lease_;
}

void core::lease_lost(int64_t id) {
  std::lock_guard lock{lease_mutex_};
  if (lease_.id == id)
    lease_ = {};
}

expected<void> core::write(reg_state& st, bool create) {
  caf::error last;
  for (int round = 0; round < 2; ++round) { // a second round under a fresh lease
    auto l = lease();
    if (!l) {
      last = std::move(l.error());
      break;
    }
    st.rec.lease_ttl_ms = l->ttl_ms;
    st.rec.renewed_at_ms = now();
    auto value = discovery_codec::encode(st.rec);
    auto body = create ? client_.call("/v3/kv/txn", ec::create_body(st.etcd_key, value, l->id))
                       : client_.call("/v3/kv/put", ec::put_body(st.etcd_key, value, l->id));
    if (!body && code_of(body.error()) == errc::not_found) { // etcd no longer knows the lease
      lease_lost(l->id);
      last = std::move(body.error());
      continue;
    }
    if (!body) {
      last = std::move(body.error());
      break;
    }
    if (create) {
      auto created = ec::parse_created(*body);
      if (!created)
        return std::move(created.error());
      if (!*created) {
        // Ours already, when a retried request had been applied; anyone else's: refused.
        auto existing = range({st.etcd_key, ""});
        if (!existing || existing->kvs.size() != 1 || existing->kvs[0].value != value)
          return make_error(errc::invalid_argument, "instance already registered: " + st.rec.key());
      }
    } else if (auto rev = ec::parse_header(*body); !rev) {
      return std::move(rev.error());
    }
    st.written_lease = l->id;
    st.dirty = false;
    return {};
  }
  st.dirty = true;
  return last;
}

expected<void> core::remove(const std::string& etcd_key) {
  auto body = client_.call("/v3/kv/deleterange", ec::delete_body(etcd_key));
  if (body)
    if (auto rev = ec::parse_header(*body); !rev)
      body = std::move(rev.error());
  if (!body) {
    std::lock_guard lock{list_mutex_};
    pending_deletes_.insert(etcd_key);
    return std::move(body.error());
  }
  return {};
}

void core::add(std::shared_ptr<reg_state> st) {
  std::lock_guard lock{list_mutex_};
  pending_deletes_.erase(st->etcd_key);
  regs_.push_back(std::move(st));
}

void core::forget(const reg_state* st) {
  std::lock_guard lock{list_mutex_};
  std::erase_if(regs_, [&](auto& r) { return r.get() == st; });
}

void core::note_reachable(bool ok, const caf::error* why) {
  if (ok == reachable_)
    return;
  reachable_ = ok;
  if (ok)
    spdlog::info("discovery: etcd at {} is reachable again", client_.current_url());
  else
    spdlog::warn("discovery: etcd unreachable ({}); keeping the last view and retrying",
                 why ? describe(*why) : std::string{"?"});
}

void core::tick() {
  lease_info l;
  {
    std::lock_guard lock{lease_mutex_};
    l = lease_;
  }
  if (l.id != 0) {
    auto body = client_.call("/v3/lease/keepalive", ec::lease_body(l.id));
    auto ttl = body ? ec::parse_keepalive(*body) : expected<int64_t>{std::move(body.error())};
    if (!ttl) {
      note_reachable(false, &ttl.error());
      return; // nothing can be written either
    }
    note_reachable(true, nullptr);
    if (*ttl == 0) {
      spdlog::warn("discovery: etcd no longer knows lease {:x} (expired, or etcd lost its data); "
                   "registering again", l.id);
      lease_lost(l.id);
    }
  }
  std::vector<std::shared_ptr<reg_state>> regs;
  std::vector<std::string> deletes;
  {
    std::lock_guard lock{list_mutex_};
    regs = regs_;
    deletes.assign(pending_deletes_.begin(), pending_deletes_.end());
    pending_deletes_.clear();
  }
  for (auto& key : deletes)
    if (auto ok = remove(key); !ok) // re-queued
      return note_reachable(false, &ok.error());
  for (auto& st : regs) {
    std::lock_guard lock{st->mutex};
    if (st->deregistered || !st->keep_alive)
      continue;
    {
      std::lock_guard lease_lock{lease_mutex_};
      if (!st->dirty && st->written_lease == lease_.id && lease_.id != 0)
        continue;
    }
    if (auto ok = write(*st, false); !ok) {
      auto code = code_of(ok.error());
      if (code != errc::io_error && code != errc::timeout) // an outage is logged once, below
        spdlog::warn("discovery: writing {} to etcd failed: {}", st->rec.key(), describe(ok.error()));
      return note_reachable(false, &ok.error());
    }
    note_reachable(true, nullptr);
  }
}

void core::shutdown() {
  bool in_use = false;
  {
    std::lock_guard lock{list_mutex_};
    in_use = !regs_.empty();
  }
  std::lock_guard lock{lease_mutex_};
  if (lease_.id != 0 && !in_use)
    (void)client_.call("/v3/lease/revoke", ec::lease_body(lease_.id));
}

namespace {

class reg_handle final : public registration {
public:
  reg_handle(std::shared_ptr<core> c, std::shared_ptr<reg_state> st) : core_(std::move(c)), st_(std::move(st)) {}
  ~reg_handle() override { (void)deregister(); }

  [[nodiscard]] expected<void> deregister() override {
    expected<void> out;
    {
      std::lock_guard lock{st_->mutex};
      if (st_->deregistered)
        return {};
      st_->deregistered = true;
      out = core_->remove(st_->etcd_key);
    }
    core_->forget(st_.get());
    return out;
  }
  [[nodiscard]] instance_record record() const override {
    std::lock_guard lock{st_->mutex};
    return st_->rec;
  }
  void stop_keep_alive() override {
    // Move the record to a lease nobody renews: it expires one TTL from now,
    // while the plane's other records stay.
    std::lock_guard lock{st_->mutex};
    if (st_->deregistered || !st_->keep_alive)
      return;
    st_->keep_alive = false;
    auto l = core_->grant();
    expected<std::string> body = make_error(errc::io_error, "");
    if (l)
      body = core_->client().call("/v3/kv/put",
                                  etcd_codec::put_body(st_->etcd_key, discovery_codec::encode(st_->rec), l->id));
    else
      body = std::move(l.error());
    if (!body)
      spdlog::warn("discovery: stop_keep_alive of {}: {}", st_->rec.key(), describe(body.error()));
  }

private:
  [[nodiscard]] expected<void> update(const std::function<void(instance_record&)>& change) override {
    std::lock_guard lock{st_->mutex};
    if (st_->deregistered)
      return make_error(errc::closed, "registration already removed");
    change(st_->rec);
    if (!st_->keep_alive) { // a "dead" record: nobody writes it any more
      st_->dirty = true;
      return {};
    }
    return core_->write(*st_, false); // on failure: dirty, written when etcd returns
  }

  std::shared_ptr<core> core_;
  std::shared_ptr<reg_state> st_;
};

class etcd_discovery final : public discovery_plane {
public:
  explicit etcd_discovery(std::shared_ptr<core> c)
      : core_(std::move(c)),
        keep_alive_("etcd-keepalive", core_->options().base.keep_alive_interval, [c = core_] { c->tick(); }) {}
  ~etcd_discovery() override { core_->shutdown(); }

  [[nodiscard]] expected<std::unique_ptr<registration>> register_instance(instance_record rec) override {
    auto& ep = rec.endpoint;
    if (!is_valid_name(ep.namespace_name) || !is_valid_name(ep.component_name) ||
        !is_valid_name(ep.endpoint_name))
      return make_error(errc::invalid_argument, "endpoint names must match [a-z0-9_-]+");
    if (rec.instance == 0)
      rec.instance = new_instance_id();
    auto st = std::make_shared<reg_state>();
    st->etcd_key = etcd_codec::instance_key(core_->options().key_prefix, rec.key());
    st->rec = std::move(rec);
    {
      std::lock_guard lock{st->mutex};
      if (auto ok = core_->write(*st, true); !ok)
        return std::move(ok.error());
    }
    core_->add(st);
    return std::unique_ptr<registration>{std::make_unique<reg_handle>(core_, std::move(st))};
  }

  [[nodiscard]] expected<std::vector<instance_record>> list(std::string_view prefix) override {
    auto p = discovery_codec::parse_prefix(prefix);
    if (!p)
      return std::move(p.error());
    auto snap = core_->range(etcd_codec::prefix_range(core_->options().key_prefix, *p));
    if (!snap)
      return std::move(snap.error());
    core_->corrupt().note_unreadable(snap->unreadable);
    std::vector<instance_record> out;
    for (auto& kv : snap->kvs) // etcd returns keys sorted
      if (auto rec = decode_entry(core_->options().key_prefix, kv, core_->corrupt()))
        out.push_back(std::move(*rec));
    return out;
  }

  [[nodiscard]] expected<std::unique_ptr<discovery_watch>> watch(std::string_view prefix,
                                                                 discovery_callback callback) override {
    auto p = discovery_codec::parse_prefix(prefix);
    if (!p)
      return std::move(p.error());
    if (!callback)
      return make_error(errc::invalid_argument, "watch needs a callback");
    return start_watch(core_, std::move(*p), std::move(callback));
  }

  [[nodiscard]] uint64_t corrupt_count() const override { return core_->corrupt().count(); }

private:
  std::shared_ptr<core> core_;
  periodic_thread keep_alive_;
};

} // namespace
} // namespace etcd_detail

std::vector<std::string> default_etcd_endpoints() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("ETCD_ENDPOINTS"))
    for (std::string_view rest{env}; !rest.empty();) {
      auto comma = rest.find(',');
      if (auto e = rest.substr(0, comma); !e.empty())
        out.emplace_back(e);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  if (out.empty())
    out.emplace_back("http://127.0.0.1:2379");
  return out;
}

expected<std::unique_ptr<discovery_plane>> make_etcd_discovery(etcd_discovery_options options) {
  using std::chrono::milliseconds;
  if (options.endpoints.empty())
    return make_error(errc::config_error, "etcd discovery needs at least one endpoint");
  std::vector<etcd_endpoint> endpoints;
  for (auto& url : options.endpoints) {
    auto e = parse_etcd_endpoint(url);
    if (!e)
      return std::move(e.error());
    endpoints.push_back(std::move(*e));
  }
  auto& kp = options.key_prefix;
  if (kp.size() < 2 || kp.front() != '/' || kp.back() == '/' || kp.find("//") != std::string::npos)
    return make_error(errc::config_error, "etcd key prefix '" + kp + "' must look like /dynamo");
  auto& b = options.base;
  if (b.lease_ttl <= milliseconds{0} || b.keep_alive_interval <= milliseconds{0} ||
      options.request_timeout <= milliseconds{0} || options.max_backoff <= milliseconds{0})
    return make_error(errc::config_error, "discovery intervals must be positive");
  if (b.keep_alive_interval >= b.lease_ttl)
    return make_error(errc::config_error, "discovery keep_alive_interval must be below lease_ttl");
  auto c = std::make_shared<etcd_detail::core>(std::move(endpoints), std::move(options));
  return std::unique_ptr<discovery_plane>{std::make_unique<etcd_detail::etcd_discovery>(std::move(c))};
}

} // namespace dynamo::planes
