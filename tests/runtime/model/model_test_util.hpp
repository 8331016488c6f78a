// Builders shared by the model tests: a tiny random model, batch entries,
// and a forward-pass harness with its own pool and cache. Test code only.
#pragma once

#include "runtime/model/kv_cache.hpp"
#include "runtime/model/decoder_forward.hpp"
#include "runtime/model/decoder_model.hpp"
#include "runtime/model/random_model.hpp"
#include "tests/support/temp_dir.hpp"

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <ostream>
#include <vector>

namespace dynamo {
/// Lets BOOST_TEST print error codes.
inline std::ostream& boost_test_print_type(std::ostream& os, errc c) { return os << to_string(c); }
} // namespace dynamo

namespace dynamo::model::test {

using dynamo::test::temp_dir;

/// The tiny test model: 2 layers, width 64, 4/2 heads, vocabulary 300, Q4_1
/// matrices and Q8_0 tied embeddings, "scaled" weights (far-from-uniform logits).
inline random_model_options test_model_options() {
  random_model_options o;
  o.type = gguf::tensor_type::q4_1;
  o.embd_type = gguf::tensor_type::q8_0;
  o.tied_embeddings = true;
  o.stddev = 0.0f;
  o.threads = 1;
  return o;
}

inline std::shared_ptr<const decoder_model> tiny_model(const random_model_options& o = test_model_options()) {
  auto f = make_random_model(o);
  BOOST_REQUIRE_MESSAGE(f, "random model: " << (f ? "" : describe(f.error())));
  auto m = decoder_model::from_file(std::move(*f));
  BOOST_REQUIRE_MESSAGE(m, "load: " << (m ? "" : describe(m.error())));
  return std::move(*m);
}

inline engine::batch_entry entry(uint64_t seq, std::vector<uint32_t> tokens, uint32_t start,
                                 std::vector<uint32_t> blocks, bool sample = true) {
  engine::batch_entry e;
  e.seq_id = seq;
  e.start_pos = start;
  e.sample_position = start + static_cast<uint32_t>(tokens.size());
  e.tokens = std::move(tokens);
  e.block_table = std::move(blocks);
  e.sample = sample;
  e.sampling.temperature = 0.0f;
  return e;
}

inline engine::batch make_batch(std::vector<engine::batch_entry> entries) {
  engine::batch b;
  for (const auto& e : entries) b.num_tokens += static_cast<uint32_t>(e.tokens.size());
  b.entries = std::move(entries);
  return b;
}

/// A forward pass with its own pool and cache.
struct harness {
  std::shared_ptr<const decoder_model> model;
  kernels::ref::thread_pool pool;
  std::unique_ptr<kv_cache> cache;
  decoder_forward fwd;

  harness(std::shared_ptr<const decoder_model> m, uint32_t num_blocks, uint32_t block_size = 4,
          kv_dtype dtype = kv_dtype::f32, unsigned threads = 2, forward_options options = {})
      : model(m), pool(threads), fwd(m, pool, options) {
    const auto& c = m->config();
    auto kc = kv_cache::create({num_blocks, block_size, c.n_layer, c.n_kv_head, c.head_dim, dtype});
    BOOST_REQUIRE(kc);
    cache = std::move(*kc);
  }

  /// Runs the batch and returns a copy of every sampled row, in row order.
  std::vector<std::vector<float>> run(const engine::batch& b) {
    auto r = fwd.run(b, *cache);
    BOOST_REQUIRE_MESSAGE(r, "forward: " << (r ? "" : describe(r.error())));
    std::vector<std::vector<float>> rows;
    for (size_t i = 0; i < r->entry.size(); ++i) rows.emplace_back(r->row(i).begin(), r->row(i).end());
    return rows;
  }
};

} // namespace dynamo::model::test
