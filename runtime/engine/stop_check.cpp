#include "runtime/engine/stop_check.hpp"

#include <algorithm>

namespace dynamo::engine {

protocol::finish_reason check_stop(uint32_t token, uint32_t num_output, uint32_t num_tokens,
                                   const protocol::stop_conditions& stop,
                                   uint32_t max_model_len) noexcept {
  const bool is_stop_token =
      std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), token) !=
      stop.stop_token_ids.end();
  if (is_stop_token && num_output >= stop.min_tokens)
    return protocol::finish_reason::stop;
  if (num_output >= stop.max_tokens || num_tokens >= max_model_len)
    return protocol::finish_reason::length;
  return protocol::finish_reason::none;
}

} // namespace dynamo::engine
