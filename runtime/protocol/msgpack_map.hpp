// DYNAMO_MSGPACK_MAP(fields...): MSGPACK_DEFINE_MAP's wire format and decoding
// rules, decoded without msgpack-c's per-object std::map<std::string, ...> of
// keys (which made a small KV event cost ~1.7 us to decode). Floats are always
// written as float 32/64 (msgpack-c 4 writes integral ones as integers, and its
// check for that converts a float of 2^64 to uint64: undefined). Used by every
// wire struct in runtime/protocol and planes/. Header-only; no state.
#pragma once

#include <msgpack.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace dynamo::protocol::detail {

/// One member's value on the wire: msgpack-c's packing, except that floats
/// (also inside optionals and vectors of them) always go as float 32 / 64.
template <class Packer>
void pack_float_bits(Packer& pk, uint8_t tag, uint64_t bits, int bytes) {
  char buf[9];
  buf[0] = static_cast<char>(tag);
  for (int i = 0; i < bytes; ++i) // big-endian
    buf[1 + i] = static_cast<char>(bits >> (8 * (bytes - 1 - i)));
  pk.pack_str_body(buf, static_cast<uint32_t>(1 + bytes)); // appends the bytes as they are
}
template <class Packer, class T>
void pack_field(Packer& pk, const T& v) {
  pk.pack(v);
}
template <class Packer>
void pack_field(Packer& pk, float v) {
  pack_float_bits(pk, 0xca, std::bit_cast<uint32_t>(v), 4);
}
template <class Packer>
void pack_field(Packer& pk, double v) {
  pack_float_bits(pk, 0xcb, std::bit_cast<uint64_t>(v), 8);
}
template <class Packer, class T>
void pack_field(Packer& pk, const std::vector<T>& v)
  requires std::is_floating_point_v<T>
{
  pk.pack_array(static_cast<uint32_t>(v.size()));
  for (T x : v)
    pack_field(pk, x);
}
template <class Packer, class T>
void pack_field(Packer& pk, const std::optional<T>& v) {
  if (v)
    pack_field(pk, *v);
  else
    pk.pack_nil();
}

/// The (name, member) pairs of one struct, as msgpack::type::define_map takes
/// them. Packing is define_map's wire format (a map of string keys), with
/// floats written by pack_field. Unpacking follows define_map's rules: the
/// object must be a map with string keys (else msgpack::type_error), unknown
/// keys are ignored, a missing key leaves its member as it was, the first of
/// duplicate keys wins, and members convert in declaration order.
template <class... Args>
class map_fields {
  static_assert(sizeof...(Args) % 2 == 0, "name, member, name, member, ...");
  static constexpr size_t n = sizeof...(Args) / 2;

public:
  explicit map_fields(Args&... args) : a_(args...) {}

  template <class Packer>
  void msgpack_pack(Packer& pk) const {
    pk.pack_map(static_cast<uint32_t>(n));
    pack_all(pk, std::make_index_sequence<n>{});
  }
  void msgpack_object(msgpack::object* o, msgpack::zone& z) const {
    std::apply([&](auto&... xs) { msgpack::type::make_define_map(xs...).msgpack_object(o, z); },
               a_);
  }

  void msgpack_unpack(const msgpack::object& o) const {
    if (o.type != msgpack::type::MAP)
      throw msgpack::type_error();
    std::array<const msgpack::object*, n> found{};
    for (uint32_t i = 0; i < o.via.map.size; ++i) {
      const msgpack::object_kv& kv = o.via.map.ptr[i];
      if (kv.key.type != msgpack::type::STR)
        throw msgpack::type_error();
      size_t f = field_of(std::string_view{kv.key.via.str.ptr, kv.key.via.str.size},
                          std::make_index_sequence<n>{});
      if (f < n && found[f] == nullptr)
        found[f] = &kv.val;
    }
    convert_all(found, std::make_index_sequence<n>{});
  }

private:
  template <size_t N>
  static constexpr std::string_view name_of(const char (&name)[N]) noexcept {
    return {name, N - 1}; // a string literal: its length is known, no strlen
  }
  template <size_t... I>
  size_t field_of(std::string_view key, std::index_sequence<I...>) const {
    size_t f = n;
    // || folds left to right and stops at the first match.
    (void)((key == name_of(std::get<2 * I>(a_)) && (f = I, true)) || ...);
    return f;
  }
  template <class Packer, size_t... I>
  void pack_all(Packer& pk, std::index_sequence<I...>) const {
    auto one = [&](std::string_view name, const auto& member) {
      pk.pack_str(static_cast<uint32_t>(name.size()));
      pk.pack_str_body(name.data(), static_cast<uint32_t>(name.size()));
      pack_field(pk, member);
    };
    (one(name_of(std::get<2 * I>(a_)), std::get<2 * I + 1>(a_)), ...);
  }
  template <size_t... I>
  void convert_all(const std::array<const msgpack::object*, n>& found,
                   std::index_sequence<I...>) const {
    ((found[I] != nullptr ? (void)found[I]->convert(std::get<2 * I + 1>(a_)) : void()), ...);
  }

  std::tuple<Args&...> a_;
};

template <class... Args>
map_fields<Args...> make_map_fields(Args&... args) {
  return map_fields<Args...>(args...);
}

} // namespace dynamo::protocol::detail

#define DYNAMO_MSGPACK_MAP(...)                                                                \
  template <typename Packer>                                                                   \
  void msgpack_pack(Packer& msgpack_pk) const {                                                \
    ::dynamo::protocol::detail::make_map_fields MSGPACK_DEFINE_MAP_IMPL(__VA_ARGS__)           \
        .msgpack_pack(msgpack_pk);                                                             \
  }                                                                                            \
  void msgpack_unpack(msgpack::object const& msgpack_o) {                                      \
    ::dynamo::protocol::detail::make_map_fields MSGPACK_DEFINE_MAP_IMPL(__VA_ARGS__)           \
        .msgpack_unpack(msgpack_o);                                                            \
  }                                                                                            \
  template <typename MSGPACK_OBJECT>                                                           \
  void msgpack_object(MSGPACK_OBJECT* msgpack_o, msgpack::zone& msgpack_z) const {             \
    ::dynamo::protocol::detail::make_map_fields MSGPACK_DEFINE_MAP_IMPL(__VA_ARGS__)           \
        .msgpack_object(msgpack_o, msgpack_z);                                                 \
  }
