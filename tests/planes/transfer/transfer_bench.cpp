// dynamo-transfer-bench: bandwidth of the KV hand-off by path, printed as JSON. The
// receiver runs in a second process (this binary re-executed with --serve), so every
// path except inproc measures a real cross-process hand-off: scattered destination
// blocks, timed from send() to the sender's completion (the receiver's ack: every
// byte is in its memory). The first transfer of each size is a warm-up whose bytes
// the receiver verifies.
#include "runtime/core/cli.hpp"
#include "runtime/protocol/codec.hpp"

#include "transfer_support.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>

using namespace dynamo;
using namespace dynamo::planes;
using namespace dynamo::planes::transfer_testing;
using json = nlohmann::json;

namespace {

struct path {
  std::string name;
  std::string transport;
  ucx_transport_options ucx;
  bool cross_process = true;
  bool device = false; ///< source and destination blocks in GPU memory (cuda-ipc)
  bool allocate = false; ///< the receiver allocates its region (UCX shared memory)
};

std::vector<path> all_paths(std::chrono::microseconds spin) {
  ucx_transport_options shm;            // error mode none: shared memory + CMA on one host
  shm.error_mode = ucx_error_mode::none;
  shm.progress_spin = spin;
  ucx_transport_options tcp = shm;
  tcp.tls = "tcp";                      // UCX over TCP only
  ucx_transport_options peer = shm;     // peer error handling + MM_ERROR_HANDLING=y
  peer.error_mode = ucx_error_mode::peer;
  ucx_transport_options put = shm;      // RMA put + flush
  put.method = ucx_method::put;
  ucx_transport_options iov = shm;      // 16 runs per message: UCX's iov rendezvous pipeline
  iov.batch_runs = 16;
  ucx_transport_options one_copier = peer; // direct copies on one thread
  one_copier.copy_threads = 1;
  return {{"inproc-memcpy", "inproc", {}, false},
          {"ucx-shm", "ucx", shm},
          {"ucx-shm-iov16", "ucx", iov},
          {"ucx-shm-peer-errmode", "ucx", peer},
          {"ucx-shm-put", "ucx", put},
          {"ucx-shm-staged", "ucx", peer, true, false, true},
          {"ucx-shm-staged-1copy", "ucx", one_copier, true, false, true},
          {"ucx-tcp", "ucx", tcp},
          {"tcp", "tcp", {}},
          {"cuda-ipc", "cuda-ipc", {}, true, true}};
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in{text};
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty())
      out.push_back(item);
  return out;
}

// The lane lines of a UCX endpoint description.
json lanes_of(const std::string& info) {
  json lanes = json::array();
  std::istringstream in{info};
  for (std::string line; std::getline(in, line);) {
    auto at = line.find("lane[");
    if (at != std::string::npos)
      lanes.push_back(line.substr(at));
  }
  return lanes;
}

struct bench_config {
  protocol::kv_layout layout;
  std::vector<uint64_t> sizes_mib;
  int iterations = 5;
  std::string self;
};


// The receiving end of one path: a child process, or a receiver in this process.
struct endpoint {
  std::optional<spawned_peer> peer;
  std::unique_ptr<host_region> dst;
  std::unique_ptr<kv_receiver> receiver;
  protocol::kv_connection_info offer;
};

// Empty string on success, else why the receiver did not start.
std::string start_receiver(const path& p, const bench_config& cfg, uint64_t max_blocks, endpoint& e) {
  if (p.cross_process) {
    auto argv = to_argv(peer_args{p.transport, max_blocks, cfg.layout, p.ucx, p.device ? "cuda" : "", p.allocate});
    argv.insert(argv.begin(), "--serve");
    auto spawned = spawn_peer(cfg.self, argv);
    if (!spawned)
      return "receiver process did not start";
    e.peer.emplace(std::move(*spawned));
    if (e.peer->offers.empty())
      return "receiver process made no offer";
    e.offer = e.peer->offers.at(0);
    return {};
  }
  e.dst = std::make_unique<host_region>(max_blocks, cfg.layout.bytes_per_block);
  auto r = make_kv_receiver(p.transport, {cfg.layout, e.dst->region(), {}, {}});
  if (!r)
    return describe(r.error());
  e.receiver = std::move(*r);
  e.offer = e.receiver->offers().at(0);
  return {};
}

