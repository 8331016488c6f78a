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

std::string_view to_string(storage_tier t) noexcept {
  switch (t) {
    case storage_tier::device: return "GPU";
    case storage_tier::host_pinned: return "CPU";
    case storage_tier::disk: return "DISK";
    case storage_tier::external: return "EXTERNAL";
  }
  return "unknown";
}

} // namespace dynamo::protocol
