#include "actors/frontend/model_registry.hpp"

#include <chrono>
#include <mutex>

namespace dynamo::frontend {

expected<void> model_registry::add(model_entry e) {
  if (e.card.name.empty())
    return make_error(errc::invalid_argument, "a model needs a name");
  if (e.card.context_length == 0)
    return make_error(errc::invalid_argument, "model " + e.card.name + " has no context length");
  if (!e.tokenizer || !e.chat_template || !e.client)
    return make_error(errc::invalid_argument,
                      "model " + e.card.name + " needs a tokenizer, a chat template and a client");
  auto name = e.card.name;
  std::unique_lock lock{mutex_};
  auto old = models_.find(name);
  if (e.created == 0 && old != models_.end()) // re-offered (a new context length): listed since then
    e.created = old->second->created;
  if (e.created == 0)
    e.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  models_.insert_or_assign(std::move(name), std::make_shared<const model_entry>(std::move(e)));
  return {};
}

bool model_registry::remove(std::string_view name) {
  std::unique_lock lock{mutex_};
  auto it = models_.find(name);
  if (it == models_.end())
    return false;
  models_.erase(it);
  return true;
}

std::shared_ptr<const model_entry> model_registry::find(std::string_view name) const {
  std::shared_lock lock{mutex_};
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const model_entry>> model_registry::list() const {
  std::shared_lock lock{mutex_};
  std::vector<std::shared_ptr<const model_entry>> out;
  out.reserve(models_.size());
  for (const auto& [_, m] : models_)
    out.push_back(m);
  return out;
}

size_t model_registry::size() const {
  std::shared_lock lock{mutex_};
  return models_.size();
}

} // namespace dynamo::frontend
