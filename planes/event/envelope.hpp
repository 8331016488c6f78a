// msgpack encoding of event_envelope and the per-(publisher, topic) sequence
// tracker that turns envelope numbers into in-order / gap / stale verdicts.
// Shared by the ZeroMQ and in-process event planes. encode/decode are pure;
// a sequence_tracker belongs to one subscriber thread (not thread-safe).
#pragma once

#include "planes/event/event_plane.hpp"

#include <map>
#include <optional>
#include <span>
#include <utility>

namespace dynamo::planes {

[[nodiscard]] bytes encode_envelope(const event_envelope& env);

/// errc::malformed_message for anything that is not a well-formed envelope
/// (bad msgpack, wrong shape, sequence 0, empty or over-long topic).
[[nodiscard]] expected<event_envelope> decode_envelope(std::span<const uint8_t> data,
                                                       size_t max_payload_bytes);

class sequence_tracker {
public:
  enum class verdict { in_order, gap, stale };
  struct result {
    verdict kind = verdict::in_order;
    uint64_t expected = 0; ///< the sequence that was due
  };

  /// Records `env`'s sequence. in_order and gap advance the tracker; stale does not.
  [[nodiscard]] result observe(const event_envelope& env);

private:
  std::map<std::pair<uint64_t, std::string>, uint64_t> last_;
};

} // namespace dynamo::planes
