// Several KV connectors behind the scheduler's one seam (docs/KV.md): a decode
// or prefill worker's disaggregation connector first, then the KV block
// manager's. The first connector that loads a request owns its load; the first
// that asks to save or quarantine a leaving request gets its blocks; everyone
// hears every release. Owned by engine_core, called from its step thread: not
// thread-safe.
#pragma once

#include "runtime/kv/kv_connector.hpp"

#include <string>
#include <unordered_map>
#include <vector>

namespace dynamo::kv {

class connector_chain final : public kv_connector {
public:
  /// `links` in the order they are asked; each outlives the chain.
  explicit connector_chain(std::vector<kv_connector*> links) : links_(std::move(links)) {}

  [[nodiscard]] uint32_t get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                    uint32_t num_computed) override;
  void update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                size_t first_block) override;
  [[nodiscard]] std::vector<finished_load> get_finished() override;
  [[nodiscard]] release_action on_release(std::string_view request_id, bool completed) override;
  [[nodiscard]] std::optional<protocol::kv_prefill_result>
  save(std::string_view request_id, std::vector<uint32_t> blocks, uint32_t num_prompt, uint32_t last_token) override;
  void adopt(std::string_view request_id, std::vector<uint32_t> blocks) override;
  void clear_requests() override;

private:
  std::vector<kv_connector*> links_;
  /// The link that answered last for a request: its load's owner (from
  /// get_num_new_matched_tokens) or its blocks' taker (from on_release).
  std::unordered_map<std::string, kv_connector*> owner_;
};

} // namespace dynamo::kv
