// The frontend side of discovery (Dynamo's ModelWatcher): watches a namespace
// for worker instances, groups them by the model their card names, and for
// each model keeps a router actor (fed with instances, health and the KV events
// of the event plane, or of an external engine's vLLM-format publisher through
// a vllm_kv_relay; with --router-kv-capacity also their load_metrics) and a
// routed_client. New and vanished models are
// reported through callbacks so the HTTP frontend can list and serve them.
// Thread-safe; callbacks run on the discovery watch thread and must not block.
#pragma once

#include "actors/router/routed_client.hpp"
#include "actors/router/router_actor.hpp"
#include "planes/discovery/discovery_plane.hpp"
#include "runtime/core/secret.hpp"
#include "runtime/protocol/model_card.hpp"
#include "runtime/route/vllm_relay.hpp"
#include "runtime/tokenizer/chat_template.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <caf/actor_system.hpp>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::planes {
class event_subscriber;
}

namespace dynamo::actors {

/// What the frontend needs to serve a model.
struct served_model {
  /// Its first worker's card, but context_length is the largest among its
  /// workers' (offered again through on_model_added when that changes).
  protocol::model_card card;
  std::shared_ptr<const tok::tokenizer> tokenizer;
  std::shared_ptr<const tok::chat_template> chat_template;
  std::shared_ptr<routed_client> client;
  std::shared_ptr<actor_handle> router;  ///< aggregated and decode instances (current incarnation)
  caf::actor router_supervisor;          ///< restarts the router if it crashes
  std::shared_ptr<prefill_pool> prefill; ///< prefill instances (disaggregation), when any appeared
};

struct model_assets {
  std::shared_ptr<const tok::tokenizer> tokenizer;
  std::shared_ptr<const tok::chat_template> chat_template;
};

/// Builds tokenizer and template for a card ("mocker" or a GGUF path).
using model_assets_loader = std::function<expected<model_assets>(const protocol::model_card&)>;

/// The mocker's assets (byte tokenizer, "role: content" template).
[[nodiscard]] model_assets mocker_assets();

/// Mocker assets for "mocker", else tokenizer and chat template from the GGUF
/// file the card's source names (it must be readable by this process).
[[nodiscard]] expected<model_assets> load_model_assets(const protocol::model_card& card);

struct model_watcher_config {
  std::string namespace_name = "dynamo";
  std::string endpoint = "generate";
  /// Components whose instances serve models. Empty: every component except
  /// "router" (a frontend behind a standalone router sets {"router"}).
  std::vector<std::string> components;
  router_actor_config router;      ///< block_size is taken from each model's card
  routed_client_config client;
  std::function<void(const served_model&)> on_model_added;
  std::function<void(const std::string& model)> on_model_removed;
  /// The cluster's CURVE keys (security.curve) for its request client and
  /// event subscriber. Unset: plain. (vLLM-format relays stay plain.)
  std::optional<curve_keypair> curve;
};

class model_watcher {
public:
  [[nodiscard]] static expected<std::unique_ptr<model_watcher>>
  start(caf::actor_system& sys, planes::discovery_plane& discovery, model_watcher_config cfg,
        model_assets_loader loader);
  ~model_watcher();

  /// Models being served, by name.
  [[nodiscard]] std::map<std::string, served_model> models() const;
  /// The supervisors of every model's routers, named for the admin API.
  [[nodiscard]] std::vector<std::pair<std::string, caf::actor>> supervisors() const;
  /// Instances known per model.
  [[nodiscard]] size_t instance_count(const std::string& model) const;
  /// The counters of an instance's vLLM KV-event relay; nullopt when it has none.
  [[nodiscard]] std::optional<route::vllm_relay_stats> kv_relay_stats(uint64_t instance) const;

  struct impl;

private:
  std::shared_ptr<impl> impl_;
};

} // namespace dynamo::actors
