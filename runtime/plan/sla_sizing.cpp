#include "runtime/plan/sla_sizing.hpp"

#include <algorithm>
#include <cmath>

namespace dynamo::plan {

std::optional<aggregated_estimate> estimate_aggregated(const engine_profile& p, double rate, double isl, double osl,
                                                       uint32_t engines) {
  if (engines == 0 || p.decode.empty())
    return std::nullopt;
  const auto prefill = prefill_ms_at(p, std::max(1.0, isl));
  if (!prefill)
    return std::nullopt;
  const double lambda = std::max(0.0, rate) / engines; // requests/s per engine
  aggregated_estimate e;
  e.prefill_share = lambda * *prefill / 1000.0;
  if (e.prefill_share >= 1.0)
    return std::nullopt;
  double max_batch = p.max_num_seqs > 0 ? p.max_num_seqs : 1;
  double largest_profiled = 1;
  for (const auto& x : p.decode)
    largest_profiled = std::max<double>(largest_profiled, x.batch);
  max_batch = std::min(max_batch, largest_profiled); // no extrapolation in batch
  if (p.max_kv_tokens > 0)
    max_batch = std::min(max_batch, p.max_kv_tokens / std::max(1.0, isl + osl));
  const double ctx = std::max(1.0, isl + osl / 2);
  // batch = lambda x osl x step(batch) / (1 - rho): step time grows with the
  // batch, so iterate from 1 until it settles (or outgrows the engine).
  double batch = 1;
  for (int i = 0; i < 200; ++i) {
    const double itl_s = *decode_step_ms_at(p, batch, ctx) / 1000.0 / (1.0 - e.prefill_share);
    const double next = std::max(1.0, lambda * osl * itl_s);
    if (next > max_batch)
      return std::nullopt;
    const bool settled = std::abs(next - batch) <= 1e-12 * next;
    batch = next;
    if (settled)
      break;
  }
  const double step = *decode_step_ms_at(p, batch, ctx);
  e.batch = batch;
  e.itl_ms = step / (1.0 - e.prefill_share);
  e.ttft_ms = *prefill + step + e.prefill_share * *prefill / (2.0 * (1.0 - e.prefill_share));
  return e;
}

std::optional<uint32_t> aggregated_engines_for_sla(const engine_profile& p, const sla_targets& sla, double rate,
                                                   double isl, double osl, uint32_t max_engines) {
  for (uint32_t n = 1; n <= max_engines; ++n)
    if (auto e = estimate_aggregated(p, rate, isl, osl, n); e && e->itl_ms <= sla.itl_ms && e->ttft_ms <= sla.ttft_ms)
      return n;
  return std::nullopt;
}

std::optional<uint32_t> prefill_engines_for_sla(const engine_profile& p, const sla_targets& sla, double rate,
                                                double isl, uint32_t max_engines) {
  const auto prefill = prefill_ms_at(p, std::max(1.0, isl));
  if (!prefill)
    return std::nullopt;
  for (uint32_t n = 1; n <= max_engines; ++n) {
    const double rho = std::max(0.0, rate) / n * *prefill / 1000.0;
    if (rho < 1.0 && *prefill + rho * *prefill / (2.0 * (1.0 - rho)) <= sla.ttft_ms)
      return n;
  }
  return std::nullopt;
}

} // namespace dynamo::plan
