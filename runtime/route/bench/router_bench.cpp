// dynamo-router-bench: speed of the radix_index on one thread. Builds a
// prefix-heavy index (shared system prompts + per-worker conversations stored in
// 1-16 block events, interleaved across workers as a fleet publishes them), then
// measures events applied per second while filling, under store/remove churn at
// full size and under decode-style single-block traffic; find_matches latency
// right after the fill and again at the end (longer, fragmented chains); and the
// fill under a memory bound that forces pruning. Events are generated before
// any timing starts. Rates are given per wall second and per CPU second of the
// thread (on a shared machine the two differ). Then the same phases through
// kv_indexer (sequencing + sharded index) with each --event-threads count: a
// dispatcher thread hands events over in batches and the rate is wall time from
// the first hand-over until all are applied; find_matches is also timed while
// another decode-style stream is being applied. Prints one JSON object.
#include "runtime/protocol/codec.hpp"
#include "runtime/route/kv_indexer.hpp"
#include "runtime/route/radix_index.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <ctime>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

using namespace dynamo;
using namespace dynamo::route;
using clk = std::chrono::steady_clock;

namespace {

struct options {
  uint32_t workers = 64;
  uint64_t blocks = 1'000'000; ///< (worker, block) entries to index
  uint32_t system_prompts = 256;
  uint32_t system_blocks = 32;
  uint32_t queries = 100'000;
  uint64_t churn_events = 200'000;
  uint64_t decode_events = 400'000;
  uint64_t seed = 1;
  std::vector<uint32_t> event_threads{1, 2, 4};
  uint32_t batch = 64; ///< events per hand-over to kv_indexer
};

struct conversation {
  std::vector<uint64_t> local; ///< system prompt + own blocks
  std::vector<uint64_t> ext;
  uint32_t own_from = 0;       ///< first block owned by this conversation alone
};

/// Generates events for every worker, remembering what each one holds.
class generator {
public:
  explicit generator(const options& o) : o_(o), rng_(o.seed), held_(o.workers) {
    for (uint32_t p = 0; p < o.system_prompts; ++p) {
      std::vector<uint64_t> local;
      for (uint32_t b = 0; b < o.system_blocks; ++b)
        local.push_back(fresh());
      prompts_.push_back(local);
    }
    prompt_held_.assign(size_t{o.workers} * o.system_prompts, false);
  }

  /// A new conversation on worker `w`, as store events of 1-16 blocks.
  uint64_t add_conversation(uint32_t w, std::vector<protocol::router_event>& out) {
    uint32_t p = pick_prompt();
    conversation c;
    c.local = prompts_[p];
    for (uint64_t h : c.local)
      c.ext.push_back(ext_of(h));
    uint64_t added = 0;
    if (!prompt_held_[size_t{w} * o_.system_prompts + p]) {
      prompt_held_[size_t{w} * o_.system_prompts + p] = true;
      emit_store(w, c, 0, o_.system_blocks, out);
      added += o_.system_blocks;
    }
    c.own_from = o_.system_blocks;
    uint32_t own = 16 + static_cast<uint32_t>(rng_() % 225); // 16..240 blocks
    for (uint32_t b = 0; b < own; ++b) {
      uint64_t h = fresh();
      c.local.push_back(h);
      c.ext.push_back(ext_of(h));
    }
    for (uint32_t at = c.own_from; at < c.local.size();) {
      uint32_t n = std::min<uint32_t>(1 + static_cast<uint32_t>(rng_() % 16),
                                      static_cast<uint32_t>(c.local.size()) - at);
      emit_store(w, c, at, n, out);
      at += n;
    }
    added += own;
    held_[w].push_back(std::move(c));
    return added;
  }

