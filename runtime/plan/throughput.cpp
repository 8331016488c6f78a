#include "runtime/plan/throughput.hpp"

#include "runtime/metrics/exposition.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace dynamo::plan {

expected<std::map<std::string, traffic_counters>> parse_frontend_metrics(std::string_view text,
                                                                         std::string_view prefix) {
  std::map<std::string, traffic_counters> out;
  const std::string p{prefix};
  const std::string requests = p + "_requests_total", isl_sum = p + "_input_sequence_tokens_sum",
                    isl_count = p + "_input_sequence_tokens_count",
                    osl_sum = p + "_output_sequence_tokens_sum",
                    osl_count = p + "_output_sequence_tokens_count",
                    cached_sum = p + "_cached_tokens_sum";
  auto samples = metrics::parse_exposition(text);
  if (!samples)
    return samples.error();
  for (const metrics::exposition_sample& s : *samples) {
    if (!std::isfinite(s.value))
      continue;
    double traffic_counters::*field = nullptr;
    if (s.name == requests)
      field = &traffic_counters::requests;
    else if (s.name == isl_sum)
      field = &traffic_counters::isl_sum;
    else if (s.name == isl_count)
      field = &traffic_counters::isl_count;
    else if (s.name == osl_sum)
      field = &traffic_counters::osl_sum;
    else if (s.name == osl_count)
      field = &traffic_counters::osl_count;
    else if (s.name == cached_sum)
      field = &traffic_counters::cached_sum;
    if (field)
      out[std::string{s.label("model")}].*field += s.value;
  }
  return out;
}

std::optional<traffic> traffic_between(const traffic_counters& a, const traffic_counters& b,
                                       double seconds) {
  if (!(seconds > 0))
    return std::nullopt;
  if (b.requests < a.requests || b.isl_sum < a.isl_sum || b.isl_count < a.isl_count ||
      b.osl_sum < a.osl_sum || b.osl_count < a.osl_count || b.cached_sum < a.cached_sum)
    return std::nullopt;
  traffic t;
  double isl_n = b.isl_count - a.isl_count, osl_n = b.osl_count - a.osl_count;
  // Arrivals: a prompt's length is observed when the request comes in, while
  // requests_total counts it when it ends, up to a whole generation later and
  // later still the more the pool is overloaded. Frontends without the
  // histogram fall back to requests_total.
  const bool has_isl = b.isl_count > 0;
  t.request_rate = (has_isl ? isl_n : b.requests - a.requests) / seconds;
  double isl_tokens = b.isl_sum - a.isl_sum;
  t.isl = isl_n > 0 ? isl_tokens / isl_n : 0.0;
  t.osl = osl_n > 0 ? (b.osl_sum - a.osl_sum) / osl_n : 0.0;
  t.kv_hit_rate = isl_tokens > 0 ? std::clamp((b.cached_sum - a.cached_sum) / isl_tokens, 0.0, 1.0) : 0.0;
  return t;
}

std::optional<uint32_t> replicas_needed(config::worker_role role, const traffic& t,
                                        const replica_capacity& cap) {
  double prefill_tokens = t.request_rate * t.isl * (1.0 - std::clamp(t.kv_hit_rate, 0.0, 1.0));
  double decode_tokens = t.request_rate * t.osl;
  double busy = 0; // replicas' worth of work per second
  switch (role) {
    case config::worker_role::prefill:
      if (cap.prefill_tokens_per_s <= 0)
        return std::nullopt;
      busy = prefill_tokens / cap.prefill_tokens_per_s;
      break;
    case config::worker_role::decode:
      if (cap.decode_tokens_per_s <= 0)
        return std::nullopt;
      busy = decode_tokens / cap.decode_tokens_per_s;
      break;
    case config::worker_role::aggregated:
      if (cap.prefill_tokens_per_s <= 0 || cap.decode_tokens_per_s <= 0)
        return std::nullopt;
      busy = prefill_tokens / cap.prefill_tokens_per_s + decode_tokens / cap.decode_tokens_per_s;
      break;
  }
  if (!std::isfinite(busy) || busy <= 0)
    return 0u;
  double n = std::ceil(busy - 1e-9);
  return n >= 4294967295.0 ? UINT32_MAX : static_cast<uint32_t>(n);
}

std::string prometheus_traffic_query(std::string_view prefix) {
  return fmt::format("sum by (__name__, model) ({{__name__=~\"{0}_(requests_total|input_sequence_tokens_sum|"
                     "input_sequence_tokens_count|output_sequence_tokens_sum|output_sequence_tokens_count|"
                     "cached_tokens_sum)\"}})",
                     prefix);
}

std::string prometheus_query_target(std::string_view base_path, std::string_view query) {
  std::string out{base_path};
  while (!out.empty() && out.back() == '/')
    out.pop_back();
  out += "/api/v1/query?query=";
  constexpr char hex[] = "0123456789ABCDEF";
  for (unsigned char c : query) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

expected<std::string> prometheus_vector_to_text(std::string_view text) {
  auto bad = [](const std::string& why) { return make_error(errc::malformed_message, "prometheus answer: " + why); };
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return bad("not JSON");
  if (j.value("status", "") != "success")
    return bad("status " + j.value("status", std::string{"missing"}) + ": " + j.value("error", std::string{}));
  const auto data = j.find("data");
  if (data == j.end() || !data->is_object() || data->value("resultType", "") != "vector" ||
      !data->contains("result") || !(*data)["result"].is_array())
    return bad("not a vector");
  std::string out;
  for (const auto& r : (*data)["result"]) {
    const auto m = r.find("metric");
    const auto v = r.find("value");
    if (m == r.end() || !m->is_object() || v == r.end() || !v->is_array() || v->size() != 2 || !(*v)[1].is_string())
      return bad("a sample without metric or value");
    const std::string name = m->value("__name__", "");
    if (name.empty())
      return bad("a sample without __name__");
    const std::string model = m->value("model", "");
    if (model.find_first_of("\"\\\n") != std::string::npos)
      return bad("a model label that needs escaping");
    out += fmt::format("{}{{model=\"{}\"}} {}\n", name, model, (*v)[1].get<std::string>());
  }
  return out;
}

expected<http_url> parse_metrics_url(std::string_view url) {
  auto u = dynamo::parse_http_or_https_url(url, "metrics url");
  if (u && u->target.empty())
    u->target = "/metrics";
  return u;
}

} // namespace dynamo::plan
