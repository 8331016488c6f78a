// The models a frontend serves: name -> model_entry (card, tokenizer, chat
// template, llm_client). Thread-safe; entries are immutable and shared, so a
// request keeps using its model even if it is removed meanwhile.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/llm_client.hpp"
#include "runtime/openai/output_format.hpp"
#include "runtime/protocol/model_card.hpp"
#include "runtime/tokenizer/chat_template.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::frontend {

struct model_entry {
  protocol::model_card card; ///< card.name is the OpenAI "model"; context_length > 0
  std::shared_ptr<const tok::tokenizer> tokenizer;
  std::shared_ptr<const tok::chat_template> chat_template;
  std::shared_ptr<engine::llm_client> client;
  /// How its output is parsed (frontend_service::add_model detects it from
  /// the chat template and applies the --tool-call-parser / --reasoning-parser overrides).
  openai::output_format output;
  /// Unix seconds for /v1/models; 0: set when added (kept from the entry it
  /// replaces, so a re-offered model keeps the time it was first listed).
  int64_t created = 0;
};

class model_registry {
public:
  /// Adds `e`, replacing a model of the same name (whose `created` it keeps
  /// unless `e` sets one). errc::invalid_argument when
  /// the name is empty, the context length is 0 or a part is missing.
  [[nodiscard]] expected<void> add(model_entry e);
  /// False when no model had that name.
  bool remove(std::string_view name);
  /// The model, or nullptr.
  [[nodiscard]] std::shared_ptr<const model_entry> find(std::string_view name) const;
  /// All models, sorted by name.
  [[nodiscard]] std::vector<std::shared_ptr<const model_entry>> list() const;
  [[nodiscard]] size_t size() const;

private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const model_entry>, std::less<>> models_;
};

} // namespace dynamo::frontend
