// The vLLM KV-event relay: real-format batches (both msgspec encodings) and the
// sequencing rules of one engine stream (gaps, replays, late joins, restarts).
#include "runtime/route/vllm_relay.hpp"

#include "runtime/kv/block_hash.hpp"
#include "runtime/route/kv_indexer.hpp"
#include "runtime/route/radix_index.hpp"

#include "test_events.hpp"
#include "vllm_fixtures.hpp"

#include <boost/test/unit_test.hpp>
#include <msgpack.hpp>

#include <string_view>

using namespace dynamo;
using namespace dynamo::route;

namespace {

constexpr uint64_t worker = 0xabc;
constexpr uint32_t bs = 4;

std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoul(std::string{hex.substr(i, 2)}, nullptr, 16)));
  return out;
}

std::vector<uint32_t> tokens(uint32_t first, uint32_t n) {
  std::vector<uint32_t> t(n);
  for (uint32_t i = 0; i < n; ++i)
    t[i] = first + i;
  return t;
}

/// [ts, [["BlockStored", hashes, parent, tokens, bs, nil, "GPU"]], 0]
std::vector<uint8_t> stored(std::vector<uint64_t> hashes, std::optional<uint64_t> parent,
                            uint32_t first_token) {
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_array(3);
  pk.pack(2.5);
  pk.pack_array(1);
  pk.pack_array(7);
  pk.pack(std::string{"BlockStored"});
  pk.pack(hashes);
  if (parent)
    pk.pack(*parent);
  else
    pk.pack_nil();
  pk.pack(tokens(first_token, static_cast<uint32_t>(hashes.size()) * bs));
  pk.pack(bs);
  pk.pack_nil();
  pk.pack(std::string{"GPU"});
  pk.pack(0);
  auto* p = reinterpret_cast<const uint8_t*>(b.data());
  return {p, p + b.size()};
}

/// The three frames of a live message.
struct message {
  std::vector<uint8_t> topic{'k', 'v'};
  std::vector<uint8_t> seq;
  std::vector<uint8_t> payload;
  std::vector<std::span<const uint8_t>> frames;
  message(uint64_t sequence, std::vector<uint8_t> p) : payload(std::move(p)) {
    for (int i = 7; i >= 0; --i)
      seq.push_back(static_cast<uint8_t>(sequence >> (8 * i)));
    frames = {topic, seq, payload};
  }
};

/// A relay whose events are applied to an index, as the router would.
struct harness {
  vllm_relay relay;
  radix_index index;
  std::vector<protocol::router_event> seen;
  explicit harness(bool replay) : relay(vllm_relay_options{worker, 0, bs, replay, 4096}) {}

  std::optional<uint64_t> take(vllm_relay_step step) {
    for (auto& ev : step.events) {
      BOOST_TEST(to_string(index.apply(ev)) != "invalid_block");
      seen.push_back(std::move(ev));
    }
    return step.replay_from;
  }
  std::optional<uint64_t> live(uint64_t sequence, std::vector<uint8_t> payload) {
    message m(sequence, std::move(payload));
    return take(relay.on_message(m.frames));
  }
  void replayed(uint64_t sequence, const std::vector<uint8_t>& payload) {
    BOOST_TEST(!take(relay.on_replay_batch(sequence, payload)));
  }
  void replay_end(bool complete) { BOOST_TEST(!take(relay.on_replay_end(complete))); }
  /// Cached prefix (in blocks) of the prompt starting at `first_token`.
  uint32_t cached(uint32_t first_token, uint32_t blocks) const {
    auto t = tokens(first_token, blocks * bs);
    return index.find_matches(kv::local_block_hashes(t, bs)).blocks_of(worker_key{worker, 0});
  }
  std::vector<protocol::kv_event_kind> kinds() const {
    std::vector<protocol::kv_event_kind> out;
    for (const auto& e : seen)
      out.push_back(e.event.kind);
    return out;
  }
};

using k = protocol::kv_event_kind;

} // namespace

BOOST_AUTO_TEST_SUITE(vllm_real_format)

