// engine_core's disaggregation paths with a fake executor: what an executor
// without a KV layout does, and an executor failure with holds and decode
// requests waiting for KV. (The full flows run on mockers in
// tests/runtime/mocker/disagg_test.cpp.)
#include "runtime/engine/engine_core.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "tests/runtime/engine/test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using engine::engine_core;
using ids = std::vector<uint32_t>;
using protocol::finish_reason;
using test::iota_tokens;
using test::request;

namespace {

// Samples 1000 + position; fails every step once `fail` is set; names `layout`.
class layout_executor final : public engine::executor {
public:
  layout_executor(std::optional<protocol::kv_layout> layout, bool* fail) : layout_(std::move(layout)), fail_(fail) {}
  expected<engine::batch_result> execute(const engine::batch& b) override {
    if (fail_ && *fail_)
      return make_error(errc::device_error, "simulated device fault");
    engine::batch_result r;
    for (const auto& e : b.entries)
      r.sampled.push_back(e.sample ? std::optional<uint32_t>{1000 + e.sample_position} : std::nullopt);
    return r;
  }
  engine::kv_geometry geometry() const noexcept override { return {4, 16}; }
  uint32_t context_length() const noexcept override { return 32; }
  std::string name() const override { return "fake"; }
  std::optional<protocol::kv_layout> kv_transfer_layout() override { return layout_; }

private:
  std::optional<protocol::kv_layout> layout_;
  bool* fail_;
};

const protocol::kv_layout tiny_layout = protocol::make_block_major_layout(1, 4, 1, 2, protocol::kv_dtype::f32);

std::unique_ptr<engine_core> make_core(std::optional<protocol::kv_layout> layout, bool* fail = nullptr) {
  auto core = engine_core::create(std::make_unique<layout_executor>(std::move(layout), fail));
  BOOST_REQUIRE(core);
  return std::move(*core);
}

protocol::preprocessed_request with_role(protocol::preprocessed_request r, protocol::disagg_role role,
                                         std::optional<protocol::kv_prefill_result> from = std::nullopt) {
  r.disagg = protocol::encode(protocol::disagg_params{role, std::move(from)});
  return r;
}

protocol::kv_prefill_result remote(uint32_t num_tokens, ids blocks) {
  protocol::kv_prefill_result r;
  r.hold_id = "remote";
  r.block_ids = std::move(blocks);
  r.num_tokens = num_tokens;
  r.first_token = 5;
  r.layout = tiny_layout;
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(engine_core_disagg)

BOOST_AUTO_TEST_CASE(an_executor_without_a_layout_prefills_locally_and_refuses_the_prefill_role) {
  auto core = make_core(std::nullopt);
  // Decode: the prefill result cannot be used; it is reported for release.
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  BOOST_TEST(core->pending_transfers().empty());
  auto refused = core->take_refused_prefills();
  BOOST_REQUIRE_EQUAL(refused.size(), 1u);
  BOOST_TEST(refused[0].hold_id == "remote");
  BOOST_TEST(core->take_refused_prefills().empty());
  // Prefill: failed at once, nothing computed or held.
  BOOST_REQUIRE(core->add_request(with_role(request("p", iota_tokens(6, 50), 1), protocol::disagg_role::prefill)));
  std::optional<engine::request_output> last;
  ids decoded;
  for (int i = 0; i < 20 && (core->has_work() || !last); ++i) {
    auto r = core->step();
    BOOST_REQUIRE(r);
    for (auto& o : r->outputs) {
      if (o.request_id == "p")
        last = o;
      if (o.request_id == "d")
        decoded.insert(decoded.end(), o.output.token_ids.begin(), o.output.token_ids.end());
    }
  }
  BOOST_REQUIRE(last.has_value());
  BOOST_TEST(static_cast<int>(last->output.finish) == static_cast<int>(finish_reason::error));
  BOOST_TEST(last->output.disagg.empty());
  BOOST_TEST(core->num_holds() == 0u);
  BOOST_TEST(decoded.size() == 3u); // the decode request ran locally
}

BOOST_AUTO_TEST_CASE(an_executor_failure_frees_holds_and_fails_decodes_waiting_for_kv) {
  bool fail = false;
  auto core = make_core(tiny_layout, &fail);
  BOOST_REQUIRE(core->add_request(with_role(request("p", iota_tokens(6, 50), 1), protocol::disagg_role::prefill)));
  auto s = core->step();
  BOOST_REQUIRE(s);
  BOOST_TEST(core->held_blocks("p").value_or(ids{}) == (ids{0, 1}), boost::test_tools::per_element());
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  auto pulls = core->pending_transfers();
  BOOST_REQUIRE_EQUAL(pulls.size(), 1u);
  BOOST_TEST(pulls[0].source_block_ids == (ids{7, 8}), boost::test_tools::per_element());
  BOOST_TEST(pulls[0].destination_block_ids == (ids{2, 3}), boost::test_tools::per_element());
  BOOST_REQUIRE(core->add_request(request("q", iota_tokens(3, 20), 4)));
  fail = true;
  BOOST_TEST(!core->step());
  BOOST_TEST(core->num_holds() == 0u);
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == 0u);
  BOOST_TEST(!core->complete_transfer("d", true));
  fail = false;
  auto out = test::run(*core);
  BOOST_TEST(out["d"].finish == finish_reason::error);
  BOOST_TEST(out["q"].finish == finish_reason::error);
}

BOOST_AUTO_TEST_CASE(an_aborted_request_keeps_its_blocks_until_its_transfer_ends) {
  auto core = make_core(tiny_layout);
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  BOOST_REQUIRE_EQUAL(core->pending_transfers().size(), 1u); // the worker started the pull
  const auto used = core->sched().kv().pool().num_used_blocks();
  BOOST_TEST(used == 2u);
  BOOST_TEST(core->abort("d"));
  BOOST_TEST(core->take_refused_prefills().empty()); // the running push releases the hold
  // A push may still land in them: not reusable yet.
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == used);
  BOOST_TEST(!core->complete_transfer("d", false));
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == 0u);
}

