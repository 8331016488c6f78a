// The cluster configuration file (YAML): namespace, discovery, plane hosts,
// frontend, admin API, router and worker pools with their roles and engines.
// Every binary of a multi-process deployment starts from the same file
// (docs/CLUSTER.md). Parsing is strict: unknown keys and bad values are
// errors naming the field ("pools[1].engine: ..."). Pure values.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/core/secret.hpp"
#include "runtime/core/tls.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/route/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::config {

/// A pool's role is the disaggregation role (one enum, one parser: runtime/protocol/disagg.hpp).
using worker_role = protocol::disagg_role;
using protocol::to_string;
enum class engine_kind : uint8_t { mocker, cpu, cuda };

[[nodiscard]] std::string_view to_string(engine_kind e) noexcept;
[[nodiscard]] expected<engine_kind> parse_engine_kind(std::string_view text);

struct mocker_options {
  double speedup_ratio = 1.0;        ///< 0: no simulated delay
  double decode_speedup_ratio = 1.0;
  uint32_t num_blocks = 16384;
};

struct engine_options {
  uint32_t block_size = 16;             ///< tokens per KV block (router hashes with it)
  uint32_t kv_blocks = 0;               ///< 0: sized from memory (cpu/cuda) or mocker.num_blocks
  uint32_t max_num_seqs = 256;
  /// Tokens per engine step; 0: the engine's default (default_max_num_batched_tokens).
  uint32_t max_num_batched_tokens = 0;
  bool prefix_caching = true;
  uint32_t threads = 0;                 ///< cpu engine threads; 0: all cores
  /// cpu engine: repack the 4- and 6-bit matrices at load (model::load_options::cpu_repack);
  /// false saves their size in RAM and the load time, at some decode speed.
  bool cpu_repack = true;
  uint32_t context_length = 0;          ///< 0: the model's
  double gpu_memory_fraction = 0.9;     ///< cuda: of device memory for each executor's weights, activations and KV
};

/// The KV block manager's tiers of each engine of a pool (docs/KV.md): G2 host
/// memory and G3 disk, in GiB (0: no such tier). Each engine keeps its disk
/// blocks in a directory of its own under disk_path. The disk tuning options
/// left unset keep kvbm::kvbm_config's defaults.
struct kvbm_options {
  double host_gb = 0;
  double disk_gb = 0;
  std::string disk_path;
  std::optional<uint32_t> disk_readers;      ///< runs of one onboarding read at once
  std::optional<double> disk_read_mb;        ///< MiB per read of a run
  std::optional<double> disk_segment_mb;     ///< segment files are sealed at this size
  std::optional<double> disk_min_free_gb;    ///< a write leaving less free space is skipped
  std::optional<uint32_t> disk_min_frequency; ///< offers of a block before it goes to disk
  [[nodiscard]] bool enabled() const noexcept { return host_gb > 0 || disk_gb > 0; }
};

/// An option out of range: its key as in the config section ("disk_read_mb";
/// a flag is the section's prefix and the key with dashes, "--kvbm-disk-read-mb") and why.
struct option_error {
  std::string key;
  std::string why;
};
/// The first option of `k` out of range; nullopt when all are in range.
[[nodiscard]] std::optional<option_error> check_kvbm_options(const kvbm_options& k);

struct pool_config {
  std::string name;                     ///< component name, [a-z0-9_-]+
  worker_role role = worker_role::aggregated;
  engine_kind engine = engine_kind::mocker;
  std::string model;                    ///< served model name (OpenAI "model")
  std::string model_path;               ///< GGUF path (cpu/cuda); "" for the mocker
  uint32_t replicas = 1;                ///< worker processes the launcher starts
  uint32_t workers_per_process = 1;     ///< engines per worker process
  engine_options engine_opts;
  mocker_options mocker;
  kvbm_options kvbm;
};

struct discovery_config {
  std::string backend = "file";         ///< file | etcd | memory (memory: single process only)
  std::string root;                     ///< file backend directory; "" = $DYNAMO_DISCOVERY_DIR or /tmp/dynamo_discovery
  /// etcd: http(s)://host[:port] each, tried in order; empty = $ETCD_ENDPOINTS
  /// (comma-separated) or http://127.0.0.1:2379.
  std::vector<std::string> endpoints;
  std::string key_prefix = "/dynamo";   ///< etcd: records live under <key_prefix>/instances/
  uint32_t lease_ttl_ms = 1000;         ///< etcd: whole seconds, at least etcd's minimum TTL
  /// etcd over https:// (docs/CLUSTER.md "Security"): the CA of etcd's
  /// certificate ("": the system's) and an optional client certificate.
  tls_files tls;
  /// etcd authentication (etcd's `auth enable`); password may be "env:NAME".
  std::string username;
  std::string password;
};

/// The discovery password with "env:NAME" read now ("" without a username).
/// errc::config_error naming discovery.password when the variable is unset.
[[nodiscard]] expected<std::string> resolve_discovery_password(const discovery_config& c);

