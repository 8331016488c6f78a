// Disaggregated prefill/decode parameters (research/dynamo.md 4), carried in
// preprocessed_request::disagg and engine_output::disagg as msgpack bytes.
// A prefill worker answers a `prefill` request with one token and a
// kv_prefill_result naming the blocks it holds; the decode worker gets the
// request again with that result, pulls those blocks into its own and decodes.
// Plain values.
#pragma once

#include "runtime/protocol/kv_transfer.hpp"

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynamo::protocol {

enum class disagg_role : uint8_t { aggregated = 0, prefill = 1, decode = 2 };

/// What a prefill worker hands back (in the final chunk of a prefill request).
struct kv_prefill_result {
  uint64_t prefill_worker_id = 0;
  std::string transfer_address;      ///< request-plane address serving "<ns>/<component>/kv_push"
  std::string transfer_endpoint;     ///< that endpoint path
  std::string hold_id;               ///< key of the held blocks on the prefill worker
  std::vector<uint32_t> block_ids;   ///< prefill worker's blocks with the prompt's KV, position order
  uint32_t num_tokens = 0;           ///< prompt tokens whose KV those blocks hold
  uint32_t first_token = 0;          ///< the token sampled after the prompt
  kv_layout layout;                  ///< how the blocks are stored (must match the decode worker's)
  DYNAMO_MSGPACK_MAP(prefill_worker_id, transfer_address, transfer_endpoint, hold_id, block_ids,
                     num_tokens, first_token, layout);
};

struct disagg_params {
  disagg_role role = disagg_role::aggregated;
  std::optional<kv_prefill_result> prefill; ///< decode requests: where the prompt's KV is
  DYNAMO_MSGPACK_MAP(role, prefill);
};

/// The request a decode worker sends to a prefill worker's kv_push endpoint:
/// "push your held blocks `hold_id` into my blocks `destination_block_ids`".
struct kv_push_request {
  std::string hold_id;
  std::vector<uint32_t> source_block_ids;      ///< subset of the held blocks, in order
  std::vector<uint32_t> destination_block_ids; ///< same length
  kv_layout layout;                            ///< the decode worker's layout
  std::vector<kv_connection_info> offers;      ///< how to reach the decode worker's receiver
  bool release = true;                         ///< free the held blocks afterwards
  DYNAMO_MSGPACK_MAP(hold_id, source_block_ids, destination_block_ids, layout, offers, release);
};

} // namespace dynamo::protocol

MSGPACK_ADD_ENUM(dynamo::protocol::disagg_role);
