#include "runtime/config/cluster_config.hpp"
#include "runtime/core/units.hpp"

#include "runtime/core/host.hpp"
#include "runtime/core/http_url.hpp"
#include "runtime/core/tls.hpp"
#include "runtime/core/ids.hpp"
#include "runtime/protocol/components.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <tuple>
#include <sstream>
#include <thread>
#include <utility>

namespace dynamo::config {

std::string_view to_string(engine_kind e) noexcept {
  switch (e) {
    case engine_kind::mocker: return "mocker";
    case engine_kind::cpu: return "cpu";
    case engine_kind::cuda: return "cuda";
  }
  return "unknown";
}

uint32_t default_max_num_batched_tokens(engine_kind e, uint32_t threads) noexcept {
  if (e != engine_kind::cpu)
    return accelerator_step_tokens;
  const uint32_t n = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<uint32_t>(std::clamp<uint64_t>(uint64_t{n} * cpu_step_tokens_per_thread, 128, 2048));
}

uint32_t max_num_batched_tokens(engine_kind e, const engine_options& o) noexcept {
  return o.max_num_batched_tokens != 0 ? o.max_num_batched_tokens
                                       : default_max_num_batched_tokens(e, o.threads);
}

expected<engine_kind> parse_engine_kind(std::string_view t) {
  if (t == "mocker")
    return engine_kind::mocker;
  if (t == "cpu")
    return engine_kind::cpu;
  if (t == "cuda")
    return engine_kind::cuda;
  return make_error(errc::config_error, fmt::format("'{}' is not one of mocker|cpu|cuda", t));
}

std::optional<option_error> check_kvbm_options(const kvbm_options& k) {
  auto outside = [](double x, double lo, double hi) { return !(x >= lo && x <= hi); };
  if (outside(k.host_gb, 0, 1e6))
    return option_error{"host_gb", "must be a size in GiB in [0, 1e6]"};
  if (outside(k.disk_gb, 0, 1e6))
    return option_error{"disk_gb", "must be a size in GiB in [0, 1e6]"};
  if (k.disk_readers && outside(*k.disk_readers, 1, 256))
    return option_error{"disk_readers", "must be in [1, 256]"};
  if (k.disk_read_mb && (outside(*k.disk_read_mb, 0, 1024) || mib_to_bytes(*k.disk_read_mb) < 4096))
    return option_error{"disk_read_mb", "must be a size in MiB in [0.00390625 (4 KiB), 1024]"};
  if (k.disk_segment_mb && outside(*k.disk_segment_mb, 1, 1048576))
    return option_error{"disk_segment_mb", "must be a size in MiB in [1, 1048576]"};
  if (k.disk_min_free_gb && outside(*k.disk_min_free_gb, 0, 1e6))
    return option_error{"disk_min_free_gb", "must be a size in GiB in [0, 1e6]"};
  if (k.disk_min_frequency && outside(*k.disk_min_frequency, 1, 1 << 20))
    return option_error{"disk_min_frequency", "must be in [1, 1048576]"};
  return std::nullopt;
}

std::optional<option_error> check_admin_config(const admin_config& a) {
  if (a.enabled && !is_loopback_host(a.host) && a.token.empty())
    return option_error{"token", "is required when the admin API listens on a public interface"};
  if (a.forward_timeout_ms < 1 || a.forward_timeout_ms > 600000)
    return option_error{"forward_timeout_ms", "must be in [1, 600000] ms"};
  if (a.tls.any())
    if (auto bad = check_tls_shape(a.tls, true))
      return option_error{"tls." + bad->key, bad->why};
  return std::nullopt;
}

const pool_config* cluster_config::find_pool(std::string_view name) const noexcept {
  for (const auto& p : pools)
    if (p.name == name)
      return &p;
  return nullptr;
}

namespace {

// A YAML mapping with its path, that reads typed fields and rejects unknown keys.
class section {
public:
  /// An absent section (invalid or null node) reads as an empty mapping.
  section(const YAML::Node& node, std::string path)
    : node_(node.IsDefined() && !node.IsNull() ? node : YAML::Node(YAML::NodeType::Map)),
      path_(std::move(path)) {}

  [[nodiscard]] std::string field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  [[nodiscard]] caf::error fail(const std::string& key, const std::string& why) const {
    return make_error(errc::config_error, fmt::format("{}: {}", field(key), why));
  }

