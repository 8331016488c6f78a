// libFuzzer target: the KV transfer plane's wire (planes/transfer/frame.hpp) and
// what a receiver does with it (receive_ledger.hpp). Input: a geometry byte
// pair, then a mode byte. Mode even (ucx batch): a 40-byte frame header, then
// its landing runs, checked against the region (check_runs). Mode odd (tcp
// stream): 40-byte frames driving a receive_ledger as tcp_receiver does.
#include "planes/transfer/frame.hpp"
#include "planes/transfer/receive_ledger.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace {

using namespace dynamo;
using namespace dynamo::planes::transfer_detail;

/// Decoded values must encode to the bytes they came from (the pad byte aside).
void check_frame_round_trip(std::span<const uint8_t> in, const frame_header& h) {
  auto again = encode_frame(h);
  for (size_t i = 0; i < frame_header_bytes; ++i)
    if (i != 5 && again[i] != in[i])
      __builtin_trap();
}

void ucx_batch(const protocol::kv_region_geometry& g, std::span<const uint8_t> in) {
  if (in.size() < frame_header_bytes)
    return;
  auto head = in.first(frame_header_bytes);
  auto f = decode_frame(head);
  if (!f)
    return;
  check_frame_round_trip(head, *f);
  auto tail = in.subspan(frame_header_bytes);
  auto runs = decode_runs(tail, f->block);
  if (!runs)
    return;
  std::vector<uint8_t> back;
  append_runs(back, *runs);
  if (back.size() != tail.size() || !std::equal(back.begin(), back.end(), tail.begin()))
    __builtin_trap();
  uint64_t blocks = 0;
  auto spans = check_runs(g, *runs, f->length, blocks);
  if (!spans)
    return;
  // Accepted: whole blocks inside the region, adding up to the payload.
  uint64_t total = 0, region = g.num_blocks * g.block_stride;
  for (const auto& s : *spans) {
    if (s.bytes % g.layout.bytes_per_block != 0 || s.offset > region || s.bytes > region - s.offset)
      __builtin_trap();
    total += s.bytes;
  }
  if (total != f->length || blocks * g.layout.bytes_per_block != total)
    __builtin_trap();
}

void tcp_stream(const protocol::kv_region_geometry& g, std::span<const uint8_t> in) {
  receive_ledger ledger{std::chrono::milliseconds{16}};
  auto now = clock::time_point{};
  size_t frames = 0;
  for (; in.size() >= frame_header_bytes; in = in.subspan(frame_header_bytes)) {
    now += std::chrono::milliseconds{1};
    auto f = decode_frame(in.first(frame_header_bytes));
    if (!f)
      continue;
    ++frames;
    receive_ledger::key k{f->source_worker, f->transfer_id};
    switch (f->kind) {
      case frame_kind::data:
        if (auto n = check_landing(g, f->block, f->length))
          (void)ledger.on_data(k, *n, f->length, now);
        else
          (void)ledger.fail(k, errc::malformed_message, "bad landing", now);
        break;
      case frame_kind::done:
      case frame_kind::done_rma:
        (void)ledger.on_done(k, f->block, f->length, f->kind == frame_kind::done_rma, now);
        break;
      case frame_kind::cancel: (void)ledger.fail(k, errc::cancelled, "cancel", now); break;
      default: break;
    }
    (void)ledger.expire(now);
    if (ledger.open_count() > frames)
      __builtin_trap();
  }
  (void)ledger.expire(now + std::chrono::hours{1});
  if (ledger.open_count() != 0)
    __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3)
    return 0;
  // A small region: 0-15 blocks of 0-15 x 64 bytes, the stride that or one
  // block more (strided blocks take one block per data frame).
  protocol::kv_region_geometry g;
  g.num_blocks = data[0] & 15;
  g.layout.bytes_per_block = static_cast<uint64_t>((data[0] >> 4) & 15) * 64;
  g.block_stride = g.layout.bytes_per_block + ((data[1] & 1) ? 64 : 0);
  std::span<const uint8_t> in(data + 3, size - 3);
  if (data[2] % 2 == 0)
    ucx_batch(g, in);
  else
    tcp_stream(g, in);
  return 0;
}
