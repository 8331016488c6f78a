#include "runtime/route/bench/kvbm_cpu_bench.hpp"

#include "runtime/engine/engine_core.hpp"
#include "runtime/kvbm/disk_store.hpp"
#include "runtime/kvbm/onboard_worker.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/decoder_model.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

namespace dynamo::route::bench {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::string model_path(const cpu_bench_options& o) {
  if (!o.model.empty())
    return o.model;
  if (const char* p = std::getenv("DYNAMO_MODEL_PATH"); p != nullptr && *p != '\0')
    return p;
  const char* home = std::getenv("HOME");
  return std::string{home ? home : ""} + "/.cache/dynamo/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "cpu engine bench: %s\n", why.c_str());
  std::exit(1);
}

/// Writes back and drops the cached pages of every file under `dir`, so the
/// next reads come from the device.
void drop_page_cache(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec))
      continue;
    const int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    (void)::fdatasync(fd);
    (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

/// The device's sequential read speed (GB/s) under `dir`: a file of `bytes`
/// random bytes, written, synced, dropped from the page cache, read back in
/// 4 MiB reads.
double sequential_read_gbps(const std::string& dir, size_t bytes) {
  const std::string path = dir + "/seq-read-probe.bin";
  std::vector<char> buf(size_t{4} << 20);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
    const uint64_t v = rng();
    std::copy_n(reinterpret_cast<const char*>(&v), 8, buf.data() + i);
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("cannot write " + path);
  for (size_t done = 0; done < bytes; done += buf.size())
    if (::write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size()))
      fail("short write to " + path);
  (void)::fdatasync(fd);
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const auto t0 = clock_type::now();
  size_t got = 0;
  for (ssize_t n; (n = ::read(fd, buf.data(), buf.size())) > 0;)
    got += static_cast<size_t>(n);
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  ::close(fd);
  fs::remove(path);
  return static_cast<double>(got) / s / 1e9;
}

struct turn_result {
  double ttft_ms = 0;
  uint32_t prompt = 0;
  uint32_t cached = 0;
  std::vector<uint32_t> output;
};

