// Profiles and request sets small enough to compute the simulation by hand.
#pragma once

#include "runtime/configure/traffic.hpp"
#include "runtime/plan/profile.hpp"

#include <vector>

namespace dynamo::configure::test {

/// Every prefill step takes `prefill_ms`, every decode step `decode_ms`
/// (flat between 1 and 100,000 tokens and batch 1..1024).
inline plan::engine_profile constant_profile(double prefill_ms, double decode_ms, uint32_t kv_tokens = 1'000'000) {
  plan::engine_profile p;
  p.engine = "mocker";
  p.model = "mocker";
  p.max_kv_tokens = kv_tokens;
  p.max_num_seqs = 256;
  p.max_num_batched_tokens = 8192;
  p.max_model_len = 8192;
  p.prefill = {{1, 0, 0, prefill_ms}, {100'000, 0, 0, prefill_ms}};
  p.decode = {{1, 1, decode_ms}, {1024, 1, decode_ms}, {1, 100'000, decode_ms}, {1024, 100'000, decode_ms}};
  return p;
}

struct req_spec {
  double arrival_ms;
  uint32_t isl;
  uint32_t osl;
  uint64_t prefix = 0; ///< 0: unique prompt; otherwise every block is this prefix's
};

/// Requests with prefix blocks of 64 tokens: a shared `prefix` names the same
/// block ids in every request that has it.
inline request_set requests(const std::vector<req_spec>& specs) {
  request_set rs;
  rs.block_tokens = 64;
  uint64_t unique = 1'000'000;
  for (const auto& s : specs) {
    sim_request r{s.arrival_ms, s.isl, s.osl, static_cast<uint32_t>(rs.block_ids.size()), (s.isl + 63) / 64};
    const uint64_t base = s.prefix != 0 ? s.prefix * 1000 : (unique += 1000);
    for (uint32_t b = 0; b < r.num_blocks; ++b)
      rs.block_ids.push_back(base + b);
    rs.requests.push_back(r);
  }
  return rs;
}

} // namespace dynamo::configure::test