  /// Evicts the oldest conversation of `w`, tail first, up to 16 hashes per event.
  uint64_t evict_oldest(uint32_t w, std::vector<protocol::router_event>& out) {
    if (held_[w].empty())
      return 0;
    conversation c = std::move(held_[w].front());
    held_[w].pop_front();
    for (size_t end = c.local.size(); end > c.own_from;) {
      size_t begin = std::max<size_t>(c.own_from, end >= 16 ? end - 16 : 0);
      protocol::router_event ev = make(w, protocol::kv_event_kind::removed);
      for (size_t i = end; i > begin; --i)
        ev.event.removed_hashes.push_back(c.ext[i - 1]);
      out.push_back(std::move(ev));
      end = begin;
    }
    return c.local.size() - c.own_from;
  }

  /// Decode-style: one new block at the end of one of w's newest conversations.
  void extend(uint32_t w, std::vector<protocol::router_event>& out) {
    if (held_[w].empty())
      return;
    size_t n = held_[w].size();
    conversation& c = held_[w][n - 1 - rng_() % std::min<size_t>(n, 8)];
    uint64_t h = fresh();
    c.local.push_back(h);
    c.ext.push_back(ext_of(h));
    emit_store(w, c, static_cast<uint32_t>(c.local.size() - 1), 1, out);
  }

  /// Evicts the last block of w's oldest conversation (one hash).
  void trim(uint32_t w, std::vector<protocol::router_event>& out) {
    if (held_[w].empty())
      return;
    conversation& c = held_[w].front();
    protocol::router_event ev = make(w, protocol::kv_event_kind::removed);
    ev.event.removed_hashes.push_back(c.ext.back());
    out.push_back(std::move(ev));
    c.local.pop_back();
    c.ext.pop_back();
    if (c.local.size() == c.own_from)
      held_[w].pop_front();
  }

  /// A query: a held conversation's prefix (or a system prompt) plus unseen blocks.
  std::vector<uint64_t> query() {
    uint32_t w = static_cast<uint32_t>(rng_() % o_.workers);
    std::vector<uint64_t> q;
    if (held_[w].empty() || rng_() % 4 == 0) {
      q = prompts_[pick_prompt()];
    } else {
      const conversation& c = held_[w][rng_() % held_[w].size()];
      size_t len = c.own_from + rng_() % (c.local.size() - c.own_from + 1);
      q.assign(c.local.begin(), c.local.begin() + static_cast<std::ptrdiff_t>(len));
    }
    for (int i = 0; i < 8; ++i)
      q.push_back(fresh());
    return q;
  }

private:
  uint64_t fresh() { return mix64(++counter_ ^ o_.seed); }
  static uint64_t ext_of(uint64_t local) { return mix64(local ^ 0xabcdef12345ull); }
  uint32_t pick_prompt() { // skewed: low prompt ids are popular
    double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    return std::min<uint32_t>(o_.system_prompts - 1,
                              static_cast<uint32_t>(u * u * o_.system_prompts));
  }
  protocol::router_event make(uint32_t w, protocol::kv_event_kind kind) {
    protocol::router_event ev;
    ev.worker_id = 1000 + w;
    ev.event.kind = kind;
    ev.event.event_id = event_id_++;
    return ev;
  }
  void emit_store(uint32_t w, const conversation& c, uint32_t at, uint32_t n,
                  std::vector<protocol::router_event>& out) {
    protocol::router_event ev = make(w, protocol::kv_event_kind::stored);
    if (at > 0)
      ev.event.parent_hash = c.ext[at - 1];
    for (uint32_t i = at; i < at + n; ++i)
      ev.event.blocks.push_back({c.ext[i], c.local[i]});
    out.push_back(std::move(ev));
  }

