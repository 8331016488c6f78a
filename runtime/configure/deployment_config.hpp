// A searched deployment as the cluster config dynamo-launch starts
// (runtime/config/cluster_config.hpp) and that config as YAML text. Called by
// dynamo-configure; the tests parse the text back with the real parser. Pure.
#pragma once

#include "runtime/config/cluster_config.hpp"
#include "runtime/configure/simulator.hpp"
#include "runtime/core/error.hpp"
#include "runtime/plan/profile.hpp"

#include <string>

namespace dynamo::configure {

struct cluster_options {
  std::string namespace_name = "dynamo";
  std::string discovery_root;        ///< "" = the launcher's default
  uint16_t frontend_port = 8000;
  std::string model;                 ///< "" = the profile's model
  std::string model_path;            ///< GGUF (cpu/cuda)
};

/// The cluster: one pool per role ("backend" aggregated, or "prefill" and
/// "decode"), the profile's engine, model, block size, threads and KV capacity
/// (mocker: num_blocks; cpu/cuda: kv_blocks), the deployment's replicas, max_num_seqs,
/// max_num_batched_tokens, router mode and prefill-first threshold. Errors:
/// invalid_argument for a profile whose engine is not mocker|cpu|cuda.
[[nodiscard]] expected<config::cluster_config> to_cluster_config(const deployment& d, const plan::engine_profile& p,
                                                                 const cluster_options& o);

/// YAML of the fields a cluster_config from to_cluster_config sets: namespace,
/// plane_host, discovery, frontend, router mode, disagg, pools (with their
/// engine_args and mocker sections). The rest stays at its default.
[[nodiscard]] std::string to_yaml(const config::cluster_config& c);

} // namespace dynamo::configure