/// Runs one greedy request to its end; TTFT is wall time to its first token.
turn_result run_turn(engine::engine_core& core, const std::string& id, const std::vector<uint32_t>& prompt,
                     uint32_t max_tokens) {
  protocol::preprocessed_request r;
  r.request_id = id;
  r.token_ids = prompt;
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  turn_result t;
  t.prompt = r.prompt_tokens;
  const auto t0 = clock_type::now();
  if (!core.add_request(std::move(r)))
    fail("add_request refused " + id);
  bool first = true;
  while (core.has_work()) {
    auto s = core.step();
    if (!s)
      fail("step: " + describe(s.error()));
    for (const auto& o : s->outputs) {
      if (o.output.finish == protocol::finish_reason::error)
        fail("request " + id + ": " + o.output.error);
      if (first && !o.output.token_ids.empty()) {
        t.ttft_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
        t.cached = o.output.cached_tokens;
        first = false;
      }
      t.output.insert(t.output.end(), o.output.token_ids.begin(), o.output.token_ids.end());
    }
  }
  return t;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

/// One KVBM variant: its engine and what its requests saw.
struct variant {
  std::string name;
  kvbm::kvbm_config kvbm;
  std::unique_ptr<engine::engine_core> core;
  std::vector<double> ttft;
  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;

  [[nodiscard]] uint64_t prefill() const { return prompt_tokens - cached_tokens; }
  [[nodiscard]] std::string json() const;
};

std::unique_ptr<engine::engine_core> make_core(const cpu_bench_options& o,
                                               const std::shared_ptr<const model::decoder_model>& m,
                                               const kvbm::kvbm_config& kvbm) {
  model::cpu_executor_config xc;
  xc.block_size = o.block_size;
  xc.num_blocks = o.g1_blocks;
  xc.threads = o.threads;
  xc.process_seed = 1;
  auto ex = model::cpu_executor::create(m, xc);
  if (!ex)
    fail(describe(ex.error()));
  engine::engine_config ec;
  ec.kvbm = kvbm;
  ec.max_num_batched_tokens = 2048;
  auto core = engine::engine_core::create(std::move(*ex), ec);
  if (!core)
    fail(describe(core.error()));
  return std::move(*core);
}

std::string variant::json() const {
  std::string k = "null";
  if (const kvbm::kvbm_connector* c = core->kvbm()) {
    const kvbm::kvbm_counters& n = c->counters();
    k = fmt::format(R"({{"kvbm_matched_tokens": {}, "kvbm_offload_blocks_d2h": {}, "kvbm_offload_blocks_h2d": {}, )"
                    R"("kvbm_onboard_blocks_h2d": {}, "kvbm_onboard_blocks_d2d": {}, "kvbm_host_cache_hit_rate": {:.4f}, )"
                    R"("kvbm_disk_cache_hit_rate": {:.4f}, "disk_read_bytes": {}, "disk_read_gbps": {:.3f}, )"
                    R"("loads_failed": {}}})",
                    n.matched_tokens, n.offload_blocks_d2h, n.offload_blocks_h2d, n.onboard_blocks_h2d,
                    n.onboard_blocks_d2d, n.host_hit_rate(), n.disk_hit_rate(), n.disk_read_bytes,
                    n.disk_read_seconds > 0 ? static_cast<double>(n.disk_read_bytes) / n.disk_read_seconds / 1e9 : 0.0,
                    n.loads_failed);
  }
  return fmt::format(R"("{}": {{"ttft_p50_ms": {:.1f}, "ttft_p99_ms": {:.1f}, "ttft_mean_ms": {:.1f}, )"
                     R"("prefill_tokens_computed": {}, "prompt_tokens": {}, "cached_prompt_tokens": {}, "kvbm": {}}})",
                     name, percentile(ttft, 0.5), percentile(ttft, 0.99),
                     std::accumulate(ttft.begin(), ttft.end(), 0.0) / static_cast<double>(ttft.size()), prefill(),
                     prompt_tokens, cached_tokens, k);
}

/// Replays the workload on every variant, one request at a time, the variants
/// taking turns request by request (so a drift in the machine's load touches
/// them alike): one shared system prompt, then per session user turns and the
/// model's own replies (the first variant's; the others must match), sessions
/// taking turns so that G1 forgets a session's history before its next turn.
/// Returns whether every variant produced the same greedy tokens.
bool replay(const cpu_bench_options& o, uint32_t vocab, std::vector<variant>& variants) {
  std::mt19937_64 rng(o.seed);
  auto tokens = [&](uint32_t n) {
    std::vector<uint32_t> t(n);
    for (auto& x : t)
      x = 3 + static_cast<uint32_t>(rng() % (vocab - 3));
    return t;
  };
  const std::vector<uint32_t> system = tokens(o.system_tokens);
  std::vector<std::vector<uint32_t>> history(o.sessions, system);
  bool same = true;
  for (uint32_t turn = 0; turn < o.turns; ++turn)
    for (uint32_t s = 0; s < o.sessions; ++s) {
      const uint32_t n = o.min_user_tokens +
                         static_cast<uint32_t>(rng() % (o.max_user_tokens - o.min_user_tokens + 1));
      std::vector<uint32_t> user = tokens(n);
      history[s].insert(history[s].end(), user.begin(), user.end());
      std::vector<uint32_t> reply;
      for (size_t v = 0; v < variants.size(); ++v) {
        variant& x = variants[v];
        if (x.kvbm.disk_bytes > 0)
          drop_page_cache(x.kvbm.disk_path);
        turn_result r = run_turn(*x.core, fmt::format("s{}t{}", s, turn), history[s], o.output_tokens);
        x.ttft.push_back(r.ttft_ms);
        x.prompt_tokens += r.prompt;
        x.cached_tokens += r.cached;
        if (v == 0)
          reply = std::move(r.output);
        else
          same = same && r.output == reply;
      }
      history[s].insert(history[s].end(), reply.begin(), reply.end());
    }
  return same;
}

} // namespace

