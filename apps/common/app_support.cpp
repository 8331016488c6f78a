#include "apps/common/app_support.hpp"

#include "actors/admin/admin_backend.hpp"
#include "actors/admin/admin_rows.hpp"
#include "actors/admin/admin_service.hpp"
#include "runtime/admin/admin_forward.hpp"
#include "actors/frontend/frontend_service.hpp"
#include "actors/worker/worker_service.hpp"
#include "planes/codec/zmq_curve.hpp"
#include "planes/discovery/etcd_discovery.hpp"
#include "planes/discovery/file_discovery.hpp"
#include "planes/discovery/inproc_discovery.hpp"
#include "runtime/core/host.hpp"
#include "runtime/protocol/components.hpp"
#include "runtime/protocol/disagg.hpp"

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

namespace dynamo::apps {

std::string default_model_path() {
  if (const char* p = std::getenv("DYNAMO_MODEL_PATH"); p && *p)
    return p;
  const char* home = std::getenv("HOME");
  return std::string{home ? home : "/root"} + "/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

void block_shutdown_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int wait_for_shutdown() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  return sig;
}

void add_plane_host_flags(cli& c, plane_host_flags& f) {
  c.option("plane-host", &f.plane_host, "bind the request, event and KV transfer sockets here (default: the "
                                        "config's plane_host)")
    .option("advertise-host", &f.advertise_host, "publish this host for them in discovery (default: "
                                                  "$DYNAMO_ADVERTISE_HOST, the config's advertise_host, the "
                                                  "plane host); required when binding 0.0.0.0");
}

expected<config::cluster_config> load_config(const std::string& path, const plane_host_flags& hosts) {
  auto cfg = config::load_cluster_config(path);
  if (!cfg)
    return cfg;
  if (auto ok = config::apply_plane_hosts(*cfg, hosts.plane_host, hosts.advertise_host); !ok)
    return make_error(errc::config_error, path + ": " + message_of(ok.error()));
  return cfg;
}

expected<std::optional<curve_keypair>> plane_keys(const config::cluster_config& cfg) {
  auto keys = config::resolve_curve_keys(cfg.security.curve);
  if (!keys || !*keys)
    return keys;
  if (auto ok = planes::check_curve_keypair(**keys); !ok)
    return std::move(ok.error());
  spdlog::info("planes: CURVE on (cluster public key {})", (*keys)->public_key);
  return keys;
}

expected<void> kvbm_flags::apply(config::kvbm_options& k) const {
  if (host_gb)
    k.host_gb = *host_gb;
  if (disk_gb)
    k.disk_gb = *disk_gb;
  if (disk_path)
    k.disk_path = *disk_path;
  auto set = [](auto& to, const auto& from) {
    if (from)
      to = from;
  };
  set(k.disk_readers, disk_readers);
  set(k.disk_read_mb, disk_read_mb);
  set(k.disk_segment_mb, disk_segment_mb);
  set(k.disk_min_free_gb, disk_min_free_gb);
  set(k.disk_min_frequency, disk_min_frequency);
  if (auto bad = config::check_kvbm_options(k)) {
    std::string flag = "--kvbm-" + bad->key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    return make_error(errc::invalid_argument, flag + " " + bad->why);
  }
  return {};
}

void add_cpu_repack_flag(cli& c, std::optional<bool>& on) {
  c.custom("cpu-repack", false,
           [&on](const std::string& v) -> expected<void> {
             auto parsed = parse_on_off("cpu-repack", v);
             if (!parsed)
               return parsed.error();
             on = *parsed;
             return {};
           },
           "on | off: CPU engine: give the Q4_0, IQ4_NL, Q8_0, IQ4_XS, Q4_K, Q5_K and Q6_K matrices a repacked copy at load, for faster "
           "matmuls (default on, or the pool's engine_args.cpu_repack); the copy replaces the file's pages in RAM, "
           "so off saves only the load time it takes and the layouts' few extra bytes");
}

void add_kvbm_flags(cli& c, kvbm_flags& f) {
  // One number; its range is checked by apply() (config::check_kvbm_options).
  auto number = []<class T>(std::optional<T>& to, const char* flag) {
    return [&to, flag](const std::string& v) -> expected<void> {
      auto xs = parse_number_list<T>(flag, v);
      if (!xs)
        return std::move(xs.error());
      if (xs->size() != 1)
        return make_error(errc::invalid_argument, "--" + std::string{flag} + " expects one number, got '" + v + "'");
      to = xs->front();
      return {};
    };
  };
  c.custom("kvbm-host-gb", false, number(f.host_gb, "kvbm-host-gb"),
           "KVBM host tier (G2) per worker in GiB: offloaded KV blocks onboarded instead of recomputed (0: off)")
    .custom("kvbm-disk-gb", false, number(f.disk_gb, "kvbm-disk-gb"),
            "KVBM disk tier (G3) per worker in GiB, for blocks reused at least twice (0: off)")
    .custom("kvbm-disk-path", false,
            [&f](const std::string& v) -> expected<void> {
              f.disk_path = v;
              return {};
            },
            "KVBM disk tier directory (each worker writes its own subdirectory)")
    .custom("kvbm-disk-readers", false, number(f.disk_readers, "kvbm-disk-readers"),
            "KVBM disk tier: runs of adjacent records of one onboarding read at once, 1..256 (default 8)")
    .custom("kvbm-disk-read-mb", false, number(f.disk_read_mb, "kvbm-disk-read-mb"),
            "KVBM disk tier: MiB per read of a run, 4 KiB..1024 (default 4)")
    .custom("kvbm-disk-segment-mb", false, number(f.disk_segment_mb, "kvbm-disk-segment-mb"),
            "KVBM disk tier: segment files are sealed at this many MiB, >= 1 (default 64)")
    .custom("kvbm-disk-min-free-gb", false, number(f.disk_min_free_gb, "kvbm-disk-min-free-gb"),
            "KVBM disk tier: a write that would leave less free space (GiB) is skipped (default 1)")
    .custom("kvbm-disk-min-frequency", false, number(f.disk_min_frequency, "kvbm-disk-min-frequency"),
            "KVBM disk tier: a block goes to disk once offered this often (count doubles per offer; default 2)");
}

void add_router_flags(cli& c, router_flags& f) {
  c.custom("router-mode", false,
           [&f](const std::string& v) -> expected<void> {
             auto mode = route::parse_router_mode(v);
             if (!mode)
               return std::move(mode.error());
             f.mode = *mode;
             return {};
           },
           "round-robin | random | kv (default: the config's router.mode, else round-robin)")
    .custom("migration-limit", false,
            [&f](const std::string& v) -> expected<void> {
              auto n = parse_number_list<uint32_t>("migration-limit", v);
              if (!n)
                return std::move(n.error());
              if (n->size() != 1)
                return make_error(errc::invalid_argument, "--migration-limit expects one number, got '" + v + "'");
              f.migration_limit = n->front();
              return {};
            },
            "re-routes of a request whose worker died (default: the config's router.migration_limit, else 3)");
  for (const auto& flag : route::kv_router_flags()) {
    std::string name{flag.name};
    route::kv_router_config probe;
    bool is_switch = static_cast<bool>(probe.set(name, ""));
    c.custom(name.substr(2), is_switch,
             [&f, name](const std::string& v) -> expected<void> {
               route::kv_router_config check; // the value alone, checked now
               if (auto ok = check.set(name, v); !ok)
                 return ok;
               f.kv.emplace_back(name, v);
               return {};
             },
             std::string{flag.help});
  }
}

expected<void> router_flags::apply(config::router_config& r) const {
  if (mode)
    r.mode = *mode;
  if (migration_limit)
    r.migration_limit = *migration_limit;
  for (const auto& [flag, value] : kv)
    if (auto ok = r.kv.set(flag, value); !ok)
      return ok;
  return r.kv.validate();
}

std::vector<std::string> router_flags::worker_choice_flags() const {
  std::vector<std::string> out;
  if (mode)
    out.emplace_back("--router-mode");
  for (const auto& [flag, value] : kv)
    if (std::find(out.begin(), out.end(), flag) == out.end())
      out.push_back(flag);
  return out;
}

expected<std::unique_ptr<planes::discovery_plane>> make_discovery(const config::discovery_config& cfg) {
  planes::discovery_options o;
  o.lease_ttl = std::chrono::milliseconds(cfg.lease_ttl_ms);
  o.keep_alive_interval = std::chrono::milliseconds(std::max<uint32_t>(50, cfg.lease_ttl_ms / 4));
  if (cfg.backend == "memory") {
    // One process: leases need no wall clock, and a wall-clock step (NTP)
    // must not expire every instance at once (seen under load: all workers
    // "left" together and rejoined 0.3 s later).
    o.clock = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
    };
    return planes::make_inproc_discovery(planes::make_inproc_discovery_store(), o);
  }
  if (cfg.backend == "etcd") {
    planes::etcd_discovery_options eo;
    eo.endpoints = cfg.endpoints.empty() ? planes::default_etcd_endpoints() : cfg.endpoints;
    eo.key_prefix = cfg.key_prefix;
    auto password = config::resolve_discovery_password(cfg);
    if (!password)
      return std::move(password.error());
    eo.security = {cfg.tls.ca_file, cfg.tls.cert_file, cfg.tls.key_file, cfg.username, std::move(*password)};
    eo.base = o;
    eo.base.keep_alive_interval = std::chrono::milliseconds(std::max<uint32_t>(50, cfg.lease_ttl_ms / 3));
    spdlog::info("discovery: etcd at {} under {}", fmt::join(eo.endpoints, ","), eo.key_prefix);
    return planes::make_etcd_discovery(std::move(eo));
  }
  if (cfg.backend != "file")
    return make_error(errc::config_error, "discovery backend '" + cfg.backend + "' is not one of file|etcd|memory");
  return planes::make_file_discovery(cfg.root.empty() ? planes::default_discovery_root() : cfg.root, o);
}

