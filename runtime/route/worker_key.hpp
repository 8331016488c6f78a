// The router's unit of placement: a worker instance and one of its data-parallel
// ranks (Dynamo's WorkerWithDpRank). Every route/* structure keys on it. Plain
// value; safe from any thread.
#pragma once

#include "runtime/route/flat_map.hpp"

#include <compare>
#include <cstdint>
#include <functional>
#include <string>

namespace dynamo::route {

struct worker_key {
  uint64_t worker_id = 0;
  uint32_t dp_rank = 0;
  friend bool operator==(const worker_key&, const worker_key&) = default;
  friend auto operator<=>(const worker_key&, const worker_key&) = default;
};

struct worker_key_hash {
  [[nodiscard]] uint64_t operator()(const worker_key& w) const noexcept {
    return mix64(w.worker_id ^ mix64(uint64_t{w.dp_rank} + 0x9e3779b97f4a7c15ull));
  }
};

/// "<worker hex>/<dp_rank>" for logs.
[[nodiscard]] std::string to_string(const worker_key& w);

} // namespace dynamo::route

template <>
struct std::hash<dynamo::route::worker_key> {
  size_t operator()(const dynamo::route::worker_key& w) const noexcept {
    return static_cast<size_t>(dynamo::route::worker_key_hash{}(w));
  }
};
