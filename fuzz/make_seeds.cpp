// Writes the binary seed corpora of the fuzz targets (scripts/fuzz.sh runs it):
// well-formed messages made by the project's own encoders, so the fuzzers
// start past the outer shape of each format. Usage: make_seeds <corpus dir>.
// Text corpora (templates, request bodies, configs) come from
// fuzz/make_corpus.py.
#include "planes/discovery/record_codec.hpp"
#include "runtime/core/base64.hpp"
#include "planes/event/envelope.hpp"
#include "planes/request/request_wire.hpp"
#include "planes/transfer/frame.hpp"
#include "runtime/gguf/writer.hpp"
#include "runtime/kvbm/segment_format.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/protocol/kv_transfer.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/protocol/model_card.hpp"

#include <msgpack.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace dynamo;
namespace fs = std::filesystem;

fs::path g_root;

void put(const std::string& target, const std::string& name, const void* data, size_t size) {
  fs::create_directories(g_root / target);
  std::ofstream(g_root / target / name, std::ios::binary).write(static_cast<const char*>(data),
                                                                static_cast<std::streamsize>(size));
}

/// A protocol seed: the selector byte, then the message.
void put_tagged(const std::string& name, uint8_t tag, const std::vector<uint8_t>& msg) {
  std::vector<uint8_t> b{tag};
  b.insert(b.end(), msg.begin(), msg.end());
  put("fuzz_protocol", name, b.data(), b.size());
}

void protocol_seeds() {
  protocol::preprocessed_request req;
  req.request_id = "r-1";
  req.model = "m";
  req.token_ids = {1, 2, 3, 4};
  req.prompt_tokens = 4;
  req.sampling.logit_bias = {{5, 1.5f}};
  req.stop.stop_token_ids = {2};
  req.stop.max_tokens = 16;
  put_tagged("preprocessed_request", 0, protocol::encode(req));
  req.sampling.prompt_logprobs = 1; // echo + logprobs on /v1/completions
  put_tagged("preprocessed_request_prompt_logprobs", 0, protocol::encode(req));

  protocol::engine_output out;
  out.token_ids = {9, 10};
  out.finish = protocol::finish_reason::stop;
  out.logprobs.resize(2);
  out.logprobs[0].top.push_back({});
  put_tagged("engine_output", 1, protocol::encode(out));
  out.prompt_logprobs.resize(3);
  out.prompt_logprobs[1].top.push_back({7, -0.25f});
  put_tagged("engine_output_prompt_logprobs", 1, protocol::encode(out));
  // The 2026-11-29 finding (docs/FUZZING.md): a float of exactly 2^64 sent
  // msgpack-c's pack_float into an undefined conversion when re-encoded.
  out.logprobs[1].logprob = 18446744073709551616.0f;
  put_tagged("engine_output_logprob_2pow64", 1, protocol::encode(out));

  protocol::router_event ev;
  ev.worker_id = 3;
  ev.event.event_id = 1;
  ev.event.parent_hash = 77;
  ev.event.blocks = {{1, 2}, {3, 4}};
  put_tagged("router_event", 2, protocol::encode(ev));
  put_tagged("load_metrics", 3, protocol::encode(protocol::load_metrics{}));
  put_tagged("kv_resync_request", 4, protocol::encode(protocol::kv_resync_request{}));
  protocol::kv_replay replay;
  replay.events.push_back(ev.event);
  put_tagged("kv_replay", 5, protocol::encode(replay));
  protocol::model_card card;
  card.name = "m";
  put_tagged("model_card", 6, protocol::encode(card));
  put_tagged("disagg_params", 7, protocol::encode(protocol::disagg_params{}));
  put_tagged("kv_prefill_result", 8, protocol::encode(protocol::kv_prefill_result{}));
  put_tagged("kv_push_request", 9, protocol::encode(protocol::kv_push_request{}));

  protocol::kv_transfer_request tr;
  tr.transfer_id = 1;
  tr.source_block_ids = {0, 1};
  tr.destination_block_ids = {4, 5};
  tr.layout = protocol::make_block_major_layout(2, 16, 2, 8, protocol::kv_dtype::f16);
  tr.connection.transport = "tcp";
  tr.connection.descriptor = protocol::encode(protocol::kv_tcp_descriptor{});
  put_tagged("kv_transfer_request", 10, protocol::encode(tr));
  put_tagged("kv_transfer_status", 11, protocol::encode(protocol::kv_transfer_status{}));
  put_tagged("kv_tcp_descriptor", 12, protocol::encode(protocol::kv_tcp_descriptor{}));
  put_tagged("kv_ucx_descriptor", 13, protocol::encode(protocol::kv_ucx_descriptor{}));
  put_tagged("kv_cuda_ipc_descriptor", 14, protocol::encode(protocol::kv_cuda_ipc_descriptor{}));
  put_tagged("kv_layout", 15, protocol::encode(tr.layout));

  planes::event_envelope env;
  env.publisher_id = 5;
  env.sequence = 1;
  env.topic = "kv_events";
  env.payload = protocol::encode(ev);
  put_tagged("event_envelope", 16, planes::encode_envelope(env));

  planes::instance_record rec;
  rec.endpoint = {"dynamo", "backend", "generate"};
  rec.instance = 0x1234;
  rec.request_address = "tcp://127.0.0.1:5555";
  rec.metadata["k"] = "v";
  rec.payload = protocol::encode(card);
  std::string key = rec.key();
  auto body = planes::discovery_codec::encode(rec);
  std::vector<uint8_t> disc(key.begin(), key.end());
  disc.push_back(0);
  disc.insert(disc.end(), body.begin(), body.end());
  put_tagged("discovery_record", 17, disc);

  auto hdr = planes::request_wire::encode_header(planes::request_wire::kind::request, 42);
  put_tagged("request_header", 18, std::vector<uint8_t>(hdr.begin(), hdr.end()));
  std::vector<uint64_t> ids{1, 2};
  put_tagged("request_ids", 18, planes::request_wire::encode_ids(ids));
}