std::string cpu_engine_json(const cpu_bench_options& o) {
  if (o.sessions == 0 || o.turns == 0 || o.min_user_tokens > o.max_user_tokens || o.block_size == 0)
    fail("bad workload options");
  const std::string path = model_path(o);
  auto m = model::decoder_model::load(path);
  if (!m)
    fail("model " + path + ": " + describe(m.error()));
  const uint32_t vocab = (*m)->config().n_vocab;
  std::error_code ec;
  fs::create_directories(o.disk_path, ec);
  const double seq_gbps = sequential_read_gbps(o.disk_path, size_t{256} << 20);

  const uint64_t block_bytes = [&] {
    model::cpu_executor_config xc;
    xc.block_size = o.block_size;
    xc.num_blocks = 1;
    xc.threads = 1;
    auto ex = model::cpu_executor::create(*m, xc);
    if (!ex)
      fail(describe(ex.error()));
    return (*ex)->kv_memory()->layout.bytes_per_block;
  }();
  kvbm::kvbm_config host;
  host.host_bytes = uint64_t{1} << 30;
  kvbm::kvbm_config host_disk;
  host_disk.host_bytes = uint64_t{o.host_blocks_small} * block_bytes;
  host_disk.disk_bytes = uint64_t{4} << 30;
  host_disk.disk_path = o.disk_path + "/tier";
  fs::remove_all(host_disk.disk_path, ec); // blocks of an earlier run would be restored
  host_disk.disk_min_free_bytes = uint64_t{256} << 20;

  std::vector<variant> variants;
  variants.push_back(variant{"off", {}, make_core(o, *m, {}), {}, 0, 0});
  variants.push_back(variant{"host", host, make_core(o, *m, host), {}, 0, 0});
  variants.push_back(variant{"host+disk", host_disk, make_core(o, *m, host_disk), {}, 0, 0});
  const bool same = replay(o, vocab, variants);
  const variant& off = variants[0];
  const variant& on_host = variants[1];
  const variant& on_disk = variants[2];
  const uint64_t history_tokens_max =
      o.system_tokens + uint64_t{o.turns} * (o.max_user_tokens + o.output_tokens);
  const uint64_t working_set_blocks =
      (o.system_tokens + uint64_t{o.sessions} * o.turns * ((o.min_user_tokens + o.max_user_tokens) / 2 + o.output_tokens)) /
      o.block_size;
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  auto p50 = [](const variant& v) { return percentile(v.ttft, 0.5); };
  auto p99 = [](const variant& v) { return percentile(v.ttft, 0.99); };
  const std::string out = fmt::format(
      R"({{"model": "{}", "threads": {}, "block_size": {}, "g1_blocks": {}, "block_bytes": {}, "sessions": {}, )"
      R"("turns": {}, "system_tokens": {}, "user_tokens": [{}, {}], "output_tokens": {}, "max_prompt_tokens": {}, )"
      R"("working_set_blocks": {}, "working_set_over_g1": {:.2f}, "host+disk_host_blocks": {}, )"
      R"("disk_sequential_read_gbps": {:.3f}, "greedy_outputs_identical": {}, "variants": {{{}, {}, {}}}, )"
      R"("ratios": {{"host": {{"ttft_p50": {:.2f}, "ttft_p99": {:.2f}, "prefill_tokens": {:.2f}}}, )"
      R"("host+disk": {{"ttft_p50": {:.2f}, "ttft_p99": {:.2f}, "prefill_tokens": {:.2f}}}}}}})",
      path, o.threads, o.block_size, o.g1_blocks, block_bytes, o.sessions, o.turns, o.system_tokens,
      o.min_user_tokens, o.max_user_tokens, o.output_tokens, history_tokens_max, working_set_blocks,
      static_cast<double>(working_set_blocks) / o.g1_blocks, o.host_blocks_small, seq_gbps, same ? "true" : "false",
      off.json(), on_host.json(), on_disk.json(), ratio(p50(off), p50(on_host)), ratio(p99(off), p99(on_host)),
      ratio(static_cast<double>(off.prefill()), static_cast<double>(on_host.prefill())), ratio(p50(off), p50(on_disk)),
      ratio(p99(off), p99(on_disk)),
      ratio(static_cast<double>(off.prefill()), static_cast<double>(on_disk.prefill())));
  variants.clear(); // engines (and their I/O threads) go before their files
  fs::remove_all(host_disk.disk_path, ec);
  return out;
}

