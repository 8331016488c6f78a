#include "runtime/configure/deployment_config.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <yaml-cpp/yaml.h>

namespace dynamo::configure {

expected<config::cluster_config> to_cluster_config(const deployment& d, const plan::engine_profile& p,
                                                   const cluster_options& o) {
  auto engine = config::parse_engine_kind(p.engine);
  if (!engine)
    return make_error(errc::invalid_argument, fmt::format("profile engine '{}' is not mocker|cpu|cuda", p.engine));
  config::cluster_config c;
  c.namespace_name = o.namespace_name;
  if (!o.discovery_root.empty())
    c.discovery.root = o.discovery_root;
  c.frontend.host = "127.0.0.1";
  c.frontend.port = o.frontend_port;
  c.router.mode = d.router;
  c.disagg.max_local_prefill_length = d.max_local_prefill_length;
  config::pool_config pool;
  pool.engine = *engine;
  pool.model = o.model.empty() ? (p.model.empty() ? std::string{"mocker"} : p.model) : o.model;
  pool.model_path = o.model_path;
  pool.engine_opts.block_size = std::max(1u, p.block_size);
  pool.engine_opts.threads = p.threads;
  pool.engine_opts.max_num_seqs = d.max_num_seqs;
  pool.engine_opts.max_num_batched_tokens = d.max_num_batched_tokens;
  pool.engine_opts.context_length = p.max_model_len;
  const uint32_t blocks = p.max_kv_tokens / pool.engine_opts.block_size;
  if (*engine == config::engine_kind::mocker)
    pool.mocker.num_blocks = blocks > 0 ? blocks : pool.mocker.num_blocks;
  else
    pool.engine_opts.kv_blocks = blocks;
  if (d.mode == deployment_mode::aggregated) {
    pool.name = "backend";
    pool.role = config::worker_role::aggregated;
    pool.replicas = d.decode_replicas;
    c.pools.push_back(pool);
  } else {
    pool.name = "prefill";
    pool.role = config::worker_role::prefill;
    pool.replicas = d.prefill_replicas;
    c.pools.push_back(pool);
    pool.name = "decode";
    pool.role = config::worker_role::decode;
    pool.replicas = d.decode_replicas;
    c.pools.push_back(pool);
  }
  return c;
}

std::string to_yaml(const config::cluster_config& c) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  y << YAML::Key << "namespace" << YAML::Value << c.namespace_name;
  y << YAML::Key << "plane_host" << YAML::Value << c.plane_host;
  y << YAML::Key << "discovery" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "backend" << YAML::Value << c.discovery.backend;
  if (!c.discovery.root.empty())
    y << YAML::Key << "root" << YAML::Value << c.discovery.root;
  y << YAML::Key << "lease_ttl_ms" << YAML::Value << c.discovery.lease_ttl_ms << YAML::EndMap;
  y << YAML::Key << "frontend" << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "host" << YAML::Value << c.frontend.host;
  y << YAML::Key << "port" << YAML::Value << c.frontend.port;
  y << YAML::Key << "io_threads" << YAML::Value << c.frontend.io_threads << YAML::EndMap;
  y << YAML::Key << "router" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "mode" << YAML::Value << std::string{route::to_string(c.router.mode)} << YAML::EndMap;
  y << YAML::Key << "disagg" << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "max_local_prefill_length" << YAML::Value << c.disagg.max_local_prefill_length << YAML::EndMap;
  y << YAML::Key << "pools" << YAML::Value << YAML::BeginSeq;
  for (const config::pool_config& p : c.pools) {
    y << YAML::BeginMap;
    y << YAML::Key << "name" << YAML::Value << p.name;
    y << YAML::Key << "role" << YAML::Value << std::string{config::to_string(p.role)};
    y << YAML::Key << "engine" << YAML::Value << std::string{config::to_string(p.engine)};
    y << YAML::Key << "model" << YAML::Value << p.model;
    if (!p.model_path.empty())
      y << YAML::Key << "model_path" << YAML::Value << p.model_path;
    y << YAML::Key << "replicas" << YAML::Value << p.replicas;
    y << YAML::Key << "workers_per_process" << YAML::Value << p.workers_per_process;
    const config::engine_options& e = p.engine_opts;
    y << YAML::Key << "engine_args" << YAML::Value << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "block_size" << YAML::Value << e.block_size;
    y << YAML::Key << "kv_blocks" << YAML::Value << e.kv_blocks;
    y << YAML::Key << "max_num_seqs" << YAML::Value << e.max_num_seqs;
    y << YAML::Key << "max_num_batched_tokens" << YAML::Value << e.max_num_batched_tokens;
    y << YAML::Key << "prefix_caching" << YAML::Value << e.prefix_caching;
    y << YAML::Key << "threads" << YAML::Value << e.threads;
    y << YAML::Key << "context_length" << YAML::Value << e.context_length << YAML::EndMap;
    if (p.engine == config::engine_kind::mocker) {
      y << YAML::Key << "mocker" << YAML::Value << YAML::Flow << YAML::BeginMap;
      y << YAML::Key << "speedup_ratio" << YAML::Value << p.mocker.speedup_ratio;
      y << YAML::Key << "decode_speedup_ratio" << YAML::Value << p.mocker.decode_speedup_ratio;
      y << YAML::Key << "num_blocks" << YAML::Value << p.mocker.num_blocks << YAML::EndMap;
    }
    y << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap;
  return std::string{y.c_str()} + "\n";
}

} // namespace dynamo::configure
