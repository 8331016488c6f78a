// Wiring shared by the binaries in apps/: the default model location, the
// signal wait for graceful shutdown, KV-router flags on a cli, discovery from
// configuration, and connecting a model watcher to the HTTP frontend.
// Called from main() threads only.
#pragma once

#include "actors/admin/admin_rows.hpp"
#include "actors/admin/admin_service.hpp"
#include "actors/router/model_watcher.hpp"
#include "planes/discovery/discovery_plane.hpp"
#include "planes/http/server.hpp"
#include "runtime/metrics/component_metrics.hpp"
#include "runtime/metrics/registry.hpp"
#include "runtime/config/cluster_config.hpp"
#include "runtime/core/cli.hpp"

#include <caf/actor_system.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::frontend {
class frontend_service;
}
namespace dynamo::actors {
class worker_service;
}

namespace dynamo::apps {

/// $DYNAMO_MODEL_PATH, else ~/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf
/// (where scripts/setup.sh puts it).
[[nodiscard]] std::string default_model_path();

/// Blocks SIGINT and SIGTERM in the calling thread (call first in main, so
/// every thread started later inherits the mask), for wait_for_shutdown().
void block_shutdown_signals();

/// Waits for SIGINT or SIGTERM; returns the signal number.
int wait_for_shutdown();

/// The router flags of every binary that routes (dynamo-run, dynamo-frontend,
/// dynamo-router): --router-mode, --migration-limit and every --kv-* /
/// --router-* flag of route::kv_router_config. Each one given replaces the
/// setting of the cluster config's router: block (or dynamo-run's default).
struct router_flags {
  std::optional<route::router_mode> mode;
  std::optional<uint32_t> migration_limit;
  /// The route::kv_router_config flags given, in command-line order: (flag, value).
  std::vector<std::pair<std::string, std::string>> kv;
  /// Sets what was given on `r`, then checks the combination
  /// (route::kv_router_config::validate: errc::config_error naming the flag).
  [[nodiscard]] expected<void> apply(config::router_config& r) const;
  /// The flags given that choose a worker: --router-mode, then the --kv-* /
  /// --router-* ones in command-line order, each once. A frontend in front of
  /// standalone routers (router.standalone) ignores them: it round-robins
  /// over the dynamo-router replicas.
  [[nodiscard]] std::vector<std::string> worker_choice_flags() const;
};
/// Adds the router flags to `c`; a bad value fails the parse, naming its flag.
void add_router_flags(cli& c, router_flags& f);

/// Where a process that binds plane sockets listens and what it advertises:
/// --plane-host and --advertise-host on `c`, which override the config's
/// (config::apply_plane_hosts).
struct plane_host_flags {
  std::string plane_host;
  std::string advertise_host;
};
void add_plane_host_flags(cli& c, plane_host_flags& f);

/// The cluster config at `path` with `hosts` applied (config::apply_plane_hosts);
/// the error names the file or the host that cannot be advertised.
[[nodiscard]] expected<config::cluster_config> load_config(const std::string& path, const plane_host_flags& hosts);

/// The cluster's CURVE keys (security.curve) resolved now and checked as a
/// pair; nullopt when CURVE is off. The error names the key at fault.
[[nodiscard]] expected<std::optional<curve_keypair>> plane_keys(const config::cluster_config& cfg);

/// The KV block manager flags (--kvbm-host-gb, --kvbm-disk-gb,
/// --kvbm-disk-path and the disk tier's tuning, one per config::kvbm_options
/// field); each one given replaces the pool's setting.
struct kvbm_flags {
  std::optional<double> host_gb;
  std::optional<double> disk_gb;
  std::optional<std::string> disk_path;
  std::optional<uint32_t> disk_readers;
  std::optional<double> disk_read_mb;
  std::optional<double> disk_segment_mb;
  std::optional<double> disk_min_free_gb;
  std::optional<uint32_t> disk_min_frequency;
  /// Replaces `k`'s settings by the flags given; invalid_argument naming the
  /// flag when one is out of range (config::check_kvbm_options).
  [[nodiscard]] expected<void> apply(config::kvbm_options& k) const;
};
void add_kvbm_flags(cli& c, kvbm_flags& f);

/// `--cpu-repack on|off`: when given, replaces the pool's engine_args.cpu_repack.
void add_cpu_repack_flag(cli& c, std::optional<bool>& on);

/// The discovery plane `cfg` names (file, etcd or memory); errc::config_error
/// for another backend. etcd renews its lease every TTL/3.
[[nodiscard]] expected<std::unique_ptr<planes::discovery_plane>>
make_discovery(const config::discovery_config& cfg);

/// Registers every model the watcher finds with `frontend` (and removes it
/// when its workers are gone). `frontend` must outlive the watcher.
[[nodiscard]] actors::model_watcher_config connect_frontend(actors::model_watcher_config cfg,
                                                    frontend::frontend_service& frontend);

/// A server's TLS files (runtime/core/tls.hpp): nullopt when none is set; else
/// `t` once its files go together and can be read, or errc::config_error
/// naming the field: `prefix` + the key ("admin.tls." + "cert_file"), or with
/// `as_flag` the key with dashes ("--admin-tls-" + "cert-file").
[[nodiscard]] expected<std::optional<tls_files>> server_tls(const tls_files& t, std::string_view prefix,
                                                           bool as_flag = false);

/// Starts the admin REST API of this process when `cfg.enabled` (nullptr
/// otherwise): supervisors of `workers` (none or several), instances of namespace `ns`,
/// drain/undrain of hosted workers (others forwarded to their host's admin
/// URL in discovery), restart of supervised actors; over HTTPS with cfg.tls
/// (its files checked first, errors naming admin.tls.*). `workers` is asked on each
/// call, so that a process may start its admin API before its workers (empty:
/// none). With `routers` (a process that routes: its router_metrics), each
/// instance its routers route to carries their view (admin::routing_view: the
/// KV-capacity rule, the capacity learned). What it returns and `discovery`
/// must outlive the returned service.
[[nodiscard]] expected<std::unique_ptr<admin::admin_service>>
start_admin(const config::admin_config& cfg, std::string process_kind, caf::actor_system& sys,
            planes::discovery_plane& discovery, std::string ns,
            std::function<std::vector<actors::worker_service*>()> workers,
            std::function<admin::supervisor_list()> more_supervisors = {},
            std::shared_ptr<route::router_metrics> routers = nullptr);

/// The admin URL this process publishes in its discovery records (metadata
/// admin::admin_url_key): the admin host, or the advertised host when the
/// admin server binds a wildcard, https:// when it serves TLS; "" when `svc`
/// is null (admin disabled).
[[nodiscard]] std::string published_admin_url(const config::cluster_config& cfg,
                                              const admin::admin_service* svc);

/// Publishes a process under namespace `ns` that is a frontend or planner
/// (component from runtime/protocol/components.hpp) as <ns>/<component>/process,
/// so that GET /admin/instances lists it: metadata role=<component>, pid,
/// admin=`admin_url` (see published_admin_url; none when "") and `metadata`. No
/// request address: routers never take it for a worker. Destroying the
/// registration removes it.
[[nodiscard]] expected<std::unique_ptr<planes::registration>>
publish_process(planes::discovery_plane& discovery, std::string_view ns, std::string_view component,
                std::string admin_url, std::map<std::string, std::string> metadata = {});

/// A worker process's system server (config::system_config, Dynamo's
/// DYN_SYSTEM_PORT): GET /metrics renders `registry` (uptime refreshed first),
/// /live answers 200, /health 200 {"status":"ready"} when `health` returns
/// an empty string, else 503 with it. `server` is null when disabled; `url`
/// names the advertised host. $DYN_SYSTEM_PORT overrides the port.
struct system_server {
  std::unique_ptr<http::server> server;
  std::string url; ///< "http://<advertised host>:<port>"; "" when disabled
};
[[nodiscard]] expected<system_server> start_system_server(const config::cluster_config& cfg,
                                                          std::shared_ptr<metrics::registry> registry,
                                                          std::shared_ptr<metrics::component_metrics> component,
                                                          std::function<std::string()> health);

/// Exits the process with a message naming the failure (start-up errors).
[[noreturn]] void die(std::string_view program, const caf::error& err);

} // namespace dynamo::apps
