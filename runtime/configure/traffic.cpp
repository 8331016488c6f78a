#include "runtime/configure/traffic.hpp"
#include "runtime/kv/block_count.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>

namespace dynamo::configure {

namespace {

expected<double> parse_number(std::string_view s, std::string_view whole) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size() || !std::isfinite(v))
    return make_error(errc::invalid_argument, fmt::format("'{}': '{}' is not a number", whole, s));
  return v;
}

// splitmix64: chained prefix ids from (parent, content).
uint64_t mix(uint64_t parent, uint64_t content) noexcept {
  uint64_t z = parent * 0x9e3779b97f4a7c15ULL + content + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint32_t draw(const length_dist& d, std::mt19937_64& rng) {
  double v = d.a;
  if (d.shape == length_dist::kind::normal)
    v = std::normal_distribution<double>(d.a, d.b)(rng);
  else if (d.shape == length_dist::kind::uniform)
    v = std::uniform_real_distribution<double>(d.a, d.b + 1.0)(rng); // integers a..b after floor
  if (d.shape == length_dist::kind::uniform)
    v = std::floor(v);
  return static_cast<uint32_t>(std::max(1.0, std::round(v)));
}

} // namespace

double length_dist::mean() const noexcept {
  return shape == kind::uniform ? (a + b) / 2 : a;
}

expected<length_dist> parse_length_dist(std::string_view text) {
  length_dist d;
  auto colon = text.find(':');
  std::string_view name = colon == std::string_view::npos ? "fixed" : text.substr(0, colon);
  std::string_view args = colon == std::string_view::npos ? text : text.substr(colon + 1);
  auto comma = args.find(',');
  if (name == "fixed") {
    d.shape = length_dist::kind::fixed;
    auto a = parse_number(args, text);
    if (!a)
      return a.error();
    d.a = *a;
  } else if (name == "normal" || name == "uniform") {
    if (comma == std::string_view::npos)
      return make_error(errc::invalid_argument, fmt::format("'{}': {} takes two numbers, e.g. {}:512,128", text,
                                                            name, name));
    d.shape = name == "normal" ? length_dist::kind::normal : length_dist::kind::uniform;
    auto a = parse_number(args.substr(0, comma), text);
    auto b = parse_number(args.substr(comma + 1), text);
    if (!a)
      return a.error();
    if (!b)
      return b.error();
    d.a = *a;
    d.b = *b;
    if (d.b < 0 || (d.shape == length_dist::kind::uniform && d.b < d.a))
      return make_error(errc::invalid_argument, fmt::format("'{}': the second number is too small", text));
  } else {
    return make_error(errc::invalid_argument,
                      fmt::format("'{}': not fixed:N, normal:MEAN,SD or uniform:LO,HI", text));
  }
  if (d.a < 1)
    return make_error(errc::invalid_argument, fmt::format("'{}': lengths are at least 1 token", text));
  return d;
}

std::string to_string(const length_dist& d) {
  switch (d.shape) {
  case length_dist::kind::normal: return fmt::format("normal:{},{}", d.a, d.b);
  case length_dist::kind::uniform: return fmt::format("uniform:{},{}", d.a, d.b);
  case length_dist::kind::fixed: break;
  }
  return fmt::format("fixed:{}", d.a);
}

double request_set::mean_isl() const noexcept {
  double s = 0;
  for (const auto& r : requests)
    s += r.isl;
  return requests.empty() ? 0 : s / static_cast<double>(requests.size());
}

double request_set::mean_osl() const noexcept {
  double s = 0;
  for (const auto& r : requests)
    s += r.osl;
  return requests.empty() ? 0 : s / static_cast<double>(requests.size());
}

double request_set::duration_s() const noexcept {
  return requests.empty() ? 0 : (requests.back().arrival_ms - requests.front().arrival_ms) / 1000.0;
}

request_set make_requests(const traffic_spec& spec) {
  request_set out;
  std::mt19937_64 rng(spec.seed);
  std::exponential_distribution<double> gap(spec.rate > 0 ? spec.rate / 1000.0 : 1.0);
  const uint32_t bt = out.block_tokens;
  double t = 0;
  for (uint32_t i = 0; i < spec.requests; ++i) {
    sim_request r;
    r.arrival_ms = t;
    t += gap(rng);
    r.isl = draw(spec.isl, rng);
    r.osl = draw(spec.osl, rng);
    r.first_block = static_cast<uint32_t>(out.block_ids.size());
    r.num_blocks = static_cast<uint32_t>(kv::blocks_for_tokens(r.isl, bt));
    uint64_t group = 0, shared_blocks = 0;
    if (spec.prefix_groups > 0 && spec.prefix_share > 0) {
      group = 1 + std::uniform_int_distribution<uint64_t>(0, spec.prefix_groups - 1)(rng);
      shared_blocks = static_cast<uint64_t>(std::floor(std::clamp(spec.prefix_share, 0.0, 1.0) * r.isl / bt));
    }
    uint64_t id = 0;
    for (uint32_t b = 0; b < r.num_blocks; ++b) {
      // Shared blocks are the group's content; the rest is this request's own.
      uint64_t content = b < shared_blocks ? mix(group, b) : mix(0x8000'0000'0000'0000ULL | (uint64_t{i} + 1), b);
      id = mix(id, content);
      out.block_ids.push_back(id);
    }
    out.requests.push_back(r);
  }
  return out;
}

std::vector<route::trace_record> to_trace(const request_set& set) {
  std::vector<route::trace_record> out;
  out.reserve(set.requests.size());
  for (const auto& r : set.requests) {
    route::trace_record rec;
    rec.timestamp_ms = static_cast<uint64_t>(std::llround(std::max(0.0, r.arrival_ms)));
    rec.input_length = r.isl;
    rec.output_length = r.osl;
    const auto first = set.block_ids.begin() + r.first_block;
    rec.hash_ids.assign(first, first + r.num_blocks);
    out.push_back(std::move(rec));
  }
  return out;
}

request_set requests_from_trace(const std::vector<route::trace_record>& records, uint32_t trace_block_size,
                                double rate, size_t limit) {
  request_set out;
  out.block_tokens = std::max(1u, trace_block_size);
  const std::vector<double> arrivals = route::trace_arrivals_ms(records, rate, limit);
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const auto& rec = records[i];
    sim_request r;
    r.arrival_ms = arrivals[i];
    r.isl = std::max(1u, rec.input_length);
    r.osl = std::max(1u, rec.output_length);
    r.first_block = static_cast<uint32_t>(out.block_ids.size());
    r.num_blocks = static_cast<uint32_t>(
      std::min<uint64_t>(rec.hash_ids.size(), kv::blocks_for_tokens(r.isl, out.block_tokens)));
    uint64_t id = 0;
    for (uint32_t b = 0; b < r.num_blocks; ++b) {
      id = mix(id, rec.hash_ids[b]);
      out.block_ids.push_back(id);
    }
    out.requests.push_back(r);
  }
  return out;
}

} // namespace dynamo::configure