actors::model_watcher_config connect_frontend(actors::model_watcher_config cfg,
                                              frontend::frontend_service& fe) {
  if (auto rm = route::router_metrics::create(fe.shared_metrics_registry()))
    cfg.router.metrics = std::move(*rm);
  else
    spdlog::warn("router metrics disabled: {}", describe(rm.error()));
  cfg.on_model_added = [&fe](const actors::served_model& m) {
    frontend::model_entry e;
    e.card = m.card;
    e.tokenizer = m.tokenizer;
    e.chat_template = m.chat_template;
    e.client = m.client;
    if (auto ok = fe.add_model(std::move(e)); !ok)
      spdlog::error("cannot serve model {}: {}", m.card.name, describe(ok.error()));
    else
      spdlog::info("serving model {}", m.card.name);
  };
  cfg.client.on_migration = [&fe](const std::string& model, bool ongoing) {
    fe.count_migration(model, ongoing);
  };
  cfg.client.on_disagg = [&fe](const std::string& model, bool remote) { fe.count_disagg(model, remote); };
  cfg.on_model_removed = [&fe](const std::string& name) {
    if (fe.remove_model(name))
      spdlog::warn("model {} removed: no workers left", name);
  };
  return cfg;
}

namespace {

// The admin view of one process: its workers' supervisors, the namespace's instances.
class process_admin final : public admin::admin_backend {
public:
  process_admin(std::string kind, caf::actor_system& sys, planes::discovery_plane& d, std::string ns,
                std::function<std::vector<actors::worker_service*>()> w,
                std::function<admin::supervisor_list()> more, std::shared_ptr<route::router_metrics> routers)
    : kind_(std::move(kind)), sys_(sys), discovery_(d), ns_(std::move(ns)), workers_(std::move(w)),
      more_(std::move(more)), routers_(std::move(routers)) {}

