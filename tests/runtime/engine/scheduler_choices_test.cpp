// n > 1: the prompt is computed once, its KV blocks shared by reference count
// with the partial last block copied (copy-on-write), each choice sampled with
// its own stream and ended on its own.
#include "runtime/engine/scheduler.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <set>

using namespace dynamo;
using engine::batch;
using engine::scheduler;
using ids = std::vector<uint32_t>;
using protocol::finish_reason;
using test::iota_tokens;
using test::request;

namespace {

// 32 blocks of 4 tokens, 64 tokens per step.
engine::scheduler_config config(uint32_t num_blocks = 32, uint32_t max_seqs = 8) {
  engine::scheduler_config c;
  c.block_size = 4;
  c.num_blocks = num_blocks;
  c.max_model_len = 64;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = 64;
  return c;
}

// Each entry's token: 100 * choice + position (distinct per choice).
engine::batch_result sample_all(const batch& b) {
  engine::batch_result r;
  for (const auto& e : b.entries)
    r.sampled.push_back(e.sample ? std::optional<uint32_t>{100 * e.choice + e.sample_position} : std::nullopt);
  return r;
}

protocol::preprocessed_request choices(std::string id, uint32_t prompt_len, uint32_t n, uint32_t max_tokens) {
  auto r = request(std::move(id), iota_tokens(prompt_len, 1), max_tokens);
  r.sampling.n = n;
  r.sampling.seed = 40;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(scheduler_choices)

BOOST_AUTO_TEST_CASE(the_prompt_is_computed_once_and_forks_draw_from_its_last_step) {
  scheduler s(config());
  BOOST_REQUIRE(s.add_request(choices("r", 10, 3, 4)));
  batch b = s.schedule();
  BOOST_TEST(b.num_tokens == 10u); // prefill tokens of the whole request: the prompt, once
  BOOST_REQUIRE_EQUAL(b.entries.size(), 3u);
  const auto& parent = b.entries[0];
  BOOST_TEST(parent.tokens.size() == 10u);
  BOOST_TEST(parent.sample);
  BOOST_TEST(!parent.fork_of);
  for (uint32_t c = 1; c < 3; ++c) {
    const auto& f = b.entries[c];
    BOOST_TEST(f.tokens.empty());
    BOOST_TEST(f.sample);
    BOOST_TEST(f.choice == c);
    BOOST_TEST(*f.fork_of == parent.seq_id);
    BOOST_TEST(f.sample_position == 10u);
    BOOST_TEST(*f.sampling.seed == 40u + c); // its own stream: seed + choice
  }
  BOOST_TEST(*parent.sampling.seed == 40u);
  BOOST_TEST(b.block_copies.empty()); // copies run in the step after the prompt's KV exists
  // The full blocks of the prompt (positions 0..7) are shared three times; the
  // partial one (8, 9) belongs to choice 0, and each fork has its own fresh copy.
  const auto outs = s.update(b, sample_all(b));
  BOOST_REQUIRE_EQUAL(outs.size(), 3u);
  for (uint32_t c = 0; c < 3; ++c) {
    BOOST_TEST(outs[c].output.index == c);
    BOOST_TEST((outs[c].output.token_ids == ids{100 * c + 10}));
    BOOST_TEST(outs[c].output.finish == finish_reason::none);
  }
  batch next = s.schedule();
  BOOST_TEST(next.num_tokens == 3u); // three decodes, no prompt token again
  BOOST_REQUIRE_EQUAL(next.entries.size(), 3u);
  const ids t0 = next.entries[0].block_table;
  BOOST_REQUIRE_EQUAL(t0.size(), 3u);
  const kv::block_pool& pool = s.kv().pool();
  std::set<uint32_t> partials{t0[2]};
  for (uint32_t c = 1; c < 3; ++c) {
    const ids& t = next.entries[c].block_table;
    BOOST_REQUIRE_EQUAL(t.size(), 3u);
    BOOST_TEST(t[0] == t0[0]);
    BOOST_TEST(t[1] == t0[1]);
    partials.insert(t[2]);
  }
  BOOST_TEST(partials.size() == 3u);
  BOOST_TEST(pool.info(t0[0]).ref_count == 3u);
  BOOST_TEST(pool.info(t0[1]).ref_count == 3u);
  BOOST_REQUIRE_EQUAL(next.block_copies.size(), 2u);
  for (uint32_t c = 1; c < 3; ++c) {
    BOOST_TEST(next.block_copies[c - 1].src == t0[2]);
    BOOST_TEST(next.block_copies[c - 1].dst == next.entries[c].block_table[2]);
  }
  // While the copies are in flight their blocks hold an extra reference.
  BOOST_TEST(pool.info(t0[2]).ref_count == 1u + 2u);
  (void)s.update(next, sample_all(next));
  BOOST_TEST(pool.info(t0[2]).ref_count == 1u);
  BOOST_TEST(pool.num_used_blocks() == 2u + 3u);
  BOOST_TEST(pool.invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(a_prompt_of_whole_blocks_needs_no_copy) {
  scheduler s(config());
  BOOST_REQUIRE(s.add_request(choices("r", 8, 2, 4)));
  batch b = s.schedule();
  (void)s.update(b, sample_all(b));
  batch next = s.schedule();
  BOOST_TEST(next.block_copies.empty());
  BOOST_REQUIRE_EQUAL(next.entries.size(), 2u);
  BOOST_TEST(next.entries[0].block_table[1] == next.entries[1].block_table[1]); // both full blocks shared
  BOOST_TEST(next.entries[0].block_table[2] != next.entries[1].block_table[2]); // position 8: each its own
}

BOOST_AUTO_TEST_CASE(choices_end_on_their_own_and_only_the_last_ends_the_stream) {
  scheduler s(config());
  auto r = choices("r", 6, 3, 3);
  r.stop.stop_token_ids = {107}; // choice 1 draws 107 at position 7: it stops after 2 tokens
  BOOST_REQUIRE(s.add_request(std::move(r)));
  std::vector<engine::request_output> all;
  while (s.has_requests()) {
    batch b = s.schedule();
    auto outs = s.update(b, sample_all(b));
    all.insert(all.end(), outs.begin(), outs.end());
  }
  std::vector<uint32_t> finished_order;
  uint32_t stream_ends = 0;
  for (const auto& o : all) {
    if (o.output.choice_end() != finish_reason::none)
      finished_order.push_back(o.output.index);
    stream_ends += o.output.finish != finish_reason::none ? 1 : 0;
  }
  BOOST_TEST(stream_ends == 1u);
  BOOST_TEST(all.back().output.finish == finish_reason::length);
  BOOST_REQUIRE_EQUAL(finished_order.size(), 3u);
  BOOST_TEST(finished_order[0] == 1u); // the stop token
  for (const auto& o : all)
    if (o.output.index == 1 && o.output.choice_end() != finish_reason::none)
      BOOST_TEST(o.output.choice_finish == finish_reason::stop);
  BOOST_TEST(s.kv().pool().num_used_blocks() == 0u);
  BOOST_TEST(s.kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(abort_ends_every_choice_and_frees_every_block) {
  scheduler s(config());
  BOOST_REQUIRE(s.add_request(choices("r", 10, 4, 8)));
  batch b = s.schedule();
  (void)s.update(b, sample_all(b));
  b = s.schedule(); // copies in flight
  BOOST_TEST(s.num_running() == 4u);
  BOOST_TEST(s.abort("r"));
  (void)s.update(b, sample_all(b)); // applies nothing, releases the copies
  BOOST_TEST(!s.has_requests());
  BOOST_TEST(s.kv().pool().num_used_blocks() == 0u);
  BOOST_TEST(s.kv().pool().invariant_violation() == "");
}

BOOST_AUTO_TEST_CASE(a_request_counts_its_choices_against_max_num_seqs) {
  scheduler s(config(32, 4));
  BOOST_REQUIRE(s.add_request(choices("a", 5, 3, 4)));
  BOOST_REQUIRE(s.add_request(request("b", iota_tokens(5, 50), 4)));
  BOOST_REQUIRE(s.add_request(request("c", iota_tokens(5, 60), 4)));
  batch b = s.schedule();
  // a (3 seats) and b fit; c waits although a is a single sequence until its fork.
  BOOST_TEST(s.num_running() == 4u);
  BOOST_TEST(s.num_waiting() == 1u);
  BOOST_TEST(b.entries.size() == 4u); // a, its two forks, b
}

BOOST_AUTO_TEST_CASE(the_fork_waits_for_its_copy_blocks) {
  // 4 blocks: the 10-token prompt takes 3, so only 1 is left for 2 partial copies.
  scheduler s(config(4, 8));
  BOOST_REQUIRE(s.add_request(choices("r", 10, 3, 2)));
  batch b = s.schedule();
  BOOST_REQUIRE_EQUAL(b.entries.size(), 1u);
  BOOST_TEST(b.entries[0].tokens.size() == 9u); // one token short of the prompt: no fork yet
  BOOST_TEST(!b.entries[0].sample);
}

BOOST_AUTO_TEST_SUITE_END()
