// DYNAMO_MSGPACK_MAP against msgpack-c's MSGPACK_DEFINE_MAP: the same bytes on
// the wire, and for random maps (missing, unknown, duplicate and mistyped keys,
// non-string keys, non-maps) the same decoded value or the same failure.
#include "runtime/protocol/msgpack_map.hpp"

#include <boost/test/unit_test.hpp>

#include <msgpack.hpp>

#include <bit>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

struct inner_std {
  uint64_t a = 0;
  std::string b;
  MSGPACK_DEFINE_MAP(a, b);
  friend bool operator==(const inner_std&, const inner_std&) = default;
};
struct inner_fast {
  uint64_t a = 0;
  std::string b;
  DYNAMO_MSGPACK_MAP(a, b);
  friend bool operator==(const inner_fast&, const inner_fast&) = default;
};

// Both shapes hold the same members; only the macro differs.
#define OUTER_FIELDS id, kind, parent, items, names, rank
struct outer_std {
  uint64_t id = 7;
  int kind = 0;
  std::optional<uint64_t> parent;
  std::vector<inner_std> items;
  std::vector<std::string> names;
  uint32_t rank = 3;
  MSGPACK_DEFINE_MAP(OUTER_FIELDS);
};
struct outer_fast {
  uint64_t id = 7;
  int kind = 0;
  std::optional<uint64_t> parent;
  std::vector<inner_fast> items;
  std::vector<std::string> names;
  uint32_t rank = 3;
  DYNAMO_MSGPACK_MAP(OUTER_FIELDS);
};

bool same(const outer_std& s, const outer_fast& f) {
  if (s.id != f.id || s.kind != f.kind || s.parent != f.parent || s.names != f.names ||
      s.rank != f.rank || s.items.size() != f.items.size())
    return false;
  for (size_t i = 0; i < s.items.size(); ++i)
    if (s.items[i].a != f.items[i].a || s.items[i].b != f.items[i].b)
      return false;
  return true;
}

/// One random value: usually of the member's type, sometimes of another.
void pack_value(msgpack::packer<msgpack::sbuffer>& pk, std::mt19937_64& rng, int depth) {
  switch (rng() % 9) {
  case 0: pk.pack_nil(); break;
  case 1: pk.pack(std::string("s") + std::to_string(rng() % 10)); break;
  case 2: pk.pack(-static_cast<int64_t>(rng() % 5) - 1); break;
  case 3: pk.pack(rng() % 2 == 0); break;
  case 4:
  case 5: {
    uint32_t n = static_cast<uint32_t>(rng() % 3);
    pk.pack_array(n);
    for (uint32_t i = 0; i < n; ++i) {
      if (depth < 2 && rng() % 2 == 0) {
        pk.pack_map(2);
        pk.pack(std::string_view{"a"});
        pk.pack(rng() % 100);
        pk.pack(std::string_view{rng() % 4 == 0 ? "z" : "b"});
        pk.pack(std::string("x"));
      } else if (rng() % 2 == 0) {
        pk.pack(std::string("n") + std::to_string(rng() % 10));
      } else {
        pack_value(pk, rng, depth + 1);
      }
    }
    break;
  }
  default: pk.pack(rng() % 1000); break;
  }
}

std::string random_map(std::mt19937_64& rng) {
  static const char* keys[] = {"id", "kind", "parent", "items", "names", "rank", "other", ""};
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk{buf};
  if (rng() % 20 == 0) {
    pk.pack_array(1);
    pk.pack(1);
    return {buf.data(), buf.size()};
  }
  uint32_t n = static_cast<uint32_t>(rng() % 8);
  pk.pack_map(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (rng() % 25 == 0)
      pk.pack(rng() % 10); // a non-string key
    else
      pk.pack(std::string_view{keys[rng() % 8]});
    pack_value(pk, rng, 0);
  }
  return {buf.data(), buf.size()};
}

template <class T>
std::optional<T> decode(const std::string& bytes) {
  auto oh = msgpack::unpack(bytes.data(), bytes.size());
  try {
    T out;
    oh.get().convert(out);
    return out;
  } catch (const msgpack::type_error&) {
    return std::nullopt;
  }
}

} // namespace

BOOST_AUTO_TEST_SUITE(msgpack_map)