  options o_;
  std::mt19937_64 rng_;
  std::vector<std::vector<uint64_t>> prompts_;
  std::vector<bool> prompt_held_;
  std::vector<std::deque<conversation>> held_;
  uint64_t counter_ = 0;
  uint64_t event_id_ = 0;
};

/// Interleaves the events of concurrent work, one lane per worker, the way
/// a fleet publishes them: `refill(w, lane)` appends a unit of work for worker
/// w (false: no more work); events are taken from random lanes until all drain.
template <class Refill>
void interleave(uint32_t workers, std::mt19937_64& rng, std::vector<protocol::router_event>& out,
                Refill&& refill) {
  std::vector<std::vector<protocol::router_event>> lanes(workers);
  std::vector<size_t> pos(workers, 0);
  bool more = true;
  size_t busy = 0; // lanes with events left
  do {
    uint32_t w = static_cast<uint32_t>(rng() % workers);
    if (pos[w] == lanes[w].size()) {
      if (!more)
        continue;
      lanes[w].clear();
      pos[w] = 0;
      more = refill(w, lanes[w]);
      if (lanes[w].empty())
        continue;
      ++busy;
    }
    out.push_back(std::move(lanes[w][pos[w]++]));
    if (pos[w] == lanes[w].size())
      --busy;
  } while (more || busy > 0);
}

/// CPU time of `clock` (this thread's, or the whole process's with event
/// threads): on a shared machine, wall time also counts the time other
/// processes held the cores.
double cpu_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double thread_cpu_seconds() { return cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }

double seconds_since(clk::time_point t0) {
  return std::chrono::duration<double>(clk::now() - t0).count();
}

uint64_t rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoull(line.substr(6));
  return 0;
}

struct apply_result {
  double seconds = 0;
  double cpu_seconds = 0;
  uint64_t blocks = 0;
  uint64_t not_ok = 0;
};

apply_result apply_all(radix_index& idx, const std::vector<protocol::router_event>& events) {
  apply_result r;
  for (const auto& e : events)
    r.blocks += e.event.blocks.size() + e.event.removed_hashes.size();
  auto t0 = clk::now();
  double c0 = thread_cpu_seconds();
  for (const auto& e : events)
    r.not_ok += idx.apply(e) != apply_status::ok;
  r.cpu_seconds = thread_cpu_seconds() - c0;
  r.seconds = seconds_since(t0);
  return r;
}

std::string rate_json(const char* name, size_t events, const apply_result& r) {
  auto ev = static_cast<double>(events);
  auto bl = static_cast<double>(r.blocks);
  return fmt::format(R"("{}": {{"events": {}, "blocks": {}, "wall_s": {:.4f}, "cpu_s": {:.4f}, )"
                     R"("events_per_s": {:.0f}, "blocks_per_s": {:.0f}, )"
                     R"("events_per_cpu_s": {:.0f}, "blocks_per_cpu_s": {:.0f}, "not_ok": {}}})",
                     name, events, r.blocks, r.seconds, r.cpu_seconds, ev / r.seconds,
                     bl / r.seconds, ev / r.cpu_seconds, bl / r.cpu_seconds, r.not_ok);
}

/// find_matches latency over `n` queries; with `until`, calls `on_start` once
/// the queries are built and stops early when `until` turns true.
template <class Index>
std::string latency_json(const char* name, const Index& idx, generator& gen, uint32_t n,
                         const std::atomic<bool>* until = nullptr,
                         const std::function<void()>& on_start = {}) {
  std::vector<std::vector<uint64_t>> queries(n);
  for (auto& q : queries)
    q = gen.query();
  if (on_start)
    on_start();
  overlap_scores scores;
  std::vector<double> us(n), cpu_us(n);
  uint64_t matched = 0;
  auto t0 = clk::now();
  double c0 = thread_cpu_seconds();
  for (uint32_t i = 0; i < n; ++i) {
    if (until && until->load(std::memory_order_relaxed)) {
      n = std::max<uint32_t>(i, 1);
      us.resize(n);
      cpu_us.resize(n);
      queries.resize(n);
      break;
    }
    double ca = thread_cpu_seconds();
    auto a = clk::now();
    idx.find_matches(queries[i], false, scores);
    us[i] = std::chrono::duration<double, std::micro>(clk::now() - a).count();
    cpu_us[i] = (thread_cpu_seconds() - ca) * 1e6;
    matched += scores.scores.size();
  }
  double cpu = thread_cpu_seconds() - c0;
  double total = seconds_since(t0);
  std::sort(us.begin(), us.end());
  std::sort(cpu_us.begin(), cpu_us.end());
  auto at = [&](const std::vector<double>& v, double p) {
    return v[std::min<size_t>(n - 1, static_cast<size_t>(p * n))];
  };
  auto pct = [&](double p) { return at(us, p); };
  double mean_len = 0;
  std::vector<double> lens;
  for (const auto& q : queries) {
    mean_len += static_cast<double>(q.size()) / n;
    lens.push_back(static_cast<double>(q.size()));
  }
  std::sort(lens.begin(), lens.end());
  double mean_us = 0;
  for (double u : us)
    mean_us += u / n;
  return fmt::format(R"("{}": {{"queries": {}, "mean_query_blocks": {:.1f}, )"
                     R"("query_blocks_p50": {:.0f}, "query_blocks_p99": {:.0f}, )"
                     R"("mean_ns_per_query_block": {:.1f}, )"
                     R"("mean_matching_workers": {:.2f}, "per_s": {:.0f}, "per_cpu_s": {:.0f}, )"
                     R"("p50_us": {:.3f}, "p90_us": {:.3f}, "p99_us": {:.3f}, "p999_us": {:.3f}, )"
                     R"("max_us": {:.3f}, "cpu_p50_us": {:.3f}, "cpu_p99_us": {:.3f}, )"
                     R"("cpu_p999_us": {:.3f}}})",
                     name, n, mean_len, at(lens, 0.5), at(lens, 0.99), 1000.0 * mean_us / mean_len,
                     static_cast<double>(matched) / n, n / total, n / cpu, pct(0.5),
                     pct(0.9), pct(0.99), pct(0.999), us.back(), at(cpu_us, 0.5),
                     at(cpu_us, 0.99), at(cpu_us, 0.999));
}

