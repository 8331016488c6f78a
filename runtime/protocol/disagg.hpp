// Disaggregated prefill/decode parameters (research/dynamo.md 4), carried in
// preprocessed_request::disagg and engine_output::disagg as msgpack bytes, and
// the one vocabulary of disaggregation: worker roles, KV transports and the
// kv_push endpoint as enums/constants with one parser each (used by config,
// apps, actors and planes/transfer). A prefill worker answers a `prefill`
// request with one token and a kv_prefill_result naming the blocks it holds;
// the decode worker gets the request again with that result, loads those
// blocks into its own and decodes. Plain values and pure functions.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/protocol/kv_transfer.hpp"

#include "runtime/protocol/msgpack_map.hpp"

#include <msgpack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::protocol {

/// A worker's part in disaggregated serving; also what a request asks of a worker.
enum class disagg_role : uint8_t { aggregated = 0, prefill = 1, decode = 2 };

/// "aggregated" | "prefill" | "decode" ("unknown" outside the enum).
[[nodiscard]] std::string_view to_string(disagg_role r) noexcept;
/// The inverse of to_string ("agg" also means aggregated); config_error
/// "'<text>' is not one of aggregated|prefill|decode" otherwise.
[[nodiscard]] expected<disagg_role> parse_disagg_role(std::string_view text);

/// How KV blocks move between workers (planes/transfer). `automatic` ("auto")
/// lets planes/transfer pick per memory kind (host: ucx, tcp; device: cuda-ipc).
enum class kv_transport_kind : uint8_t { automatic = 0, inproc = 1, tcp = 2, ucx = 3, cuda_ipc = 4 };

/// "auto" | "inproc" | "tcp" | "ucx" | "cuda-ipc" ("unknown" outside the enum);
/// the same names as kv_connection_info::transport.
[[nodiscard]] std::string_view to_string(kv_transport_kind t) noexcept;
/// The inverse of to_string; config_error
/// "'<text>' is not one of auto|inproc|tcp|ucx|cuda-ipc" otherwise.
[[nodiscard]] expected<kv_transport_kind> parse_kv_transport(std::string_view text);

/// The endpoint (under a prefill worker's namespace/component) that serves kv_push_request.
inline constexpr std::string_view kv_push_endpoint = "kv_push";
/// The discovery metadata key under which a worker publishes its role (to_string(disagg_role)).
inline constexpr std::string_view role_metadata_key = "role";
/// The discovery metadata key under which every process record (workers, and
/// the frontend's and planner's process records) names its pid.
inline constexpr std::string_view pid_metadata_key = "pid";

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
