#include "runtime/protocol/kv_event.hpp"

namespace dynamo::protocol {

std::string_view to_string(kv_event_kind k) noexcept {
  switch (k) {
    case kv_event_kind::stored: return "stored";
    case kv_event_kind::removed: return "removed";
    case kv_event_kind::cleared: return "cleared";
  }
  return "unknown";
}

} // namespace dynamo::protocol
