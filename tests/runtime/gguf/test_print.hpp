// Stream operators so Boost.Test can print errc and GGUF enums in failed
// checks. Test code only.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/value.hpp"

#include "kernels/reference/tensor_type.hpp"

#include <ostream>
#include <string>

namespace dynamo {
inline std::ostream& operator<<(std::ostream& os, errc c) { return os << to_string(c); }

/// "ok" or the error of `e`; safe to use in check messages (which are built
/// eagerly, so `e.error()` must not be touched on success).
template <class T>
std::string error_text(const expected<T>& e) {
  return e ? std::string("ok") : describe(e.error());
}
} // namespace dynamo

namespace dynamo::kernels::ref {
inline std::ostream& operator<<(std::ostream& os, tensor_type t) { return os << type_name(t); }
} // namespace dynamo::kernels::ref

namespace dynamo::gguf {
inline std::ostream& operator<<(std::ostream& os, value_type t) { return os << value_type_name(t); }
} // namespace dynamo::gguf