/// Event ids from 0 per worker, in the order the phases are applied: the
/// generator numbers events globally, while kv_indexer sequences each worker.
void renumber(std::initializer_list<std::vector<protocol::router_event>*> phases) {
  std::unordered_map<uint64_t, uint64_t> next;
  for (auto* phase : phases)
    for (auto& e : *phase)
      e.event.event_id = next[e.worker_id]++;
}

uint64_t not_ok_count(const kv_indexer& idx) {
  uint64_t n = 0;
  for (auto kind : {protocol::kv_event_kind::stored, protocol::kv_event_kind::removed})
    for (auto status : {apply_status::parent_block_not_found, apply_status::block_not_found,
                        apply_status::invalid_block})
      n += idx.applied(kind, status);
  return n;
}

/// Hands a copy of `events` (made first, untimed) to `idx` in batches from this
/// thread and waits until all are applied. CPU time is the whole process's.
apply_result feed(kv_indexer& idx, const std::vector<protocol::router_event>& events,
                  uint32_t batch) {
  std::vector<protocol::router_event> copy = events;
  apply_result r;
  for (const auto& e : copy)
    r.blocks += e.event.blocks.size() + e.event.removed_hashes.size();
  uint64_t bad = not_ok_count(idx);
  auto t0 = clk::now();
  double c0 = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID);
  for (size_t i = 0; i < copy.size(); i += batch)
    idx.on_events(std::span(copy.data() + i, std::min<size_t>(batch, copy.size() - i)));
  idx.flush();
  r.cpu_seconds = cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
  r.seconds = seconds_since(t0);
  r.not_ok = not_ok_count(idx) - bad;
  return r;
}

/// What the event plane's thread pays per event before any index work: msgpack
/// decoding of each decode-style event from its wire bytes, on one thread.
std::string wire_decode_json(const std::vector<protocol::router_event>& events) {
  std::vector<protocol::bytes> wire;
  size_t bytes = 0;
  for (const auto& e : events) {
    wire.push_back(protocol::encode(e));
    bytes += wire.back().size();
  }
  uint64_t sum = 0, bad = 0;
  auto t0 = clk::now();
  double c0 = thread_cpu_seconds();
  for (const auto& w : wire) {
    auto e = protocol::decode<protocol::router_event>(w);
    if (e)
      sum += e->event.event_id;
    else
      ++bad;
  }
  double cpu = thread_cpu_seconds() - c0;
  double wall = seconds_since(t0);
  auto n = static_cast<double>(wire.size());
  return fmt::format(R"("wire_decode": {{"events": {}, "mean_bytes": {:.1f}, "events_per_s": {:.0f}, )"
                     R"("events_per_cpu_s": {:.0f}, "ns_per_event": {:.1f}, "failed": {}, "checksum": {}}})",
                     wire.size(), static_cast<double>(bytes) / n, n / wall, n / cpu,
                     1e9 * cpu / n, bad, sum);
}

