#include "runtime/kv/connector_chain.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::kv {

uint32_t connector_chain::get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                     uint32_t num_computed) {
  for (kv_connector* c : links_)
    if (const uint32_t n = c->get_num_new_matched_tokens(request_id, num_prompt, num_computed); n > 0) {
      owner_[std::string{request_id}] = c;
      return n;
    }
  owner_.erase(std::string{request_id});
  return 0;
}

void connector_chain::update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                               size_t first_block) {
  if (auto it = owner_.find(std::string{request_id}); it != owner_.end())
    it->second->update_state_after_alloc(request_id, block_table, first_block);
}

std::vector<finished_load> connector_chain::get_finished() {
  std::vector<finished_load> out;
  for (kv_connector* c : links_)
    for (finished_load& f : c->get_finished())
      out.push_back(std::move(f));
  return out;
}

release_action connector_chain::on_release(std::string_view request_id, bool completed) {
  release_action action = release_action::free;
  kv_connector* taker = nullptr;
  for (kv_connector* c : links_) {
    const release_action a = c->on_release(request_id, completed);
    if (a == release_action::free)
      continue;
    if (taker == nullptr) {
      taker = c;
      action = a;
    } else { // one request, two claims on its blocks: a bug in a connector
      spdlog::error("request {}: two KV connectors claim its blocks; the first one gets them", request_id);
    }
  }
  if (taker != nullptr)
    owner_[std::string{request_id}] = taker;
  else
    owner_.erase(std::string{request_id});
  return action;
}

std::optional<protocol::kv_prefill_result> connector_chain::save(std::string_view request_id,
                                                                 std::vector<uint32_t> blocks, uint32_t num_prompt,
                                                                 uint32_t last_token) {
  auto it = owner_.find(std::string{request_id});
  if (it == owner_.end())
    return std::nullopt; // unreachable: on_release answered save
  kv_connector* c = it->second;
  owner_.erase(it);
  return c->save(request_id, std::move(blocks), num_prompt, last_token);
}

void connector_chain::adopt(std::string_view request_id, std::vector<uint32_t> blocks) {
  auto it = owner_.find(std::string{request_id});
  if (it == owner_.end())
    return; // unreachable: on_release answered quarantine
  kv_connector* c = it->second;
  owner_.erase(it);
  c->adopt(request_id, std::move(blocks));
}

void connector_chain::clear_requests() {
  owner_.clear();
  for (kv_connector* c : links_)
    c->clear_requests();
}

} // namespace dynamo::kv
