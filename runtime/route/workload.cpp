#include "runtime/route/workload.hpp"

#include "runtime/kv/block_count.hpp"
#include "runtime/route/flat_map.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <istream>
#include <ostream>
#include <random>
#include <unordered_set>

namespace dynamo::route {

namespace {

double uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

uint32_t between(std::mt19937_64& rng, uint32_t lo, uint32_t hi) {
  if (hi <= lo)
    return lo;
  return lo + static_cast<uint32_t>(uniform(rng) * (hi - lo + 1));
}

double exponential(std::mt19937_64& rng, double mean) {
  return -mean * std::log1p(-uniform(rng));
}

/// One conversation: the ids of its full history blocks so far.
struct session_state {
  std::vector<uint64_t> full_ids; ///< ids of the complete blocks of the history
  uint64_t history_tokens = 0;
};

void emit_session(const workload_config& c, uint64_t session, uint64_t start_ms,
                  uint64_t& next_id, const std::vector<std::vector<uint64_t>>& system_ids,
                  std::mt19937_64& rng, std::vector<trace_record>& out) {
  session_state s;
  uint32_t prompt = static_cast<uint32_t>(uniform(rng) * c.system_prompts);
  s.full_ids = system_ids[prompt];
  s.history_tokens = c.system_prompt_tokens;
  uint32_t turns = between(rng, c.min_turns, c.max_turns);
  double t = static_cast<double>(start_ms);
  for (uint32_t turn = 0; turn < turns; ++turn) {
    trace_record r;
    r.session = session;
    r.timestamp_ms = static_cast<uint64_t>(t);
    uint64_t input = s.history_tokens + between(rng, c.min_user_tokens, c.max_user_tokens);
    r.input_length = static_cast<uint32_t>(input);
    r.output_length = between(rng, c.min_output_tokens, c.max_output_tokens);
    uint32_t kept = static_cast<uint32_t>(s.history_tokens / c.trace_block_size);
    kept = std::min<uint32_t>(kept, static_cast<uint32_t>(s.full_ids.size()));
    r.hash_ids.assign(s.full_ids.begin(), s.full_ids.begin() + kept);
    while (r.hash_ids.size() < kv::blocks_for_tokens(input, c.trace_block_size))
      r.hash_ids.push_back(next_id++);
    // The next turn re-sends this prompt and the reply: its full blocks stay.
    s.history_tokens = input + r.output_length;
    s.full_ids.assign(r.hash_ids.begin(), r.hash_ids.begin() + input / c.trace_block_size);
    out.push_back(std::move(r));
    t += exponential(rng, c.mean_think_ms);
  }
}

} // namespace

std::vector<trace_record> generate_workload(const workload_config& c) {
  std::mt19937_64 rng(c.seed);
  workload_config cfg = c;
  cfg.trace_block_size = std::max<uint32_t>(cfg.trace_block_size, 1);
  cfg.system_prompts = std::max<uint32_t>(cfg.system_prompts, 1);
  uint64_t next_id = 1;
  // System prompts: full blocks get ids shared by every session using them.
  std::vector<std::vector<uint64_t>> system_ids(cfg.system_prompts);
  for (auto& ids : system_ids)
    for (uint32_t b = 0; b < kv::blocks_for_tokens(cfg.system_prompt_tokens, cfg.trace_block_size); ++b)
      ids.push_back(next_id++);
  std::vector<trace_record> out;
  double start = 0;
  for (uint64_t s = 1; s <= cfg.sessions; ++s) {
    emit_session(cfg, s, static_cast<uint64_t>(start), next_id, system_ids, rng, out);
    start += exponential(rng, 1000.0 / std::max(cfg.sessions_per_second, 1e-9));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.timestamp_ms != b.timestamp_ms ? a.timestamp_ms < b.timestamp_ms
                                            : a.session < b.session;
  });
  return out;
}

std::vector<uint32_t> synthesize_tokens(const trace_record& r, uint32_t block, uint32_t vocab) {
  std::vector<uint32_t> tokens;
  tokens.reserve(r.input_length);
  block = std::max<uint32_t>(block, 1);
  vocab = std::max<uint32_t>(vocab, 1);
  for (uint64_t id : r.hash_ids) {
    uint64_t state = mix64(id ^ 0x2545f4914f6cdd1dull);
    for (uint32_t i = 0; i < block && tokens.size() < r.input_length; ++i) {
      state = mix64(state + 0x9e3779b97f4a7c15ull);
      tokens.push_back(static_cast<uint32_t>(state % vocab));
    }
  }
  return tokens;
}

