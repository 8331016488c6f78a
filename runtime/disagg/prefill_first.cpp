#include "runtime/disagg/prefill_first.hpp"

#include "runtime/protocol/codec.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace dynamo::disagg {

bool may_prefill_remotely(const protocol::preprocessed_request& r, int prefill_instances,
                          uint32_t max_local_prefill_length) noexcept {
  return prefill_instances > 0 && r.disagg.empty() && r.sampling.n <= 1 && !r.embed &&
         !r.sampling.prompt_logprobs &&
         r.token_ids.size() >= max_local_prefill_length;
}

bool prefill_remotely(size_t prompt_tokens, size_t cached_tokens, uint32_t max_local_prefill_length) noexcept {
  return prompt_tokens - std::min(cached_tokens, prompt_tokens) >= max_local_prefill_length;
}

protocol::preprocessed_request prefill_request(const protocol::preprocessed_request& original) {
  protocol::preprocessed_request p = original;
  p.request_id = original.request_id + std::string{prefill_request_suffix};
  p.stop.max_tokens = 1;
  p.stop.min_tokens = 0;
  p.disagg = protocol::encode(protocol::disagg_params{protocol::disagg_role::prefill, {}});
  return p;
}

std::optional<protocol::kv_prefill_result> prefill_result_of(const protocol::engine_output& chunk) {
  if (chunk.finish == protocol::finish_reason::none || chunk.disagg.empty())
    return std::nullopt;
  auto p = protocol::decode<protocol::kv_prefill_result>(chunk.disagg);
  if (!p)
    return std::nullopt;
  return std::move(*p);
}

std::vector<uint8_t> decode_params(protocol::kv_prefill_result result) {
  return protocol::encode(protocol::disagg_params{protocol::disagg_role::decode, std::move(result)});
}

} // namespace dynamo::disagg