BOOST_AUTO_TEST_CASE(array_and_map_encodings_of_one_batch_decode_alike) {
  auto a = decode_vllm_payload(from_hex(vllm_fixtures::array_batch_hex));
  auto m = decode_vllm_payload(from_hex(vllm_fixtures::map_batch_hex));
  BOOST_REQUIRE_MESSAGE(a, (a ? "" : describe(a.error())));
  BOOST_REQUIRE_MESSAGE(m, (m ? "" : describe(m.error())));
  for (const vllm_event_batch* b : {&*a, &*m}) {
    BOOST_TEST(b->ts == 1712345678.25);
    BOOST_TEST(*b->dp_rank == 0);
    BOOST_REQUIRE_EQUAL(b->events.size(), 3u);
    const vllm_event& s = b->events[0];
    BOOST_TEST((s.kind == vllm_event_kind::block_stored));
    BOOST_TEST((s.block_hashes ==
                std::vector<uint64_t>{static_cast<uint64_t>(-7046029254386353131LL),
                                      0xF00DFACECAFEBEEFull}));
    BOOST_TEST(!s.parent_block_hash);
    BOOST_TEST((s.token_ids == tokens(100, 8)));
    BOOST_TEST(s.block_size == 4u);
    BOOST_TEST(*s.medium == "GPU");
    BOOST_TEST((b->events[1].kind == vllm_event_kind::block_removed));
    BOOST_TEST((b->events[1].block_hashes == std::vector<uint64_t>{0xF00DFACECAFEBEEFull}));
    BOOST_TEST((b->events[2].kind == vllm_event_kind::all_blocks_cleared));
  }
}

BOOST_AUTO_TEST_CASE(a_real_format_batch_indexes_the_prompt_blocks) {
  vllm_event_batch b = *decode_vllm_payload(from_hex(vllm_fixtures::map_batch_hex));
  auto cleared = b.events.back();
  b.events.resize(1); // the stored event alone
  vllm_event_converter conv(worker, bs);
  radix_index idx;
  for (const auto& ev : conv.convert(b))
    BOOST_TEST(to_string(idx.apply(ev)) == "ok");
  auto local = kv::local_block_hashes(tokens(100, 8), bs);
  BOOST_TEST(idx.find_matches(local).blocks_of(worker_key{worker, 0}) == 2u);
  b.events = {*decode_vllm_payload(from_hex(vllm_fixtures::array_batch_hex)).value().events.begin()};
  b.events[0].kind = vllm_event_kind::block_removed;
  b.events[0].block_hashes = {0xF00DFACECAFEBEEFull};
  for (const auto& ev : conv.convert(b))
    BOOST_TEST(to_string(idx.apply(ev)) == "ok");
  BOOST_TEST(idx.find_matches(local).blocks_of(worker_key{worker, 0}) == 1u);
  b.events = {cleared};
  for (const auto& ev : conv.convert(b))
    (void)idx.apply(ev);
  BOOST_TEST(idx.find_matches(local).blocks_of(worker_key{worker, 0}) == 0u);
}

