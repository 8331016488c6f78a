#include "planes/transfer/frame.hpp"

namespace dynamo::planes::transfer_detail {

namespace {

constexpr uint8_t magic[4] = {'D', 'K', 'V', '1'};

void put_le(uint8_t* out, uint64_t v, int bytes) noexcept {
  for (int i = 0; i < bytes; ++i)
    out[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* in, int bytes) noexcept {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t{in[i]} << (8 * i);
  return v;
}

} // namespace

frame_bytes encode_frame(const frame_header& h) noexcept {
  frame_bytes out{};
  for (int i = 0; i < 4; ++i)
    out[i] = magic[i];
  out[4] = static_cast<uint8_t>(h.kind);
  out[5] = 0;
  put_le(&out[6], h.code, 2);
  put_le(&out[8], h.transfer_id, 8);
  put_le(&out[16], h.source_worker, 8);
  put_le(&out[24], h.block, 8);
  put_le(&out[32], h.length, 8);
  return out;
}

expected<frame_header> decode_frame(std::span<const uint8_t> in) {
  if (in.size() != frame_header_bytes)
    return make_error(errc::malformed_message, "kv frame: wrong header size");
  for (int i = 0; i < 4; ++i) {
    if (in[i] != magic[i])
      return make_error(errc::malformed_message, "kv frame: bad magic");
  }
  if (in[4] < static_cast<uint8_t>(frame_kind::hello) || in[4] > static_cast<uint8_t>(frame_kind::cancel))
    return make_error(errc::malformed_message, "kv frame: unknown kind");
  frame_header h;
  h.kind = static_cast<frame_kind>(in[4]);
  h.code = static_cast<uint16_t>(get_le(&in[6], 2));
  h.transfer_id = get_le(&in[8], 8);
  h.source_worker = get_le(&in[16], 8);
  h.block = get_le(&in[24], 8);
  h.length = get_le(&in[32], 8);
  return h;
}

void append_runs(std::vector<uint8_t>& out, std::span<const landing_run> runs) {
  for (const auto& r : runs) {
    uint8_t entry[landing_run_bytes];
    put_le(entry, r.dst_block, 4);
    put_le(entry + 4, r.blocks, 4);
    out.insert(out.end(), entry, entry + landing_run_bytes);
  }
}

expected<std::vector<landing_run>> decode_runs(std::span<const uint8_t> in, uint64_t count) {
  if (count > in.size() / landing_run_bytes || in.size() != count * landing_run_bytes)
    return make_error(errc::malformed_message, "kv frame: run list size does not match its count");
  std::vector<landing_run> runs(count);
  for (uint64_t i = 0; i < count; ++i) {
    runs[i].dst_block = static_cast<uint32_t>(get_le(&in[i * landing_run_bytes], 4));
    runs[i].blocks = static_cast<uint32_t>(get_le(&in[i * landing_run_bytes + 4], 4));
  }
  return runs;
}

} // namespace dynamo::planes::transfer_detail
