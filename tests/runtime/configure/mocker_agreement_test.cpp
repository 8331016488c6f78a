// The simulator against the engine it models: one mocker engine_core driven in
// virtual time (each step's simulated duration advances the clock, requests
// join at their arrival), profiled by the profiler, then simulated from that
// profile. What differs is the profile's interpolation and the simulator's
// simplifications, not any process overhead.
#include "runtime/configure/simulator.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/plan/profiler.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

using namespace dynamo;
using namespace dynamo::configure;

namespace {

mocker::mocker_config small_mocker() {
  mocker::mocker_config mc;
  mc.num_blocks = 2048; // 32,768 tokens: KV usage moves the decode time
  mc.max_num_seqs = 32;
  mc.max_num_batched_tokens = 2048;
  return mc;
}

struct measured {
  std::vector<double> ttft;
  std::vector<double> gaps;
  double last_done = 0;
  double output_tokens = 0;
  double cached_tokens = 0;
  double prompt_tokens = 0;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

double p90(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(v.size()))) - 1];
}

// Replays `rs` on one engine in virtual time (ms). Each prefix id of the
// request set always expands to the same tokens, so shared prefixes are
// shared in the engine's cache too.
measured replay(const request_set& rs) {
  auto engine = mocker::make_engine(small_mocker());
  BOOST_TEST_REQUIRE(static_cast<bool>(engine));
  std::uniform_int_distribution<uint32_t> tok(1000, 9000);
  measured m;
  std::map<std::string, double> last; // request -> its last token's time
  double now = 0;
  size_t next = 0;
  while (next < rs.requests.size() || (*engine)->has_work()) {
    for (; next < rs.requests.size() && rs.requests[next].arrival_ms <= now; ++next) {
      const sim_request& q = rs.requests[next];
      protocol::preprocessed_request r;
      r.request_id = std::to_string(next);
      for (uint32_t b = 0; b < q.num_blocks; ++b) {
        std::mt19937_64 rng(rs.block_ids[q.first_block + b]);
        for (uint32_t k = 0; k < rs.block_tokens && r.token_ids.size() < q.isl; ++k)
          r.token_ids.push_back(tok(rng));
      }
      r.prompt_tokens = q.isl;
      r.stop.max_tokens = q.osl;
      r.stop.ignore_eos = true;
      BOOST_TEST_REQUIRE(static_cast<bool>((*engine)->add_request(r)));
    }
    if (!(*engine)->has_work()) {
      now = rs.requests[next].arrival_ms;
      continue;
    }
    auto s = (*engine)->step();
    BOOST_TEST_REQUIRE(static_cast<bool>(s));
    now += static_cast<double>(s->duration.count()) / 1000.0;
    for (const auto& o : s->outputs) {
      if (o.output.token_ids.empty())
        continue;
      const size_t i = std::stoul(o.request_id);
      auto it = last.find(o.request_id);
      if (it == last.end())
        m.ttft.push_back(now - rs.requests[i].arrival_ms);
      else
        m.gaps.push_back(now - it->second);
      last[o.request_id] = now;
      m.output_tokens += static_cast<double>(o.output.token_ids.size());
      if (it == last.end()) {
        m.cached_tokens += o.output.cached_tokens;
        m.prompt_tokens += rs.requests[i].isl;
      }
      if (o.output.finish != protocol::finish_reason::none)
        m.last_done = now;
    }
  }
  return m;
}

void check_agreement(const traffic_spec& t) {
  const auto mc = small_mocker();
  plan::profile_sweep sw;
  sw.isl = {128, 256, 512, 1024, 2048};
  sw.prefix_hit = {0.0};
  sw.batch = {1, 2, 4, 8, 16, 32};
  sw.context = {128, 512, 1024};
  auto profile = plan::run_profile([mc] { return mocker::make_engine(mc); }, sw);
  BOOST_TEST_REQUIRE(static_cast<bool>(profile));
  const request_set rs = make_requests(t);
  const measured m = replay(rs);

  sim_options o;
  o.percentile = 90;
  simulator sim(*profile, o);
  deployment d{.decode_replicas = 1, .max_num_seqs = mc.max_num_seqs,
               .max_num_batched_tokens = mc.max_num_batched_tokens};
  const sim_result r = sim.run(d, rs);
  BOOST_TEST_REQUIRE(r.completed == rs.requests.size());
  BOOST_TEST_REQUIRE(m.ttft.size() == rs.requests.size());

  const double engine_tps = m.output_tokens / ((m.last_done - rs.requests.front().arrival_ms) / 1000.0);
  const double engine_hit = m.prompt_tokens > 0 ? m.cached_tokens / m.prompt_tokens : 0;
  BOOST_TEST_MESSAGE("TTFT mean " << r.mean_ttft_ms << " vs " << mean(m.ttft) << ", p90 " << r.ttft_ms << " vs "
                                  << p90(m.ttft) << "; ITL mean " << r.mean_itl_ms << " vs " << mean(m.gaps)
                                  << ", p90 " << r.itl_ms << " vs " << p90(m.gaps) << "; tok/s "
                                  << r.output_tokens_per_s << " vs " << engine_tps << "; hit " << r.hit_rate
                                  << " vs " << engine_hit);
  auto close = [](double predicted, double actual) { return std::abs(predicted - actual) <= 0.10 * actual; };
  BOOST_TEST(close(r.mean_ttft_ms, mean(m.ttft)));
  BOOST_TEST(close(r.ttft_ms, p90(m.ttft)));
  BOOST_TEST(close(r.mean_itl_ms, mean(m.gaps)));
  BOOST_TEST(close(r.itl_ms, p90(m.gaps)));
  BOOST_TEST(close(r.output_tokens_per_s, engine_tps));
  BOOST_TEST(std::abs(r.hit_rate - engine_hit) <= 0.02);
}

traffic_spec base_traffic() {
  traffic_spec t;
  t.isl = {length_dist::kind::uniform, 200, 800};
  t.osl = {length_dist::kind::uniform, 16, 64};
  t.rate = 15;
  t.requests = 120;
  return t;
}

} // namespace

BOOST_AUTO_TEST_SUITE(mocker_agreement_tests)

BOOST_AUTO_TEST_CASE(simulation_tracks_the_mocker_engine) {
  check_agreement(base_traffic());
}

// Two shared system prompts for the first half of every prompt: the engine's
// prefix cache and the simulator's agree on the hits and their effect.
BOOST_AUTO_TEST_CASE(simulation_tracks_the_mocker_engine_with_shared_prefixes) {
  traffic_spec t = base_traffic();
  t.prefix_groups = 2;
  t.prefix_share = 0.5;
  check_agreement(t);
}

BOOST_AUTO_TEST_SUITE_END()
