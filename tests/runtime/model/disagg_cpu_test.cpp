// The CPU executor's KV region export (cpu_executor::kv_memory) proven by use:
// KV computed by one executor, copied block by block with plain memcpy into
// another executor's region, gives the decode the same logits (bit for bit) as
// the aggregated run; and the engine-level prefill-here / decode-there flow
// streams the aggregated greedy tokens.
#include "runtime/engine/engine_core.hpp"
#include "runtime/model/cpu_executor.hpp"
#include "runtime/model/sampler.hpp"
#include "runtime/protocol/codec.hpp"
#include "runtime/protocol/disagg.hpp"
#include "tests/runtime/model/model_test_util.hpp"

#include <boost/test/unit_test.hpp>

#include <cstring>
#include <map>

using namespace dynamo;
using namespace dynamo::model;
using namespace dynamo::model::test;
using ids = std::vector<uint32_t>;

namespace {

std::unique_ptr<cpu_executor> make_executor(std::shared_ptr<const decoder_model> m, uint32_t num_blocks,
                                            kv_dtype dtype = kv_dtype::f16) {
  cpu_executor_config cfg;
  cfg.block_size = 4;
  cfg.num_blocks = num_blocks;
  cfg.kv_type = dtype;
  cfg.threads = 2;
  cfg.process_seed = 5;
  auto e = cpu_executor::create(std::move(m), cfg);
  BOOST_REQUIRE_MESSAGE(e, (e ? "" : describe(e.error())));
  return std::move(*e);
}

engine::kv_memory_view region(engine::executor& ex) {
  auto v = ex.kv_memory();
  BOOST_REQUIRE(v.has_value());
  return *v;
}

/// What a transfer plane does with whole blocks: src[i] of `from` into dst[i] of `to`.
void copy_blocks(engine::executor& from, const ids& src, engine::executor& to, const ids& dst) {
  const engine::kv_memory_view a = region(from);
  const engine::kv_memory_view b = region(to);
  BOOST_REQUIRE(static_cast<bool>(protocol::check_compatible(a.layout, b.layout)));
  BOOST_REQUIRE_EQUAL(src.size(), dst.size());
  for (size_t i = 0; i < src.size(); ++i) {
    BOOST_REQUIRE(src[i] < a.num_blocks && dst[i] < b.num_blocks);
    std::memcpy(static_cast<std::byte*>(b.base) + dst[i] * b.block_stride,
                static_cast<const std::byte*>(a.base) + src[i] * a.block_stride, a.layout.bytes_per_block);
  }
}

/// Fills a whole region with a byte pattern (stale KV a transfer must overwrite).
void scribble(engine::executor& ex, uint8_t byte) {
  const engine::kv_memory_view v = region(ex);
  std::memset(v.base, byte, v.block_stride * v.num_blocks);
}

/// Logits of one decode step (token at `pos`) through a forward pass over
/// `ex`'s cache with `table`.
std::vector<float> decode_logits(const std::shared_ptr<const decoder_model>& m, cpu_executor& ex, uint32_t token,
                                 uint32_t pos, const ids& table) {
  kernels::ref::thread_pool pool(2);
  decoder_forward fwd(m, pool);
  auto r = fwd.run(make_batch({entry(1, {token}, pos, table)}), ex.cache());
  BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
  BOOST_REQUIRE_EQUAL(r->entry.size(), 1u);
  return {r->row(0).begin(), r->row(0).end()};
}

protocol::preprocessed_request greedy_request(std::string id, ids prompt, uint32_t max_tokens,
                                              std::vector<uint8_t> disagg = {}) {
  protocol::preprocessed_request r;
  r.request_id = std::move(id);
  r.token_ids = std::move(prompt);
  r.prompt_tokens = static_cast<uint32_t>(r.token_ids.size());
  r.stop.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.disagg = std::move(disagg);
  return r;
}

std::unique_ptr<engine::engine_core> engine_of(std::unique_ptr<cpu_executor> ex) {
  auto core = engine::engine_core::create(std::move(ex));
  BOOST_REQUIRE_MESSAGE(core, (core ? "" : describe(core.error())));
  return std::move(*core);
}

/// Steps until idle; each request's tokens, plus the final chunks.
std::map<std::string, ids> run(engine::engine_core& core, std::map<std::string, engine::request_output>* last = nullptr) {
  std::map<std::string, ids> out;
  for (int i = 0; i < 200 && core.has_work(); ++i) {
    auto r = core.step();
    BOOST_REQUIRE_MESSAGE(r, (r ? "" : describe(r.error())));
    for (auto& o : r->outputs) {
      BOOST_REQUIRE(o.output.finish != protocol::finish_reason::error);
      out[o.request_id].insert(out[o.request_id].end(), o.output.token_ids.begin(), o.output.token_ids.end());
      if (last && o.output.finish != protocol::finish_reason::none)
        (*last)[o.request_id] = o;
    }
  }
  BOOST_REQUIRE(!core.has_work());
  return out;
}

} // namespace