  template <class T>
  [[nodiscard]] caf::error read(const std::string& key, T& out) {
    known_.insert(key);
    // const lookups: yaml-cpp's non-const operator[] inserts zombie keys.
    YAML::Node v = std::as_const(node_)[key];
    if (!v)
      return {};
    if (!v.IsScalar())
      return fail(key, "expected a value, got a " + std::string{v.IsMap() ? "mapping" : "list"});
    try {
      out = v.as<T>();
    } catch (const YAML::Exception&) {
      return fail(key, fmt::format("'{}' is not a valid {}", v.Scalar(), type_name<T>()));
    }
    return {};
  }

  /// read() into an optional: left unset when the key is absent.
  template <class T>
  [[nodiscard]] caf::error read_optional(const std::string& key, std::optional<T>& out) {
    T v{};
    if (!std::as_const(node_)[key]) {
      known_.insert(key);
      return {};
    }
    if (auto err = read(key, v))
      return err;
    out = v;
    return {};
  }

  [[nodiscard]] YAML::Node child(const std::string& key) {
    known_.insert(key);
    return std::as_const(node_)[key];
  }

  /// errc::config_error for the first key that no read() asked for.
  [[nodiscard]] caf::error check_unknown() const {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      auto key = it->first.as<std::string>();
      if (!known_.count(key))
        return make_error(errc::config_error, fmt::format("{}: unknown key", field(key)));
    }
    return {};
  }

private:
  template <class T>
  static std::string type_name() {
    if constexpr (std::is_same_v<T, bool>)
      return "boolean";
    else if constexpr (std::is_floating_point_v<T>)
      return "number";
    else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
      return "integer";
    else if constexpr (std::is_integral_v<T>)
      return "non-negative integer";
    else
      return "string";
  }

  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

#define DYN_TRY(expr)                                                                              \
  do {                                                                                             \
    if (auto err_ = (expr))                                                                        \
      return err_;                                                                                 \
  } while (false)

caf::error require_map(const YAML::Node& n, const std::string& path) {
  if (n.IsDefined() && !n.IsNull() && !n.IsMap())
    return make_error(errc::config_error, fmt::format("{}: expected a mapping", path));
  return {};
}

caf::error parse_engine_opts(YAML::Node n, const std::string& path, engine_options& e) {
  DYN_TRY(require_map(n, path));
  section s(n, path);
  DYN_TRY(s.read("block_size", e.block_size));
  DYN_TRY(s.read("kv_blocks", e.kv_blocks));
  DYN_TRY(s.read("max_num_seqs", e.max_num_seqs));
  DYN_TRY(s.read("max_num_batched_tokens", e.max_num_batched_tokens));
  DYN_TRY(s.read("prefix_caching", e.prefix_caching));
  DYN_TRY(s.read("threads", e.threads));
  DYN_TRY(s.read("cpu_repack", e.cpu_repack));
  DYN_TRY(s.read("context_length", e.context_length));
  DYN_TRY(s.read("gpu_memory_fraction", e.gpu_memory_fraction));
  if (!(e.gpu_memory_fraction > 0.0 && e.gpu_memory_fraction <= 1.0))
    return s.fail("gpu_memory_fraction", "must be in (0, 1]");
  if (e.block_size == 0)
    return s.fail("block_size", "must be > 0");
  if (e.max_num_seqs == 0)
    return s.fail("max_num_seqs", "must be > 0");
  return s.check_unknown();
}

caf::error parse_mocker(YAML::Node n, const std::string& path, mocker_options& m) {
  DYN_TRY(require_map(n, path));
  section s(n, path);
  DYN_TRY(s.read("speedup_ratio", m.speedup_ratio));
  DYN_TRY(s.read("decode_speedup_ratio", m.decode_speedup_ratio));
  DYN_TRY(s.read("num_blocks", m.num_blocks));
  if (m.speedup_ratio < 0)
    return s.fail("speedup_ratio", "must be >= 0");
  if (m.decode_speedup_ratio <= 0)
    return s.fail("decode_speedup_ratio", "must be > 0");
  return s.check_unknown();
}

caf::error parse_kvbm(YAML::Node n, const std::string& path, kvbm_options& k) {
  DYN_TRY(require_map(n, path));
  section s(n, path);
  DYN_TRY(s.read("host_gb", k.host_gb));
  DYN_TRY(s.read("disk_gb", k.disk_gb));
  DYN_TRY(s.read("disk_path", k.disk_path));
  DYN_TRY(s.read_optional("disk_readers", k.disk_readers));
  DYN_TRY(s.read_optional("disk_read_mb", k.disk_read_mb));
  DYN_TRY(s.read_optional("disk_segment_mb", k.disk_segment_mb));
  DYN_TRY(s.read_optional("disk_min_free_gb", k.disk_min_free_gb));
  DYN_TRY(s.read_optional("disk_min_frequency", k.disk_min_frequency));
  if (auto bad = check_kvbm_options(k))
    return s.fail(bad->key, bad->why);
  return s.check_unknown();
}

caf::error parse_pool(YAML::Node n, const std::string& path, pool_config& p) {
  if (!n.IsMap())
    return make_error(errc::config_error, fmt::format("{}: expected a mapping", path));
  section s(n, path);
  std::string role = "aggregated", engine = "mocker";
  DYN_TRY(s.read("name", p.name));
  DYN_TRY(s.read("role", role));
  DYN_TRY(s.read("engine", engine));
  DYN_TRY(s.read("model", p.model));
  DYN_TRY(s.read("model_path", p.model_path));
  DYN_TRY(s.read("replicas", p.replicas));
  DYN_TRY(s.read("workers_per_process", p.workers_per_process));
  DYN_TRY(parse_engine_opts(s.child("engine_args"), s.field("engine_args"), p.engine_opts));
  DYN_TRY(parse_mocker(s.child("mocker"), s.field("mocker"), p.mocker));
  DYN_TRY(parse_kvbm(s.child("kvbm"), s.field("kvbm"), p.kvbm));
  if (!is_valid_name(p.name))
    return s.fail("name", fmt::format("'{}' must match [a-z0-9_-]+", p.name));
  auto r = protocol::parse_disagg_role(role);
  if (!r)
    return s.fail("role", message_of(r.error()));
  p.role = *r;
  auto e = parse_engine_kind(engine);
  if (!e)
    return s.fail("engine", message_of(e.error()));
  p.engine = *e;
  if (p.model.empty())
    return s.fail("model", "is required");
  if (p.engine != engine_kind::mocker && p.model_path.empty())
    return s.fail("model_path", fmt::format("is required for engine {}", engine));
  if (p.workers_per_process == 0)
    return s.fail("workers_per_process", "must be > 0");
  if (p.kvbm.disk_gb > 0 && p.engine != engine_kind::mocker && p.kvbm.disk_path.empty())
    return s.fail("kvbm", "disk_gb needs disk_path (where the disk tier's files go)");
  return s.check_unknown();
}

caf::error parse_router(YAML::Node n, router_config& r) {
  DYN_TRY(require_map(n, "router"));
  if (!n.IsDefined() || n.IsNull())
    return {};
  for (auto it = n.begin(); it != n.end(); ++it) {
    auto key = it->first.as<std::string>();
    auto field = "router." + key;
    if (!it->second.IsScalar())
      return make_error(errc::config_error, field + ": expected a value");
    auto value = it->second.Scalar();
    if (key == "mode") {
      auto m = route::parse_router_mode(value);
      if (!m)
        return make_error(errc::config_error, field + ": " + message_of(m.error()));
      r.mode = *m;
      continue;
    }
    try {
      if (key == "migration_limit") {
        r.migration_limit = it->second.as<uint32_t>();
        continue;
      }
      if (key == "migration_max_seq_len") {
        r.migration_max_seq_len = it->second.as<uint32_t>();
        continue;
      }
      if (key == "standalone") {
        r.standalone = it->second.as<bool>();
        continue;
      }
    } catch (const YAML::Exception&) {
      return make_error(errc::config_error, fmt::format("{}: '{}' is not a valid {}", field, value,
                                                        key == "standalone" ? "boolean" : "non-negative integer"));
    }
    // Every KV router flag, spelled with underscores: kv_overlap_score_weight: 1.0
    std::string flag = "--" + key;
    for (auto& c : flag)
      if (c == '_')
        c = '-';
    if (auto ok = r.kv.set(flag, value); !ok)
      return make_error(errc::config_error, field + ": " + message_of(ok.error()));
  }
  if (auto ok = r.kv.validate(); !ok)
    return make_error(errc::config_error, "router: " + message_of(ok.error()));
  return {};
}

// The planner fields dynamo-planner added (thresholds, predictor, budget, throughput).
caf::error parse_planner_extras(section& p, planner_config& c) {
  DYN_TRY(p.read("scale_up_num_waiting", c.scale_up_num_waiting));
  DYN_TRY(p.read("scale_down_num_waiting", c.scale_down_num_waiting));
  DYN_TRY(p.read("scale_up_prefill_load", c.scale_up_prefill_load));
  DYN_TRY(p.read("scale_down_prefill_load", c.scale_down_prefill_load));
  DYN_TRY(p.read("predictor", c.predictor));
  DYN_TRY(p.read("predictor_window", c.predictor_window));
  DYN_TRY(p.read("kalman_q_level", c.kalman_q_level));
  DYN_TRY(p.read("kalman_q_trend", c.kalman_q_trend));
  DYN_TRY(p.read("kalman_r", c.kalman_r));
  DYN_TRY(p.read("kalman_min_points", c.kalman_min_points));
  DYN_TRY(p.read("pending_timeout_ms", c.pending_timeout_ms));
  DYN_TRY(p.read("scale_down_stabilization_ms", c.scale_down_stabilization_ms));
  DYN_TRY(p.read("max_gpu_budget", c.max_gpu_budget));
  DYN_TRY(p.read("gpus_per_worker", c.gpus_per_worker));
  DYN_TRY(p.read("throughput_scaling", c.throughput_scaling));
  DYN_TRY(p.read("metrics_url", c.metrics_url));
  DYN_TRY(p.read("prometheus_url", c.prometheus_url));
  DYN_TRY(p.read("prefill_tokens_per_s", c.prefill_tokens_per_s));
  DYN_TRY(p.read("decode_tokens_per_s", c.decode_tokens_per_s));
  DYN_TRY(p.read("mode", c.mode));
  DYN_TRY(p.read("ttft_ms", c.ttft_ms));
  DYN_TRY(p.read("itl_ms", c.itl_ms));
  DYN_TRY(p.read("profile", c.profile));
  if (c.mode != "load" && c.mode != "sla")
    return p.fail("mode", fmt::format("'{}' is not one of load|sla", c.mode));
  if (c.mode == "sla" && (c.ttft_ms <= 0 || c.itl_ms <= 0))
    return p.fail(c.ttft_ms <= 0 ? "ttft_ms" : "itl_ms", "must be > 0 in sla mode");
  if (c.mode == "sla" && c.profile.empty())
    return p.fail("profile", "sla mode needs a dynamo-profile JSON file");
  if (c.predictor != "constant" && c.predictor != "moving_average" && c.predictor != "kalman")
    return p.fail("predictor", fmt::format("'{}' is not one of constant|moving_average|kalman", c.predictor));
  if (c.predictor_window == 0)
    return p.fail("predictor_window", "must be > 0");
  if (c.kalman_q_level <= 0 || c.kalman_q_trend <= 0)
    return p.fail(c.kalman_q_level <= 0 ? "kalman_q_level" : "kalman_q_trend", "must be > 0");
  if (c.kalman_r <= 0)
    return p.fail("kalman_r", "must be > 0");
  if (c.kalman_min_points == 0)
    return p.fail("kalman_min_points", "must be > 0");
  if (c.scale_down_num_waiting < 0 || c.scale_down_num_waiting >= c.scale_up_num_waiting)
    return p.fail("scale_down_num_waiting", "must be >= 0 and below scale_up_num_waiting");
  if (c.scale_down_prefill_load < 0 || c.scale_down_prefill_load >= c.scale_up_prefill_load)
    return p.fail("scale_down_prefill_load", "must be >= 0 and below scale_up_prefill_load");
  if (c.pending_timeout_ms == 0)
    return p.fail("pending_timeout_ms", "must be > 0");
  if (c.gpus_per_worker == 0)
    return p.fail("gpus_per_worker", "must be > 0");
  if (c.prefill_tokens_per_s < 0 || c.decode_tokens_per_s < 0)
    return p.fail(c.prefill_tokens_per_s < 0 ? "prefill_tokens_per_s" : "decode_tokens_per_s",
                  "must be >= 0");
  if (c.throughput_scaling && c.prefill_tokens_per_s == 0 && c.decode_tokens_per_s == 0)
    return p.fail("throughput_scaling", "needs prefill_tokens_per_s or decode_tokens_per_s");
  return {};
}

/// A `tls: {ca_file, cert_file, key_file, client_ca_file}` block of `parent`,
/// the one spelling of TLS files in the config (discovery.tls, frontend.tls,
/// admin.tls; runtime/core/tls.hpp says what each key means); a `server`'s
/// needs cert_file and key_file when present at all, a client's has no
/// client_ca_file. That the files can be read is checked where they are used.
caf::error parse_tls(section& parent, tls_files& out, bool server) {
  auto n = parent.child("tls");
  DYN_TRY(require_map(n, parent.field("tls")));
  section t(n, parent.field("tls"));
  DYN_TRY(t.read("ca_file", out.ca_file));
  DYN_TRY(t.read("cert_file", out.cert_file));
  DYN_TRY(t.read("key_file", out.key_file));
  if (server)
    DYN_TRY(t.read("client_ca_file", out.client_ca_file));
  DYN_TRY(t.check_unknown());
  if (out.any())
    if (auto bad = check_tls_shape(out, server))
      return t.fail(bad->key, bad->why);
  return {};
}

caf::error parse_etcd_security(section& d, discovery_config& c) {
  DYN_TRY(parse_tls(d, c.tls, false));
  DYN_TRY(d.read("username", c.username));
  DYN_TRY(d.read("password", c.password));
  bool tls = c.tls.any();
  if ((tls || !c.username.empty() || !c.password.empty()) && c.backend != "etcd")
    return d.fail(tls ? "tls" : "username", "only for backend etcd");
  if (c.username.empty() != c.password.empty())
    return d.fail(c.username.empty() ? "username" : "password", "username and password go together");
  return {};
}

caf::error parse_discovery(section& d, discovery_config& c) {
  DYN_TRY(d.read("backend", c.backend));
  DYN_TRY(d.read("root", c.root));
  DYN_TRY(d.read("key_prefix", c.key_prefix));
  DYN_TRY(d.read("lease_ttl_ms", c.lease_ttl_ms));
  if (c.backend != "file" && c.backend != "etcd" && c.backend != "memory")
    return d.fail("backend", fmt::format("'{}' is not one of file|etcd|memory", c.backend));
  if (auto n = d.child("endpoints"); n.IsDefined() && !n.IsNull()) {
    if (!n.IsSequence() || n.size() == 0)
      return d.fail("endpoints", "expected a non-empty list of http://host:port");
    for (size_t i = 0; i < n.size(); ++i) {
      auto field = fmt::format("endpoints[{}]", i);
      if (!n[i].IsScalar())
        return d.fail(field, "expected http://host:port");
      auto& url = c.endpoints.emplace_back(n[i].Scalar());
      if (auto u = parse_http_or_https_url(url, "etcd endpoint", 2379); !u)
        return d.fail(field, message_of(u.error()));
      else if (!u->target.empty() && u->target != "/")
        return d.fail(field, fmt::format("'{}' must not have a path", url));
    }
  }
  if (!c.endpoints.empty() && c.backend != "etcd")
    return d.fail("endpoints", "only for backend etcd");
  DYN_TRY(parse_etcd_security(d, c));
  if (!c.root.empty() && c.backend != "file")
    return d.fail("root", "only for backend file");
  auto& kp = c.key_prefix;
  if (kp.size() < 2 || kp.front() != '/' || kp.back() == '/' || kp.find("//") != std::string::npos)
    return d.fail("key_prefix", fmt::format("'{}' must look like /dynamo", kp));
  if (c.lease_ttl_ms < 100)
    return d.fail("lease_ttl_ms", "must be >= 100");
  return d.check_unknown();
}

/// A key as configured ("env:NAME" is checked when resolved) or as resolved.
caf::error check_curve_key(const std::string& value, const std::string& field, bool resolved) {
  if (!resolved && is_env_secret(value))
    return {};
  if (!is_z85_key(value))
    return make_error(errc::config_error,
                      fmt::format("{}: expected 40 Z85 characters (dynamo-launch --gen-curve-keys) or env:NAME", field));
  return {};
}

caf::error parse_security(section& s, security_config& c) {
  auto n = s.child("curve");
  DYN_TRY(require_map(n, "security.curve"));
  section k(n, "security.curve");
  DYN_TRY(k.read("public_key", c.curve.public_key));
  DYN_TRY(k.read("secret_key", c.curve.secret_key));
  DYN_TRY(k.check_unknown());
  if (!c.curve.enabled())
    return s.check_unknown();
  for (const auto* key : {"public_key", "secret_key"}) {
    const auto& v = std::string_view{key} == "public_key" ? c.curve.public_key : c.curve.secret_key;
    if (v.empty())
      return k.fail(key, "is required when security.curve is set");
    DYN_TRY(check_curve_key(v, k.field(key), false));
  }
  return s.check_unknown();
}

caf::error parse_sections(YAML::Node root, cluster_config& c) {
  section s(root, "");
  DYN_TRY(s.read("namespace", c.namespace_name));
  DYN_TRY(s.read("plane_host", c.plane_host));
  DYN_TRY(s.read("advertise_host", c.advertise_host));
  DYN_TRY(s.read("shutdown_grace_ms", c.shutdown_grace_ms));
  if (c.plane_host.empty())
    return s.fail("plane_host", "must not be empty (0.0.0.0 binds every interface)");
  if (!c.advertise_host.empty() && is_wildcard_host(c.advertise_host))
    return s.fail("advertise_host", fmt::format("'{}' names no interface: give the address other processes "
                                                "reach this one at", c.advertise_host));
  if (!is_valid_name(c.namespace_name))
    return s.fail("namespace", fmt::format("'{}' must match [a-z0-9_-]+", c.namespace_name));
  {
    auto n = s.child("discovery");
    DYN_TRY(require_map(n, "discovery"));
    section d(n, "discovery");
    DYN_TRY(parse_discovery(d, c.discovery));
  }
  {
    auto n = s.child("frontend");
    DYN_TRY(require_map(n, "frontend"));
    section f(n, "frontend");
    DYN_TRY(f.read("host", c.frontend.host));
    DYN_TRY(f.read("port", c.frontend.port));
    DYN_TRY(f.read("io_threads", c.frontend.io_threads));
    DYN_TRY(parse_tls(f, c.frontend.tls, true));
    DYN_TRY(f.check_unknown());
  }
  {
    auto n = s.child("admin");
    DYN_TRY(require_map(n, "admin"));
    section a(n, "admin");
    DYN_TRY(a.read("enabled", c.admin.enabled));
    DYN_TRY(a.read("host", c.admin.host));
    DYN_TRY(a.read("port", c.admin.port));
    DYN_TRY(a.read("token", c.admin.token));
    DYN_TRY(a.read("forward_timeout_ms", c.admin.forward_timeout_ms));
    DYN_TRY(parse_tls(a, c.admin.tls, true));
    if (auto bad = check_admin_config(c.admin))
      return a.fail(bad->key, bad->why);
    DYN_TRY(a.check_unknown());
  }
  {
    auto n = s.child("system");
    DYN_TRY(require_map(n, "system"));
    section y(n, "system");
    DYN_TRY(y.read("enabled", c.system.enabled));
    DYN_TRY(y.read("host", c.system.host));
    DYN_TRY(y.read("port", c.system.port));
    DYN_TRY(y.check_unknown());
  }
  {
    auto n = s.child("security");
    DYN_TRY(require_map(n, "security"));
    section y(n, "security");
    DYN_TRY(parse_security(y, c.security));
  }
  DYN_TRY(parse_router(s.child("router"), c.router));
  {
    auto n = s.child("disagg");
    DYN_TRY(require_map(n, "disagg"));
    section d(n, "disagg");
    DYN_TRY(d.read("max_local_prefill_length", c.disagg.max_local_prefill_length));
    std::string transfer{protocol::to_string(c.disagg.transfer)};
    DYN_TRY(d.read("transfer", transfer));
    auto t = protocol::parse_kv_transport(transfer);
    if (!t)
      return d.fail("transfer", message_of(t.error()));
    if (*t == protocol::kv_transport_kind::inproc)
      return d.fail("transfer", "inproc moves KV inside one process; a cluster's workers are separate processes");
    c.disagg.transfer = *t;
    DYN_TRY(d.check_unknown());
  }
  {
    auto n = s.child("planner");
    DYN_TRY(require_map(n, "planner"));
    section p(n, "planner");
    DYN_TRY(p.read("enabled", c.planner.enabled));
    DYN_TRY(p.read("interval_ms", c.planner.interval_ms));
    DYN_TRY(p.read("min_replicas", c.planner.min_replicas));
    DYN_TRY(p.read("max_replicas", c.planner.max_replicas));
    DYN_TRY(p.read("scale_up_kv_usage", c.planner.scale_up_kv_usage));
    DYN_TRY(p.read("scale_down_kv_usage", c.planner.scale_down_kv_usage));
    if (c.planner.min_replicas > c.planner.max_replicas)
      return p.fail("min_replicas", "must not exceed max_replicas");
    DYN_TRY(parse_planner_extras(p, c.planner));
    DYN_TRY(p.check_unknown());
  }
  auto pools = s.child("pools");
  if (!pools.IsDefined() || !pools.IsSequence() || pools.size() == 0)
    return make_error(errc::config_error, "pools: expected a non-empty list of worker pools");
  std::set<std::string> names;
  for (size_t i = 0; i < pools.size(); ++i) {
    pool_config p;
    auto path = fmt::format("pools[{}]", i);
    DYN_TRY(parse_pool(pools[i], path, p));
    if (!names.insert(p.name).second)
      return make_error(errc::config_error, fmt::format("{}.name: '{}' is used twice", path, p.name));
    // A pool's records are <ns>/<name>/generate: these names are the processes' own.
    if (protocol::is_reserved_component(p.name))
      return make_error(errc::config_error,
                        fmt::format("{}.name: '{}' is reserved (frontend, router and planner name the "
                                    "cluster's own processes in discovery)", path, p.name));
    c.pools.push_back(std::move(p));
  }
  return s.check_unknown();
}

} // namespace

expected<cluster_config> parse_cluster_config(std::string_view yaml_text) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string{yaml_text});
  } catch (const YAML::ParserException& e) {
    return make_error(errc::config_error, fmt::format("YAML syntax error at line {}, column {}: {}",
                                                      e.mark.line + 1, e.mark.column + 1, e.msg));
  } catch (const YAML::Exception& e) {
    return make_error(errc::config_error, std::string{"YAML error: "} + e.what());
  }
  if (!root || !root.IsMap())
    return make_error(errc::config_error, "the cluster config must be a YAML mapping");
  cluster_config c;
  try {
    if (auto err = parse_sections(root, c))
      return err;
  } catch (const YAML::Exception& e) {
    return make_error(errc::config_error, std::string{"YAML error: "} + e.what());
  }
  return c;
}

