#include "actors/core/system.hpp"

#include "actors/core/type_ids.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <thread>

namespace dynamo::actors {

actor_runtime make_actor_system(unsigned threads) {
  actor_runtime rt;
  rt.cfg = std::make_unique<caf::actor_system_config>();
  if (threads == 0)
    threads = std::max(2u, std::thread::hardware_concurrency());
  rt.cfg->set("scheduler.policy", caf::atom("sharing"));
  rt.cfg->set("scheduler.max-threads", static_cast<size_t>(threads));
  register_types(*rt.cfg);
  rt.system = std::make_unique<caf::actor_system>(*rt.cfg);
  return rt;
}

} // namespace dynamo::actors
