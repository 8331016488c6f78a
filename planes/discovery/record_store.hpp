// Where discovery records live: a key -> bytes map with atomic replace. The
// file store (files under a root directory) and the memory store (the fake)
// implement it; lease_discovery builds the plane on top. Implementations are
// thread-safe (the file store relies on rename(2) for atomicity).
#pragma once

#include "planes/codec/wire.hpp"
#include "runtime/core/error.hpp"

#include <optional>
#include <string>
#include <vector>

namespace dynamo::planes {

class record_store {
public:
  struct entry {
    std::string key;
    bytes data;
    bool unreadable = false; ///< present but could not be read (e.g. too large)
  };

  virtual ~record_store() = default;
  /// Creates or atomically replaces `key`.
  [[nodiscard]] virtual expected<void> put(const std::string& key, const bytes& data) = 0;
  /// Deletes `key`; absent keys are fine.
  [[nodiscard]] virtual expected<void> remove(const std::string& key) = 0;
  [[nodiscard]] virtual std::optional<bytes> get(const std::string& key) = 0;
  /// Every entry whose key starts with the segments `prefix` (0..4 of them).
  [[nodiscard]] virtual expected<std::vector<entry>> scan(const std::vector<std::string>& prefix) = 0;
};

} // namespace dynamo::planes
