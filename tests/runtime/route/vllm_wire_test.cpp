#include "runtime/route/vllm_wire.hpp"

#include "runtime/kv/block_hash.hpp"
#include "runtime/route/radix_index.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>
#include <msgpack.hpp>

#include <numeric>
#include <random>
#include <string>

using namespace dynamo;
using namespace dynamo::route;

namespace {

using packer = msgpack::packer<msgpack::sbuffer>;

std::vector<uint8_t> bytes_of(const msgpack::sbuffer& b) {
  auto* p = reinterpret_cast<const uint8_t*>(b.data());
  return {p, p + b.size()};
}

void pack_u64s(packer& pk, std::initializer_list<uint64_t> v) {
  pk.pack_array(static_cast<uint32_t>(v.size()));
  for (uint64_t x : v)
    pk.pack(x);
}

void pack_range(packer& pk, uint32_t first, uint32_t n) {
  pk.pack_array(n);
  for (uint32_t i = 0; i < n; ++i)
    pk.pack(first + i);
}

// ["BlockStored", hashes, parent, tokens 1..n_tokens, block_size, lora_id, medium,
//  lora_name, extra_keys, trailing...]
void pack_stored_array(packer& pk, std::initializer_list<uint64_t> hashes,
                       std::optional<int64_t> parent, uint32_t n_tokens, uint32_t block_size,
                       const char* medium = "GPU", const char* trailing = nullptr) {
  pk.pack_array(trailing ? 11 : 9);
  pk.pack(std::string{"BlockStored"});
  pack_u64s(pk, hashes);
  if (parent)
    pk.pack(*parent);
  else
    pk.pack_nil();
  pack_range(pk, 1, n_tokens);
  pk.pack(block_size);
  pk.pack_nil(); // legacy lora_id
  if (medium)
    pk.pack(std::string{medium});
  else
    pk.pack_nil();
  pk.pack_nil(); // lora_name
  pk.pack_nil(); // extra_keys
  if (trailing) {
    pk.pack_nil(); // block_mm_infos slot / group_idx absent
    pk.pack(std::string{trailing});
  }
}

/// [ts, [events...], dp_rank] around events packed by `body`.
template <class F>
std::vector<uint8_t> payload(uint32_t n_events, F&& body, std::optional<int> dp = std::nullopt) {
  msgpack::sbuffer b;
  packer pk(b);
  pk.pack_array(3);
  pk.pack(1.25);
  pk.pack_array(n_events);
  body(pk);
  if (dp)
    pk.pack(*dp);
  else
    pk.pack_nil();
  return bytes_of(b);
}

vllm_event_batch decode_ok(const std::vector<uint8_t>& p) {
  auto r = decode_vllm_payload(p);
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
  return *r;
}

bool is_malformed(const std::vector<uint8_t>& p) {
  auto r = decode_vllm_payload(p);
  return !r && code_of(r.error()) == errc::malformed_message;
}

} // namespace

BOOST_AUTO_TEST_SUITE(vllm_wire_decoding)

BOOST_AUTO_TEST_CASE(array_form_block_stored_decodes_every_field) {
  auto p = payload(1, [](packer& pk) { pack_stored_array(pk, {11, 12}, -1, 8, 4); }, 2);
  auto batch = decode_ok(p);
  BOOST_TEST(batch.ts == 1.25);
  BOOST_TEST(*batch.dp_rank == 2);
  BOOST_REQUIRE_EQUAL(batch.events.size(), 1u);
  const vllm_event& ev = batch.events[0];
  BOOST_TEST((ev.kind == vllm_event_kind::block_stored));
  BOOST_TEST((ev.block_hashes == std::vector<uint64_t>{11, 12}));
  BOOST_TEST(*ev.parent_block_hash == UINT64_MAX); // -1 reinterpreted bitwise
  BOOST_TEST(ev.token_ids.size() == 8u);
  BOOST_TEST(ev.token_ids.back() == 8u);
  BOOST_TEST(ev.block_size == 4u);
  BOOST_TEST(*ev.medium == "GPU");
  BOOST_TEST(!ev.lora_name);
  BOOST_TEST(!ev.bigram);
}

