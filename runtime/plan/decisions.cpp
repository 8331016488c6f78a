#include "runtime/plan/decisions.hpp"

#include <nlohmann/json.hpp>

#include <charconv>

namespace dynamo::plan {

namespace {

template <class T>
bool parse_number(const std::string& text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc{} && ptr == text.data() + text.size();
}

} // namespace

std::map<std::string, std::string> to_metadata(const planner_decisions& d) {
  std::map<std::string, std::string> m;
  m[std::string{decision_id_key}] = std::to_string(d.decision_id);
  for (const auto& [pool, n] : d.replicas)
    m[std::string{replicas_key_prefix} + pool] = std::to_string(n);
  return m;
}

expected<planner_decisions> from_metadata(const std::map<std::string, std::string>& metadata) {
  planner_decisions d;
  auto id = metadata.find(std::string{decision_id_key});
  if (id == metadata.end())
    return make_error(errc::malformed_message, "planner decisions: no decision_id");
  if (!parse_number(id->second, d.decision_id))
    return make_error(errc::malformed_message, "planner decisions: bad decision_id '" + id->second + "'");
  for (const auto& [key, value] : metadata) {
    if (key.compare(0, replicas_key_prefix.size(), replicas_key_prefix) != 0)
      continue;
    uint32_t n = 0;
    auto pool = key.substr(replicas_key_prefix.size());
    if (pool.empty() || !parse_number(value, n))
      return make_error(errc::malformed_message, "planner decisions: bad entry " + key + "=" + value);
    d.replicas[pool] = n;
  }
  return d;
}

std::string decision_json(const scaling_decision& d, uint64_t decision_id, int64_t at_ms) {
  nlohmann::json j = {{"event", "scaling_decision"},
                      {"decision_id", decision_id},
                      {"at_ms", at_ms},
                      {"pool", d.pool},
                      {"role", std::string{config::to_string(d.role)}},
                      {"current", d.current},
                      {"target", d.target},
                      {"observed", d.observed},
                      {"reason", d.reason}};
  return j.dump();
}

} // namespace dynamo::plan