/// ZeroMQ CURVE on the request and event planes (docs/CLUSTER.md "Security"):
/// one cluster keypair; every plane server socket uses it and admits only
/// clients that prove they hold it. Each key is 40 Z85 characters or
/// "env:NAME". Both empty: CURVE off (the default).
struct curve_config {
  std::string public_key;
  std::string secret_key;
  [[nodiscard]] bool enabled() const noexcept { return !public_key.empty() || !secret_key.empty(); }
};

struct security_config {
  curve_config curve;
};

struct frontend_config {
  std::string host = "0.0.0.0";
  uint16_t port = 8000;
  uint32_t io_threads = 2;
  /// HTTPS (docs/CLUSTER.md "Security"): cert_file + key_file; with
  /// client_ca_file, clients need a certificate of that CA; ca_file: what the
  /// planner trusts when it reads this frontend's /metrics ("": the system's
  /// store). Empty: plain HTTP.
  tls_files tls;
};

struct admin_config {
  bool enabled = false;                 ///< off by default
  std::string host = "127.0.0.1";       ///< a public host requires a token
  uint16_t port = 0;                    ///< 0: ephemeral (logged)
  std::string token;                    ///< bearer token; may be "env:NAME"
  /// How long a drain forwarded to the hosting process's admin API may take
  /// (504 beyond); in [1, 600000].
  uint32_t forward_timeout_ms = 5000;
  /// HTTPS for the admin API (cert_file + key_file; with client_ca_file,
  /// mutual TLS), published as https://. A drain forwarded to an https:// admin
  /// API trusts ca_file ("": the system's store) and presents cert_file.
  /// Empty: plain HTTP.
  tls_files tls;
};

/// The first admin option out of range or inconsistent (a public host without
/// a token when enabled, a tls block without cert_file + key_file); nullopt
/// when it may start. The config parser and dynamo-run's --admin-* flags both
/// check with it (a tls problem's key is "tls.<key>"). That the files can be
/// read is checked where the server starts (check_tls_files).
[[nodiscard]] std::optional<option_error> check_admin_config(const admin_config& a);

/// A worker process's system server (Dynamo's DYN_SYSTEM_PORT): GET /metrics
/// (dynamo_component_*), /health and /live; its URL is published in each
/// worker's discovery record (metadata "system").
struct system_config {
  bool enabled = true;
  std::string host;  ///< "": plane_host (the URL names the advertised host)
  uint16_t port = 0; ///< 0: ephemeral (several worker processes per host); $DYN_SYSTEM_PORT overrides
};

struct router_config {
  route::router_mode mode = route::router_mode::round_robin;
  /// true: a dynamo-router process routes; frontends send it every request.
  bool standalone = false;
  route::kv_router_config kv;
  uint32_t migration_limit = 3;
  uint32_t migration_max_seq_len = 0;
};

struct disagg_config {
  /// Prompts with fewer uncached tokens are prefilled on the decode worker.
  uint32_t max_local_prefill_length = 512;
  /// Any but inproc (a cluster's workers are separate processes).
  protocol::kv_transport_kind transfer = protocol::kv_transport_kind::automatic;
};

/// The planner (dynamo-planner, research/dynamo.md 6): load-based scaling of
/// every pool, optionally bounded below by a throughput (SLA) estimate.
struct planner_config {
  bool enabled = false;
  uint32_t interval_ms = 5000;
  uint32_t min_replicas = 1;
  uint32_t max_replicas = 8;
  double scale_up_kv_usage = 0.8;       ///< scale up when mean KV usage exceeds this
  double scale_down_kv_usage = 0.3;
  // Queue: mean num_waiting per worker (every role).
  double scale_up_num_waiting = 5.0;    ///< scale up when the predicted mean queue exceeds this
  double scale_down_num_waiting = 0.2;  ///< scale down only when every worker's queue is below this
  // Prefill pools: load = active_prefill_tokens / the pool's max_num_batched_tokens.
  double scale_up_prefill_load = 1.0;
  double scale_down_prefill_load = 0.1;
  std::string predictor = "moving_average"; ///< constant | moving_average | kalman
  uint32_t predictor_window = 3;        ///< moving_average: points averaged
  double kalman_q_level = 1.0;          ///< kalman: process noise of the level
  double kalman_q_trend = 0.1;          ///< kalman: process noise of the trend
  double kalman_r = 10.0;               ///< kalman: measurement noise
  uint32_t kalman_min_points = 5;       ///< kalman: fewer points predict the last value
  /// A decision is pending until the pool's observed replicas reach its target
  /// or this long has passed; no new action for that pool meanwhile.
  uint32_t pending_timeout_ms = 120000;
  /// Scale-down stabilization (as Kubernetes' HPA): a pool's target goes down
  /// only to the highest replica count proposed within this window, so one
  /// quiet interval does not give back a replica the next one needs again.
  /// Scaling up is immediate. 0: off.
  uint32_t scale_down_stabilization_ms = 15000;
  int64_t max_gpu_budget = -1;          ///< GPUs across pools (negative: unlimited)
  uint32_t gpus_per_worker = 1;         ///< a replica costs workers_per_process x this
  // Throughput (SLA) lower bound from the frontend's traffic (dynamo_frontend_* metrics).
  bool throughput_scaling = false;
  std::string metrics_url;              ///< "": http://<frontend host>:<port>/metrics
  /// Set: traffic from this Prometheus server's query API (every frontend's
  /// counters summed) instead of one frontend's /metrics.
  std::string prometheus_url;
  double prefill_tokens_per_s = 0.0;    ///< per worker; 0: unknown
  double decode_tokens_per_s = 0.0;     ///< per worker; 0: unknown
  // SLA mode (mode: sla): replicas sized from a dynamo-profile profile so the
  // predicted traffic meets the TTFT and ITL targets (needs throughput traffic:
  // metrics_url or the frontend's /metrics). mode: load is the threshold policy.
  std::string mode = "load";            ///< load | sla
  double ttft_ms = 0;                   ///< sla: time to first token target
  double itl_ms = 0;                    ///< sla: inter-token latency target
  std::string profile;                  ///< sla: dynamo-profile JSON, for every pool
};

