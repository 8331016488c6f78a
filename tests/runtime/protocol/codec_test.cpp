#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/kv_transfer.hpp"
#include "runtime/protocol/llm.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

using namespace dynamo;
using namespace dynamo::protocol;

BOOST_AUTO_TEST_SUITE(codec)

BOOST_AUTO_TEST_CASE(request_round_trips) {
  preprocessed_request req;
  req.request_id = "req-1";
  req.model = "smollm2";
  req.token_ids = {1, 2, 3, 4000000000u};
  req.sampling.temperature = 0.5f;
  req.sampling.seed = 42;
  req.stop.max_tokens = 9;
  req.stop.stop_token_ids = {2};
  req.prompt_tokens = 4;
  auto bytes = encode(req);
  auto back = decode<preprocessed_request>(bytes);
  BOOST_REQUIRE(back);
  BOOST_TEST(back->request_id == "req-1");
  BOOST_TEST(back->token_ids == req.token_ids);
  BOOST_TEST(back->sampling.temperature == 0.5f);
  BOOST_TEST(*back->sampling.seed == 42u);
  BOOST_TEST(!back->backend_instance_id.has_value());
  BOOST_TEST(back->stop.max_tokens == 9u);
}

BOOST_AUTO_TEST_CASE(prompt_logprobs_round_trip_and_default_to_none) {
  preprocessed_request req;
  req.sampling.prompt_logprobs = 3;
  auto back = decode<preprocessed_request>(encode(req));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->sampling.prompt_logprobs.value_or(0) == 3u);
  BOOST_TEST(!decode<preprocessed_request>(encode(preprocessed_request{}))->sampling.prompt_logprobs);
  engine_output out;
  out.prompt_logprobs = {{-1.5f, {{7, -0.25f}}}, {-2.0f, {}}};
  auto o = decode<engine_output>(encode(out));
  BOOST_REQUIRE(o);
  BOOST_REQUIRE_EQUAL(o->prompt_logprobs.size(), 2u);
  BOOST_TEST(o->prompt_logprobs[0].logprob == -1.5f);
  BOOST_TEST(o->prompt_logprobs[0].top.at(0).token == 7u);
  BOOST_TEST(o->prompt_logprobs[1].logprob == -2.0f);
}

BOOST_AUTO_TEST_CASE(kv_event_round_trips) {
  router_event ev;
  ev.worker_id = 7;
  ev.event.event_id = 3;
  ev.event.kind = kv_event_kind::stored;
  ev.event.parent_hash = 99;
  ev.event.blocks = {{11, 12}, {13, 14}};
  auto back = decode<router_event>(encode(ev));
  BOOST_REQUIRE(back);
  BOOST_TEST(back->event.blocks.size() == 2u);
  BOOST_TEST(back->event.blocks[1].tokens_hash == 14u);
  BOOST_TEST(*back->event.parent_hash == 99u);
  BOOST_TEST(static_cast<int>(back->event.kind) == static_cast<int>(kv_event_kind::stored));
}

BOOST_AUTO_TEST_CASE(malformed_bytes_are_errors_and_counted) {
  auto before = malformed_count();
  std::vector<uint8_t> empty;
  BOOST_TEST(!decode<engine_output>(empty));
  std::vector<uint8_t> bad_byte{0xc1};
  BOOST_TEST(!decode<engine_output>(bad_byte));
  // array32 announcing 2^32-1 elements: must not allocate, must fail.
  std::vector<uint8_t> huge{0xdd, 0xff, 0xff, 0xff, 0xff};
  auto r = decode<engine_output>(huge);
  BOOST_REQUIRE(!r);
  BOOST_TEST(static_cast<int>(code_of(r.error())) == static_cast<int>(errc::malformed_message));
  // a valid int where a map is expected
  std::vector<uint8_t> wrong_shape{0x05};
  BOOST_TEST(!decode<engine_output>(wrong_shape));
  auto full = encode(engine_output{});
  full.resize(full.size() - 1);
  BOOST_TEST(!decode<engine_output>(full));
  BOOST_TEST(malformed_count() == before + 5);
}

BOOST_AUTO_TEST_CASE(unknown_fields_are_ignored_for_schema_evolution) {
  // A newer peer adds a field: {"token_ids":[5], "finish":1, "future":"x"}
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(3);
  pk.pack(std::string{"token_ids"});
  pk.pack(std::vector<uint32_t>{5});
  pk.pack(std::string{"finish"});
  pk.pack(1);
  pk.pack(std::string{"future"});
  pk.pack(std::string{"x"});
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(buf.data()), buf.size());
  auto out = decode<engine_output>(bytes);
  BOOST_REQUIRE(out);
  BOOST_TEST(out->token_ids.size() == 1u);
  BOOST_TEST(static_cast<int>(out->finish) == static_cast<int>(finish_reason::stop));
}