  std::string process_kind() const override { return kind_; }

  std::vector<admin::actor_row> actors() override {
    return admin::collect_actor_rows(sys_, supervisors());
  }

  expected<std::vector<admin::instance_row>> instances() override {
    auto rows = admin::instance_rows(discovery_, ns_);
    if (!rows || !routers_)
      return rows;
    auto routed = routers_->routed_workers();
    for (auto& row : *rows)
      if (auto it = routed.find(row.instance_id); it != routed.end())
        row.routing = admin::routing_view{it->second.router, it->second.kv_capacity_rule,
                                          it->second.kv_capacity_blocks};
    return rows;
  }

  expected<void> drain(uint64_t id, bool on) override {
    for (auto* w : workers()) {
      if (auto index = w->index_of(id)) {
        w->set_draining(*index, on);
        return {};
      }
    }
    return make_error(errc::not_found, fmt::format("worker {:016x} is not hosted by this process", id));
  }

  expected<std::optional<admin::instance_host>> host_of(uint64_t id) override {
    return admin::find_instance_host(discovery_, id, ns_);
  }

  expected<void> restart(const std::string& name) override {
    return admin::restart_actor(sys_, supervisors(), name);
  }

private:
  admin::supervisor_list supervisors() const {
    admin::supervisor_list all = more_ ? more_() : admin::supervisor_list{};
    for (auto* w : workers()) {
      auto some = w->supervisors();
      all.insert(all.end(), some.begin(), some.end());
    }
    return all;
  }

  std::string kind_;
  caf::actor_system& sys_;
  planes::discovery_plane& discovery_;
  std::string ns_;
  std::vector<actors::worker_service*> workers() const {
    return workers_ ? workers_() : std::vector<actors::worker_service*>{};
  }

  std::function<std::vector<actors::worker_service*>()> workers_;
  std::function<admin::supervisor_list()> more_;
  std::shared_ptr<route::router_metrics> routers_;
};

} // namespace