BOOST_AUTO_TEST_CASE(a_batch_map_without_events_or_with_a_bad_rank_is_malformed) {
  msgpack::sbuffer b;
  msgpack::packer<msgpack::sbuffer> pk(b);
  pk.pack_map(1);
  pk.pack(std::string{"ts"});
  pk.pack(1.0);
  std::vector<uint8_t> no_events(reinterpret_cast<const uint8_t*>(b.data()),
                                 reinterpret_cast<const uint8_t*>(b.data()) + b.size());
  BOOST_TEST(!decode_vllm_payload(no_events));
  b.clear();
  pk.pack_map(3);
  pk.pack(std::string{"ts"});
  pk.pack(1.0);
  pk.pack(std::string{"events"});
  pk.pack_array(0);
  pk.pack(std::string{"data_parallel_rank"});
  pk.pack(std::string{"zero"});
  std::vector<uint8_t> bad_rank(reinterpret_cast<const uint8_t*>(b.data()),
                                reinterpret_cast<const uint8_t*>(b.data()) + b.size());
  BOOST_TEST(!decode_vllm_payload(bad_rank));
  // Every prefix of the real map-form batch fails cleanly.
  auto good = from_hex(vllm_fixtures::map_batch_hex);
  for (size_t n = 0; n < good.size(); ++n)
    BOOST_TEST(!decode_vllm_payload({good.data(), n}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(vllm_relay_sequencing)

BOOST_AUTO_TEST_CASE(batches_in_order_become_consecutive_router_events) {
  harness h(false);
  BOOST_TEST(!h.live(0, stored({1, 2}, std::nullopt, 100)));
  BOOST_TEST(!h.live(1, stored({3}, 2, 108)));
  BOOST_REQUIRE_EQUAL(h.seen.size(), 2u);
  BOOST_TEST(h.seen[0].event.event_id == 0u);
  BOOST_TEST(h.seen[1].event.event_id == 1u);
  BOOST_TEST(h.seen[0].worker_id == worker);
  BOOST_TEST(h.cached(100, 3) == 3u);
  BOOST_TEST(*h.relay.next_sequence() == 2u);
  BOOST_TEST(h.relay.stats().gaps == 0u);
}

BOOST_AUTO_TEST_CASE(a_gap_without_replay_clears_the_worker_then_goes_on) {
  harness h(false);
  (void)h.live(0, stored({1}, std::nullopt, 100));
  // #1 (say, the removal of block 1) is lost; #2 stores an unrelated prompt.
  BOOST_TEST(!h.live(2, stored({7}, std::nullopt, 500)));
  BOOST_TEST(h.relay.stats().gaps == 1u);
  BOOST_TEST(h.relay.stats().clears == 1u);
  BOOST_TEST((h.kinds() == std::vector<k>{k::stored, k::cleared, k::stored}));
  BOOST_TEST(h.cached(100, 1) == 0u); // never a block the engine may have dropped
  BOOST_TEST(h.cached(500, 1) == 1u);
  BOOST_TEST(*h.relay.next_sequence() == 3u);
}

BOOST_AUTO_TEST_CASE(a_gap_with_replay_is_filled_in_order_and_nothing_is_cleared) {
  harness h(true);
  (void)h.live(0, stored({1}, std::nullopt, 100));
  auto p1 = stored({2}, 1, 104), p2 = stored({3}, 2, 108);
  BOOST_TEST(*h.live(2, p2) == 1u); // held; replay from #1
  BOOST_TEST(h.relay.replaying());
  BOOST_TEST(h.seen.size() == 1u);
  BOOST_TEST(!h.live(3, stored({4}, 3, 112))); // held too while the replay runs
  h.replayed(1, p1);
  h.replayed(2, p2); // vLLM sends every buffered batch from the start on
  h.replay_end(true);
  BOOST_TEST(!h.relay.replaying());
  BOOST_TEST((h.kinds() == std::vector<k>{k::stored, k::stored, k::stored, k::stored}));
  BOOST_TEST(h.cached(100, 4) == 4u);
  BOOST_TEST(h.relay.stats().gaps == 1u);
  BOOST_TEST(h.relay.stats().replays == 1u);
  BOOST_TEST(h.relay.stats().clears == 0u);
  BOOST_TEST(h.relay.stats().stale == 1u); // held #2 came with the replay
  BOOST_TEST(*h.relay.next_sequence() == 4u);
}

BOOST_AUTO_TEST_CASE(a_replay_that_cannot_fill_the_gap_clears_first) {
  harness h(true);
  (void)h.live(0, stored({1}, std::nullopt, 100));
  BOOST_TEST(*h.live(3, stored({9}, std::nullopt, 900)) == 1u);
  h.replayed(3, stored({9}, std::nullopt, 900)); // #1 and #2 left the engine's buffer
  h.replay_end(true);
  BOOST_TEST(h.relay.stats().replay_failures == 1u);
  BOOST_TEST(h.relay.stats().clears == 1u);
  BOOST_TEST((h.kinds() == std::vector<k>{k::stored, k::cleared, k::stored}));
  BOOST_TEST(h.cached(100, 1) == 0u);
  BOOST_TEST(h.cached(900, 1) == 1u);
}

BOOST_AUTO_TEST_CASE(a_replay_that_times_out_clears_before_the_held_batches) {
  harness h(true);
  (void)h.live(0, stored({1}, std::nullopt, 100));
  BOOST_TEST(*h.live(2, stored({9}, std::nullopt, 900)) == 1u);
  h.replay_end(false);
  BOOST_TEST(h.relay.stats().replay_failures == 1u);
  BOOST_TEST((h.kinds() == std::vector<k>{k::stored, k::cleared, k::stored}));
  BOOST_TEST(h.cached(900, 1) == 1u);
  // A late answer of the abandoned replay is ignored.
  h.replayed(1, stored({5}, std::nullopt, 300));
  BOOST_TEST(h.cached(300, 1) == 0u);
}

BOOST_AUTO_TEST_CASE(a_late_join_replays_what_the_engine_still_buffers) {
  harness h(true);
  auto p3 = stored({1}, std::nullopt, 100), p4 = stored({2}, 1, 104), p5 = stored({3}, 2, 108);
  BOOST_TEST(*h.live(5, p5) == 0u);
  h.replayed(3, p3); // the engine's buffer starts at #3: not a gap, nothing known before
  h.replayed(4, p4);
  h.replayed(5, p5);
  h.replay_end(true);
  BOOST_TEST(h.cached(100, 3) == 3u);
  BOOST_TEST(h.relay.stats().gaps == 0u);
  BOOST_TEST(h.relay.stats().clears == 0u);
  // Without a replay socket a late joiner starts where it joined.
  harness plain(false);
  BOOST_TEST(!plain.live(5, p3));
  BOOST_TEST(plain.cached(100, 1) == 1u);
  BOOST_TEST(plain.relay.stats().gaps == 0u);
}

BOOST_AUTO_TEST_CASE(a_sequence_that_goes_back_is_a_restarted_engine) {
  harness h(false);
  (void)h.live(0, stored({1}, std::nullopt, 100));
  (void)h.live(1, stored({2}, 1, 104));
  (void)h.live(0, stored({7}, std::nullopt, 500));
  BOOST_TEST(h.relay.stats().restarts == 1u);
  BOOST_TEST(h.cached(100, 2) == 0u);
  BOOST_TEST(h.cached(500, 1) == 1u);
  BOOST_TEST(*h.relay.next_sequence() == 1u);
}

BOOST_AUTO_TEST_CASE(malformed_messages_and_other_ranks_are_counted_and_dropped) {
  harness h(false);
  (void)h.live(0, stored({1}, std::nullopt, 100));
  (void)h.live(1, {0xc1});                       // not msgpack
  std::vector<uint8_t> topic{'k'}, p = stored({2}, 1, 104);
  std::vector<std::span<const uint8_t>> two{topic, p};
  (void)h.take(h.relay.on_message(two));         // two frames
  BOOST_TEST(h.relay.stats().malformed == 2u);
  auto other = stored({2}, 1, 104);
  other[other.size() - 1] = 1;                   // data_parallel_rank 1
  (void)h.live(1, other);
  BOOST_TEST(h.relay.stats().wrong_rank == 1u);
  BOOST_TEST(h.seen.size() == 1u);
  // The dropped #1 shows as a gap at #2: the index cannot be trusted, so it is cleared.
  (void)h.live(2, stored({3}, std::nullopt, 700));
  BOOST_TEST(h.relay.stats().gaps == 1u);
  BOOST_TEST(h.cached(100, 1) == 0u);
}

BOOST_AUTO_TEST_CASE(the_router_rebuilds_its_index_from_the_relay_answers) {
  harness h(false);
  (void)h.live(0, stored({1, 2}, std::nullopt, 100));
  (void)h.live(1, stored({3}, 2, 108));
  // A router that joins now asks for a dump, then gets the live events after it.
  test::resync_inbox asks;
  kv_indexer idx({}, asks.sink());
  idx.add_worker(worker_key{worker, 0});
  idx.flush();
  auto ask = asks.take();
  BOOST_REQUIRE(ask);
  idx.on_replay(h.relay.answer(*ask));
  message m(2, stored({4}, 3, 112));
  auto step = h.relay.on_message(m.frames);
  idx.on_events(step.events);
  idx.flush();
  auto local = kv::local_block_hashes(tokens(100, 16), bs);
  overlap_scores scores;
  idx.find_matches(local, false, scores);
  BOOST_TEST(scores.blocks_of(worker_key{worker, 0}) == 4u);
  BOOST_TEST(!asks.take()); // no gap: the dump's last id joins the live stream
}

BOOST_AUTO_TEST_SUITE_END()
