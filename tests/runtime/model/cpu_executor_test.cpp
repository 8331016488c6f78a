#include "runtime/model/cpu_executor.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;

namespace {

std::unique_ptr<cpu_executor> make_executor(std::shared_ptr<const decoder_model> m, uint32_t num_blocks = 0) {
  cpu_executor_config cfg;
  cfg.block_size = 4;
  cfg.num_blocks = num_blocks;
  cfg.kv_cache_bytes = size_t(1) << 20;
  cfg.threads = 2;
  cfg.process_seed = 5;
  auto e = cpu_executor::create(std::move(m), cfg);
  BOOST_REQUIRE_MESSAGE(e, (e ? "" : describe(e.error())));
  return std::move(*e);
}

/// Greedy-decodes `steps` tokens for each prompt, all sequences in one batch
/// per step (decodes first, as the scheduler orders them).
std::vector<std::vector<uint32_t>> generate(cpu_executor& ex, const std::vector<std::vector<uint32_t>>& prompts,
                                            uint32_t steps, uint32_t first_block) {
  std::vector<std::vector<uint32_t>> out(prompts.size());
  std::vector<std::vector<uint32_t>> tables(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (uint32_t b = 0; b < 8; ++b) tables[i].push_back(first_block + uint32_t(i) * 8 + b);
  }
  std::vector<engine::batch_entry> entries;
  for (size_t i = 0; i < prompts.size(); ++i) entries.push_back(entry(i, prompts[i], 0, tables[i]));
  for (uint32_t s = 0; s < steps; ++s) {
    auto r = ex.execute(make_batch(entries));
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
    for (size_t i = 0; i < prompts.size(); ++i) {
      BOOST_REQUIRE(r->sampled[i].has_value());
      out[i].push_back(*r->sampled[i]);
      auto& e = entries[i];
      e.start_pos += uint32_t(e.tokens.size());
      e.tokens = {*r->sampled[i]};
      e.sample_position = e.start_pos + 1;
    }
  }
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cpu_executor_unit)

BOOST_AUTO_TEST_CASE(geometry_comes_from_the_kv_budget_and_the_model) {
  auto m = tiny_model();
  auto ex = make_executor(m);
  const auto& c = m->config();
  const size_t block = size_t(c.n_layer) * 2 * 4 * c.n_kv_head * c.head_dim * 2; // fp16
  BOOST_TEST(ex->geometry().block_size == 4u);
  BOOST_TEST(ex->geometry().num_blocks == (size_t(1) << 20) / block);
  BOOST_TEST(ex->context_length() == 256u);
  BOOST_TEST(ex->name() == "cpu");
  BOOST_TEST(ex->threads() == 2u);
  BOOST_TEST(make_executor(m, 40)->geometry().num_blocks == 40u);
}

BOOST_AUTO_TEST_CASE(a_budget_below_one_block_is_a_config_error) {
  cpu_executor_config cfg;
  cfg.kv_cache_bytes = 10;
  auto e = cpu_executor::create(tiny_model(), cfg);
  BOOST_REQUIRE(!e);
  BOOST_TEST(code_of(e.error()) == errc::config_error);
}

BOOST_AUTO_TEST_CASE(a_missing_model_file_is_an_error_value) {
  cpu_executor_config cfg;
  cfg.model_path = "/nonexistent.gguf";
  auto e = cpu_executor::create(cfg);
  BOOST_REQUIRE(!e);
  BOOST_TEST(code_of(e.error()) == errc::not_found);
}

BOOST_AUTO_TEST_CASE(only_entries_marked_sample_get_a_token) {
  auto ex = make_executor(tiny_model(), 16);
  auto r = ex->execute(make_batch({entry(1, {1, 2, 3}, 0, {0}, false), entry(2, {4}, 0, {1})}));
  BOOST_REQUIRE(r);
  BOOST_TEST(!r->sampled.at(0).has_value());
  BOOST_TEST(r->sampled.at(1).has_value());
  BOOST_TEST(r->simulated.count() == 0);
}

BOOST_AUTO_TEST_CASE(greedy_generation_is_the_same_across_runs_and_batch_compositions) {
  auto m = tiny_model();
  const std::vector<std::vector<uint32_t>> prompts = {{1, 2, 3, 4, 5}, {200, 17}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 30}};
  auto ex1 = make_executor(m, 64);
  auto ex2 = make_executor(m, 64);
  const auto together = generate(*ex1, prompts, 12, 0);
  const auto again = generate(*ex2, prompts, 12, 24); // other block ids
  BOOST_TEST(together == again);
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto solo = make_executor(m, 64);
    BOOST_TEST(generate(*solo, {prompts[i]}, 12, 3).at(0) == together[i]);
  }
}

BOOST_AUTO_TEST_CASE(an_invalid_batch_fails_the_step_with_an_error_value) {
  auto ex = make_executor(tiny_model(), 4);
  auto r = ex->execute(make_batch({entry(1, {1}, 0, {9})}));
  BOOST_REQUIRE(!r);
  BOOST_TEST(code_of(r.error()) == errc::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
