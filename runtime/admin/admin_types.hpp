// The rows the admin REST API reports: supervised actors and discovered
// instances. Filled by each process's admin_backend (actors/admin), turned into
// JSON by admin_wire.hpp. Plain values; no thread rules of their own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace dynamo::admin {

/// One supervised actor.
struct actor_row {
  std::string supervisor;  ///< the supervisor's name
  std::string name;        ///< the child's name
  std::string state;       ///< running | restarting | stopped | failed
  uint32_t restarts = 0;
  std::string last_reason; ///< why it last stopped ("" if never)
};

/// What a router of the answering process knows of an instance it routes to.
struct routing_view {
  std::string router;              ///< the router's name (router[<model>])
  bool kv_capacity_rule = false;   ///< router_kv_capacity on, in kv mode (where it applies)
  std::optional<uint64_t> kv_capacity_blocks; ///< learned from its load reports; nullopt: not (yet)
};

/// One instance seen on the discovery plane.
struct instance_row {
  std::string key;         ///< ns/component/endpoint/instance-hex
  uint64_t instance_id = 0;
  std::string address;     ///< request plane
  std::string health;      ///< ready | unhealthy | draining
  std::map<std::string, std::string> metadata;
  std::string admin_url;   ///< the hosting process's admin API ("" when it publishes none)
  std::optional<routing_view> routing; ///< when the answering process routes to it
};

} // namespace dynamo::admin