expected<std::optional<tls_files>> server_tls(const tls_files& t, std::string_view prefix, bool as_flag) {
  if (!t.any())
    return std::optional<tls_files>{};
  auto bad = check_tls_files(t, true);
  if (!bad)
    return std::optional<tls_files>{t};
  if (as_flag)
    std::replace(bad->key.begin(), bad->key.end(), '_', '-');
  return make_error(errc::config_error, std::string{prefix} + bad->key + ": " + bad->why);
}

expected<std::unique_ptr<admin::admin_service>>
start_admin(const config::admin_config& cfg, std::string process_kind, caf::actor_system& sys,
            planes::discovery_plane& discovery, std::string ns,
            std::function<std::vector<actors::worker_service*>()> workers,
            std::function<admin::supervisor_list()> more_supervisors,
            std::shared_ptr<route::router_metrics> routers) {
  if (!cfg.enabled)
    return std::unique_ptr<admin::admin_service>{};
  admin::admin_options o;
  o.host = cfg.host;
  o.port = cfg.port;
  o.token = cfg.token;
  o.forward_timeout = std::chrono::milliseconds(cfg.forward_timeout_ms);
  auto tls = server_tls(cfg.tls, "admin.tls.");
  if (!tls)
    return std::move(tls.error());
  o.tls = tls->value_or(tls_files{}); // the files it checked (none: plain HTTP)
  auto backend = std::make_shared<process_admin>(std::move(process_kind), sys, discovery, std::move(ns), std::move(workers),
                                                 std::move(more_supervisors), std::move(routers));
  auto svc = admin::admin_service::start(o, backend);
  if (!svc)
    return svc.error();
  return svc; // admin_service::start logged where it listens
}

std::string published_admin_url(const config::cluster_config& cfg, const admin::admin_service* svc) {
  if (svc == nullptr)
    return {};
  return admin::advertised_admin_url(cfg.admin.host, config::advertised_host(cfg), svc->port(),
                                     svc->scheme() == "https");
}

expected<std::unique_ptr<planes::registration>>
publish_process(planes::discovery_plane& discovery, std::string_view ns, std::string_view component,
                std::string admin_url, std::map<std::string, std::string> metadata) {
  planes::instance_record rec;
  rec.endpoint = {std::string{ns}, std::string{component}, std::string{protocol::process_endpoint}};
  rec.metadata = std::move(metadata);
  rec.metadata[std::string{protocol::role_metadata_key}] = std::string{component};
  rec.metadata[std::string{protocol::pid_metadata_key}] = std::to_string(::getpid());
  if (!admin_url.empty())
    rec.metadata[std::string{admin::admin_url_key}] = std::move(admin_url);
  return discovery.register_instance(std::move(rec));
}

expected<system_server> start_system_server(const config::cluster_config& cfg,
                                           std::shared_ptr<metrics::registry> registry,
                                           std::shared_ptr<metrics::component_metrics> component,
                                           std::function<std::string()> health) {
  system_server out;
  if (!cfg.system.enabled)
    return out;
  http::server_options o;
  o.host = cfg.system.host.empty() ? cfg.plane_host : cfg.system.host;
  o.port = cfg.system.port;
  if (const char* env = std::getenv("DYN_SYSTEM_PORT"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const unsigned long port = std::strtoul(env, &end, 10);
    if (*end != '\0' || port > 65535)
      return make_error(errc::config_error, fmt::format("DYN_SYSTEM_PORT '{}' is not a port", env));
    o.port = static_cast<uint16_t>(port);
  }
  http::router r;
  r.add("GET", "/metrics", [registry, component](http::request, std::shared_ptr<http::http_responder> res) {
    if (component)
      component->refresh_uptime();
    res->respond(200, std::string{metrics::registry::content_type}, registry->render());
  });
  r.add("GET", "/live", [](http::request, std::shared_ptr<http::http_responder> res) {
    res->respond(200, "application/json", R"({"status":"live"})");
  });
  r.add("GET", "/health", [health = std::move(health)](http::request, std::shared_ptr<http::http_responder> res) {
    const std::string why = health ? health() : std::string{};
    if (why.empty())
      return (void)res->respond(200, "application/json", R"({"status":"ready"})");
    res->respond(503, "application/json", nlohmann::json{{"status", "notready"}, {"reason", why}}.dump());
  });
  auto srv = http::server::start(std::move(o), std::move(r));
  if (!srv)
    return srv.error();
  out.url = fmt::format("http://{}:{}", url_host(config::advertised_host(cfg)), (*srv)->port());
  out.server = std::move(*srv);
  return out;
}

void die(std::string_view program, const caf::error& err) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
               describe(err).c_str());
  std::exit(1);
}

} // namespace dynamo::apps