/// The phases through a kv_indexer with `threads` event threads; the last
/// decode-style stream is applied while this thread runs find_matches.
std::string indexer_json(const options& o, uint32_t threads, generator& gen,
                         const std::vector<protocol::router_event>& fill,
                         const std::vector<protocol::router_event>& churn,
                         const std::vector<protocol::router_event>& decode,
                         const std::vector<protocol::router_event>& decode2) {
  kv_indexer idx(kv_indexer_options{.index = {.max_blocks = 0}, .event_threads = threads});
  auto filled = feed(idx, fill, o.batch);
  auto churned = feed(idx, churn, o.batch);
  auto decoded = feed(idx, decode, o.batch);
  std::atomic<bool> done{false};
  std::atomic<bool> go{false};
  apply_result during;
  std::thread feeder([&] {
    while (!go.load())
      std::this_thread::yield();
    during = feed(idx, decode2, o.batch);
    done = true;
  });
  std::string latency = latency_json("find_matches_during_decode", idx, gen, o.queries, &done,
                                     [&] { go = true; });
  feeder.join();
  return fmt::format(R"({{"event_threads": {}, "entries": {}, "nodes": {}, {}, {}, {}, {}, {}}})",
                     threads, idx.entry_count(), idx.node_count(),
                     rate_json("fill", fill.size(), filled),
                     rate_json("churn", churn.size(), churned),
                     rate_json("decode", decode.size(), decoded),
                     rate_json("decode_with_queries", decode2.size(), during), latency);
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto next = [&]() -> uint64_t {
      uint64_t v = 0;
      std::string_view t = i + 1 < argc ? argv[++i] : "";
      if (std::from_chars(t.data(), t.data() + t.size(), v).ec != std::errc{}) {
        std::fprintf(stderr, "%s needs a number (try --help)\n", argv[i - 1]);
        std::exit(2);
      }
      return v;
    };
    if (a == "--help" || a == "-h") {
      std::puts("dynamo-router-bench [--workers 64] [--blocks 1000000] [--queries 100000]\n"
                "  [--churn-events 200000] [--decode-events 400000]\n"
                "  [--system-prompts 256] [--seed 1] [--event-threads 1,2,4] [--batch 64]\n"
                "  [--smoke]\n"
                "Measures radix_index event application and find_matches latency on one\n"
                "thread, then kv_indexer (sequencing + sharded index) with each number of\n"
                "event threads (0: skip), fed in batches of --batch events; prints one\n"
                "JSON object. --smoke: tiny sizes for CI.");
      return false;
    }
    if (a == "--workers") o.workers = static_cast<uint32_t>(next());
    else if (a == "--blocks") o.blocks = next();
    else if (a == "--queries") o.queries = static_cast<uint32_t>(next());
    else if (a == "--churn-events") o.churn_events = next();
    else if (a == "--decode-events") o.decode_events = next();
    else if (a == "--system-prompts") o.system_prompts = static_cast<uint32_t>(next());
    else if (a == "--seed") o.seed = next();
    else if (a == "--batch") o.batch = static_cast<uint32_t>(std::max<uint64_t>(next(), 1));
    else if (a == "--event-threads") {
      o.event_threads.clear();
      std::string_view list = i + 1 < argc ? argv[++i] : "";
      while (!list.empty()) {
        auto comma = list.find(',');
        std::string_view item = list.substr(0, comma);
        uint32_t v = 0;
        if (std::from_chars(item.data(), item.data() + item.size(), v).ec != std::errc{}) {
          std::fprintf(stderr, "--event-threads needs numbers like 1,2,4 (try --help)\n");
          std::exit(2);
        }
        if (v > 0)
          o.event_threads.push_back(v);
        list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
      }
    }
    else if (a == "--smoke") {
      o.workers = 4; o.blocks = 5000; o.queries = 500; o.churn_events = 2000;
      o.decode_events = 2000; o.system_prompts = 8; o.event_threads = {1, 2};
    } else {
      std::fprintf(stderr, "unknown argument %s (try --help)\n", argv[i]);
      std::exit(2);
    }
  }
  o.workers = std::max<uint32_t>(o.workers, 1);
  o.system_prompts = std::max<uint32_t>(o.system_prompts, 1);
  o.queries = std::max<uint32_t>(o.queries, 1);
  return true;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o))
    return 0;
  generator gen(o);
  std::mt19937_64 rng(o.seed + 7);
  std::vector<protocol::router_event> fill, churn;
  uint64_t entries = 0;
  interleave(o.workers, rng, fill, [&](uint32_t w, std::vector<protocol::router_event>& lane) {
    if (entries >= o.blocks)
      return false;
    entries += gen.add_conversation(w, lane);
    return true;
  });
  generator gen_at_fill = gen; // what is held right after the fill, for queries then
  // Churn at full size: each step evicts a worker's oldest conversation and adds one.
  interleave(o.workers, rng, churn, [&](uint32_t w, std::vector<protocol::router_event>& lane) {
    if (churn.size() >= o.churn_events)
      return false;
    gen.evict_oldest(w, lane);
    gen.add_conversation(w, lane);
    return true;
  });

  // Decode-style traffic: single-block stores and single-block evictions; the
  // second stream is applied by kv_indexer while find_matches runs.
  auto decode_stream = [&] {
    std::vector<protocol::router_event> out;
    interleave(o.workers, rng, out, [&](uint32_t w, std::vector<protocol::router_event>& lane) {
      if (out.size() >= o.decode_events)
        return false;
      gen.extend(w, lane);
      gen.trim(w, lane);
      return true;
    });
    return out;
  };
  std::vector<protocol::router_event> decode = decode_stream();
  std::vector<protocol::router_event> decode2 = decode_stream();
  renumber({&fill, &churn, &decode, &decode2});

  radix_index idx(radix_index_options{.max_blocks = 0});
  auto filled = apply_all(idx, fill);
  size_t nodes = idx.node_count(), full_entries = idx.entry_count();
  uint64_t rss = rss_kib();
  std::string fresh = latency_json("find_matches_after_fill", idx, gen_at_fill, o.queries);
  auto churned = apply_all(idx, churn);
  auto decoded = apply_all(idx, decode);
  std::string phases = fmt::format("{}, {}, {}, ", rate_json("fill", fill.size(), filled),
                                   rate_json("churn", churn.size(), churned),
                                   rate_json("decode", decode.size(), decoded));
  std::string latency = fresh + ", " + latency_json("find_matches", idx, gen, o.queries);

  radix_index bounded(radix_index_options{.max_blocks = full_entries / 2});
  auto pruned = apply_all(bounded, fill);

  std::string indexers;
  for (uint32_t n : o.event_threads)
    indexers += (indexers.empty() ? "" : ", ") +
                indexer_json(o, n, gen, fill, churn, decode, decode2);

  fmt::print("{{\"bench\": \"dynamo-router-bench\", \"threads\": 1, \"workers\": {}, "
             "\"hardware_threads\": {}, "
             "\"indexed_entries\": {}, \"nodes\": {}, \"rss_kib_after_fill\": {}, {}{}, "
             "\"bounded\": {{\"max_blocks\": {}, \"final_entries\": {}, \"pruned_entries\": {}, "
             "\"events_per_cpu_s\": {:.0f}}}, {}, \"batch\": {}, \"kv_indexer\": [{}]}}\n",
             o.workers, std::thread::hardware_concurrency(), full_entries, nodes, rss, phases,
             latency, full_entries / 2, bounded.entry_count(), bounded.pruned_entries(),
             static_cast<double>(fill.size()) / pruned.cpu_seconds, wire_decode_json(decode),
             o.batch, indexers);
  return 0;
}
