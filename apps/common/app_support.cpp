#include "apps/common/app_support.hpp"

#include "actors/frontend/frontend_service.hpp"
#include "planes/discovery/file_discovery.hpp"
#include "planes/discovery/inproc_discovery.hpp"

#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

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

void add_router_flags(cli& c, route::kv_router_config& kv) {
  for (const auto& f : route::kv_router_flags()) {
    std::string flag{f.name};
    route::kv_router_config probe;
    bool is_switch = static_cast<bool>(probe.set(flag, ""));
    c.custom(flag.substr(2), is_switch,
             [&kv, flag](const std::string& v) -> expected<void> {
               return kv.set(flag, v == "false" ? "false" : v);
             },
             std::string{f.help});
  }
}

expected<std::unique_ptr<planes::discovery_plane>> make_discovery(const config::discovery_config& cfg) {
  planes::discovery_options o;
  o.lease_ttl = std::chrono::milliseconds(cfg.lease_ttl_ms);
  o.keep_alive_interval = std::chrono::milliseconds(std::max<uint32_t>(50, cfg.lease_ttl_ms / 4));
  if (cfg.backend == "memory")
    return planes::make_inproc_discovery(planes::make_inproc_discovery_store(), o);
  return planes::make_file_discovery(cfg.root.empty() ? planes::default_discovery_root() : cfg.root, o);
}

actors::model_watcher_config connect_frontend(actors::model_watcher_config cfg,
                                              frontend::frontend_service& fe) {
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
  cfg.on_model_removed = [&fe](const std::string& name) {
    if (fe.remove_model(name))
      spdlog::warn("model {} removed: no workers left", name);
  };
  return cfg;
}

void die(std::string_view program, const caf::error& err) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(),
               describe(err).c_str());
  std::exit(1);
}

} // namespace dynamo::apps
