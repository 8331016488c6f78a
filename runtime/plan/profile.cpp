#include "runtime/plan/profile.hpp"

#include <nlohmann/json.hpp>

namespace dynamo::plan {

nlohmann::json to_json(const engine_profile& p) {
  nlohmann::json j;
  j["engine"] = p.engine;
  j["model"] = p.model;
  j["max_kv_tokens"] = p.max_kv_tokens;
  j["max_num_seqs"] = p.max_num_seqs;
  j["max_num_batched_tokens"] = p.max_num_batched_tokens;
  j["max_model_len"] = p.max_model_len;
  j["simulated"] = p.simulated;
  j["prefill"] = nlohmann::json::array();
  for (const auto& x : p.prefill)
    j["prefill"].push_back({{"isl", x.isl}, {"prefix_hit", x.prefix_hit}, {"cached_tokens", x.cached_tokens},
                            {"ms", x.ms}});
  j["decode"] = nlohmann::json::array();
  for (const auto& x : p.decode)
    j["decode"].push_back({{"batch", x.batch}, {"context", x.context}, {"step_ms", x.step_ms}});
  j["skipped"] = p.skipped;
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
    p.simulated = j.value("simulated", false);
    for (const auto& x : j.at("prefill"))
      p.prefill.push_back({x.at("isl").get<uint32_t>(), x.at("prefix_hit").get<double>(),
                           x.value("cached_tokens", 0u), x.at("ms").get<double>()});
    for (const auto& x : j.at("decode"))
      p.decode.push_back({x.at("batch").get<uint32_t>(), x.at("context").get<uint32_t>(),
                          x.at("step_ms").get<double>()});
    if (j.contains("skipped"))
      p.skipped = j.at("skipped").get<std::vector<std::string>>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    return make_error(errc::invalid_argument, std::string{"profile JSON: "} + e.what());
  }
}

} // namespace dynamo::plan
