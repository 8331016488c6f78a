#include "runtime/engine/engine_core.hpp"
#include "runtime/kv/block_hash.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using engine::engine_core;
using ids = std::vector<uint32_t>;
using protocol::finish_reason;
using test::iota_tokens;
using test::request;

namespace {

// Samples 1000 + position; fails every step once `fail` is set.
class fake_executor final : public engine::executor {
public:
  fake_executor(uint32_t num_blocks, uint32_t context, bool* fail)
      : geo_{4, num_blocks}, context_(context), fail_(fail) {}
  expected<engine::batch_result> execute(const engine::batch& b) override {
    if (fail_ && *fail_)
      return make_error(errc::device_error, "simulated device fault");
    engine::batch_result r;
    for (const auto& e : b.entries)
      r.sampled.push_back(e.sample ? std::optional<uint32_t>{1000 + e.sample_position} : std::nullopt);
    r.simulated = std::chrono::microseconds{static_cast<int64_t>(b.num_tokens)};
    return r;
  }
  engine::kv_geometry geometry() const noexcept override { return geo_; }
  uint32_t context_length() const noexcept override { return context_; }
  std::string name() const override { return "fake"; }

private:
  engine::kv_geometry geo_;
  uint32_t context_;
  bool* fail_;
};

// 16 tokens per step.
engine::engine_config small() {
  engine::engine_config cfg;
  cfg.max_num_batched_tokens = 16;
  return cfg;
}

std::unique_ptr<engine_core> make_core(uint32_t num_blocks = 16, uint32_t context = 32,
                                       bool* fail = nullptr, engine::engine_config cfg = small()) {
  auto core = engine_core::create(std::make_unique<fake_executor>(num_blocks, context, fail), cfg);
  BOOST_REQUIRE(core);
  return std::move(*core);
}

} // namespace

BOOST_AUTO_TEST_SUITE(engine_core_suite)

BOOST_AUTO_TEST_CASE(create_rejects_bad_configurations) {
  engine::engine_config cfg;
  cfg.max_num_seqs = 0;
  auto a = engine_core::create(std::make_unique<fake_executor>(16, 32, nullptr), cfg);
  BOOST_REQUIRE(!a);
  BOOST_TEST(code_of(a.error()) == errc::config_error);
  cfg = {};
  cfg.num_blocks = 17;
  BOOST_TEST(!engine_core::create(std::make_unique<fake_executor>(16, 32, nullptr), cfg));
  BOOST_TEST(!engine_core::create(nullptr));
}

BOOST_AUTO_TEST_CASE(context_length_is_clamped_to_the_kv_cache) {
  BOOST_TEST(make_core(16, 32)->max_model_len() == 32u);
  BOOST_TEST(make_core(4, 32)->max_model_len() == 16u);
  auto cfg = small();
  cfg.max_model_len = 20;
  BOOST_TEST(make_core(16, 32, nullptr, cfg)->max_model_len() == 20u);
  // What a worker publishes on its model card is the same number.
  BOOST_TEST(engine_core::max_model_len_of(fake_executor(4, 32, nullptr), small()) == 16u);
  BOOST_TEST(engine_core::max_model_len_of(fake_executor(16, 32, nullptr), cfg) == 20u);
  cfg.num_blocks = 2;
  BOOST_TEST(engine_core::max_model_len_of(fake_executor(16, 32, nullptr), cfg) == 8u);
}

