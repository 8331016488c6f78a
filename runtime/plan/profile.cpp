#include "runtime/plan/profile.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

namespace dynamo::plan {

namespace {

// y at x on the polyline through (xs, ys) (xs ascending, at least one point):
// linear inside, extrapolated from the last segment above, clamped below
// unless `proportional_below` (then scaled through the origin).
double interpolate(const std::vector<std::pair<double, double>>& pts, double x, bool proportional_below,
                   bool extrapolate_above) {
  if (pts.size() == 1 || x <= pts.front().first) {
    const auto& [x0, y0] = pts.front();
    if (proportional_below && x0 > 0)
      return y0 * std::max(0.0, x) / x0;
    if (pts.size() == 1)
      return y0;
    return y0;
  }
  for (size_t i = 1; i < pts.size(); ++i)
    if (x <= pts[i].first) {
      const auto& [x0, y0] = pts[i - 1];
      const auto& [x1, y1] = pts[i];
      return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
    }
  if (!extrapolate_above)
    return pts.back().second;
  const auto& [x0, y0] = pts[pts.size() - 2];
  const auto& [x1, y1] = pts.back();
  return y1 + (y1 - y0) * (x - x1) / (x1 - x0);
}

// JSON field names of a linear_cost: the hand-off's and the step overhead's.
struct cost_names {
  const char* per_unit;
  const char* x;
  const char* base;
  const char* measured;
};
constexpr cost_names handoff_names{"per_block_ms", "isl", "local_ms", "remote_ms"};
constexpr cost_names overhead_names{"per_seq_ms", "batch", "profile_ms", "measured_ms"};

nlohmann::json cost_to_json(const linear_cost& c, const cost_names& n) {
  nlohmann::json j{{"fixed_ms", c.fixed_ms}, {n.per_unit, c.per_unit_ms}, {"points", nlohmann::json::array()}};
  for (const auto& x : c.points)
    j["points"].push_back({{n.x, x.x}, {n.base, x.base_ms}, {n.measured, x.measured_ms}});
  return j;
}

linear_cost cost_from_json(const nlohmann::json& j, const cost_names& n) {
  linear_cost c{j.at("fixed_ms").get<double>(), j.at(n.per_unit).get<double>(), {}};
  for (const auto& x : j.value("points", nlohmann::json::array()))
    c.points.push_back({x.at(n.x).get<uint32_t>(), x.at(n.base).get<double>(), x.at(n.measured).get<double>()});
  return c;
}

} // namespace

uint32_t kv_blocks(uint32_t tokens, uint32_t block_size) noexcept {
  const uint32_t b = std::max(1u, block_size);
  return (tokens + b - 1) / b;
}

linear_cost fit_cost(std::vector<cost_point> points, const std::function<double(uint32_t)>& units_of) {
  linear_cost c;
  c.points = std::move(points);
  if (c.points.empty())
    return c;
  std::vector<std::pair<double, double>> xy;
  for (const auto& p : c.points)
    xy.emplace_back(units_of(p.x), p.measured_ms - p.base_ms);
  const double n = static_cast<double>(xy.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) {
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  double fixed = sy / n, slope = 0; // one x only: a constant
  if (const double det = n * sxx - sx * sx; det > 0) {
    slope = (n * sxy - sx * sy) / det;
    fixed = (sy - slope * sx) / n;
  }
  if (slope < 0) {
    fixed = std::max(0.0, sy / n);
    slope = 0;
  } else if (fixed < 0) {
    fixed = 0;
    slope = sxx > 0 ? std::max(0.0, sxy / sxx) : 0;
  }
  c.fixed_ms = fixed;
  c.per_unit_ms = slope;
  return c;
}

bool prices_prefill_per_sequence(const engine_profile& p) noexcept {
  return p.engine == "cpu" || p.engine == "cuda";
}

step_times::step_times(const engine_profile& p) : per_sequence_(prices_prefill_per_sequence(p)) {
  std::map<double, double> best; // isl -> ms, cold prompts only
  for (const auto& x : p.prefill)
    if (x.prefix_hit == 0.0)
      best[x.isl] = best.count(x.isl) ? std::min(best[x.isl], x.ms) : x.ms;
  prefill_.assign(best.begin(), best.end());
  std::map<double, std::map<double, double>> by_ctx; // context -> batch -> ms
  for (const auto& x : p.decode)
    by_ctx[x.context][x.batch] = x.step_ms;
  for (const auto& [ctx, row] : by_ctx)
    decode_.emplace_back(ctx, polyline(row.begin(), row.end()));
}

double step_times::prefill_ms(double isl) const noexcept {
  return std::max(0.0, interpolate(prefill_, isl, true, true));
}

double step_times::decode_step_ms(double batch, double context) const noexcept {
  // Interpolate in batch within the two rows around `context`, then in context.
  auto at = [&](size_t i) { return interpolate(decode_[i].second, batch, false, true); };
  const size_t n = decode_.size();
  double ms = 0;
  if (n == 1 || context <= decode_.front().first) {
    ms = at(0);
  } else {
    size_t hi = 1;
    while (hi + 1 < n && context > decode_[hi].first)
      ++hi;
    const double x0 = decode_[hi - 1].first, x1 = decode_[hi].first;
    const double y0 = at(hi - 1), y1 = at(hi);
    ms = y0 + (y1 - y0) * (context - x0) / (x1 - x0); // inside, or extrapolated from the last pair
  }
  return std::max(0.0, ms);
}

double step_times::step_ms(double prefill_tokens, double decode_batch, double context) const noexcept {
  if (prefill_tokens <= 0)
    return decode_batch > 0 ? decode_step_ms(decode_batch, context) : 0.0;
  const double prefill = prefill_ms(prefill_tokens);
  if (decode_batch <= 0)
    return prefill;
  const double decode = decode_step_ms(decode_batch, context);
  return std::max({prefill + decode - decode_step_ms(1, prefill_tokens), prefill, decode});
}

void step_times::add_chunk(step_work& w, double start, double tokens) const noexcept {
  w.prefill_tokens += tokens;
  if (!per_sequence_ || tokens <= 0 || !has_prefill())
    return;
  const double ms = start > 0 ? prefill_ms(start + tokens) - prefill_ms(start)
                              : prefill_ms(tokens) - (has_decode() ? decode_step_ms(1, 0) : 0.0);
  w.chunk_ms += std::max(0.0, ms);
}

double step_times::step_ms(const step_work& w, double decode_batch, double context) const noexcept {
  if (!per_sequence_ || w.prefill_tokens <= 0 || !has_decode())
    return step_ms(w.prefill_tokens, decode_batch, context);
  return w.chunk_ms + (decode_batch > 0 ? decode_step_ms(decode_batch, context) : decode_step_ms(1, 0));
}

std::optional<double> prefill_ms_at(const engine_profile& p, double isl) {
  step_times t(p);
  if (!t.has_prefill())
    return std::nullopt;
  return t.prefill_ms(isl);
}

std::optional<double> decode_step_ms_at(const engine_profile& p, double batch, double context) {
  step_times t(p);
  if (!t.has_decode())
    return std::nullopt;
  return t.decode_step_ms(batch, context);
}

std::optional<sla_estimate> estimate_sla(const engine_profile& p, const sla_targets& sla, double isl,
                                         double osl) {
  const step_times times(p);
  if (!times.has_prefill() || !times.has_decode())
    return std::nullopt;
  const std::optional<double> prefill = times.prefill_ms(std::max(1.0, isl));
  sla_estimate e;
  e.prefill_ms = *prefill;
  e.prefill_tokens_per_s = *prefill > 0 ? std::max(1.0, isl) / (*prefill / 1000.0) : 0;
  e.meets_ttft = *prefill <= sla.ttft_ms;
  double ctx = std::max(1.0, isl + osl / 2);
  uint32_t max_batch = std::max<uint32_t>(1, p.max_num_seqs);
  if (p.max_kv_tokens > 0)
    max_batch = std::min<uint32_t>(max_batch, std::max<uint32_t>(1, static_cast<uint32_t>(p.max_kv_tokens / (isl + osl))));
  uint32_t largest_profiled = 0;
  for (const auto& x : p.decode)
    largest_profiled = std::max(largest_profiled, x.batch);
  max_batch = std::min(max_batch, std::max<uint32_t>(1, largest_profiled)); // no extrapolation in batch
  double best_tps = 0;
  for (uint32_t b = 1; b <= max_batch; ++b) {
    double ms = times.decode_step_ms(b, ctx);
    if (ms > sla.itl_ms || ms <= 0)
      continue;
    if (double tps = b / (ms / 1000.0); tps > best_tps) {
      best_tps = tps;
      e.decode_batch = b;
    }
  }
  e.meets_itl = e.decode_batch > 0;
  if (!e.meets_itl) { // the ITL target is out of reach: size by batch 1
    double ms = times.decode_step_ms(1, ctx);
    best_tps = ms > 0 ? 1000.0 / ms : 0;
  }
  e.decode_tokens_per_s = best_tps;
  return e;
}

nlohmann::json to_json(const engine_profile& p) {
  nlohmann::json j;
  j["engine"] = p.engine;
  j["model"] = p.model;
  j["max_kv_tokens"] = p.max_kv_tokens;
  j["max_num_seqs"] = p.max_num_seqs;
  j["max_num_batched_tokens"] = p.max_num_batched_tokens;
  j["max_model_len"] = p.max_model_len;
  j["block_size"] = p.block_size;
  j["threads"] = p.threads;
  j["simulated"] = p.simulated;
  j["prefill"] = nlohmann::json::array();
  for (const auto& x : p.prefill)
    j["prefill"].push_back({{"isl", x.isl}, {"prefix_hit", x.prefix_hit}, {"cached_tokens", x.cached_tokens},
                            {"ms", x.ms}});
  j["decode"] = nlohmann::json::array();
  for (const auto& x : p.decode)
    j["decode"].push_back({{"batch", x.batch}, {"context", x.context}, {"step_ms", x.step_ms}});
  if (!p.mixed.empty()) {
    j["mixed"] = nlohmann::json::array();
    for (const auto& x : p.mixed)
      j["mixed"].push_back({{"batch", x.batch}, {"context", x.context}, {"prefill_tokens", x.prefill_tokens},
                            {"step_ms", x.step_ms}, {"decode_ms", x.decode_ms}});
  }
  j["skipped"] = p.skipped;
  if (p.handoff)
    j["handoff"] = cost_to_json(*p.handoff, handoff_names);
  if (p.step_overhead)
    j["step_overhead"] = cost_to_json(*p.step_overhead, overhead_names);
  return j;
}

expected<engine_profile> profile_from_json(const nlohmann::json& j) {
  try {
    engine_profile p;
    p.engine = j.at("engine").get<std::string>();
    p.model = j.at("model").get<std::string>();
    p.max_kv_tokens = j.at("max_kv_tokens").get<uint32_t>();
    p.max_num_seqs = j.at("max_num_seqs").get<uint32_t>();
    p.max_num_batched_tokens = j.at("max_num_batched_tokens").get<uint32_t>();
    p.max_model_len = j.at("max_model_len").get<uint32_t>();
    p.block_size = j.value("block_size", 16u);
    p.threads = j.value("threads", 0u);
    p.simulated = j.value("simulated", false);
    for (const auto& x : j.at("prefill"))
      p.prefill.push_back({x.at("isl").get<uint32_t>(), x.at("prefix_hit").get<double>(),
                           x.value("cached_tokens", 0u), x.at("ms").get<double>()});
    for (const auto& x : j.at("decode"))
      p.decode.push_back({x.at("batch").get<uint32_t>(), x.at("context").get<uint32_t>(),
                          x.at("step_ms").get<double>()});
    for (const auto& x : j.value("mixed", nlohmann::json::array()))
      p.mixed.push_back({x.at("batch").get<uint32_t>(), x.at("context").get<uint32_t>(),
                         x.at("prefill_tokens").get<uint32_t>(), x.at("step_ms").get<double>(),
                         x.value("decode_ms", 0.0)});
    if (j.contains("skipped"))
      p.skipped = j.at("skipped").get<std::vector<std::string>>();
    if (j.contains("handoff"))
      p.handoff = cost_from_json(j.at("handoff"), handoff_names);
    if (j.contains("step_overhead"))
      p.step_overhead = cost_from_json(j.at("step_overhead"), overhead_names);
    return p;
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_argument, std::string{"profile JSON: "} + e.what());
  }
}

expected<engine_profile> load_profile(const std::string& path) {
  std::ifstream f(path);
  if (!f)
    return make_error(errc::io_error, "cannot read profile " + path);
  auto j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded())
    return make_error(errc::invalid_argument, path + ": not JSON");
  auto p = profile_from_json(j);
  if (!p)
    return make_error(errc::invalid_argument, path + ": " + message_of(p.error()));
  return p;
}

} // namespace dynamo::plan
