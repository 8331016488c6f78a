// libFuzzer target: a vLLM KV-event message (three ZeroMQ frames: topic,
// sequence, msgpack payload), converted into router events and applied to a
// radix index, whose invariants must hold afterwards. Input: the payload
// frame; the first two bytes pick the converter's block size.
#include "runtime/route/radix_index.hpp"
#include "runtime/route/vllm_wire.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2)
    return 0;
  uint32_t block_size = 1 + (data[0] % 64);
  std::span<const uint8_t> payload(data + 2, size - 2);
  static const std::array<uint8_t, 1> topic{'k'};
  std::array<uint8_t, 8> seq{0, 0, 0, 0, 0, 0, 0, data[1]};
  std::array<std::span<const uint8_t>, 3> frames{topic, seq, payload};
  auto msg = dynamo::route::decode_vllm_frames(frames);
  if (!msg)
    return 0;
  dynamo::route::vllm_event_converter conv(7, block_size);
  auto events = conv.convert(msg->batch);
  dynamo::route::radix_index index;
  for (const auto& ev : events)
    (void)index.apply(ev);
  if (!index.check_invariants().empty())
    __builtin_trap();
  return 0;
}