BOOST_AUTO_TEST_CASE(generates_until_max_tokens_and_reports_step_facts) {
  auto core = make_core();
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(5, 1), 3)));
  BOOST_TEST(core->has_work());
  auto r = core->step();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->num_tokens == 5u);
  BOOST_TEST(r->num_seqs == 1u);
  BOOST_TEST(r->duration.count() == 5);
  BOOST_REQUIRE_EQUAL(r->outputs.size(), 1u);
  BOOST_TEST(r->outputs[0].output.token_ids == (ids{1005}), boost::test_tools::per_element());
  BOOST_REQUIRE_EQUAL(r->kv_events.size(), 1u); // block 0 (tokens 1..4) stored
  auto rest = test::run(*core);
  BOOST_TEST(rest["a"].tokens == (ids{1006, 1007}), boost::test_tools::per_element());
  BOOST_TEST(rest["a"].finish == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(invalid_requests_get_one_error_chunk) {
  auto core = make_core(16, 32);
  BOOST_REQUIRE(core->add_request(request("empty", {}, 4)));
  BOOST_REQUIRE(core->add_request(request("long", iota_tokens(32, 1), 4)));
  BOOST_REQUIRE(core->add_request(request("zero", iota_tokens(3, 1), 0)));
  BOOST_REQUIRE(core->add_request(request("fits", iota_tokens(31, 1), 4)));
  auto out = test::run(*core);
  for (const char* id : {"empty", "long", "zero"}) {
    BOOST_TEST_CONTEXT(id) {
      BOOST_TEST(out[id].finish == finish_reason::error);
      BOOST_TEST(out[id].chunks == 1u);
      BOOST_TEST(out[id].tokens.empty());
      // The request's own fault: the frontend answers 400, not 500; a prompt
      // past the context says so (OpenAI code context_length_exceeded).
      const errc want = std::string_view{id} == "long" ? errc::context_length_exceeded : errc::invalid_argument;
      BOOST_TEST(out[id].error_code == static_cast<uint8_t>(want));
    }
  }
  BOOST_TEST(out["long"].error.find("context length is 32") != std::string::npos);
  // 31 prompt tokens leave room for exactly one output token.
  BOOST_TEST(out["fits"].tokens == (ids{1031}), boost::test_tools::per_element());
  BOOST_TEST(out["fits"].finish == finish_reason::length);
}

BOOST_AUTO_TEST_CASE(duplicate_in_flight_request_id_is_an_error_value) {
  auto core = make_core();
  BOOST_REQUIRE(core->add_request(request("a", {1, 2}, 4)));
  auto dup = core->add_request(request("a", {3}, 4));
  BOOST_REQUIRE(!dup);
  BOOST_TEST(code_of(dup.error()) == errc::invalid_argument);
  auto out = test::run(*core);
  BOOST_TEST(out["a"].tokens.size() == 4u);
  // Once finished the id may be used again.
  BOOST_TEST(static_cast<bool>(core->add_request(request("a", {3}, 1))));
}

BOOST_AUTO_TEST_CASE(abort_frees_blocks_and_ends_the_stream_with_cancelled) {
  auto core = make_core();
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(6, 1), 10)));
  BOOST_REQUIRE(core->step());
  BOOST_TEST(core->load_metrics().active_decode_blocks == 2u);
  BOOST_TEST(core->abort("a"));
  BOOST_TEST(!core->abort("a"));
  BOOST_TEST(core->load_metrics().active_decode_blocks == 0u);
  BOOST_TEST(core->has_work()); // the cancelled chunk is still to be delivered
  auto r = core->step();
  BOOST_REQUIRE(r);
  BOOST_REQUIRE_EQUAL(r->outputs.size(), 1u);
  BOOST_TEST(r->outputs[0].output.finish == finish_reason::cancelled);
  BOOST_TEST(r->num_seqs == 0u);
  BOOST_TEST(!core->has_work());
}

// A client that leaves must cost at most the step in flight: wherever its
// request is (queued, mid-way through a chunked prefill, decoding), abort()
// frees every block it holds at once, the next step computes nothing for it
// and delivers its `cancelled` chunk, and the whole cache is usable again.
namespace {

uint32_t free_blocks(const engine_core& core) { return core.sched().kv().pool().num_free_blocks(); }

// The step after an abort: only the cancelled chunk of `id`, plus `tokens` computed for others.
void expect_cancelled_next_step(engine_core& core, const std::string& id, uint32_t tokens) {
  auto r = core.step();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->num_tokens == tokens);
  bool seen = false;
  for (const auto& o : r->outputs) {
    if (o.request_id != id)
      continue;
    BOOST_TEST(!seen);
    seen = true;
    BOOST_TEST(o.output.finish == finish_reason::cancelled);
    BOOST_TEST(o.output.token_ids.empty());
  }
  BOOST_TEST(seen);
}

