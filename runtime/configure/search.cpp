#include "runtime/configure/search.hpp"

#include <algorithm>
#include <numeric>

namespace dynamo::configure {

std::vector<deployment> enumerate(const search_space& s) {
  std::vector<deployment> out;
  const uint32_t max_workers = s.gpus_per_worker > 0 ? s.gpu_budget / s.gpus_per_worker : 0;
  for (route::router_mode router : s.routers)
    for (uint32_t seqs : s.max_num_seqs)
      for (uint32_t tokens : s.max_num_batched_tokens) {
        deployment d{.max_num_seqs = seqs, .max_num_batched_tokens = tokens, .router = router};
        if (s.aggregated)
          for (uint32_t n = 1; n <= max_workers; ++n) {
            d.mode = deployment_mode::aggregated;
            d.prefill_replicas = 0;
            d.decode_replicas = n;
            out.push_back(d);
          }
        if (s.disaggregated)
          for (uint32_t threshold : s.thresholds)
            for (uint32_t p = 1; p < max_workers; ++p)
              for (uint32_t n = 1; p + n <= max_workers; ++n) {
                d.mode = deployment_mode::disaggregated;
                d.prefill_replicas = p;
                d.decode_replicas = n;
                d.max_local_prefill_length = threshold;
                out.push_back(d);
              }
      }
  return out;
}

bool meets(const sim_result& r, const plan::sla_targets& sla) noexcept {
  return r.requests > 0 && r.completed == r.requests && !r.kv_overflow && r.ttft_ms <= sla.ttft_ms &&
         r.itl_ms <= sla.itl_ms;
}

std::vector<evaluated> evaluate(simulator& sim, const std::vector<deployment>& candidates,
                                const request_set& requests, const plan::sla_targets& sla,
                                const search_progress& progress) {
  std::vector<evaluated> out;
  out.reserve(candidates.size());
  for (const deployment& d : candidates) {
    evaluated e{d, sim.run(d, requests), false};
    e.meets_sla = meets(e.r, sla);
    out.push_back(e);
    if (progress)
      progress(out.size(), candidates.size());
  }
  return out;
}

std::vector<size_t> pareto_front(const std::vector<evaluated>& results) {
  std::vector<size_t> order;
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].r.requests > 0 && results[i].r.completed == results[i].r.requests)
      order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const sim_result &x = results[a].r, &y = results[b].r;
    if (x.tokens_per_s_per_gpu != y.tokens_per_s_per_gpu)
      return x.tokens_per_s_per_gpu > y.tokens_per_s_per_gpu;
    if (x.ttft_ms != y.ttft_ms)
      return x.ttft_ms < y.ttft_ms;
    return x.itl_ms < y.itl_ms;
  });
  // Everything before i has at least i's throughput: i is dominated when one
  // of the front so far is also no worse in both latencies.
  std::vector<size_t> front;
  for (size_t i : order) {
    const sim_result& c = results[i].r;
    bool dominated = std::any_of(front.begin(), front.end(), [&](size_t f) {
      return results[f].r.ttft_ms <= c.ttft_ms && results[f].r.itl_ms <= c.itl_ms;
    });
    if (!dominated)
      front.push_back(i);
  }
  return front;
}

std::optional<size_t> pick_winner(const std::vector<evaluated>& results) {
  double best = -1;
  for (const auto& e : results)
    if (e.meets_sla)
      best = std::max(best, e.r.tokens_per_s_per_gpu);
  if (best < 0)
    return std::nullopt;
  std::optional<size_t> win;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& e = results[i];
    if (!e.meets_sla || e.r.tokens_per_s_per_gpu < 0.99 * best)
      continue;
    if (!win) {
      win = i;
      continue;
    }
    const sim_result& w = results[*win].r;
    if (std::tuple(e.r.ttft_ms, e.r.itl_ms, e.r.gpus) < std::tuple(w.ttft_ms, w.itl_ms, w.gpus))
      win = i;
  }
  return win;
}

} // namespace dynamo::configure