void vllm_seeds() {
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_array(3);
  pk.pack(1.25);
  pk.pack_array(2);
  pk.pack_array(9);
  pk.pack(std::string{"BlockStored"});
  pk.pack(std::vector<uint64_t>{11, 12});
  pk.pack(int64_t{-1});
  pk.pack(std::vector<uint32_t>{1, 2, 3, 4, 5, 6, 7, 8});
  pk.pack(4);
  pk.pack_nil();
  pk.pack(std::string{"GPU"});
  pk.pack_nil();
  pk.pack_nil();
  pk.pack_array(2);
  pk.pack(std::string{"BlockRemoved"});
  pk.pack(std::vector<uint64_t>{12});
  pk.pack(0);
  std::vector<uint8_t> in{3, 1}; // block size 4, sequence 1
  in.insert(in.end(), b.data(), b.data() + b.size());
  put("fuzz_vllm", "stored_removed", in.data(), in.size());
}

void gguf_seeds() {
  gguf::writer w;
  w.set_string("general.architecture", "llama");
  w.set_u32("general.alignment", 32);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string_array("tokenizer.ggml.tokens", {"a", "b", "ab", "<s>", "</s>", "\xc4\xa0"});
  w.set_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>{1, 1, 1, 3, 3, 1});
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  w.set_u32("tokenizer.ggml.bos_token_id", 3);
  w.set_u32("tokenizer.ggml.eos_token_id", 4);
  w.set_string("tokenizer.chat_template", "{% for m in messages %}{{ m.content }}{% endfor %}");
  std::vector<float> t(64, 0.5f);
  (void)w.add_tensor("w.f32", {8, 8}, gguf::tensor_type::f32, t);
  (void)w.add_tensor("w.q8", {32, 2}, gguf::tensor_type::q8_0, t);
  auto img = w.bytes();
  put("fuzz_gguf", "tiny_bpe", img.data(), img.size());
}

// etcd's JSON (as etcd 3.4.23 sends it) around a real discovery record.
void etcd_seeds() {
  planes::instance_record rec;
  rec.endpoint = endpoint_id{"dynamo", "backend", "generate"};
  rec.instance = 0x1234;
  rec.request_address = "tcp://127.0.0.1:5555";
  rec.metadata = {{"model", "m"}};
  rec.lease_ttl_ms = 1000;
  auto value = planes::discovery_codec::encode(rec);
  auto key = base64_encode(std::string_view{"/dynamo/instances/dynamo/backend/generate/0000000000001234"});
  auto val = base64_encode(std::span<const uint8_t>{value});
  std::string header = R"("header":{"cluster_id":"32","member_id":"33","revision":"7","raft_term":"2"})";
  std::string kv = R"({"key":")" + key + R"(","create_revision":"6","mod_revision":"7","version":"2","value":")" +
                   val + R"(","lease":"2324035664327165195"})";
  auto seed = [](const std::string& name, const std::string& text) {
    put("fuzz_etcd", name, text.data(), text.size());
  };
  seed("range", "{" + header + R"(,"kvs":[)" + kv + R"(],"count":"1"})");
  seed("watch", R"({"result":{)" + header + R"(,"created":true}})" "\n" R"({"result":{)" + header +
                    R"(,"events":[{"kv":)" + kv + R"(},{"type":"DELETE","kv":{"key":")" + key +
                    R"(","mod_revision":"8"}}]}})" "\n");
  seed("cancelled", R"({"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"6"}})");
  seed("grant", "{" + header + R"(,"ID":"2324035664327165189","TTL":"1"})");
  seed("keepalive", R"({"result":{)" + header + R"(,"ID":"23","TTL":"2"}})");
  seed("txn", "{" + header + R"(,"succeeded":true,"responses":[{"response_put":{"header":{"revision":"7"}}}]})");
  seed("error", R"({"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5})");
}