BOOST_AUTO_TEST_CASE(an_aborted_request_whose_pull_was_not_taken_frees_at_once) {
  auto core = make_core(tiny_layout);
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  BOOST_TEST(core->abort("d"));
  BOOST_TEST(core->sched().kv().pool().num_used_blocks() == 0u);
  BOOST_TEST(core->pending_transfers().empty());
  // Nobody will pull the prefill worker's hold now: the worker releases it.
  auto unpulled = core->take_refused_prefills();
  BOOST_REQUIRE_EQUAL(unpulled.size(), 1u);
  BOOST_TEST(unpulled[0].hold_id == "remote");
}

BOOST_AUTO_TEST_CASE(a_successful_transfer_continues_from_the_first_token) {
  auto core = make_core(tiny_layout);
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  BOOST_REQUIRE_EQUAL(core->pending_transfers().size(), 1u);
  BOOST_TEST(core->complete_transfer("d", true));
  auto out = test::run(*core);
  // first_token 5, then the fake's 1000 + sample_position: after 7 and 8 tokens,
  // exactly what an aggregated run samples there (its first token is 1006).
  BOOST_TEST(out["d"].tokens == (ids{5, 1007, 1008}), boost::test_tools::per_element());
  BOOST_TEST(out["d"].finish == finish_reason::length);
  BOOST_TEST(out["d"].flagged_chunks == 0u); // the prefill worker's KV was used
}

// The worker sends the prefill's first token as soon as the transfer ends
// (take_pending), not with the outputs of the next forward pass.
BOOST_AUTO_TEST_CASE(a_transfers_first_token_is_ready_before_the_next_step) {
  auto core = make_core(tiny_layout);
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  BOOST_REQUIRE_EQUAL(core->pending_transfers().size(), 1u);
  BOOST_TEST(core->take_pending().empty()); // nothing before the transfer ends
  BOOST_TEST(core->complete_transfer("d", true));
  auto first = core->take_pending();
  BOOST_REQUIRE_EQUAL(first.size(), 1u);
  BOOST_TEST(first[0].request_id == "d");
  BOOST_TEST(first[0].output.token_ids == (ids{5}), boost::test_tools::per_element());
  BOOST_TEST(!first[0].output.prefilled_locally);
  BOOST_TEST(core->take_pending().empty());
  auto out = test::run(*core); // the rest, as before
  BOOST_TEST(out["d"].tokens == (ids{1007, 1008}), boost::test_tools::per_element());
  BOOST_TEST(out["d"].finish == finish_reason::length);
}

// The router counts a prefill-first request as remote or local_fallback by the
// decode worker's first chunk: a failed transfer or a refused result says so.
BOOST_AUTO_TEST_CASE(a_failed_transfer_flags_the_first_chunk_prefilled_locally) {
  auto core = make_core(tiny_layout);
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            remote(6, {7, 8}))));
  BOOST_REQUIRE(core->add_request(request("a", iota_tokens(6, 1), 3))); // aggregated: never flagged
  BOOST_REQUIRE_EQUAL(core->pending_transfers().size(), 1u);
  BOOST_TEST(core->complete_transfer("d", false));
  auto out = test::run(*core);
  BOOST_TEST(out["d"].tokens == out["a"].tokens, boost::test_tools::per_element()); // computed here
  BOOST_TEST(out["d"].prefilled_locally);
  BOOST_TEST(out["d"].flagged_chunks == 1u); // the first chunk only
  BOOST_TEST(out["a"].flagged_chunks == 0u);
}

BOOST_AUTO_TEST_CASE(a_refused_prefill_result_flags_the_first_chunk_prefilled_locally) {
  auto core = make_core(tiny_layout);
  auto wrong = remote(6, {7, 8});
  wrong.layout.block_size = 8; // this engine's blocks hold 4 tokens
  BOOST_REQUIRE(core->add_request(with_role(request("d", iota_tokens(6, 1), 3), protocol::disagg_role::decode,
                                            std::move(wrong))));
  BOOST_TEST(core->pending_transfers().empty());
  auto out = test::run(*core);
  BOOST_TEST(out["d"].tokens.size() == 3u);
  BOOST_TEST(out["d"].prefilled_locally);
  BOOST_TEST(out["d"].flagged_chunks == 1u);
}

BOOST_AUTO_TEST_CASE(hold_ttl_must_be_positive) {
  engine::engine_config cfg;
  cfg.hold_ttl = std::chrono::milliseconds{0};
  auto core = engine_core::create(std::make_unique<layout_executor>(tiny_layout, nullptr), cfg);
  BOOST_REQUIRE(!core);
  BOOST_TEST(code_of(core.error()) == errc::config_error);
}

BOOST_AUTO_TEST_SUITE_END()