BOOST_AUTO_TEST_CASE(map_form_decodes_like_the_array_form_and_ignores_unknown_keys) {
  auto p = payload(1, [](packer& pk) {
    pk.pack_map(6);
    pk.pack(std::string{"future_field"});
    pk.pack_array(1);
    pk.pack(std::string{"x"});
    pk.pack(std::string{"type"});
    pk.pack(std::string{"BlockStored"});
    pk.pack(std::string{"block_hashes"});
    pack_u64s(pk, {11, 12});
    pk.pack(std::string{"parent_block_hash"});
    pk.pack(int64_t{-1});
    pk.pack(std::string{"token_ids"});
    pack_range(pk, 1, 8);
    pk.pack(std::string{"block_size"});
    pk.pack(4);
  });
  auto batch = decode_ok(p);
  const vllm_event& ev = batch.events.at(0);
  BOOST_TEST((ev.kind == vllm_event_kind::block_stored));
  BOOST_TEST((ev.block_hashes == std::vector<uint64_t>{11, 12}));
  BOOST_TEST(*ev.parent_block_hash == UINT64_MAX);
  BOOST_TEST(ev.token_ids.size() == 8u);
  BOOST_TEST(!ev.medium);
}

BOOST_AUTO_TEST_CASE(removed_and_cleared_decode_with_extra_trailing_fields) {
  auto p = payload(3, [](packer& pk) {
    pk.pack_array(4);
    pk.pack(std::string{"BlockRemoved"});
    pack_u64s(pk, {5, 6});
    pk.pack(std::string{"CPU_PINNED"});
    pk.pack_nil();
    pk.pack_array(2);
    pk.pack(std::string{"AllBlocksCleared"});
    pk.pack(99);
    pk.pack_map(2);
    pk.pack(std::string{"type"});
    pk.pack(std::string{"BlockRemoved"});
    pk.pack(std::string{"block_hashes"});
    pk.pack_array(1);
    pk.pack(int64_t{-2});
  });
  auto batch = decode_ok(p);
  BOOST_REQUIRE_EQUAL(batch.events.size(), 3u);
  BOOST_TEST((batch.events[0].kind == vllm_event_kind::block_removed));
  BOOST_TEST((batch.events[0].block_hashes == std::vector<uint64_t>{5, 6}));
  BOOST_TEST((tier_of_medium(*batch.events[0].medium) == storage_tier::host_pinned));
  BOOST_TEST((batch.events[1].kind == vllm_event_kind::all_blocks_cleared));
  BOOST_TEST(batch.events[2].block_hashes[0] == UINT64_MAX - 1);
  BOOST_TEST(!batch.dp_rank);
}

BOOST_AUTO_TEST_CASE(eagle_bigram_tokens_flatten_to_firsts_plus_the_last_second) {
  auto p = payload(1, [](packer& pk) {
    pk.pack_array(5);
    pk.pack(std::string{"BlockStored"});
    pack_u64s(pk, {11, 12});
    pk.pack_nil();
    pk.pack_array(4);
    for (uint32_t a : {10u, 11u, 12u, 13u}) {
      pk.pack_array(2);
      pk.pack(a);
      pk.pack(a + 1);
    }
    pk.pack(2);
  });
  auto batch = decode_ok(p);
  const vllm_event& ev = batch.events.at(0);
  BOOST_TEST(ev.bigram);
  BOOST_TEST((ev.token_ids == std::vector<uint32_t>{10, 11, 12, 13, 14}));
}

BOOST_AUTO_TEST_CASE(events_of_other_kv_groups_are_ignored) {
  auto p = payload(3, [](packer& pk) {
    pack_stored_array(pk, {1}, std::nullopt, 4, 4, "GPU", "sliding_window");
    pack_stored_array(pk, {2}, std::nullopt, 4, 4, "GPU", "full_attention");
    pk.pack_map(3);
    pk.pack(std::string{"type"});
    pk.pack(std::string{"BlockRemoved"});
    pk.pack(std::string{"block_hashes"});
    pack_u64s(pk, {3});
    pk.pack(std::string{"group_idx"});
    pk.pack(1);
  });
  auto batch = decode_ok(p);
  BOOST_TEST((batch.events[0].kind == vllm_event_kind::ignored));
  BOOST_TEST((batch.events[1].kind == vllm_event_kind::block_stored));
  BOOST_TEST((batch.events[2].kind == vllm_event_kind::ignored));
}

