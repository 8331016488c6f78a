// KVBM on the CPU engine with a tiny random-weight model: a G1 so small that a
// prompt's blocks are evicted by the requests after it; asked again, the
// prompt's blocks come back from the host or disk tier (real bytes, on the
// connector's I/O thread) and count as cached tokens, and the greedy tokens are
// exactly those of recomputing the prompt. A corrupt disk tier costs a
// recomputation, never different tokens.
#include "runtime/engine/engine_core.hpp"
#include "runtime/kvbm/segment_file.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
using ids = std::vector<uint32_t>;
namespace fs = std::filesystem;

namespace {

/// 12 blocks of 4 tokens: one request of 21 prompt tokens and 8 outputs takes 8.
std::unique_ptr<engine::engine_core> engine_with(std::shared_ptr<const decoder_model> m, kvbm::kvbm_config kvbm) {
  cpu_executor_config xc;
  xc.block_size = 4;
  xc.num_blocks = 12;
  xc.threads = 2;
  xc.process_seed = 5;
  auto ex = cpu_executor::create(std::move(m), xc);
  BOOST_REQUIRE_MESSAGE(ex, (ex ? "" : describe(ex.error())));
  engine::engine_config ec;
  ec.kvbm = std::move(kvbm);
  auto core = engine::engine_core::create(std::move(*ex), std::move(ec));
  BOOST_REQUIRE_MESSAGE(core, (core ? "" : describe(core.error())));
  return std::move(*core);
}

struct result {
  ids tokens;
  uint32_t cached_tokens = 0;
};

/// Runs one greedy request to its end.
result generate(engine::engine_core& core, const std::string& id, const ids& prompt) {
  protocol::preprocessed_request r;
  r.request_id = id;
  r.token_ids = prompt;
  r.prompt_tokens = static_cast<uint32_t>(prompt.size());
  r.stop.max_tokens = 8;
  r.sampling.temperature = 0.0f;
  BOOST_REQUIRE(core.add_request(std::move(r)));
  result out;
  bool first = true;
  for (int i = 0; i < 2000 && core.has_work(); ++i) {
    auto s = core.step();
    BOOST_REQUIRE_MESSAGE(s, (s ? "" : describe(s.error())));
    for (const auto& o : s->outputs) {
      BOOST_REQUIRE_MESSAGE(o.output.finish != protocol::finish_reason::error, o.output.error);
      if (first && !o.output.token_ids.empty()) {
        out.cached_tokens = o.output.cached_tokens;
        first = false;
      }
      out.tokens.insert(out.tokens.end(), o.output.token_ids.begin(), o.output.token_ids.end());
    }
  }
  BOOST_REQUIRE(!core.has_work());
  BOOST_REQUIRE_EQUAL(out.tokens.size(), 8u);
  return out;
}

ids prompt_of(uint32_t base) {
  ids p;
  for (uint32_t i = 0; i < 21; ++i)
    p.push_back(3 + (base * 37 + i * 11) % 290);
  return p;
}

/// The prompt, then two others that evict it from G1, then the prompt again.
std::map<std::string, result> scenario(engine::engine_core& core) {
  std::map<std::string, result> r;
  r["first"] = generate(core, "first", prompt_of(1));
  r["other1"] = generate(core, "other1", prompt_of(2));
  r["other2"] = generate(core, "other2", prompt_of(3));
  r["again"] = generate(core, "again", prompt_of(1));
  return r;
}

} // namespace

BOOST_AUTO_TEST_SUITE(kvbm_cpu)

BOOST_AUTO_TEST_CASE(onboarded_from_host_the_greedy_tokens_are_the_recomputed_ones) {
  auto m = tiny_model();
  auto plain = engine_with(m, {});
  const auto want = scenario(*plain);
  BOOST_TEST(want.at("again").cached_tokens == 0u); // negative control: evicted from G1
  BOOST_TEST(want.at("again").tokens == want.at("first").tokens, boost::test_tools::per_element());

  auto core = engine_with(m, {.host_bytes = 1 << 20});
  BOOST_REQUIRE(core->kvbm() != nullptr);
  const auto got = scenario(*core);
  for (const auto& [id, r] : want)
    BOOST_TEST(got.at(id).tokens == r.tokens, boost::test_tools::per_element());
  BOOST_TEST(got.at("again").cached_tokens == 20u); // 5 blocks; the 21st token is computed
  const kvbm::kvbm_counters& c = core->kvbm()->counters();
  BOOST_TEST(c.onboard_blocks_h2d == 5u);
  BOOST_TEST(c.matched_tokens == 20u);
  BOOST_TEST(c.offload_blocks_d2h > 0u);
}

