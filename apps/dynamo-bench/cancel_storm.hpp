// dynamo-bench --mode cancel-storm: how long cancelled streams keep a server
// busy. In one run it measures the TTFT of a streamed request on the idle
// server, then, per round, sends a storm of streams, closes every one of them
// `cancel_after_ms` later and at once sends the same kind of request, and
// reports both TTFTs and their ratio as JSON. By default one short stream is
// already decoding when the storm arrives (a busy server), so that the storm
// lands in the engine's next step at once rather than one request at a time.
// A server that frees its engine when clients leave answers the request after
// a storm about as fast as when idle. run_cancel_storm blocks.
#pragma once

#include "apps/dynamo-bench/load_generator.hpp"
#include "runtime/core/error.hpp"

#include <cstdint>
#include <string>

namespace dynamo::bench {

struct storm_config {
  uint32_t storm = 50;            ///< streams per storm
  uint32_t cancel_after_ms = 500; ///< the client closes them this long after sending
  uint32_t rounds = 3;            ///< idle probes first, then this many storm + probe rounds
  uint32_t storm_osl = 512;       ///< max_tokens of a storm stream (never reached)
  /// Streams decoding when the storm arrives (16-word prompt, 1024 tokens),
  /// closed with the storm.
  uint32_t busy_streams = 1;
};

/// `load` gives the server, model, endpoint, prompt length (isl, for storm and
/// probe alike), the probe's max_tokens (osl), seed and client threads.
[[nodiscard]] expected<std::string> run_cancel_storm(const load_config& load, const storm_config& storm);

} // namespace dynamo::bench