/// The namespace of a cluster whose config names none, and of dynamo-run.
inline constexpr std::string_view default_namespace = "dynamo";

struct cluster_config {
  std::string namespace_name{default_namespace};
  std::string plane_host = "127.0.0.1"; ///< where request/event plane and KV transfer sockets bind
  /// The host this process publishes in discovery for those sockets ("":
  /// plane_host). Needed when plane_host is a wildcard (0.0.0.0); set per
  /// process with --advertise-host or $DYNAMO_ADVERTISE_HOST (apply_plane_hosts).
  std::string advertise_host;
  uint32_t shutdown_grace_ms = 5000;    ///< drain time on SIGTERM before in-flight work is cut
  discovery_config discovery;
  frontend_config frontend;
  admin_config admin;
  system_config system;
  router_config router;
  disagg_config disagg;
  planner_config planner;
  security_config security;
  std::vector<pool_config> pools;

  /// The pool named `name`, or nullptr.
  [[nodiscard]] const pool_config* find_pool(std::string_view name) const noexcept;
};

/// The per-step token budget of an engine when none is configured. A step must
/// stay short: a request that arrives, and the abort of a request whose client
/// left, wait for the step in flight. cuda and mocker: 8192 (vLLM's OpenAI
/// server default; a GPU step of 8192 tokens takes milliseconds). cpu:
/// cpu_step_tokens_per_thread per compute thread, 128..2048, about 0.3-0.7 s of
/// prefill at the ~200 tokens/s per core of SmolLM2-135M (docs/BENCHMARKS.md).
/// `threads` is the CPU engine's compute threads; 0: the hardware threads.
inline constexpr uint32_t accelerator_step_tokens = 8192;
inline constexpr uint32_t cpu_step_tokens_per_thread = 128;
[[nodiscard]] uint32_t default_max_num_batched_tokens(engine_kind e, uint32_t threads) noexcept;
/// `o.max_num_batched_tokens`, or the default for `e` when it is 0.
[[nodiscard]] uint32_t max_num_batched_tokens(engine_kind e, const engine_options& o) noexcept;

/// Parses YAML text. Errors are errc::config_error naming the field.
[[nodiscard]] expected<cluster_config> parse_cluster_config(std::string_view yaml_text);

/// Reads and parses a file (errc::io_error when it cannot be read).
[[nodiscard]] expected<cluster_config> load_cluster_config(const std::string& path);

/// The CURVE keypair of `c` with "env:NAME" values read now; nullopt when
/// CURVE is off. errc::config_error naming security.curve.<key> when a
/// variable is unset or a value is not a Z85 key. (That the two keys belong
/// together is checked where ZeroMQ is: planes/codec/zmq_curve.)
[[nodiscard]] expected<std::optional<curve_keypair>> resolve_curve_keys(const curve_config& c);

/// The host a process advertises: advertise_host, else plane_host.
[[nodiscard]] const std::string& advertised_host(const cluster_config& c) noexcept;

/// A process's own plane hosts: `plane_host` and `advertise_host` (its
/// --plane-host / --advertise-host flags) replace the config's when not
/// empty; without the flag, $DYNAMO_ADVERTISE_HOST does. config_error when the
/// advertised host is then a wildcard (a bind on 0.0.0.0 with nothing to
/// advertise: other processes could not reach it).
[[nodiscard]] expected<void> apply_plane_hosts(cluster_config& c, std::string_view plane_host,
                                               std::string_view advertise_host);

} // namespace dynamo::config