// A prompt that needs every block of a 16-block cache runs to its end.
void expect_whole_cache_usable(engine_core& core) {
  BOOST_REQUIRE(core.add_request(request("whole", iota_tokens(63, 500), 1)));
  auto out = test::run(core);
  BOOST_TEST(out["whole"].finish == finish_reason::length);
  BOOST_TEST(out["whole"].tokens == (ids{1063}), boost::test_tools::per_element());
  BOOST_TEST(free_blocks(core) == 16u);
}

} // namespace

BOOST_AUTO_TEST_CASE(abort_of_a_queued_request_ends_it_before_any_of_it_is_computed) {
  auto cfg = small();
  cfg.max_num_seqs = 1; // b waits behind a
  auto core = make_core(16, 64, nullptr, cfg);
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(6, 1), 3)));
  BOOST_REQUIRE(core->add_request(request("b", iota_tokens(40, 100), 10)));
  BOOST_REQUIRE(core->step()); // a's prompt
  BOOST_TEST(core->sched().num_waiting() == 1u);
  BOOST_TEST(free_blocks(*core) == 14u); // a: 2 blocks; b holds none
  BOOST_TEST(core->abort("b"));
  BOOST_TEST(core->sched().num_waiting() == 0u);
  BOOST_TEST(free_blocks(*core) == 14u);
  expect_cancelled_next_step(*core, "b", 1); // a's decode only
  auto rest = test::run(*core);
  BOOST_TEST(rest["a"].finish == finish_reason::length);
  BOOST_TEST(rest.count("b") == 0u);
  BOOST_TEST(free_blocks(*core) == 16u);
  // Nothing of b was computed: its prompt is not in the prefix cache.
  BOOST_REQUIRE(core->add_request(request("b2", iota_tokens(40, 100), 1)));
  BOOST_TEST(test::run(*core)["b2"].cached_tokens == 0u);
  expect_whole_cache_usable(*core);
}

BOOST_AUTO_TEST_CASE(abort_mid_chunked_prefill_frees_its_blocks_and_stops_the_prefill) {
  auto core = make_core(16, 64); // 16 tokens per step: a 40-token prompt takes 3 chunks
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(40, 100), 10)));
  auto first = core->step();
  BOOST_REQUIRE(first);
  BOOST_TEST(first->num_tokens == 16u);
  BOOST_TEST(first->outputs.empty()); // mid-prefill: nothing to say yet
  BOOST_TEST(free_blocks(*core) == 12u);
  BOOST_TEST(core->abort("a"));
  BOOST_TEST(free_blocks(*core) == 16u);
  BOOST_TEST(core->load_metrics().active_prefill_tokens == 0u);
  expect_cancelled_next_step(*core, "a", 0); // the other 24 tokens are never computed
  BOOST_TEST(!core->has_work());
  // The chunk that was computed stays in the prefix cache (free, evictable):
  // the same prompt again starts after it.
  BOOST_REQUIRE(core->add_request(request("again", iota_tokens(40, 100), 1)));
  BOOST_TEST(test::run(*core)["again"].cached_tokens == 16u);
  expect_whole_cache_usable(*core);
}

BOOST_AUTO_TEST_CASE(abort_while_decoding_frees_prompt_and_output_blocks) {
  auto core = make_core(16, 64);
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(6, 1), 20)));
  for (int i = 0; i < 4; ++i) // prompt, then 3 decodes: 9 tokens of KV
    BOOST_REQUIRE(core->step());
  BOOST_TEST(free_blocks(*core) == 13u);
  BOOST_TEST(core->abort("a"));
  BOOST_TEST(free_blocks(*core) == 16u);
  expect_cancelled_next_step(*core, "a", 0);
  BOOST_TEST(!core->has_work());
  expect_whole_cache_usable(*core);
}