BOOST_AUTO_TEST_CASE(hostile_or_malformed_bytes_are_errors_not_crashes) {
  auto good = payload(1, [](packer& pk) { pack_stored_array(pk, {11}, std::nullopt, 4, 4); });
  BOOST_TEST(is_malformed({}));
  BOOST_TEST(is_malformed({0xc1}));
  BOOST_TEST(is_malformed({good.begin(), good.end() - 3}));        // truncated
  BOOST_TEST(is_malformed({0xdd, 0xff, 0xff, 0xff, 0xff}));        // array32 of 2^32-1
  BOOST_TEST(is_malformed({0xdf, 0xff, 0xff, 0xff, 0xff}));        // map32 of 2^32-1
  BOOST_TEST(is_malformed(std::vector<uint8_t>(100, 0x91)));       // 100 nested arrays
  BOOST_TEST(is_malformed(payload(1, [](packer& pk) { pk.pack(7); })));
  BOOST_TEST(is_malformed(payload(1, [](packer& pk) {
    pk.pack_array(2);
    pk.pack(std::string{"BlockMoved"});
    pk.pack_nil();
  })));
  BOOST_TEST(is_malformed(payload(1, [](packer& pk) { // token id above u32
    pk.pack_array(5);
    pk.pack(std::string{"BlockStored"});
    pack_u64s(pk, {1});
    pk.pack_nil();
    pack_u64s(pk, {uint64_t{1} << 40});
    pk.pack(1);
  })));
  BOOST_TEST(is_malformed(payload(1, [](packer& pk) { // map without token_ids
    pk.pack_map(2);
    pk.pack(std::string{"type"});
    pk.pack(std::string{"BlockStored"});
    pk.pack(std::string{"block_hashes"});
    pack_u64s(pk, {1});
  })));
  msgpack::sbuffer b;
  packer pk(b);
  pk.pack_array(3);
  pk.pack(std::string{"not a timestamp"});
  pk.pack_array(0);
  pk.pack_nil();
  BOOST_TEST(is_malformed(bytes_of(b)));
  // Every prefix of a valid payload fails cleanly.
  for (size_t n = 0; n < good.size(); ++n)
    BOOST_TEST(is_malformed({good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)}));
}

