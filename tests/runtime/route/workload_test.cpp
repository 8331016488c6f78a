#include "runtime/route/workload.hpp"

#include "test_events.hpp"

#include <boost/test/unit_test.hpp>

#include <map>
#include <sstream>

using namespace dynamo;
using namespace dynamo::route;

BOOST_AUTO_TEST_SUITE(workload_generation)

BOOST_AUTO_TEST_CASE(each_turn_resends_the_previous_turns_full_blocks) {
  workload_config c;
  c.sessions = 8;
  c.seed = 3;
  auto trace = generate_workload(c);
  BOOST_REQUIRE(!trace.empty());
  std::map<uint64_t, const trace_record*> last;
  for (const auto& r : trace) {
    BOOST_TEST(r.hash_ids.size() == (r.input_length + c.trace_block_size - 1) / c.trace_block_size);
    if (auto it = last.find(r.session); it != last.end()) {
      const trace_record& prev = *it->second;
      size_t full = prev.input_length / c.trace_block_size;
      BOOST_TEST(r.input_length > prev.input_length + prev.output_length);
      BOOST_REQUIRE(r.hash_ids.size() >= full);
      BOOST_TEST((std::vector<uint64_t>(r.hash_ids.begin(), r.hash_ids.begin() + full) ==
                  std::vector<uint64_t>(prev.hash_ids.begin(), prev.hash_ids.begin() + full)));
      BOOST_TEST(r.timestamp_ms >= prev.timestamp_ms);
    }
    last[r.session] = &r;
  }
  for (size_t i = 1; i < trace.size(); ++i)
    BOOST_TEST(trace[i - 1].timestamp_ms <= trace[i].timestamp_ms);
}

BOOST_AUTO_TEST_CASE(the_next_turn_resends_the_prompt_and_the_actual_reply) {
  workload_config c;
  c.trace_block_size = 4;
  trace_record first{0, 6, 3, {1, 2}, 1};
  trace_record second{0, 13, 2, {1, 3, 4, 5}, 1}; // 6 + 3 reply + 4 new tokens
  const std::vector<uint32_t> prompt = synthesize_tokens(first, c.trace_block_size);
  const std::vector<uint32_t> reply{7, 8, 9}; // what the engine returned, not the trace's
  const std::vector<uint32_t> next = next_turn_prompt(prompt, reply, second, c.trace_block_size);
  const std::vector<uint32_t> synthesized = synthesize_tokens(second, c.trace_block_size);
  std::vector<uint32_t> expected = prompt;
  expected.insert(expected.end(), reply.begin(), reply.end());
  expected.insert(expected.end(), synthesized.end() - 4, synthesized.end());
  BOOST_TEST(next == expected, boost::test_tools::per_element());
  // A reply longer than the trace planned still leaves one new token.
  const std::vector<uint32_t> long_reply(10, 7);
  BOOST_TEST(next_turn_prompt(prompt, long_reply, second, c.trace_block_size).size() == 6u + 10u + 1u);
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_trace) {
  workload_config c;
  c.sessions = 5;
  std::ostringstream a, b;
  write_jsonl(a, generate_workload(c));
  write_jsonl(b, generate_workload(c));
  BOOST_TEST(a.str() == b.str());
  c.seed = 2;
  std::ostringstream other;
  write_jsonl(other, generate_workload(c));
  BOOST_TEST(other.str() != a.str());
}

BOOST_AUTO_TEST_CASE(jsonl_round_trips_and_bad_lines_name_their_number) {
  workload_config c;
  c.sessions = 3;
  auto trace = generate_workload(c);
  std::stringstream io;
  write_jsonl(io, trace);
  auto back = read_jsonl(io);
  BOOST_REQUIRE(back);
  BOOST_REQUIRE_EQUAL(back->size(), trace.size());
  for (size_t i = 0; i < trace.size(); ++i) {
    BOOST_TEST((*back)[i].timestamp_ms == trace[i].timestamp_ms);
    BOOST_TEST((*back)[i].input_length == trace[i].input_length);
    BOOST_TEST((*back)[i].output_length == trace[i].output_length);
    BOOST_TEST((*back)[i].hash_ids == trace[i].hash_ids);
    BOOST_TEST((*back)[i].session == trace[i].session);
  }
  std::istringstream mooncake(
      R"({"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]})"
      "\n\n"
      R"({"timestamp": 1, "input_length": "many", "output_length": 1, "hash_ids": []})");
  auto bad = read_jsonl(mooncake);
  BOOST_REQUIRE(!bad);
  BOOST_TEST(code_of(bad.error()) == errc::invalid_argument);
  BOOST_TEST(message_of(bad.error()).starts_with("trace line 3"));
}

BOOST_AUTO_TEST_CASE(tokens_follow_hash_ids_so_equal_ids_give_equal_tokens) {
  trace_record a{0, 10, 1, {7, 8, 9}, 0};
  trace_record b{0, 9, 1, {7, 8, 5}, 0};
  auto ta = synthesize_tokens(a, 4, 100);
  auto tb = synthesize_tokens(b, 4, 100);
  BOOST_REQUIRE_EQUAL(ta.size(), 10u);
  BOOST_REQUIRE_EQUAL(tb.size(), 9u);
  BOOST_TEST((std::vector<uint32_t>(ta.begin(), ta.begin() + 8) ==
              std::vector<uint32_t>(tb.begin(), tb.begin() + 8)));
  BOOST_TEST(ta[8] != tb[8]); // ids 9 and 5 differ (fixed seeds: not a coin flip)
  for (uint32_t t : ta)
    BOOST_TEST(t < 100u);
}

BOOST_AUTO_TEST_CASE(trace_arrivals_are_rescaled_cut_and_never_negative) {
  std::vector<trace_record> recs(4);
  recs[0].timestamp_ms = 1000;
  recs[1].timestamp_ms = 1100;
  recs[2].timestamp_ms = 1400;
  recs[3].timestamp_ms = 900; // unsorted: arrives with the first
  auto as_is = trace_arrivals_ms(recs, 0, 3);
  BOOST_TEST(as_is == (std::vector<double>{0, 100, 400}), boost::test_tools::per_element());
  auto at_10 = trace_arrivals_ms(recs, 10.0, 3); // 2 gaps at 10/s: the span is 200 ms
  BOOST_TEST(at_10 == (std::vector<double>{0, 50, 200}), boost::test_tools::per_element());
  auto all = trace_arrivals_ms(recs, 0, 0);
  BOOST_TEST(all.size() == 4u);
  BOOST_TEST(all[3] == 0.0);
  BOOST_TEST(trace_arrivals_ms({}, 5.0, 0).empty());
}

BOOST_AUTO_TEST_CASE(reuse_ratio_counts_blocks_seen_before) {
  std::vector<trace_record> t{{0, 8, 1, {1, 2}, 0}, {1000, 12, 1, {1, 2, 3}, 0},
                              {3000, 4, 1, {4}, 0}};
  auto s = analyze_workload(t);
  BOOST_TEST(s.requests == 3u);
  BOOST_TEST(s.reuse_ratio == 2.0 / 6.0);
  BOOST_TEST(s.duration_s == 3.0);
  BOOST_TEST(s.mean_input_length == 8.0);
}

BOOST_AUTO_TEST_SUITE_END()