namespace {

kvbm::disk_store open_store(const disk_onboard_options& o, const std::string& dir) {
  auto opened = kvbm::disk_store::open(
      {.path = dir, .capacity_blocks = o.blocks, .min_free_bytes = 0, .segment_bytes = o.segment_bytes});
  if (!opened)
    fail(describe(opened.error()));
  return std::move(*opened);
}

/// Writes o.blocks random blocks into `disk`, each the child of the one
/// before (in a shuffled order with o.scatter); their hashes.
std::vector<uint64_t> fill_store(kvbm::disk_store& disk, const disk_onboard_options& o) {
  std::vector<uint64_t> hashes(o.blocks);
  std::vector<std::byte> bytes(o.block_bytes);
  std::mt19937_64 rng(11);
  for (uint64_t& h : hashes)
    h = rng();
  std::vector<uint32_t> order(o.blocks);
  std::iota(order.begin(), order.end(), 0u);
  if (o.scatter)
    std::shuffle(order.begin(), order.end(), rng);
  for (const uint32_t b : order) {
    for (auto& x : bytes)
      x = std::byte(static_cast<uint8_t>(rng()));
    const std::optional<uint64_t> parent = b == 0 ? std::nullopt : std::optional{hashes[b - 1]};
    if (disk.write(hashes[b], bytes, 0, parent).status != kvbm::write_status::stored)
      fail("cannot write blocks under " + disk.directory());
  }
  return hashes;
}

/// Cuts every segment's footer off (the file then ends at its last record).
void strip_footers(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".kvs")
      continue;
    const int fd = ::open(e.path().c_str(), O_RDWR | O_CLOEXEC);
    kvbm::segment_footer f;
    const off_t size = fd < 0 ? 0 : ::lseek(fd, 0, SEEK_END);
    if (size >= static_cast<off_t>(sizeof f) &&
        ::pread(fd, &f, sizeof f, size - static_cast<off_t>(sizeof f)) == static_cast<ssize_t>(sizeof f) &&
        f.magic == kvbm::segment_footer::magic_value && ::ftruncate(fd, static_cast<off_t>(f.records_end)) != 0)
      fail("cannot cut the footer off " + e.path().string());
    if (fd >= 0)
      ::close(fd);
  }
}

/// Onboards every block of `disk` into `g1` in jobs of `job_blocks`, with
/// `readers` reads of at most `read_bytes` at once; returns payload GB/s over
/// the jobs' read time and adds the reads it took to `reads`.
double onboard_pass(const kvbm::disk_store& disk, const std::vector<uint64_t>& hashes, kvbm::g1_view g1,
                    uint32_t job_blocks, unsigned readers, uint64_t read_bytes, uint64_t& reads) {
  drop_page_cache(disk.directory());
  kvbm::onboard_worker w(g1, /*threaded=*/true, readers, read_bytes);
  for (size_t first = 0; first < hashes.size(); first += job_blocks) {
    kvbm::onboard_job job{fmt::format("j{}", first), {}};
    for (size_t i = first; i < std::min(hashes.size(), first + job_blocks); ++i)
      job.items.push_back({static_cast<uint32_t>(i - first), hashes[i], nullptr,
                           disk.locate(hashes[i]).value_or(kvbm::disk_location{})});
    w.submit(std::move(job));
    w.drain(); // one request's onboarding at a time, as a prompt waits for it
  }
  uint64_t bytes = 0;
  double seconds = 0;
  for (const kvbm::onboard_done& d : w.poll()) {
    if (!d.ok)
      fail("onboarding " + d.request_id + " failed");
    bytes += d.disk_bytes;
    seconds += d.disk_seconds;
    reads += d.disk_reads;
  }
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

} // namespace