// KV transfer frames (fuzz_transfer: geometry bytes, mode byte, frames). The
// geometry 0x48, 0: 8 blocks of 4 x 64 bytes, touching.
void transfer_seeds() {
  using namespace planes::transfer_detail;
  auto frame = [](std::vector<uint8_t>& out, frame_kind kind, uint64_t block, uint64_t length) {
    auto f = encode_frame({kind, 0, 7, 3, block, length});
    out.insert(out.end(), f.begin(), f.end());
  };
  // ucx: a data message landing 2 blocks at 1 and 1 block at 5 (768 bytes).
  std::vector<uint8_t> ucx{0x48, 0, 0};
  frame(ucx, frame_kind::data, 2, 768);
  std::vector<landing_run> runs{{1, 2}, {5, 1}};
  append_runs(ucx, runs);
  put("fuzz_transfer", "ucx_batch", ucx.data(), ucx.size());
  // tcp: hello, two data frames, done (completes), a second transfer cancelled.
  std::vector<uint8_t> tcp{0x48, 0, 1};
  frame(tcp, frame_kind::hello, 9, 256);
  frame(tcp, frame_kind::data, 0, 512);
  frame(tcp, frame_kind::data, 4, 256);
  frame(tcp, frame_kind::done, 3, 768);
  auto f = encode_frame({frame_kind::data, 0, 8, 3, 6, 256});
  tcp.insert(tcp.end(), f.begin(), f.end());
  f = encode_frame({frame_kind::cancel, 0, 8, 3, 0, 0});
  tcp.insert(tcp.end(), f.begin(), f.end());
  put("fuzz_transfer", "tcp_stream", tcp.data(), tcp.size());
  std::vector<uint8_t> rma{0x48, 0, 1};
  frame(rma, frame_kind::done_rma, 2, 512);
  put("fuzz_transfer", "done_rma", rma.data(), rma.size());
}

// Admin API inputs (fuzz_admin: selector byte, then "a \0 b").
void admin_seeds() {
  using namespace std::string_view_literals;
  auto seed = [](const std::string& name, char tag, std::string_view text) {
    std::string b(1, tag);
    b += text;
    put("fuzz_admin", name, b.data(), b.size());
  };
  seed("route_health", 0, "/admin/health");
  seed("route_drain", 0, "/admin/workers/00000000000000ab/drain");
  seed("route_restart", 0, "/admin/actors/frontend%2Frouter/restart");
  seed("bearer", 1, "Bearer s3cret\0s3cret"sv);
  seed("bearer_env", 1, "bearer x\0env:HOME"sv);
  seed("loopback_v6", 2, "::ffff:127.0.0.1");
  seed("loopback_v4", 2, "127.1.2.3");
  seed("bodies", 3, "caf\xc3\xa9\0\xff\\\""sv);
}

// The disk tier's formats (fuzz_kvbm: mode byte, then the bytes).
void kvbm_seeds() {
  using namespace kvbm;
  auto seed = [](const std::string& name, uint8_t mode, std::span<const std::byte> bytes) {
    std::vector<std::byte> b{std::byte{mode}};
    b.insert(b.end(), bytes.begin(), bytes.end());
    put("fuzz_kvbm", name, b.data(), b.size());
  };
  live_index li;
  li.tag = 5;
  li.segments = {{1, 4096}, {2, 32}};
  li.records = {{1, 32, 0, 0}, {1, 2000, 1, 0}};
  seed("live_index", 0, encode_live_index(li));
  // A segment's tail: its last record's payload, then the footer (extra file
  // length 32 + the records before, segment id 7).
  std::vector<std::byte> payload(40, std::byte{3});
  std::vector<record_header> headers{make_record_header(11, std::nullopt, 111, payload),
                                     make_record_header(12, uint64_t{11}, 112, payload)};
  const uint64_t records_end = sizeof(segment_header) + 2 * (sizeof(record_header) + payload.size());
  const segment_footer f = make_segment_footer(7, records_end, headers);
  std::vector<std::byte> tail{std::byte{0}, std::byte{0}, std::byte{7}};
  const uint64_t before = records_end; // bytes of the file before the footer, all in "extra"
  tail[0] = std::byte(before >> 8);
  tail[1] = std::byte(before & 0xff);
  auto add = [&](const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    tail.insert(tail.end(), b, b + n);
  };
  add(&f, sizeof f);
  add(headers.data(), headers.size() * sizeof(record_header));
  add(&f, sizeof f);
  seed("segment_footer", 1, tail);
  const std::byte spans[] = {std::byte{200}, std::byte{3}, std::byte{0}, std::byte{2}, std::byte{0},
                             std::byte{0}, std::byte{6}, std::byte{0}, std::byte{1}, std::byte{2}, std::byte{9}};
  seed("plan_reads", 2, spans);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <corpus dir>\n");
    return 2;
  }
  g_root = argv[1];
  protocol_seeds();
  vllm_seeds();
  gguf_seeds();
  etcd_seeds();
  transfer_seeds();
  admin_seeds();
  kvbm_seeds();
  return 0;
}
