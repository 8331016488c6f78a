#include "runtime/core/base64.hpp"

#include <array>

namespace dynamo {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_reverse() {
  std::array<int8_t, 256> r{};
  for (auto& v : r)
    v = -1;
  for (int i = 0; i < 64; ++i)
    r[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  return r;
}

constexpr auto reverse = make_reverse();

} // namespace

std::string base64_encode(std::span<const uint8_t> data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= data.size(); i += 3) {
    uint32_t v = (uint32_t{data[i]} << 16) | (uint32_t{data[i + 1]} << 8) | data[i + 2];
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  if (size_t rest = data.size() - i; rest > 0) {
    uint32_t v = uint32_t{data[i]} << 16;
    if (rest == 2)
      v |= uint32_t{data[i + 1]} << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += rest == 2 ? alphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string base64_encode(std::string_view data) {
  return base64_encode(std::span<const uint8_t>{reinterpret_cast<const uint8_t*>(data.data()), data.size()});
}

expected<std::vector<uint8_t>> base64_decode(std::string_view text, size_t max_bytes) {
  if (text.size() % 4 != 0)
    return make_error(errc::malformed_message, "base64: length is not a multiple of 4");
  size_t pad = 0;
  if (!text.empty() && text.back() == '=')
    pad = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
  size_t n = text.size() / 4 * 3 - pad;
  if (n > max_bytes)
    return make_error(errc::invalid_argument, "base64: decoded size " + std::to_string(n) +
                                                  " exceeds " + std::to_string(max_bytes));
  std::vector<uint8_t> out;
  out.reserve(n);
  for (size_t i = 0; i < text.size(); i += 4) {
    bool last = i + 4 == text.size();
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) {
      auto c = static_cast<uint8_t>(text[i + k]);
      int8_t d = reverse[c];
      if (d < 0) {
        if (!(c == '=' && last && k >= 4 - pad))
          return make_error(errc::malformed_message, "base64: bad character at " + std::to_string(i + k));
        d = 0;
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<uint8_t>(v >> 16));
    if (!last || pad < 2)
      out.push_back(static_cast<uint8_t>(v >> 8));
    if (!last || pad < 1)
      out.push_back(static_cast<uint8_t>(v));
  }
  return out;
}

} // namespace dynamo