std::string disk_onboard_json(const disk_onboard_options& o) {
  if (o.blocks == 0 || o.job_blocks == 0 || o.block_bytes == 0 || o.readers.empty() || o.read_bytes.empty() ||
      o.rounds == 0)
    fail("bad --disk-onboard options");
  const std::string dir = o.disk_path + "/onboard";
  std::error_code ec;
  fs::remove_all(dir, ec); // blocks of an earlier run would be restored
  fs::create_directories(dir, ec);
  std::optional<kvbm::disk_store> disk{open_store(o, dir)};
  const std::vector<uint64_t> hashes = fill_store(*disk, o);
  std::vector<std::byte> g1_bytes(uint64_t{o.job_blocks} * o.block_bytes);
  const kvbm::g1_view g1{g1_bytes.data(), o.block_bytes, o.block_bytes, o.job_blocks};
  struct setting {
    unsigned readers;
    uint64_t read_bytes;
    std::vector<double> gbps;
    uint64_t reads = 0;
  };
  std::vector<setting> settings;
  for (const uint64_t rb : o.read_bytes)
    for (const unsigned r : o.readers)
      settings.push_back(setting{r, rb, {}, 0});
  std::vector<double> seq;
  for (uint32_t r = 0; r < o.rounds; ++r) {
    seq.push_back(sequential_read_gbps(o.disk_path, size_t{256} << 20));
    for (setting& s : settings)
      s.gbps.push_back(onboard_pass(*disk, hashes, g1, o.job_blocks, s.readers, s.read_bytes, s.reads));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double seq_median = median(seq);
  const double jobs = std::ceil(static_cast<double>(o.blocks) / o.job_blocks) * o.rounds;
  std::string rows;
  for (const setting& s : settings)
    rows += fmt::format(R"({}{{"disk_readers": {}, "read_kib": {}, "reads_per_job": {:.1f}, "gbps": [{:.3f}], )"
                        R"("median_gbps": {:.3f}, "of_sequential": {:.2f}}})",
                        rows.empty() ? "" : ", ", s.readers, s.read_bytes / 1024,
                        static_cast<double>(s.reads) / jobs, fmt::join(s.gbps, ", "), median(s.gbps),
                        seq_median > 0 ? median(s.gbps) / seq_median : 0.0);
  const size_t segments = disk->segment_count();
  disk.reset(); // closes the segments before they go
  fs::remove_all(dir, ec);
  return fmt::format(R"({{"block_bytes": {}, "blocks": {}, "job_blocks": {}, "rounds": {}, "scatter": {}, )"
                     R"("segments": {}, "sequential_read_gbps": [{:.3f}], "passes": [{}]}})",
                     o.block_bytes, o.blocks, o.job_blocks, o.rounds, o.scatter, segments, fmt::join(seq, ", "),
                     rows);
}

std::string disk_restart_json(const disk_onboard_options& o) {
  if (o.blocks == 0 || o.block_bytes == 0 || o.rounds == 0 || o.segment_bytes == 0)
    fail("bad --disk-restart options");
  const std::string dir = o.disk_path + "/restart";
  std::error_code ec;
  fs::remove_all(dir, ec); // blocks of an earlier run would be restored
  fs::create_directories(dir, ec);
  size_t segments = 0;
  {
    kvbm::disk_store disk = open_store(o, dir);
    (void)fill_store(disk, o);
    segments = disk.segment_count();
  }
  (void)open_store(o, dir); // seals the segment being written: now every one has a footer
  struct pass {
    const char* name;
    bool footers;
    bool cold;
    std::vector<double> ms;
    kvbm::disk_store::rebuild_stats rebuilt;
  };
  std::vector<pass> passes{{"footer_cold", true, true, {}, {}}, {"footer_warm", true, false, {}, {}},
                           {"scan_cold", false, true, {}, {}}, {"scan_warm", false, false, {}, {}}};
  for (uint32_t r = 0; r < o.rounds; ++r)
    for (pass& p : passes) {
      if (!p.footers)
        strip_footers(dir);
      if (p.cold)
        drop_page_cache(dir);
      const auto t0 = clock_type::now();
      kvbm::disk_store disk = open_store(o, dir);
      p.ms.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
      if (disk.restored().size() != o.blocks)
        fail(fmt::format("{} restored {} of {} blocks", p.name, disk.restored().size(), o.blocks));
      p.rebuilt = disk.rebuilt();
    }
  std::string rows;
  for (const pass& p : passes) {
    std::vector<double> v = p.ms;
    std::sort(v.begin(), v.end());
    rows += fmt::format(R"({}"{}": {{"open_ms": [{:.1f}], "median_ms": {:.1f}, "segments_from_footer": {}, )"
                        R"("segments_scanned": {}}})",
                        rows.empty() ? "" : ", ", p.name, fmt::join(p.ms, ", "), v[v.size() / 2],
                        p.rebuilt.segments_from_footer, p.rebuilt.segments_scanned);
  }
  fs::remove_all(dir, ec);
  return fmt::format(R"({{"block_bytes": {}, "blocks": {}, "segment_bytes": {}, "segments": {}, "rounds": {}, {}}})",
                     o.block_bytes, o.blocks, o.segment_bytes, segments, o.rounds, rows);
}

} // namespace dynamo::route::bench
