// GPU sampling against the CPU sampler (model::sampler), token for token:
// greedy (with ties), temperature only (id-order scan), top-k, top-p, both,
// degenerate settings, independence from the row's place in the batch; and
// logits processing (bias, mask, penalties), min_p, several draws per row and
// logprobs (within 1e-5).
#include "kernels/counter_rng.hpp"
#include "kernels/logits_process.cuh"
#include "kernels/sampling.cuh"
#include "runtime/model/sampler.hpp"
#include "tests/kernels/cuda/cuda_test_util.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <utility>

namespace gpu = dynamo::kernels::gpu;
using namespace dynamo::kernels::gpu::test;
using dynamo::protocol::sampling_options;

namespace {

std::vector<float> random_logits(uint32_t vocab, uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> v(vocab);
  for (auto& x : v) x = d(rng);
  return v;
}

sampling_options opts(float temperature, int32_t top_k, float top_p, uint64_t seed) {
  sampling_options o;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.seed = seed;
  return o;
}

/// Samples every row on the GPU (one launch) with the given options.
std::vector<uint32_t> gpu_sample(const std::vector<std::vector<float>>& rows, const std::vector<sampling_options>& o,
                                 const std::vector<uint32_t>& positions) {
  const auto vocab = static_cast<uint32_t>(rows[0].size());
  std::vector<float> flat;
  std::vector<gpu::sample_params> params;
  for (size_t r = 0; r < rows.size(); ++r) {
    flat.insert(flat.end(), rows[r].begin(), rows[r].end());
    params.push_back({dynamo::kernels::rng_stream_seed(true, *o[r].seed, 0, 0), positions[r], o[r].temperature,
                      o[r].top_p, o[r].top_k, uint32_t(r)});
  }
  device_buffer<float> d_logits(flat);
  device_buffer<gpu::sample_params> d_params(params);
  device_buffer<uint32_t> d_out(rows.size());
  CUDA_CHECK(gpu::launch_sample({d_logits.get(), vocab, uint32_t(rows.size()), vocab, d_params.get(), d_out.get()},
                                nullptr));
  return d_out.download();
}

} // namespace

BOOST_AUTO_TEST_SUITE(sampling_cuda)