BOOST_AUTO_TEST_SUITE(cpu_kv_region)

BOOST_AUTO_TEST_CASE(the_region_is_the_host_cache_in_head_major_order) {
  auto m = tiny_model();
  const auto& c = m->config();
  for (kv_dtype dtype : {kv_dtype::f16, kv_dtype::f32}) {
    auto ex = make_executor(m, 8, dtype);
    const engine::kv_memory_view v = region(*ex);
    BOOST_TEST(v.base == static_cast<void*>(ex->cache().block(0).data()));
    BOOST_TEST(v.block_stride == ex->cache().shape().block_bytes());
    BOOST_TEST(v.num_blocks == 8u);
    BOOST_TEST(v.layout.name == "head-major");
    BOOST_TEST(v.layout.num_layers == c.n_layer);
    BOOST_TEST(v.layout.block_size == 4u);
    BOOST_TEST(v.layout.num_kv_heads == c.n_kv_head);
    BOOST_TEST(v.layout.head_dim == c.head_dim);
    BOOST_TEST((v.layout.dtype == (dtype == kv_dtype::f32 ? protocol::kv_dtype::f32 : protocol::kv_dtype::f16)));
    BOOST_TEST(v.layout.bytes_per_block == v.block_stride);
    BOOST_TEST(static_cast<bool>(protocol::validate(v.layout)));
    BOOST_TEST(ex->kv_transfer_layout().has_value());

    // Every element the attention kernels address sits where the layout says.
    BOOST_REQUIRE(ex->execute(make_batch({entry(1, {3, 1, 4}, 0, {5})})));
    const size_t esz = kernels::ref::kv_dtype_bytes(dtype);
    const auto* block = static_cast<const std::byte*>(v.base) + 5 * v.block_stride;
    for (uint32_t l = 0; l < c.n_layer; ++l) {
      const kernels::ref::paged_kv_view lv = ex->cache().layer_view(l);
      for (uint32_t kv = 0; kv < 2; ++kv)
        for (uint32_t t = 0; t < 4; ++t)
          for (uint32_t h = 0; h < c.n_kv_head; ++h)
            for (uint32_t d = 0; d < c.head_dim; ++d) {
              const auto* base = static_cast<const std::byte*>(kv == 0 ? lv.k : lv.v);
              const std::byte* kernel = base + (lv.offset(5, t, h) + d) * esz;
              const std::byte* layout = block + protocol::head_major_offset(v.layout, l, kv, t, h, d);
              BOOST_REQUIRE(kernel == layout);
            }
    }
  }
}

