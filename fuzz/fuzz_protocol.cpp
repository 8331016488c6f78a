// libFuzzer target: every msgpack message that arrives from the network. The
// first input byte picks the decoder; the rest is the message. A decoded value
// is encoded again and must decode (the codec accepts what it writes).
#include "planes/discovery/record_codec.hpp"
#include "planes/event/envelope.hpp"
#include "planes/request/request_wire.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_recovery.hpp"
#include "runtime/protocol/kv_transfer.hpp"
#include "runtime/protocol/llm.hpp"
#include "runtime/protocol/model_card.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace {

using namespace dynamo;

template <class T>
void round_trip(std::span<const uint8_t> in) {
  auto v = protocol::decode<T>(in);
  if (!v)
    return;
  auto again = protocol::encode(*v);
  if (!protocol::decode<T>(again))
    __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  std::span<const uint8_t> in(data + 1, size - 1);
  switch (data[0] % 19) {
  case 0: round_trip<protocol::preprocessed_request>(in); break;
  case 1: round_trip<protocol::engine_output>(in); break;
  case 2: round_trip<protocol::router_event>(in); break;
  case 3: round_trip<protocol::load_metrics>(in); break;
  case 4: round_trip<protocol::kv_resync_request>(in); break;
  case 5: round_trip<protocol::kv_replay>(in); break;
  case 6: round_trip<protocol::model_card>(in); break;
  case 7: round_trip<protocol::disagg_params>(in); break;
  case 8: round_trip<protocol::kv_prefill_result>(in); break;
  case 9: round_trip<protocol::kv_push_request>(in); break;
  case 10: {
    if (auto r = protocol::decode<protocol::kv_transfer_request>(in); r && protocol::validate(*r)) {
      const auto& l = r->layout;
      (void)protocol::element_offset(l, l.num_layers - 1, 1, l.block_size - 1, l.num_kv_heads - 1,
                                     l.head_dim - 1);
    }
    break;
  }
  case 11: round_trip<protocol::kv_transfer_status>(in); break;
  case 12: round_trip<protocol::kv_tcp_descriptor>(in); break;
  case 13: round_trip<protocol::kv_ucx_descriptor>(in); break;
  case 14: round_trip<protocol::kv_cuda_ipc_descriptor>(in); break;
  case 15: {
    if (auto l = protocol::decode<protocol::kv_layout>(in); l && protocol::validate(*l))
      (void)protocol::element_offset(*l, l->num_layers - 1, 1, l->block_size - 1, l->num_kv_heads - 1,
                                     l->head_dim - 1);
    break;
  }
  case 16: {
    if (auto e = planes::decode_envelope(in, 1 << 20)) {
      if (!planes::decode_envelope(planes::encode_envelope(*e), 1 << 20))
        __builtin_trap();
    }
    break;
  }
  case 17: {
    // Discovery record: "key \0 record".
    std::string_view s(reinterpret_cast<const char*>(in.data()), in.size());
    auto cut = s.find('\0');
    if (cut == std::string_view::npos)
      break;
    std::string_view key = s.substr(0, cut);
    (void)planes::discovery_codec::parse_prefix(key);
    if (auto r = planes::discovery_codec::decode(key, in.subspan(cut + 1))) {
      if (!planes::discovery_codec::decode(key, planes::discovery_codec::encode(*r)))
        __builtin_trap();
    }
    break;
  }
  case 18: {
    namespace rw = planes::request_wire;
    (void)rw::decode_header(in);
    (void)rw::decode_ids(in);
    if (auto e = rw::decode_error(in); e && !rw::decode_error(rw::encode_error(*e)))
      __builtin_trap();
    break;
  }
  }
  return 0;
}
