#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/kv_event.hpp"
#include "runtime/protocol/llm.hpp"

#include <boost/test/unit_test.hpp>

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

BOOST_AUTO_TEST_SUITE_END()
