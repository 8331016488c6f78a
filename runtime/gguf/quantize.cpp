#include "runtime/gguf/quantize.hpp"

#include "runtime/gguf/half.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

namespace dynamo::gguf {

void quantize_q4_0(const float* x, block_q4_0* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b, x += qk4_0) {
    // The signed value of largest magnitude maps to -8, so the full range is used.
    float amax = 0.0f, max = 0.0f;
    for (uint32_t j = 0; j < qk4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (uint32_t j = 0; j < qk4_0 / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + qk4_0 / 2] * id + 8.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q4_1(const float* x, block_q4_1* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b, x += qk4_0) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (uint32_t j = 0; j < qk4_0; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    y[b].m = fp32_to_fp16(min);
    for (uint32_t j = 0; j < qk4_0 / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
      const int hi = std::min(15, static_cast<int>(static_cast<int8_t>((x[j + qk4_0 / 2] - min) * id + 0.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_q8_0(const float* x, block_q8_0* y, size_t n_blocks) noexcept {
  for (size_t b = 0; b < n_blocks; ++b, x += qk4_0) {
    float amax = 0.0f;
    for (uint32_t j = 0; j < qk4_0; ++j)
      amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (uint32_t j = 0; j < qk4_0; ++j)
      y[b].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
  }
}

bool can_quantize(tensor_type type) noexcept {
  switch (type) {
    case tensor_type::f32:
    case tensor_type::f16:
    case tensor_type::bf16:
    case tensor_type::q4_0:
    case tensor_type::q4_1:
    case tensor_type::q8_0: return true;
    default: return false;
  }
}

namespace {

template <class Block, class Fn>
std::vector<std::byte> encode_blocks(std::span<const float> x, Fn fn) {
  const size_t n_blocks = x.size() / qk4_0;
  std::vector<Block> blocks(n_blocks);
  fn(x.data(), blocks.data(), n_blocks);
  std::vector<std::byte> out(n_blocks * sizeof(Block));
  std::memcpy(out.data(), blocks.data(), out.size());
  return out;
}

template <class Narrow>
std::vector<std::byte> encode_halves(std::span<const float> x, Narrow narrow) {
  std::vector<std::byte> out(x.size() * 2);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint16_t h = narrow(x[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}

} // namespace

expected<std::vector<std::byte>> quantize(tensor_type type, std::span<const float> x) {
  if (!can_quantize(type))
    return make_error(errc::unsupported, "quantize: tensor type " + type_name(type) + " not supported");
  const auto g = *geometry_of(type);
  if (x.size() % g.block_elems != 0)
    return make_error(errc::invalid_argument, "quantize: " + std::to_string(x.size()) +
                                                  " elements is not a multiple of the " + std::string(g.name) +
                                                  " block size " + std::to_string(g.block_elems));
  switch (type) {
    case tensor_type::f32: {
      std::vector<std::byte> out(x.size_bytes());
      std::memcpy(out.data(), x.data(), out.size());
      return out;
    }
    case tensor_type::f16: return encode_halves(x, fp32_to_fp16);
    case tensor_type::bf16: return encode_halves(x, fp32_to_bf16);
    case tensor_type::q4_0: return encode_blocks<block_q4_0>(x, quantize_q4_0);
    case tensor_type::q4_1: return encode_blocks<block_q4_1>(x, quantize_q4_1);
    case tensor_type::q8_0: return encode_blocks<block_q8_0>(x, quantize_q8_0);
    default: break;
  }
  return make_error(errc::internal, "quantize: unreachable type " + type_name(type));
}

} // namespace dynamo::gguf