BOOST_AUTO_TEST_CASE(onboarded_from_disk_the_greedy_tokens_are_the_recomputed_ones) {
  auto m = tiny_model();
  auto plain = engine_with(m, {});
  const auto want = scenario(*plain);
  temp_dir d("kvbm-cpu");
  auto core = engine_with(m, {.disk_bytes = 1 << 20, .disk_path = d.path.string(), .disk_min_free_bytes = 0,
                              .disk_filter = {.min_frequency = 1}});
  const auto got = scenario(*core);
  for (const auto& [id, r] : want)
    BOOST_TEST(got.at(id).tokens == r.tokens, boost::test_tools::per_element());
  BOOST_TEST(got.at("again").cached_tokens == 20u);
  BOOST_TEST(core->kvbm()->counters().onboard_blocks_d2d == 5u);
  BOOST_TEST(core->kvbm()->counters().offload_blocks_h2d > 0u);
}

BOOST_AUTO_TEST_CASE(disk_blocks_of_an_earlier_engine_are_announced_and_onboarded) {
  auto m = tiny_model();
  auto plain = engine_with(m, {});
  const result want = generate(*plain, "first", prompt_of(1));
  temp_dir d("kvbm-cpu");
  const kvbm::kvbm_config cfg{.disk_bytes = 1 << 20, .disk_path = d.path.string(), .disk_min_free_bytes = 0,
                              .disk_filter = {.min_frequency = 1}, .disk_tag = "tiny"};
  {
    auto core = engine_with(m, cfg);
    (void)generate(*core, "first", prompt_of(1));
    BOOST_REQUIRE(core->kvbm()->disk()->size() >= 5u);
  }
  auto core = engine_with(m, cfg); // a restart: G1 empty, the disk as it was
  size_t announced = 0;
  for (const auto& e : core->take_kv_events()) {
    BOOST_TEST((e.medium == protocol::storage_tier::disk));
    BOOST_TEST((e.kind == protocol::kv_event_kind::stored));
    announced += e.blocks.size();
  }
  BOOST_TEST(announced == core->kvbm()->disk()->size());
  const result again = generate(*core, "again", prompt_of(1));
  BOOST_TEST(again.tokens == want.tokens, boost::test_tools::per_element());
  BOOST_TEST(again.cached_tokens == 20u);
  BOOST_TEST(core->kvbm()->counters().onboard_blocks_d2d == 5u);
}

BOOST_AUTO_TEST_CASE(a_corrupt_disk_tier_costs_a_recomputation_not_the_tokens) {
  auto m = tiny_model();
  auto plain = engine_with(m, {});
  const auto want = scenario(*plain);
  temp_dir d("kvbm-cpu");
  auto core = engine_with(m, {.disk_bytes = 1 << 20, .disk_path = d.path.string(), .disk_min_free_bytes = 0,
                              .disk_filter = {.min_frequency = 1}});
  std::map<std::string, result> got;
  got["first"] = generate(*core, "first", prompt_of(1));
  got["other1"] = generate(*core, "other1", prompt_of(2));
  got["other2"] = generate(*core, "other2", prompt_of(3));
  size_t records = 0;
  for (const auto& e : fs::directory_iterator(d.path)) { // one flipped byte at the end of every block
    if (e.path().extension() != ".kvs")
      continue;
    auto seg = kvbm::segment_file::open(e.path().string());
    BOOST_REQUIRE(seg);
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    for (const auto& r : (*seg)->scan()) {
      const auto last = static_cast<std::streamoff>(r.offset + sizeof(kvbm::record_header) + r.header.length - 1);
      f.seekg(last);
      const char c = static_cast<char>(f.get());
      f.seekp(last);
      f.put(static_cast<char>(c ^ 0x01));
      ++records;
    }
  }
  BOOST_REQUIRE(records > 0u);
  got["again"] = generate(*core, "again", prompt_of(1));
  for (const auto& [id, r] : want)
    BOOST_TEST(got.at(id).tokens == r.tokens, boost::test_tools::per_element());
  const kvbm::kvbm_counters& c = core->kvbm()->counters();
  BOOST_TEST(c.loads_failed == 1u);
  BOOST_TEST(c.disk_read_corrupt > 0u);
  BOOST_TEST(c.onboard_blocks_d2d == 0u);
  BOOST_TEST(got.at("again").cached_tokens == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