// Checks every destination byte against its source pattern (seed 7); "" when right.
std::string verify(endpoint& e, const std::vector<uint32_t>& s, const std::vector<uint32_t>& d,
                   uint64_t bpb) {
  if (e.dst) {
    for (size_t i = 0; i < s.size(); ++i)
      if (find_mismatch(e.dst->block(d[i]), bpb, block_seed(7, s[i])))
        return "block " + std::to_string(d[i]) + " differs";
    return {};
  }
  std::string pairs;
  for (size_t i = 0; i < s.size(); ++i)
    pairs += (i ? "," : "") + std::to_string(s[i]) + ":" + std::to_string(d[i]);
  std::optional<std::string> line;
  if (e.peer->process.write_line("VERIFY 7 " + pairs))
    line = e.peer->process.read_line(std::chrono::seconds{120});
  return line == "OK" ? std::string{} : "receiver verification: " + line.value_or("no answer");
}

// One verified warm-up, then `iterations` timed transfers of `mib` MiB to scattered blocks.
json time_size(kv_sender& sender, endpoint& e, const bench_config& cfg, uint64_t mib,
               uint64_t max_blocks, std::mt19937& rng, uint64_t& next_id) {
  const uint64_t bpb = cfg.layout.bytes_per_block;
  const uint64_t blocks = std::max<uint64_t>((mib << 20) / bpb, 1);
  std::vector<uint32_t> s(blocks), d(max_blocks);
  std::iota(s.begin(), s.end(), 0u);
  std::iota(d.begin(), d.end(), 0u);
  std::shuffle(s.begin(), s.end(), rng);
  std::shuffle(d.begin(), d.end(), rng); // scattered: no two blocks merge into a run
  d.resize(blocks);
  json row{{"bytes", blocks * bpb}, {"blocks", blocks}};
  std::vector<double> gbps;
  for (int it = 0; it <= cfg.iterations; ++it) {
    protocol::kv_transfer_request req{next_id++, 1, s, d, cfg.layout, e.offer};
    status_waiter done;
    auto t0 = std::chrono::steady_clock::now();
    sender.send(req, std::chrono::seconds{120}, done.callback());
    auto st = done.wait(req.transfer_id, std::chrono::seconds{150});
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string failure = !st ? "no completion" : st->ok() ? "" : st->message;
    if (failure.empty() && it == 0)
      failure = verify(e, s, d, bpb);
    if (!failure.empty()) {
      row["error"] = failure;
      return row;
    }
    if (it > 0)
      gbps.push_back(double(blocks * bpb) / secs / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  row["median_gbps"] = gbps[gbps.size() / 2];
  row["best_gbps"] = gbps.back();
  row["worst_gbps"] = gbps.front();
  row["iterations"] = gbps.size();
  return row;
}

// Times one path over every size; an error ends the path with a message.
json run_path(const path& p, const bench_config& cfg) {
  const uint64_t bpb = cfg.layout.bytes_per_block;
  const uint64_t max_blocks = (cfg.sizes_mib.back() << 20) / bpb;
  json out{{"path", p.name}, {"cross_process", p.cross_process}, {"results", json::array()}};
  host_region src{max_blocks, bpb};
  src.fill_all(7);
  kv_region src_region = src.region();
#if DYNAMO_TRANSFER_HAVE_CUDA
  device_blocks device_src;
  if (p.device) {
    if (auto why_not = device_src.upload(src.region()); !why_not.empty()) {
      out["error"] = why_not;
      return out;
    }
    src_region = device_src.region();
  }
#else
  if (p.device) {
    out["error"] = "this build has no CUDA";
    return out;
  }
#endif
  endpoint e;
  if (auto why_not = start_receiver(p, cfg, max_blocks, e); !why_not.empty()) {
    out["error"] = why_not;
    return out;
  }
  kv_transport_options opts;
  opts.ucx = p.ucx;
  auto sender = make_kv_sender(p.transport, {cfg.layout, src_region, opts});
  if (!sender) {
    out["error"] = describe(sender.error());
    return out;
  }
  uint64_t next_id = 1;
  std::mt19937 rng{42};
  for (uint64_t mib : cfg.sizes_mib) {
    auto row = time_size(**sender, e, cfg, mib, max_blocks, rng, next_id);
    out["results"].push_back(row);
    std::cerr << p.name << " " << mib << " MiB: " << row.dump() << "\n";
  }
  if (p.transport == "ucx")
    out["sender_lanes"] = lanes_of((*sender)->debug_info());
  if (e.peer && !e.peer->process.write_line("QUIT"))
    std::cerr << p.name << ": the receiver process was already gone\n";
  return out;
}

} // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string{argv[1]} == "--serve") {
    auto args = parse_peer_args(argc, argv, 2);
    return args ? run_receiver_peer(*args) : 2;
  }
  std::string sizes = "1,4,16,64,256", paths = "inproc-memcpy,ucx-shm,ucx-shm-iov16,ucx-shm-peer-errmode,ucx-shm-put,ucx-shm-staged,ucx-tcp,tcp";
  int64_t iterations = 5;
  int64_t spin_us = ucx_transport_options{}.progress_spin.count();
  uint32_t layers = 32, block_size = 16, kv_heads = 2, head_dim = 128;
  cli c{"dynamo-transfer-bench", "KV-block hand-off bandwidth by transport path, as JSON."};
  c.option("sizes", &sizes, "transfer sizes in MiB, comma-separated")
      .option("paths", &paths, "paths to run: inproc-memcpy, ucx-shm, ucx-shm-iov16, ucx-shm-peer-errmode, ucx-shm-put, "
                               "ucx-shm-staged (receiver region in UCX shared memory, as staging slots are), "
                               "ucx-shm-staged-1copy, ucx-tcp, tcp, "
                               "cuda-ipc (CUDA builds, GPU memory at both ends)")
      .option("iterations", &iterations, "timed transfers per size (after one verified warm-up)")
      .option("ucx-spin-us", &spin_us, "UCX progress thread: busy-poll this long after an event")
      .option("layers", &layers, "layout: layers").option("block-size", &block_size, "layout: tokens per block")
      .option("kv-heads", &kv_heads, "layout: KV heads").option("head-dim", &head_dim, "layout: head dim (f16)")
      .epilog("The default layout (32 layers, 16 tokens, 2 KV heads, head dim 128, f16) gives 512 KiB "
              "blocks. Destination blocks are a random permutation, so nothing coalesces.");
  if (auto code = cli_exit_code("dynamo-transfer-bench", c.parse(argc, argv)))
    return *code;
  bench_config cfg;
  cfg.layout = protocol::make_block_major_layout(layers, block_size, kv_heads, head_dim, protocol::kv_dtype::f16);
  cfg.iterations = static_cast<int>(std::max<int64_t>(iterations, 1));
  cfg.self = "/proc/self/exe";
  for (const auto& s : split(sizes))
    cfg.sizes_mib.push_back(std::stoull(s));
  std::sort(cfg.sizes_mib.begin(), cfg.sizes_mib.end());
  if (cfg.sizes_mib.empty() || !protocol::validate(cfg.layout)) {
    std::cerr << "bad sizes or layout\n";
    return 2;
  }
  json report{{"benchmark", "dynamo-transfer-bench"},
              {"block_bytes", cfg.layout.bytes_per_block},
              {"iterations", cfg.iterations},
              {"host_id", local_host_id()},
              {"paths", json::array()}};
  auto wanted = split(paths);
  report["ucx_progress_spin_us"] = spin_us;
  for (const auto& p : all_paths(std::chrono::microseconds{spin_us})) {
    if (std::find(wanted.begin(), wanted.end(), p.name) != wanted.end())
      report["paths"].push_back(run_path(p, cfg));
  }
  std::cout << report.dump(2) << std::endl;
  return 0;
}