expected<cluster_config> load_cluster_config(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return make_error(errc::io_error, "cannot read cluster config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto c = parse_cluster_config(ss.str());
  if (!c)
    return make_error(errc::config_error, path + ": " + message_of(c.error()));
  return c;
}

expected<std::string> resolve_discovery_password(const discovery_config& c) {
  if (c.username.empty())
    return std::string{};
  return resolve_secret(c.password, "discovery.password");
}

expected<std::optional<curve_keypair>> resolve_curve_keys(const curve_config& c) {
  if (!c.enabled())
    return std::optional<curve_keypair>{};
  curve_keypair keys;
  for (auto [spec, out, field] : {std::tuple{&c.public_key, &keys.public_key, "security.curve.public_key"},
                                  std::tuple{&c.secret_key, &keys.secret_key, "security.curve.secret_key"}}) {
    auto value = resolve_secret(*spec, field);
    if (!value)
      return std::move(value.error());
    if (auto err = check_curve_key(*value, field, true))
      return err;
    *out = std::move(*value);
  }
  return std::optional<curve_keypair>{std::move(keys)};
}

const std::string& advertised_host(const cluster_config& c) noexcept {
  return c.advertise_host.empty() ? c.plane_host : c.advertise_host;
}

expected<void> apply_plane_hosts(cluster_config& c, std::string_view plane_host, std::string_view advertise_host) {
  if (!plane_host.empty())
    c.plane_host = plane_host;
  if (!advertise_host.empty())
    c.advertise_host = advertise_host;
  else if (const char* env = std::getenv("DYNAMO_ADVERTISE_HOST"); env != nullptr && *env != '\0')
    c.advertise_host = env;
  if (is_wildcard_host(advertised_host(c)))
    return make_error(errc::config_error,
                      fmt::format("plane_host '{}' listens on every interface and names none; set advertise_host "
                                  "(in the config, --advertise-host or $DYNAMO_ADVERTISE_HOST) to the address the "
                                  "other processes reach this one at",
                                  c.plane_host));
  return {};
}

} // namespace dynamo::config