BOOST_AUTO_TEST_CASE(packs_the_same_bytes_as_msgpack_define_map) {
  outer_std s{42, 2, 9, {{1, "x"}, {2, "y"}}, {"p", "q"}, 5};
  outer_fast f{42, 2, 9, {{1, "x"}, {2, "y"}}, {"p", "q"}, 5};
  msgpack::sbuffer a, b;
  msgpack::pack(a, s);
  msgpack::pack(b, f);
  BOOST_TEST(std::string(a.data(), a.size()) == std::string(b.data(), b.size()));
  msgpack::zone z;
  msgpack::object oa(s, z), ob(f, z);
  BOOST_TEST((oa == ob));
}

BOOST_AUTO_TEST_CASE(decodes_random_maps_exactly_as_msgpack_define_map) {
  std::mt19937_64 rng(1);
  int ok = 0, failed = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = random_map(rng);
    auto s = decode<outer_std>(bytes);
    auto f = decode<outer_fast>(bytes);
    BOOST_REQUIRE_EQUAL(s.has_value(), f.has_value());
    if (s) {
      BOOST_REQUIRE(same(*s, *f));
      ++ok;
    } else {
      ++failed;
    }
  }
  // Both outcomes must have been exercised.
  BOOST_TEST(ok > 1000);
  BOOST_TEST(failed > 1000);
}

BOOST_AUTO_TEST_CASE(the_first_of_duplicate_keys_wins_and_unknown_keys_are_ignored) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk{buf};
  pk.pack_map(4);
  pk.pack(std::string_view{"rank"});
  pk.pack(1);
  pk.pack(std::string_view{"future_field"});
  pk.pack(std::string_view{"?"});
  pk.pack(std::string_view{"rank"});
  pk.pack(2);
  pk.pack(std::string_view{"id"});
  pk.pack(9);
  auto f = decode<outer_fast>(std::string(buf.data(), buf.size()));
  BOOST_REQUIRE(f);
  BOOST_TEST(f->rank == 1u);
  BOOST_TEST(f->id == 9u);
  BOOST_TEST(f->kind == 0); // missing: left as it was
}


namespace {
struct floats_fast {
  float f = 0.0f;
  double d = 0.0;
  std::optional<float> of;
  std::vector<float> vf;
  DYNAMO_MSGPACK_MAP(f, d, of, vf);
};
} // namespace

// msgpack-c 4 packs a float holding an integer as an integer, and its range
// check lets exactly 2^64 through to an undefined float -> uint64 conversion
// (docs/FUZZING.md, the fuzz_protocol pack_float finding). Ours always writes
// float 32 / 64, so every value comes back with the same bits.
BOOST_AUTO_TEST_CASE(floats_always_go_as_float_32_and_64_and_keep_their_bits) {
  const float two64 = 18446744073709551616.0f;
  for (float v : {two64, -two64, 1.0f, 0.0f, -0.0f, 3.0e38f, -9.2233720e18f,
                  std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    floats_fast x{v, static_cast<double>(v), v, {v, 2.0f}};
    msgpack::sbuffer buf;
    msgpack::pack(buf, x);
    const std::string bytes(buf.data(), buf.size());
    // map(4), "f" -> 0xca + 4 bytes, "d" -> 0xcb + 8, "of" -> 0xca, "vf" -> array(2) of 0xca
    BOOST_TEST_REQUIRE(bytes.size() == 1 + 2 + 5 + 2 + 9 + 3 + 5 + 3 + 1 + 5 + 5);
    BOOST_TEST(static_cast<uint8_t>(bytes[3]) == 0xcau);
    BOOST_TEST(static_cast<uint8_t>(bytes[10]) == 0xcbu);
    auto back = decode<floats_fast>(bytes);
    BOOST_TEST_REQUIRE(back.has_value());
    BOOST_TEST(std::bit_cast<uint32_t>(back->f) == std::bit_cast<uint32_t>(v));
    BOOST_TEST(std::bit_cast<uint64_t>(back->d) == std::bit_cast<uint64_t>(static_cast<double>(v)));
    BOOST_TEST(std::bit_cast<uint32_t>(back->of.value()) == std::bit_cast<uint32_t>(v));
    BOOST_TEST(std::bit_cast<uint32_t>(back->vf.at(0)) == std::bit_cast<uint32_t>(v));
  }
  floats_fast none;
  msgpack::sbuffer buf;
  msgpack::pack(buf, none);
  auto back = decode<floats_fast>(std::string(buf.data(), buf.size()));
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST(!back->of.has_value());
  BOOST_TEST(back->vf.empty());
}

BOOST_AUTO_TEST_SUITE_END()
