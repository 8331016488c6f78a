#include "runtime/protocol/output_error.hpp"

namespace dynamo::protocol {

errc error_code_of(const engine_output& out) noexcept {
  return out.error_code != 0 ? static_cast<errc>(out.error_code) : errc::internal;
}

caf::error error_of(const engine_output& out) {
  return make_error(error_code_of(out), out.error.empty() ? "the worker failed the request" : out.error);
}

} // namespace dynamo::protocol