BOOST_AUTO_TEST_CASE(decode_after_a_block_copy_has_the_aggregated_logits) {
  auto m = tiny_model();
  const ids prompt = {17, 3, 250, 9, 9, 42, 7, 100, 1, 64}; // 2 full blocks + 2 tokens
  const ids a_table = {5, 2, 7, 1};                          // prompt in 5 2 7; decodes reach 1
  const ids b_table = {0, 6, 3, 4};

  auto a = make_executor(m, 8);
  auto prefilled = a->execute(make_batch({entry(1, prompt, 0, a_table)}));
  BOOST_REQUIRE(prefilled);
  const uint32_t first = prefilled->sampled.at(0).value();

  auto b = make_executor(m, 8);
  scribble(*b, 0x5a);
  copy_blocks(*a, {5, 2, 7}, *b, {0, 6, 3});

  // Negative control: a copy missing the partial last block changes the logits,
  // so equality below is evidence, not an accident.
  auto broken = make_executor(m, 8);
  scribble(*broken, 0x5a);
  copy_blocks(*a, {5, 2}, *broken, {0, 6});
  const auto broken_logits = decode_logits(m, *broken, first, 10, b_table);

  uint32_t token = first;
  for (uint32_t pos = 10; pos < 14; ++pos) { // crosses into a fresh block at 12
    const auto agg = decode_logits(m, *a, token, pos, a_table);
    const auto dis = decode_logits(m, *b, token, pos, b_table);
    BOOST_REQUIRE_EQUAL(agg.size(), dis.size());
    BOOST_TEST(std::memcmp(agg.data(), dis.data(), agg.size() * sizeof(float)) == 0);
    if (pos == 10)
      BOOST_TEST(std::memcmp(agg.data(), broken_logits.data(), agg.size() * sizeof(float)) != 0);
    token = sampler::argmax(agg);
  }
}

BOOST_AUTO_TEST_CASE(prefill_engine_and_decode_engine_stream_the_aggregated_greedy_tokens) {
  auto m = tiny_model();
  const ids prompt = {17, 3, 250, 9, 9, 42, 7, 100, 1, 64};
  auto prefill = engine_of(make_executor(m, 16));
  auto decode = engine_of(make_executor(m, 16));
  auto aggregated = engine_of(make_executor(m, 16));
  scribble(decode->exec(), 0x5a);

  // Shift the prefill worker's block ids so that source and destination differ.
  BOOST_REQUIRE(prefill->add_request(greedy_request("other", {1, 2, 3, 4, 5}, 1)));
  (void)run(*prefill);
  BOOST_REQUIRE(prefill->add_request(greedy_request(
      "p", prompt, 1, protocol::encode(protocol::disagg_params{protocol::disagg_role::prefill, std::nullopt}))));
  std::map<std::string, engine::request_output> last;
  (void)run(*prefill, &last);
  auto result = protocol::decode<protocol::kv_prefill_result>(last.at("p").output.disagg);
  BOOST_REQUIRE(result);
  BOOST_TEST(result->layout.name == "head-major");
  BOOST_TEST(result->block_ids.size() == 3u);

  BOOST_REQUIRE(decode->add_request(greedy_request(
      "p", prompt, 8, protocol::encode(protocol::disagg_params{protocol::disagg_role::decode, *result}))));
  auto pulls = decode->pending_transfers();
  BOOST_REQUIRE_EQUAL(pulls.size(), 1u);
  BOOST_TEST(pulls[0].source_block_ids == result->block_ids, boost::test_tools::per_element());
  BOOST_TEST((pulls[0].source_block_ids != pulls[0].destination_block_ids));
  copy_blocks(prefill->exec(), pulls[0].source_block_ids, decode->exec(), pulls[0].destination_block_ids);
  BOOST_TEST(prefill->release_hold("p"));
  BOOST_TEST(decode->complete_transfer("p", true));
  auto got = run(*decode);

  BOOST_REQUIRE(aggregated->add_request(greedy_request("p", prompt, 8)));
  auto want = run(*aggregated);
  BOOST_REQUIRE_EQUAL(want.at("p").size(), 8u);
  BOOST_TEST(got.at("p") == want.at("p"), boost::test_tools::per_element());
  BOOST_TEST(got.at("p").front() == result->first_token);
}

BOOST_AUTO_TEST_SUITE_END()