BOOST_AUTO_TEST_CASE(a_message_is_exactly_three_frames_with_a_big_endian_sequence) {
  auto p = payload(0, [](packer&) {});
  std::vector<uint8_t> topic{'k', 'v'};
  std::vector<uint8_t> seq{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<std::span<const uint8_t>> frames{topic, seq, p};
  auto msg = decode_vllm_frames(frames);
  BOOST_REQUIRE(msg);
  BOOST_TEST(msg->topic == "kv");
  BOOST_TEST(msg->sequence == 0x0102030405060708ull);
  BOOST_TEST(msg->batch.events.empty());
  std::vector<std::span<const uint8_t>> two{topic, p};
  BOOST_TEST(!decode_vllm_frames(two));
  std::vector<uint8_t> short_seq{1, 2, 3};
  std::vector<std::span<const uint8_t>> bad_seq{topic, short_seq, p};
  BOOST_TEST(!decode_vllm_frames(bad_seq));
}

BOOST_AUTO_TEST_CASE(randomly_corrupted_payloads_decode_or_fail_but_never_crash) {
  auto good = payload(3, [](packer& pk) {
    pack_stored_array(pk, {11, 12}, -1, 8, 4, "GPU", "full_attention");
    pk.pack_array(3);
    pk.pack(std::string{"BlockRemoved"});
    pack_u64s(pk, {5, 6});
    pk.pack_nil();
    pk.pack_map(2);
    pk.pack(std::string{"type"});
    pk.pack(std::string{"AllBlocksCleared"});
    pk.pack(std::string{"extra"});
    pk.pack_array(0);
  }, 1);
  std::mt19937_64 rng(11);
  size_t decoded = 0, failed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint8_t> bad = good;
    for (uint64_t flips = 1 + rng() % 4; flips > 0; --flips)
      bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    auto r = decode_vllm_payload(bad);
    if (r) {
      ++decoded;
      vllm_event_converter conv(1, 4); // converting whatever decoded must be safe too
      (void)conv.convert(*r);
    } else {
      ++failed;
      BOOST_TEST(code_of(r.error()) == errc::malformed_message);
    }
  }
  BOOST_TEST(decoded + failed == 3000u);
  BOOST_TEST(failed > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(vllm_event_conversion)

BOOST_AUTO_TEST_CASE(tokens_hashes_are_the_router_local_hashes_and_ids_are_fresh) {
  auto batch = decode_ok(payload(2, [](packer& pk) {
    pack_stored_array(pk, {11, 12}, std::nullopt, 8, 4);
    pack_stored_array(pk, {13}, 12, 4, 4);
  }, 3));
  vllm_event_converter conv(77, 4, 100);
  auto out = conv.convert(batch);
  BOOST_REQUIRE_EQUAL(out.size(), 2u);
  std::vector<uint32_t> t{1, 2, 3, 4, 5, 6, 7, 8};
  auto local = kv::local_block_hashes(t, 4);
  const auto& a = out[0].event;
  BOOST_TEST(out[0].worker_id == 77u);
  BOOST_TEST(a.event_id == 100u);
  BOOST_TEST(a.dp_rank == 3u);
  BOOST_REQUIRE_EQUAL(a.blocks.size(), 2u);
  BOOST_TEST(a.blocks[0].block_hash == 11u);
  BOOST_TEST(a.blocks[0].tokens_hash == local[0]);
  BOOST_TEST(a.blocks[1].tokens_hash == local[1]);
  BOOST_TEST(out[1].event.event_id == 101u);
  BOOST_TEST(*out[1].event.parent_hash == 12u);
  BOOST_TEST(conv.next_event_id() == 102u);

  // The router finds the stored prefix from the prompt's own hashes.
  radix_index idx;
  for (const auto& ev : out)
    BOOST_TEST(to_string(idx.apply(ev)) == "ok");
  BOOST_TEST(idx.find_matches(local).blocks_of(worker_key{77, 3}) == 2u);
}

BOOST_AUTO_TEST_CASE(a_block_size_mismatch_or_missing_tokens_stop_the_block_list) {
  auto batch = decode_ok(payload(2, [](packer& pk) {
    pack_stored_array(pk, {11, 12}, std::nullopt, 8, 8); // engine blocks of 8
    pack_stored_array(pk, {13, 14}, std::nullopt, 6, 4); // 6 tokens for 2 blocks
  }));
  vllm_event_converter conv(1, 4);
  auto out = conv.convert(batch);
  BOOST_REQUIRE_EQUAL(out.size(), 2u);
  BOOST_TEST(out[0].event.blocks.empty());
  BOOST_TEST(out[1].event.blocks.size() == 1u);
  BOOST_TEST(conv.truncated_events() == 2u);
}

BOOST_AUTO_TEST_CASE(a_repeated_hash_becomes_an_empty_removal) {
  auto batch = decode_ok(payload(1, [](packer& pk) {
    pack_stored_array(pk, {11, 12}, 12, 8, 4);
  }));
  vllm_event_converter conv(1, 4);
  auto out = conv.convert(batch);
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST((out[0].event.kind == protocol::kv_event_kind::removed));
  BOOST_TEST(out[0].event.removed_hashes.empty());
  BOOST_TEST(conv.self_referencing_events() == 1u);
}

BOOST_AUTO_TEST_CASE(off_device_events_are_skipped_without_consuming_ids) {
  auto batch = decode_ok(payload(3, [](packer& pk) {
    pack_stored_array(pk, {11}, std::nullopt, 4, 4, "cpu_tier2");
    pack_stored_array(pk, {12}, std::nullopt, 4, 4, nullptr);
    pk.pack_array(1);
    pk.pack(std::string{"AllBlocksCleared"});
  }));
  vllm_event_converter conv(1, 4);
  auto out = conv.convert(batch);
  BOOST_REQUIRE_EQUAL(out.size(), 2u);
  BOOST_TEST(out[0].event.event_id == 0u);
  BOOST_TEST(out[0].event.blocks[0].block_hash == 12u);
  BOOST_TEST((out[1].event.kind == protocol::kv_event_kind::cleared));
  BOOST_TEST(out[1].event.event_id == 1u);
  BOOST_TEST(conv.skipped_off_device() == 1u);
  BOOST_TEST((tier_of_medium("DISK") == storage_tier::disk));
  BOOST_TEST((tier_of_medium("shared") == storage_tier::external));
  BOOST_TEST((tier_of_medium("GPU") == storage_tier::device));
}

BOOST_AUTO_TEST_CASE(eagle_blocks_hash_a_window_of_block_size_plus_one) {
  vllm_event_batch batch;
  vllm_event ev;
  ev.kind = vllm_event_kind::block_stored;
  ev.block_hashes = {1, 2};
  ev.token_ids = {10, 11, 12, 13, 14};
  ev.bigram = true;
  ev.block_size = 2;
  batch.events.push_back(ev);
  vllm_event_converter conv(1, 2);
  auto out = conv.convert(batch);
  std::vector<uint32_t> w0{10, 11, 12}, w1{12, 13, 14};
  BOOST_TEST(out.at(0).event.blocks.at(0).tokens_hash == kv::local_block_hash(w0));
  BOOST_TEST(out.at(0).event.blocks.at(1).tokens_hash == kv::local_block_hash(w1));
}

// research/dynamo.md 3.1: LoRA "my-lora", tokens [1,2,3,4] (recomputed with libxxhash).
BOOST_AUTO_TEST_CASE(lora_and_multimodal_blocks_hash_as_dynamo_does) {
  std::vector<uint32_t> t{1, 2, 3, 4};
  BOOST_TEST(tokens_hash_of(t) == kv::local_block_hash(t));
  BOOST_TEST(tokens_hash_of(t, "my-lora") == 15671544057904749233ull);
  std::vector<uint64_t> mm{9, 3}, mm_sorted{3, 9};
  BOOST_TEST(tokens_hash_of(t, {}, mm) != tokens_hash_of(t));
  BOOST_TEST(tokens_hash_of(t, {}, mm) == tokens_hash_of(t, {}, mm_sorted));
}

BOOST_AUTO_TEST_CASE(multimodal_extra_keys_feed_the_block_hash) {
  std::string key(64, 'a');
  key.replace(0, 16, "00000000000000ff");
  auto batch = decode_ok(payload(1, [&](packer& pk) {
    pk.pack_array(9);
    pk.pack(std::string{"BlockStored"});
    pack_u64s(pk, {11});
    pk.pack_nil();
    pack_range(pk, 1, 4);
    pk.pack(4);
    pk.pack_nil();
    pk.pack_nil();
    pk.pack_nil();
    pk.pack_array(1);    // extra_keys: one block
    pk.pack_array(2);    // two items
    pk.pack(key);        // a multimodal identifier
    pk.pack(std::string{"lora-salt"}); // not one
  }));
  const vllm_event& ev = batch.events.at(0);
  BOOST_REQUIRE_EQUAL(ev.mm_hashes.size(), 1u);
  BOOST_TEST((ev.mm_hashes[0] == std::vector<uint64_t>{0xff}));
  vllm_event_converter conv(1, 4);
  auto out = conv.convert(batch);
  std::vector<uint32_t> t{1, 2, 3, 4};
  std::vector<uint64_t> mm{0xff};
  BOOST_TEST(out.at(0).event.blocks.at(0).tokens_hash == tokens_hash_of(t, {}, mm));
}

BOOST_AUTO_TEST_SUITE_END()
