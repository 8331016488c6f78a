#include "actors/admin/admin_rows.hpp"

#include "actors/core/supervisor.hpp"
#include "runtime/admin/admin_forward.hpp"
#include "runtime/protocol/components.hpp"

#include <caf/all.hpp>

#include <optional>

namespace dynamo::admin {

namespace {

actor_row unreachable(const std::string& supervisor, std::string why) {
  actor_row row;
  row.supervisor = supervisor;
  row.state = "unreachable";
  row.last_reason = std::move(why);
  return row;
}

} // namespace

std::vector<actor_row> collect_actor_rows(caf::actor_system& sys, const supervisor_list& supervisors,
                                          std::chrono::milliseconds timeout) {
  caf::scoped_actor self{sys};
  using handle = decltype(self->request(caf::actor{}, timeout, actors::list_atom::value));
  // Every request goes out (and its timeout starts) before the first wait,
  // so the whole call takes at most about `timeout`.
  std::vector<std::optional<handle>> pending;
  pending.reserve(supervisors.size());
  for (const auto& [name, sup] : supervisors) {
    if (sup)
      pending.emplace_back(self->request(sup, timeout, actors::list_atom::value));
    else
      pending.emplace_back(std::nullopt);
  }
  std::vector<actor_row> rows;
  for (size_t i = 0; i < supervisors.size(); ++i) {
    const auto& name = supervisors[i].first;
    if (!pending[i]) {
      rows.push_back(unreachable(name, "no supervisor handle"));
      continue;
    }
    pending[i]->receive(
      [&](std::vector<actors::child_status>& children) {
        for (auto& c : children)
          rows.push_back(actor_row{name, std::move(c.name), std::move(c.state), c.restarts,
                                   std::move(c.last_reason)});
      },
      [&](caf::error& err) { rows.push_back(unreachable(name, sys.render(err))); });
  }
  return rows;
}

expected<void> restart_actor(caf::actor_system& sys, const supervisor_list& supervisors,
                             const std::string& name, std::chrono::milliseconds timeout) {
  caf::scoped_actor self{sys};
  std::vector<std::string> silent; // supervisors that did not answer
  for (const auto& [sup_name, sup] : supervisors) {
    if (!sup) {
      silent.push_back(sup_name);
      continue;
    }
    bool restarted = false;
    self->request(sup, timeout, actors::restart_atom::value, name)
      .receive([&](bool ok) { restarted = ok; },
               [&](caf::error&) { silent.push_back(sup_name); });
    if (restarted)
      return {};
  }
  if (!silent.empty()) {
    std::string who;
    for (const auto& s : silent)
      who += (who.empty() ? "" : ", ") + s;
    return make_error(errc::timeout, "no answering supervisor has an actor named '" + name +
                                       "'; no answer from: " + who);
  }
  return make_error(errc::not_found, "no actor named '" + name + "'");
}

namespace {

/// The admin URL a record publishes (admin_url_key), "" when none.
std::string admin_url_of(const planes::instance_record& rec) {
  auto it = rec.metadata.find(std::string{admin_url_key});
  return it != rec.metadata.end() ? it->second : std::string{};
}

} // namespace

expected<std::vector<instance_row>> instance_rows(planes::discovery_plane& discovery,
                                                  std::string_view prefix) {
  auto records = discovery.list(prefix);
  if (!records)
    return std::move(records.error());
  std::vector<instance_row> rows;
  rows.reserve(records->size());
  for (auto& rec : *records) {
    instance_row row;
    row.key = rec.key();
    row.instance_id = rec.instance;
    row.address = rec.request_address;
    row.health = std::string{planes::to_string(rec.health)};
    row.admin_url = admin_url_of(rec);
    row.metadata = std::move(rec.metadata);
    rows.push_back(std::move(row));
  }
  return rows;
}

expected<std::optional<instance_host>> find_instance_host(planes::discovery_plane& discovery,
                                                          uint64_t instance_id,
                                                          std::string_view prefix) {
  auto records = discovery.list(prefix);
  if (!records)
    return std::move(records.error());
  for (auto& rec : *records) {
    if (rec.instance != instance_id)
      continue;
    instance_host host;
    host.admin_url = admin_url_of(rec);
    if (protocol::hosts_no_worker(rec.endpoint.component_name, rec.endpoint.endpoint_name))
      host.non_worker = rec.endpoint.component_name;
    return std::optional<instance_host>{std::move(host)};
  }
  return std::optional<instance_host>{};
}

} // namespace dynamo::admin
