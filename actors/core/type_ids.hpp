// The project's one CAF type-ID block (CAF 0.17.6), starting at
// caf::first_custom_type_id, with the inspect() overloads and atoms that go
// with it. Every actor library includes this header; apps call
// dynamo::actors::register_types(cfg) before creating the actor_system.
// Add new types at the end of the block (IDs are positional). Thread-safe:
// declarations only.
#pragma once

#include "runtime/protocol/llm.hpp"

#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

namespace dynamo::protocol {

/// One chunk of a generation (local today; serializable for later remote use).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_output& x) {
  return f(caf::meta::type_name("engine_output"), x.token_ids, x.finish, x.cached_tokens, x.error,
           x.disagg, x.error_code);
}

} // namespace dynamo::protocol

CAF_BEGIN_TYPE_ID_BLOCK(dynamo, caf::first_custom_type_id)
  CAF_ADD_TYPE_ID(dynamo, (dynamo::protocol::engine_output))
  // Atoms (0.17: text of at most 10 characters; they take no type ID).
  CAF_ADD_ATOM(dynamo, dynamo::actors, client_gone_atom, "clientgone")
  CAF_ADD_ATOM(dynamo, dynamo::actors, backend_error_atom, "backendErr")
CAF_END_TYPE_ID_BLOCK(dynamo)

namespace dynamo::actors {

/// Registers every type of the block with `cfg` (needed for remote actors;
/// harmless locally). Call once per actor_system_config.
inline void register_types(caf::actor_system_config& cfg) {
  cfg.add_message_types<caf::id_block::dynamo>();
}

} // namespace dynamo::actors