// The fuzz_protocol finding of 2026-11-29 (docs/FUZZING.md): a peer's
// logprob of exactly 2^64, decoded and encoded again, hit msgpack-c's
// undefined float -> uint64 conversion (clang's UBSan float-cast-overflow; on
// x86 the result then failed msgpack-c's own equality check and the float was
// written as a float, so only a sanitizer sees the difference).
BOOST_AUTO_TEST_CASE(a_logprob_of_2_pow_64_survives_a_re_encode) {
  engine_output out;
  out.token_ids = {5};
  out.logprobs.resize(1);
  out.logprobs[0].logprob = 18446744073709551616.0f;
  out.logprobs[0].top.push_back({5, 18446744073709551616.0f});
  out.embedding = {18446744073709551616.0f, -1.0f};
  auto once = decode<engine_output>(encode(out));
  BOOST_REQUIRE(once);
  auto twice = decode<engine_output>(encode(*once));
  BOOST_REQUIRE(twice);
  BOOST_TEST(twice->logprobs.at(0).logprob == 18446744073709551616.0f);
  BOOST_TEST(twice->logprobs.at(0).top.at(0).logprob == 18446744073709551616.0f);
  BOOST_TEST(twice->embedding == out.embedding);
}

// The fuzz_protocol finding of 2026-11-29 (second): msgpack-c allocates an
// array's slots when it reads the header, so bytes that only declare huge
// arrays made it allocate tens of MB before failing (a libFuzzer timeout under
// ASan). A message now may not declare more elements than it has bytes.
std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  return out;
}

bool names_the_budget(const caf::error& e) {
  return message_of(e).find("more elements than the message has bytes") != std::string::npos;
}

BOOST_AUTO_TEST_CASE(headers_declaring_more_elements_than_bytes_fail_before_any_allocation) {
  // 30 nested array32 headers of 1,000,000 elements each, 150 bytes in all.
  std::vector<uint8_t> nested;
  for (int i = 0; i < 30; ++i)
    nested.insert(nested.end(), {0xdd, 0x00, 0x0f, 0x42, 0x40});
  auto r = decode<std::vector<uint64_t>>(nested);
  BOOST_REQUIRE(!r);
  BOOST_TEST(names_the_budget(r.error()), message_of(r.error()));
  // The fuzzer's input (its first byte, the target selector, removed): a
  // kv_transfer_status map whose values are array32 headers of ~10^5-10^6.
  auto found = from_hex(
      "87ffff002b0000002b300110dd00000b30dd000d30000000dd00010b00003f10dd002d0b0030dd000dc510dd00003010"
      "dd00060b000000010b00000000002f00dd0000000000010bdd00010b0030dd000d30000000dd00010b00003f10dd002d"
      "0b0030dd000dc510dd00003010dd00060b00000001300110dd00000b30dd000d30000000dd00010b00003f10dd002d0b"
      "0030dd000dc510dd00003010dd00060b000000010b00000000002f00dd0000000000010bdd00010b0030dd000d300000"
      "00dd00010b00003f10dd002d0b0030dd000dc510dd00003010dd00060b000000010b00000000002f00dd00010b00000d"
      "3010dd0000006e756d101010101010101010101010101010101010101010101010101010101010101010101010101010"
      "101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010"
      "1010101010101010101010101010101010101010101010100b00000000002f00dd00010b00000d3010dd003200006e75"
      "6d1010101010101010101010101010101010101010101010101010101010101010101010101010101010101010101010"
      "10101010101010101010101010101010101010101010101010105f6c61");
  BOOST_REQUIRE(found.size() == 461u);
  auto s = decode<kv_transfer_status>(found);
  BOOST_REQUIRE(!s);
  BOOST_TEST(names_the_budget(s.error()), message_of(s.error()));
}

BOOST_AUTO_TEST_CASE(an_array_of_n_one_byte_elements_in_n_plus_header_bytes_decodes) {
  std::vector<uint64_t> small(70000, 7); // positive fixints: one byte each, array32 header
  auto bytes = encode(small);
  BOOST_TEST(bytes.size() == small.size() + 5);
  auto back = decode<std::vector<uint64_t>>(bytes);
  BOOST_REQUIRE(back);
  BOOST_TEST(*back == small);
  std::map<uint64_t, uint64_t> m;
  for (uint64_t i = 0; i < 100; ++i)
    m[i] = i;
  auto mb = decode<std::map<uint64_t, uint64_t>>(encode(m));
  BOOST_REQUIRE(mb);
  BOOST_TEST(mb->size() == 100u);
  // Truncation is still reported as such.
  bytes.pop_back();
  auto cut = decode<std::vector<uint64_t>>(bytes);
  BOOST_REQUIRE(!cut);
  BOOST_TEST(message_of(cut.error()) == "truncated message");
}

BOOST_AUTO_TEST_SUITE_END()
