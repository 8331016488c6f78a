#include "planes/request/request_wire.hpp"

namespace dynamo::planes::request_wire {

std::array<uint8_t, header_size> encode_header(kind k, uint64_t stream_id) noexcept {
  std::array<uint8_t, header_size> out{};
  out[0] = version;
  out[1] = static_cast<uint8_t>(k);
  put_u64_be(out.data() + 2, stream_id);
  return out;
}

namespace {
bool is_known_kind(uint8_t k) noexcept {
  switch (static_cast<kind>(k)) {
    case kind::request:
    case kind::cancel:
    case kind::ping:
    case kind::item:
    case kind::end:
    case kind::error:
    case kind::pong: return true;
  }
  return false;
}
} // namespace

std::optional<header> decode_header(std::span<const uint8_t> frame) noexcept {
  if (frame.size() != header_size || frame[0] != version || !is_known_kind(frame[1]))
    return std::nullopt;
  return header{static_cast<kind>(frame[1]), get_u64_be(frame.data() + 2)};
}

size_t body_frames(kind k) noexcept {
  switch (k) {
    case kind::request: return 2;
    case kind::cancel:
    case kind::end: return 0;
    case kind::ping:
    case kind::item:
    case kind::error:
    case kind::pong: return 1;
  }
  return 0;
}

bool is_client_kind(kind k) noexcept {
  return k == kind::request || k == kind::cancel || k == kind::ping;
}

bytes encode_ids(std::span<const uint64_t> ids) {
  bytes out;
  out.reserve(ids.size() * 8);
  for (auto id : ids)
    append_u64_be(out, id);
  return out;
}

std::optional<std::vector<uint64_t>> decode_ids(std::span<const uint8_t> frame) {
  if (frame.size() % 8 != 0 || frame.size() / 8 > max_ids)
    return std::nullopt;
  std::vector<uint64_t> ids(frame.size() / 8);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = get_u64_be(frame.data() + 8 * i);
  return ids;
}

bytes encode_error(const caf::error& err) {
  auto msg = message_of(err);
  bytes out;
  out.reserve(1 + msg.size());
  out.push_back(static_cast<uint8_t>(code_of(err)));
  out.insert(out.end(), msg.begin(), msg.end());
  return out;
}

std::optional<caf::error> decode_error(std::span<const uint8_t> frame) {
  if (frame.empty())
    return std::nullopt;
  auto code = frame[0];
  if (code == 0) // codes past errc::internal come from newer peers and pass through
    return std::nullopt;
  std::string msg(frame.begin() + 1, frame.end());
  return make_error(static_cast<errc>(code), std::move(msg));
}

} // namespace dynamo::planes::request_wire