BOOST_AUTO_TEST_CASE(executor_failure_fails_every_request_with_an_error_chunk) {
  bool fail = false;
  auto core = make_core(16, 32, &fail);
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(3, 1), 10)));
  BOOST_REQUIRE(core->step());
  BOOST_REQUIRE(core->add_request(request("b", iota_tokens(3, 11), 10)));
  fail = true;
  auto r = core->step();
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::device_error);
  BOOST_TEST(core->load_metrics().active_decode_blocks == 0u);
  fail = false;
  auto next = core->step();
  BOOST_REQUIRE(next);
  BOOST_REQUIRE_EQUAL(next->outputs.size(), 2u);
  for (const auto& o : next->outputs) {
    BOOST_TEST(o.output.finish == finish_reason::error);
    BOOST_TEST(o.output.error.find("simulated device fault") != std::string::npos);
  }
  BOOST_TEST(!core->has_work());
}

BOOST_AUTO_TEST_CASE(cached_tokens_appear_on_the_first_chunk_only) {
  auto core = make_core();
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(9, 1), 1)));
  (void)test::run(*core);
  BOOST_REQUIRE(core->add_request(request("b", iota_tokens(12, 1), 3)));
  auto r = core->step();
  BOOST_REQUIRE(r);
  BOOST_REQUIRE_EQUAL(r->outputs.size(), 1u);
  BOOST_TEST(r->outputs[0].output.cached_tokens == 8u);
  auto rest = core->step();
  BOOST_REQUIRE(rest);
  BOOST_TEST(rest->outputs[0].output.cached_tokens == 0u);
}

BOOST_AUTO_TEST_CASE(stored_events_match_the_router_hashes_of_prompt_and_output) {
  auto core = make_core();
  const auto prompt = iota_tokens(6, 1);
  BOOST_REQUIRE(core->add_request(request("a", prompt, 6)));
  std::vector<protocol::kv_event> events;
  auto out = test::run(*core, &events);
  // The sequence is prompt + output; its KV covers all but the last sampled token.
  auto all = prompt;
  all.insert(all.end(), out["a"].tokens.begin(), out["a"].tokens.end());
  all.pop_back();
  const auto want = kv::sequence_hashes_of_tokens(all, 4);
  std::vector<uint64_t> stored;
  std::optional<uint64_t> expected_parent;
  for (const auto& e : events) {
    BOOST_REQUIRE(e.kind == protocol::kv_event_kind::stored);
    BOOST_TEST((e.parent_hash == expected_parent));
    for (const auto& b : e.blocks)
      stored.push_back(b.block_hash);
    expected_parent = stored.back();
  }
  BOOST_TEST(stored == want, boost::test_tools::per_element());
  for (size_t i = 1; i < events.size(); ++i)
    BOOST_TEST(events[i].event_id == events[i - 1].event_id + 1);
}

BOOST_AUTO_TEST_CASE(load_metrics_count_blocks_and_queues) {
  auto cfg = small();
  cfg.max_num_seqs = 1;
  auto core = make_core(16, 32, nullptr, cfg);
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(6, 1), 10)));
  BOOST_REQUIRE(core->add_request(request("b", iota_tokens(7, 11), 10)));
  auto before = core->load_metrics();
  BOOST_TEST(before.num_waiting == 2u);
  BOOST_TEST(before.active_prefill_tokens == 13u);
  BOOST_REQUIRE(core->step());
  auto m = core->load_metrics();
  BOOST_TEST(m.num_running == 1u);
  BOOST_TEST(m.num_waiting == 1u);
  BOOST_TEST(m.active_decode_blocks == 2u);
  BOOST_TEST(m.total_blocks == 16u);
  BOOST_TEST(m.active_prefill_tokens == 7u);
  BOOST_TEST(m.kv_usage == 0.125f);
}

BOOST_AUTO_TEST_SUITE_END()
