#include "actors/core/supervisor.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>

namespace dynamo::actors {

namespace {

using respawn_atom = caf::atom_constant<caf::atom("respawn")>;
using clock = std::chrono::steady_clock;

struct child_slot {
  child_spec spec;
  caf::actor handle;
  child_status status;
  std::deque<clock::time_point> recent; ///< restart times within the window
  uint32_t consecutive = 0;
};

struct supervisor_state {
  supervisor_config cfg;
  std::vector<child_slot> children;
  static inline const char* name = "dynamo.supervisor";
};

using sup_actor = caf::stateful_actor<supervisor_state>*;

void start_child(sup_actor self, child_slot& slot) {
  slot.handle = slot.spec.spawn(self->system());
  self->monitor(slot.handle);
  slot.status.state = "running";
  if (slot.spec.on_spawn)
    slot.spec.on_spawn(slot.handle);
}

child_slot* find_by_addr(sup_actor self, const caf::actor_addr& addr) {
  for (auto& c : self->state.children)
    if (c.handle && c.handle.address() == addr)
      return &c;
  return nullptr;
}

child_slot* find_by_name(sup_actor self, const std::string& name) {
  for (auto& c : self->state.children)
    if (c.spec.name == name)
      return &c;
  return nullptr;
}

void on_child_down(sup_actor self, child_slot& slot, const caf::error& reason) {
  auto& cfg = self->state.cfg;
  slot.handle = nullptr;
  slot.status.last_reason = reason ? self->system().render(reason) : "normal";
  bool abnormal = static_cast<bool>(reason) && reason != caf::exit_reason::user_shutdown;
  if (!abnormal && slot.spec.policy == restart_policy::transient) {
    slot.status.state = "stopped";
    spdlog::info("{}: child '{}' stopped ({})", cfg.name, slot.spec.name, slot.status.last_reason);
    return;
  }
  auto now = clock::now();
  while (!slot.recent.empty() && now - slot.recent.front() > cfg.window)
    slot.recent.pop_front();
  if (slot.recent.size() >= cfg.max_restarts) {
    slot.status.state = "failed";
    spdlog::error("{}: child '{}' crashed {} times within {} ms; giving up (last: {})", cfg.name,
                  slot.spec.name, slot.recent.size(), cfg.window.count(), slot.status.last_reason);
    return;
  }
  slot.recent.push_back(now);
  auto backoff = cfg.initial_backoff * (1u << std::min<uint32_t>(slot.consecutive, 16));
  backoff = std::min(backoff, cfg.max_backoff);
  ++slot.consecutive;
  slot.status.state = "restarting";
  spdlog::warn("{}: child '{}' down: {}; restarting in {} ms (restart #{})", cfg.name,
               slot.spec.name, slot.status.last_reason, backoff.count(), slot.status.restarts + 1);
  self->delayed_send(self, backoff, respawn_atom::value, slot.spec.name);
}

} // namespace

caf::actor spawn_supervisor(caf::actor_system& sys, supervisor_config cfg,
                            std::vector<child_spec> children) {
  return sys.spawn([cfg = std::move(cfg), children = std::move(children)](sup_actor self) mutable
                   -> caf::behavior {
    self->state.cfg = std::move(cfg);
    for (auto& spec : children) {
      child_slot slot;
      slot.status.name = spec.name;
      slot.spec = std::move(spec);
      self->state.children.push_back(std::move(slot));
    }
    for (auto& c : self->state.children)
      start_child(self, c);
    self->set_down_handler([self](caf::down_msg& dm) {
      if (auto* slot = find_by_addr(self, dm.source))
        on_child_down(self, *slot, dm.reason);
    });
    self->set_exit_handler([self](caf::exit_msg& em) {
      for (auto& c : self->state.children)
        if (c.handle)
          self->send_exit(c.handle, em.reason);
      self->quit(em.reason);
    });
    return {
      [self](respawn_atom, const std::string& name) {
        auto* slot = find_by_name(self, name);
        if (!slot || slot->handle)
          return;
        ++slot->status.restarts;
        start_child(self, *slot);
        spdlog::info("{}: child '{}' restarted", self->state.cfg.name, name);
      },
      [self](list_atom) {
        std::vector<child_status> out;
        for (auto& c : self->state.children)
          out.push_back(c.status);
        return out;
      },
      [self](lookup_atom, const std::string& name) -> caf::result<caf::actor> {
        if (auto* slot = find_by_name(self, name); slot && slot->handle)
          return slot->handle;
        return caf::make_error(caf::sec::invalid_argument, "no child named " + name);
      },
      [self](restart_atom, const std::string& name) -> bool {
        auto* slot = find_by_name(self, name);
        if (!slot)
          return false;
        slot->consecutive = 0;
        if (slot->handle) {
          // A requested restart: kill it; the down handler restarts it.
          self->send_exit(slot->handle, caf::exit_reason::kill);
        } else {
          self->send(self, respawn_atom::value, name);
        }
        return true;
      },
    };
  });
}

} // namespace dynamo::actors
