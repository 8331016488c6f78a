#include "runtime/protocol/llm.hpp"

namespace dynamo::protocol {

std::string_view to_string(finish_reason r) noexcept {
  switch (r) {
    case finish_reason::none: return "none";
    case finish_reason::stop: return "stop";
    case finish_reason::length: return "length";
    case finish_reason::cancelled: return "cancelled";
    case finish_reason::error: return "error";
  }
  return "unknown";
}

} // namespace dynamo::protocol
