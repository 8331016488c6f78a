// dynamo-run: the whole system in one process. Workers (the CPU engine over a
// GGUF model, or the mocker) register on the discovery plane and serve the
// request plane; the frontend discovers them, routes (round-robin, random or
// KV-aware) and serves the OpenAI API over HTTP. Wiring only.
#include "actors/core/system.hpp"
#include "runtime/core/units.hpp"
#include "actors/frontend/frontend_service.hpp"
#include "actors/worker/engine_factory.hpp"
#include "apps/common/app_support.hpp"
#include "apps/common/router_cost.hpp"
#include "runtime/core/log.hpp"
#include "runtime/protocol/components.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

using namespace dynamo;

namespace {

struct run_options {
  std::string in = "http", out = "engine";
  std::string model_path, model_name, log_level;
  std::string http_host = "0.0.0.0";
  uint32_t http_port = 8000, io_threads = 2, threads = 0;
  std::string discovery = "memory";
  double kv_cache_mib = 512;
  double gpu_memory_fraction = 0.9; ///< for all CUDA workers of the process together
  uint32_t grace_ms = 5000;
  config::pool_config pool;
  config::router_config router;
  apps::router_flags router_flags; ///< --router-mode, --migration-limit, --kv-* / --router-*
  config::admin_config admin;
  tls_files http_tls; ///< --tls-*: the OpenAI API over HTTPS
  uint32_t admin_port = 0;
  bool disagg = false;
  bool anthropic_api = false;
  uint32_t prefill_workers = 1, decode_workers = 1;
  config::disagg_config disagg_opts;
  std::string tool_call_parser = "auto", reasoning_parser = "auto";
  std::string kv_transfer{protocol::to_string(protocol::kv_transport_kind::automatic)}; ///< --kv-transfer
  apps::kvbm_flags kvbm;
  std::optional<bool> cpu_repack; ///< --cpu-repack
};

expected<bool> parse(int argc, char** argv, run_options& o) {
  o.pool.name = "backend";
  o.pool.mocker.speedup_ratio = 1.0;
  cli c("dynamo-run", "serve a model behind an OpenAI-compatible API, all in one process");
  c.pseudo("in", &o.in, "input: http (OpenAI API server)")
    .pseudo("out", &o.out, "engine: engine (CPU, GGUF model) | cuda (GPU, GGUF model) | mocker (simulated)")
    .option("model", &o.model_path, "GGUF model path (default: the SmolLM2 model installed by scripts/setup.sh)")
    .option("model-name", &o.model_name, "served model name (default: the file name / 'mocker')")
    .option("http-host", &o.http_host, "HTTP listen address")
    .option("http-port", &o.http_port, "HTTP port (0: pick a free one)")
    .option("http-threads", &o.io_threads, "HTTP I/O threads")
    .option("enable-anthropic-api", &o.anthropic_api, "also serve Anthropic's /v1/messages and /v1/messages/count_tokens")
    .option("num-workers", &o.pool.replicas, "workers (engines) to run")
    .option("threads", &o.pool.engine_opts.threads, "CPU engine compute threads per worker (0: all cores)")
    .option("block-size", &o.pool.engine_opts.block_size, "KV block size in tokens")
    .option("kv-blocks", &o.pool.engine_opts.kv_blocks, "KV blocks per worker (0: from --kv-cache-mib / mocker default)")
    .option("kv-cache-mib", &o.kv_cache_mib, "CPU engine KV cache budget per worker in MiB")
    .option("gpu-memory-fraction", &o.gpu_memory_fraction,
            "out=cuda: device memory for all workers together, split evenly among them")
    .option("max-num-seqs", &o.pool.engine_opts.max_num_seqs, "running sequences per worker")
    .option("max-num-batched-tokens", &o.pool.engine_opts.max_num_batched_tokens,
            "tokens per engine step (0: the engine's default: out=engine 128 per compute thread, 128..2048, "
            "so that a step stays short; cuda and mocker 8192)")
    .option("context-length", &o.pool.engine_opts.context_length, "cap on prompt + output tokens (0: the model's)")
    .option("enable-prefix-caching", &o.pool.engine_opts.prefix_caching, "reuse cached KV blocks across requests")
    .option("speedup-ratio", &o.pool.mocker.speedup_ratio, "mocker: divide simulated time by this (0: no delay)")
    .option("decode-speedup-ratio", &o.pool.mocker.decode_speedup_ratio, "mocker: extra divisor for decode time")
    .option("disagg", &o.disagg, "disaggregated serving: separate prefill and decode workers")
    .option("prefill-workers", &o.prefill_workers, "--disagg: prefill workers")
    .option("decode-workers", &o.decode_workers, "--disagg: decode workers")
    .option("max-local-prefill-length", &o.disagg_opts.max_local_prefill_length,
            "--disagg: shorter prompts are prefilled on the decode worker")
    .option("kv-transfer", &o.kv_transfer,
            "--disagg: KV hand-off transport: auto | ucx | tcp | inproc (auto with out=cuda: inproc)")
    .option("shutdown-grace-ms", &o.grace_ms, "on SIGTERM/SIGINT, time for in-flight requests to finish")
    .option("admin-port", &o.admin_port, "serve the admin REST API on this port (0: off)")
    .option("admin-host", &o.admin.host, "admin API address (a non-loopback address needs --admin-token)")
    .option("admin-token", &o.admin.token, "bearer token for the admin API (or env:NAME)")
    .option("admin-forward-timeout-ms", &o.admin.forward_timeout_ms,
            "how long a drain forwarded to another process's admin API may take (504 beyond)")
    .option("admin-tls-cert-file", &o.admin.tls.cert_file, "serve the admin API over HTTPS with this certificate (PEM)")
    .option("admin-tls-key-file", &o.admin.tls.key_file, "the key of --admin-tls-cert-file (PEM)")
    .option("admin-tls-client-ca-file", &o.admin.tls.client_ca_file,
            "admin API: ask clients for a certificate of this CA (mutual TLS)")
    .option("admin-tls-ca-file", &o.admin.tls.ca_file,
            "the CA an https:// admin API a drain is forwarded to chains to (default: the system's)")
    .option("tls-cert-file", &o.http_tls.cert_file, "serve the OpenAI API over HTTPS with this certificate (PEM)")
    .option("tls-key-file", &o.http_tls.key_file, "the key of --tls-cert-file (PEM)")
    .option("tls-client-ca-file", &o.http_tls.client_ca_file,
            "OpenAI API: ask clients for a certificate of this CA (mutual TLS)")
    .option("discovery", &o.discovery, "discovery backend: memory | file ($DYNAMO_DISCOVERY_DIR) | etcd ($ETCD_ENDPOINTS)")
    .option("tool-call-parser", &o.tool_call_parser,
            "auto (from the chat template) | hermes | llama3_json | mistral | none (docs/TOOLS.md)")
    .option("reasoning-parser", &o.reasoning_parser,
            "auto (on when the chat template mentions <think>) | think | none")
    .option("log-level", &o.log_level, "trace | debug | info | warn | error (default: $DYNAMO_LOG or info)");
  apps::add_kvbm_flags(c, o.kvbm);
  apps::add_cpu_repack_flag(c, o.cpu_repack);
  apps::add_router_flags(c, o.router_flags);
  c.epilog("Examples:\n  dynamo-run in=http                       # SmolLM2 on the CPU at :8000\n"
           "  dynamo-run in=http out=mocker --num-workers 4 --router-mode kv --speedup-ratio 0\n"
           "  dynamo-run in=http --disagg --prefill-workers 1 --decode-workers 1\n"
           "Then: curl localhost:8000/v1/chat/completions -H 'content-type: application/json' \\\n"
           "        -d '{\"model\":\"...\",\"messages\":[...]}'");
  return c.parse(argc, argv);
}

expected<void> finish_options(run_options& o) {
  if (o.in != "http")
    return make_error(errc::invalid_argument, "in=" + o.in + ": only in=http is supported");
  if (auto ok = o.router_flags.apply(o.router); !ok)
    return ok.error();
  if (auto ok = apps::prepare_router(o.router.kv, "dynamo-run"); !ok)
    return ok.error();
  if (o.out == "mocker") {
    o.pool.engine = config::engine_kind::mocker;
    o.pool.model = o.model_name.empty() ? "mocker" : o.model_name;
  } else if (o.out == "engine" || o.out == "cpu" || o.out == "cuda") {
    o.pool.engine = o.out == "cuda" ? config::engine_kind::cuda : config::engine_kind::cpu;
    o.pool.model_path = o.model_path.empty() ? apps::default_model_path() : o.model_path;
    if (!std::filesystem::exists(o.pool.model_path))
      return make_error(errc::not_found, "model file " + o.pool.model_path +
                                             " not found: run scripts/setup.sh or pass --model PATH");
    o.pool.model = o.model_name.empty() ? std::filesystem::path(o.pool.model_path).stem().string()
                                        : o.model_name;
  } else {
    return make_error(errc::invalid_argument, "out=" + o.out + ": expected engine, cuda or mocker");
  }
  if (auto ok = o.kvbm.apply(o.pool.kvbm); !ok)
    return ok.error();
  if (o.cpu_repack)
    o.pool.engine_opts.cpu_repack = *o.cpu_repack;
  if (o.pool.kvbm.disk_gb > 0 && o.pool.engine != config::engine_kind::mocker && o.pool.kvbm.disk_path.empty())
    return make_error(errc::invalid_argument, "--kvbm-disk-gb needs --kvbm-disk-path");
  o.admin.enabled = o.admin_port != 0;
  o.admin.port = static_cast<uint16_t>(o.admin_port);
  if (auto bad = config::check_admin_config(o.admin)) {
    std::string flag = "--admin-" + bad->key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    std::replace(flag.begin(), flag.end(), '.', '-');
    return make_error(errc::invalid_argument, flag + " " + bad->why);
  }
  if (auto tls = apps::server_tls(o.admin.tls, "--admin-tls-", true); !tls)
    return tls.error();
  if (auto tls = apps::server_tls(o.http_tls, "--tls-", true); !tls)
    return tls.error();
  if (o.pool.replicas == 0)
    return make_error(errc::invalid_argument, "--num-workers must be >= 1");
  if (o.disagg && (o.prefill_workers == 0 || o.decode_workers == 0))
    return make_error(errc::invalid_argument, "--disagg needs --prefill-workers and --decode-workers >= 1");
  if (!(o.gpu_memory_fraction > 0.0 && o.gpu_memory_fraction <= 1.0))
    return make_error(errc::invalid_argument, "--gpu-memory-fraction must be in (0, 1]");
  // One process: cuda-ipc refuses its own process, so it is not offered here.
  const auto transfer = protocol::parse_kv_transport(o.kv_transfer);
  if (o.disagg && (!transfer || *transfer == protocol::kv_transport_kind::cuda_ipc))
    return make_error(errc::invalid_argument, "--kv-transfer " + o.kv_transfer +
                                                  ": expected auto, ucx, tcp or inproc");
  if (transfer)
    o.disagg_opts.transfer = *transfer;
  // All workers share this process: for device KV, "auto" (cuda-ipc, which
  // refuses its own process) would fail every hand-off; inproc copies on the device.
  if (o.disagg && o.out == "cuda" && o.disagg_opts.transfer == protocol::kv_transport_kind::automatic)
    o.disagg_opts.transfer = protocol::kv_transport_kind::inproc;
  // Every CUDA executor of this process shares one device: each gets an even share.
  const uint32_t executors = o.disagg ? o.prefill_workers + o.decode_workers : o.pool.replicas;
  o.pool.engine_opts.gpu_memory_fraction = o.gpu_memory_fraction / executors;
  return {};
}

/// The workers the admin API drains: filled once they have started (the admin
/// API starts first, so that their records publish its URL).
struct hosted_workers {
  std::mutex mutex;
  std::vector<actors::worker_service*> list;
};

// Aggregated: one pool "backend". Disaggregated: "prefill" (role prefill)
// and "backend" (role decode) over the same model. Dies on a start-up error.
std::vector<std::unique_ptr<actors::worker_service>> start_workers(const run_options& o, caf::actor_system& sys,
                                                                   planes::discovery_plane& discovery,
                                                                   std::shared_ptr<metrics::component_metrics> m,
                                                                   const std::string& admin_url) {
  std::vector<std::unique_ptr<actors::worker_service>> services;
  auto start_pool = [&](const std::string& component, protocol::disagg_role role, uint32_t n) {
    auto setup = actors::prepare_engines(o.pool, mib_to_bytes(o.kv_cache_mib));
    if (!setup)
      apps::die("dynamo-run", setup.error());
    actors::worker_service_config wc;
    wc.component = component;
    wc.role = role;
    wc.card = setup->plan.card;
    wc.num_workers = n;
    wc.detached = setup->plan.detached;
    wc.kv_transport = o.disagg_opts.transfer;
    wc.metrics = m;
    wc.admin_url = admin_url;
    auto svc = actors::worker_service::start(sys, discovery, wc, setup->make_factory);
    if (!svc)
      apps::die("dynamo-run", svc.error());
    services.push_back(std::move(*svc));
  };
  if (o.disagg) {
    start_pool("prefill", protocol::disagg_role::prefill, o.prefill_workers);
    start_pool(o.pool.name, protocol::disagg_role::decode, o.decode_workers);
  } else {
    start_pool(o.pool.name, protocol::disagg_role::aggregated, o.pool.replicas);
  }
  return services;
}

} // namespace