BOOST_AUTO_TEST_CASE(every_mode_matches_the_cpu_sampler_token_for_token) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<sampling_options> modes = {
      opts(0.0f, 0, 1.0f, 1),    opts(0.8f, 1, 1.0f, 2),   opts(1.0f, 0, 1.0f, 3),   opts(0.7f, 40, 1.0f, 4),
      opts(1.3f, 0, 0.9f, 5),    opts(0.9f, 50, 0.8f, 6),  opts(1.0f, 0, 0.0f, 7),   opts(2.0f, 1 << 30, 1.0f, 8),
      opts(0.5f, 5, 0.3f, 9),    opts(1.0f, 0, 0.999f, 10), opts(-1.0f, 7, 0.5f, 11), opts(inf, 0, 1.0f, 12)};
  for (const uint32_t vocab : {1000u, 32003u}) {
    for (const float sigma : {1.0f, 4.0f}) {
      std::vector<std::vector<float>> rows;
      std::vector<uint32_t> positions;
      for (size_t i = 0; i < modes.size(); ++i) {
        rows.push_back(random_logits(vocab, uint32_t(vocab + i * 17 + sigma * 3), sigma));
        positions.push_back(uint32_t(i * 13 + 5));
      }
      const auto got = gpu_sample(rows, modes, positions);
      dynamo::model::sampler cpu(42);
      for (size_t i = 0; i < modes.size(); ++i) {
        const uint32_t want = cpu.sample(rows[i], modes[i], 0, positions[i]);
        BOOST_TEST_INFO("vocab " << vocab << " sigma " << sigma << " mode " << i);
        BOOST_TEST(got[i] == want);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(many_seeds_match_the_cpu_sampler) {
  const uint32_t vocab = 4099;
  const auto row = random_logits(vocab, 5, 2.0f);
  for (const auto& base : {opts(1.0f, 0, 1.0f, 0), opts(0.8f, 20, 1.0f, 0), opts(1.0f, 0, 0.95f, 0)}) {
    std::vector<std::vector<float>> rows(64, row);
    std::vector<sampling_options> o(64, base);
    std::vector<uint32_t> positions(64);
    for (uint32_t i = 0; i < 64; ++i) {
      o[i].seed = 1000 + i;
      positions[i] = i;
    }
    const auto got = gpu_sample(rows, o, positions);
    dynamo::model::sampler cpu(1);
    for (uint32_t i = 0; i < 64; ++i) BOOST_TEST_REQUIRE(got[i] == cpu.sample(row, o[i], 0, positions[i]));
  }
}

BOOST_AUTO_TEST_CASE(greedy_ties_pick_the_lowest_id) {
  std::vector<float> row(777, 0.0f);
  row[300] = row[123] = row[700] = 5.0f;
  const auto got = gpu_sample({row}, {opts(0.0f, 0, 1.0f, 1)}, {0});
  BOOST_TEST(got[0] == 123u);
}

BOOST_AUTO_TEST_CASE(a_row_draws_the_same_token_wherever_it_sits_in_the_batch) {
  const uint32_t vocab = 5000;
  const auto target = random_logits(vocab, 77, 3.0f);
  const auto o = opts(1.0f, 0, 0.9f, 99);
  const auto alone = gpu_sample({target}, {o}, {31});
  std::vector<std::vector<float>> batch;
  std::vector<sampling_options> os;
  std::vector<uint32_t> positions;
  for (uint32_t i = 0; i < 7; ++i) {
    batch.push_back(i == 4 ? target : random_logits(vocab, 100 + i, 3.0f));
    os.push_back(i == 4 ? o : opts(0.7f, 10, 1.0f, i));
    positions.push_back(i == 4 ? 31 : i);
  }
  const auto in_batch = gpu_sample(batch, os, positions);
  BOOST_TEST(in_batch[4] == alone[0]);
}

BOOST_AUTO_TEST_SUITE_END()

// -- logits processing, min_p, several draws per row and logprobs -------------

namespace {

using dynamo::kernels::logit_edit;
using dynamo::kernels::logit_penalties;

struct draw {
  uint32_t row = 0;
  sampling_options o;
  uint32_t position = 0;
};

/// Processes `rows` with `edits` (per row) on the GPU, then draws `draws`, all in
/// the executor's order; returns the tokens and logprobs.
std::pair<std::vector<uint32_t>, std::vector<gpu::sample_logprobs>> gpu_process_and_sample(
    const std::vector<std::vector<float>>& rows, const std::vector<std::vector<logit_edit>>& edits,
    const std::vector<logit_penalties>& pen, const std::vector<draw>& draws) {
  const auto vocab = static_cast<uint32_t>(rows[0].size());
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  std::vector<gpu::logit_edit_item> items;
  for (uint32_t r = 0; r < edits.size(); ++r)
    for (const auto& e : edits[r]) items.push_back({r, 0, e, pen[r]});
  std::vector<gpu::sample_params> params;
  for (const auto& d : draws) {
    params.push_back({dynamo::kernels::rng_stream_seed(true, *d.o.seed, 0, 0), d.position, d.o.temperature, d.o.top_p,
                      d.o.top_k, d.row, d.o.min_p, d.o.logprobs ? int32_t(*d.o.logprobs) : -1, 0});
  }
  device_buffer<float> d_logits(flat);
  if (!items.empty()) {
    device_buffer<gpu::logit_edit_item> d_items(items);
    CUDA_CHECK(gpu::launch_logits_process({d_logits.get(), vocab, vocab, d_items.get(), uint32_t(items.size())},
                                          nullptr));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  device_buffer<gpu::sample_params> d_params(params);
  device_buffer<uint32_t> d_out(draws.size());
  device_buffer<gpu::sample_logprobs> d_lp(draws.size());
  gpu::sample_args a{d_logits.get(), vocab, uint32_t(draws.size()), vocab, d_params.get(), d_out.get(), d_lp.get()};
  CUDA_CHECK(gpu::launch_sample(a, nullptr));
  return {d_out.download(), d_lp.download()};
}

sampling_options with(sampling_options o, float min_p, std::optional<uint32_t> logprobs, float presence = 0.0f,
                      float frequency = 0.0f, float repetition = 1.0f) {
  o.min_p = min_p;
  o.logprobs = logprobs;
  o.presence_penalty = presence;
  o.frequency_penalty = frequency;
  o.repetition_penalty = repetition;
  return o;
}

} // namespace

BOOST_AUTO_TEST_CASE(processed_rows_min_p_forks_and_logprobs_match_the_cpu_sampler) {
  const uint32_t vocab = 5003;
  std::vector<std::vector<float>> rows;
  std::vector<std::vector<logit_edit>> edits;
  std::vector<logit_penalties> pen;
  std::vector<draw> draws;
  const std::vector<sampling_options> modes = {
      with(opts(0.0f, 0, 1.0f, 1), 0.0f, 5, 0.5f, 0.3f, 1.3f),  with(opts(0.8f, 0, 1.0f, 2), 0.05f, 20, -1.0f, 2.0f),
      with(opts(1.2f, 40, 0.9f, 3), 0.1f, 0, 2.0f, -0.5f, 0.7f), with(opts(1.0f, 0, 1.0f, 4), 0.0f, 3),
      with(opts(0.7f, 0, 0.8f, 5), 1.0f, std::nullopt, 0.0f, 0.0f, 2.0f)};
  for (uint32_t m = 0; m < modes.size(); ++m) {
    rows.push_back(random_logits(vocab, 300 + m, 3.0f));
    std::vector<logit_edit> e;
    for (uint32_t t = m; t < vocab; t += 97) // penalised, biased and masked tokens, sorted
      e.push_back({t, t % 3 == 0 ? 5.0f : -2.5f, t % 5, dynamo::kernels::logit_seen | (t % 11 == 0 ? 2u : 0u)});
    edits.push_back(e);
    pen.push_back({modes[m].presence_penalty, modes[m].frequency_penalty, modes[m].repetition_penalty});
    for (uint32_t c = 0; c < 3; ++c) { // three draws per row, as the n choices of one prompt
      auto o = modes[m];
      *o.seed += c;
      draws.push_back({m, o, 17 + m});
    }
  }
  const auto [tokens, lps] = gpu_process_and_sample(rows, edits, pen, draws);
  dynamo::model::sampler cpu(7);
  for (size_t d = 0; d < draws.size(); ++d) {
    const auto want = cpu.sample(rows[draws[d].row], draws[d].o, edits[draws[d].row], 0, draws[d].position);
    BOOST_TEST_INFO("draw " << d);
    BOOST_TEST(tokens[d] == want.token);
    if (!want.logprobs) continue;
    BOOST_TEST(std::abs(lps[d].logprob - want.logprobs->logprob) <= 1e-5f);
    BOOST_REQUIRE(lps[d].n_top == want.logprobs->top.size());
    for (uint32_t i = 0; i < lps[d].n_top; ++i) {
      BOOST_TEST(lps[d].top_ids[i] == want.logprobs->top[i].token);
      BOOST_TEST(std::abs(lps[d].top_logprobs[i] - want.logprobs->top[i].logprob) <= 1e-5f);
    }
  }
}