std::vector<uint32_t> next_turn_prompt(std::span<const uint32_t> previous, std::span<const uint32_t> reply,
                                       const trace_record& record, uint32_t block, uint32_t vocab) {
  const std::vector<uint32_t> synthesized = synthesize_tokens(record, block, vocab);
  const size_t history = previous.size() + reply.size();
  const size_t user = std::min<size_t>(synthesized.size(),
                                       std::max<size_t>(record.input_length > history ? record.input_length - history : 0, 1));
  std::vector<uint32_t> out;
  out.reserve(history + user);
  out.insert(out.end(), previous.begin(), previous.end());
  out.insert(out.end(), reply.begin(), reply.end());
  out.insert(out.end(), synthesized.end() - static_cast<std::ptrdiff_t>(user), synthesized.end());
  return out;
}

std::vector<double> trace_arrivals_ms(const std::vector<trace_record>& records, double rate, size_t limit) {
  const size_t n = limit > 0 ? std::min(limit, records.size()) : records.size();
  double scale = 1;
  if (rate > 0 && n > 1) {
    const double span_s =
      (static_cast<double>(records[n - 1].timestamp_ms) - static_cast<double>(records[0].timestamp_ms)) / 1000.0;
    if (span_s > 0)
      scale = (static_cast<double>(n - 1) / rate) / span_s;
  }
  std::vector<double> at(n);
  // A record stamped before the first (an unsorted file) arrives with it.
  for (size_t i = 0; i < n; ++i)
    at[i] = std::max(0.0, static_cast<double>(records[i].timestamp_ms) -
                            static_cast<double>(records[0].timestamp_ms)) * scale;
  return at;
}

workload_stats analyze_workload(const std::vector<trace_record>& records) {
  workload_stats st;
  st.requests = records.size();
  if (records.empty())
    return st;
  std::unordered_set<uint64_t> seen;
  uint64_t blocks = 0, reused = 0, in = 0, out = 0;
  for (const auto& r : records) {
    in += r.input_length;
    out += r.output_length;
    for (uint64_t id : r.hash_ids) {
      ++blocks;
      reused += seen.insert(id).second ? 0 : 1;
    }
  }
  st.mean_input_length = static_cast<double>(in) / static_cast<double>(records.size());
  st.mean_output_length = static_cast<double>(out) / static_cast<double>(records.size());
  st.duration_s =
      static_cast<double>(records.back().timestamp_ms - records.front().timestamp_ms) / 1000.0;
  st.reuse_ratio = blocks ? static_cast<double>(reused) / static_cast<double>(blocks) : 0.0;
  return st;
}

void write_jsonl(std::ostream& out, const std::vector<trace_record>& records) {
  for (const auto& r : records) {
    nlohmann::json j{{"timestamp", r.timestamp_ms},
                     {"input_length", r.input_length},
                     {"output_length", r.output_length},
                     {"hash_ids", r.hash_ids}};
    if (r.session != 0)
      j["session_id"] = r.session;
    out << j.dump() << '\n';
  }
}

expected<std::vector<trace_record>> read_jsonl(std::istream& in) {
  std::vector<trace_record> out;
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    try {
      auto j = nlohmann::json::parse(line);
      trace_record r;
      r.timestamp_ms = j.at("timestamp").get<uint64_t>();
      uint64_t input = j.at("input_length").get<uint64_t>();
      uint64_t output = j.at("output_length").get<uint64_t>();
      if (input > UINT32_MAX || output > UINT32_MAX)
        return make_error(errc::invalid_argument, fmt::format("trace line {}: length too large", n));
      r.input_length = static_cast<uint32_t>(input);
      r.output_length = static_cast<uint32_t>(output);
      r.hash_ids = j.at("hash_ids").get<std::vector<uint64_t>>();
      if (j.contains("session_id"))
        r.session = j["session_id"].get<uint64_t>();
      out.push_back(std::move(r));
    } catch (const std::exception& e) {
      return make_error(errc::invalid_argument, fmt::format("trace line {}: {}", n, e.what()));
    }
  }
  return out;
}

} // namespace dynamo::route