int main(int argc, char** argv) {
  apps::block_shutdown_signals();
  run_options o;
  if (auto code = cli_exit_code("dynamo-run", parse(argc, argv, o)))
    return *code;
  init_logging("dynamo-run", o.log_level);
  if (auto ok = finish_options(o); !ok)
    apps::die("dynamo-run", ok.error());

  auto rt = actors::make_actor_system();
  config::discovery_config dc;
  dc.backend = o.discovery;
  auto discovery = apps::make_discovery(dc);
  if (!discovery)
    apps::die("dynamo-run", discovery.error());

  frontend::frontend_options fo;
  fo.http.host = o.http_host;
  fo.http.port = static_cast<uint16_t>(o.http_port);
  fo.http.io_threads = o.io_threads;
  if (o.http_tls.any())
    fo.http.tls = o.http_tls;
  fo.tool_call_parser = o.tool_call_parser;
  fo.reasoning_parser = o.reasoning_parser;
  fo.anthropic_api = o.anthropic_api;
  // Dynamo's DYN_METRICS_PREFIX and DYN_METRICS_{REQUEST_DURATION,TTFT,ITL}_{MIN,MAX,COUNT}.
  auto metrics_cfg = metrics::frontend_metrics_config_from_env(std::getenv);
  if (!metrics_cfg)
    apps::die("dynamo-run", metrics_cfg.error());
  fo.metrics = std::move(*metrics_cfg);
  auto fe = frontend::frontend_service::start(*rt.system, fo);
  if (!fe)
    apps::die("dynamo-run", fe.error());
  // One process, one /metrics: the workers' dynamo_component_* families live
  // in the frontend's registry.
  auto component = metrics::component_metrics::create(*(*fe)->shared_metrics_registry());
  if (!component)
    apps::die("dynamo-run", component.error());
  actors::model_watcher_config mw;
  mw.router.mode = o.router.mode;
  mw.router.kv = o.router.kv;
  mw.client.migration_limit = o.router.migration_limit;
  mw.client.max_local_prefill_length = o.disagg_opts.max_local_prefill_length;
  mw = apps::connect_frontend(std::move(mw), **fe);
  auto routers = mw.router.metrics; // for the admin API's view of the workers
  auto watcher = actors::model_watcher::start(*rt.system, **discovery, std::move(mw), actors::load_model_assets);
  if (!watcher)
    apps::die("dynamo-run", watcher.error());

  const std::string ns{config::default_namespace};
  auto hosted = std::make_shared<hosted_workers>();
  auto admin = apps::start_admin(o.admin, "dynamo-run", *rt.system, **discovery, ns,
                                 [hosted] {
                                   std::lock_guard lock{hosted->mutex};
                                   return hosted->list;
                                 },
                                 [w = watcher->get()] { return w->supervisors(); }, routers);
  if (!admin)
    apps::die("dynamo-run", admin.error());
  // A loopback or named admin host is published as it is; a wildcard is not.
  const std::string admin_url =
    *admin ? admin::advertised_admin_url(o.admin.host, "", (*admin)->port(), (*admin)->scheme() == "https")
           : std::string{};
  auto services = start_workers(o, *rt.system, **discovery, std::move(*component), admin_url);
  {
    std::lock_guard lock{hosted->mutex};
    for (auto& svc : services)
      hosted->list.push_back(svc.get());
  }
  // Serves the HTTP API as a frontend does: its record makes the process (and
  // its admin URL) visible to GET /admin/instances.
  auto record = apps::publish_process(**discovery, ns, protocol::frontend_component, admin_url);
  if (!record)
    apps::die("dynamo-run", record.error());
  auto shape = o.disagg ? fmt::format("{} prefill + {} decode x {}", o.prefill_workers, o.decode_workers,
                                      config::to_string(o.pool.engine))
                        : fmt::format("{} x {}", o.pool.replicas, config::to_string(o.pool.engine));
  spdlog::info("dynamo-run: serving '{}' ({}, router {}) at {}://{}:{}/v1", o.pool.model, shape,
               route::to_string(o.router.mode), fo.http.tls ? "https" : "http", o.http_host, (*fe)->port());
  int sig = apps::wait_for_shutdown();
  spdlog::info("dynamo-run: signal {}; draining (grace {} ms)", sig, o.grace_ms);
  auto grace = std::chrono::milliseconds(o.grace_ms);
  auto left = (*fe)->drain_and_stop(grace);
  for (auto& svc : services)
    (void) svc->shutdown(std::chrono::milliseconds(100));
  record->reset();
  admin->reset();
  watcher->reset();
  services.clear();
  spdlog::info("dynamo-run: stopped ({} request(s) cut)", left);
  return 0;
}
