// Checks that a batch keeps the layout contract of executor.hpp, so an executor
// can refuse a malformed batch with an error instead of writing KV out of
// bounds. Called by executors (the mocker always; real ones in debug builds)
// and by tests. Pure function; safe from any thread.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/engine/executor.hpp"

namespace dynamo::engine {

/// errc::internal naming the first broken rule, if any:
///  - num_tokens is the sum of the entries' token counts;
///  - every entry has at least one token and a unique seq_id, except a fork
///    entry (fork_of set): no tokens, sample set, and fork_of names an earlier
///    sampling entry with the same sample_position;
///  - block_table covers start_pos + tokens.size() positions and every id is
///    below g.num_blocks;
///  - a sampling entry has sample_position == start_pos + tokens.size();
///  - block copies name blocks below g.num_blocks, src != dst.
[[nodiscard]] expected<void> check_batch(const batch& b, const kv_geometry& g);

} // namespace dynamo::engine
