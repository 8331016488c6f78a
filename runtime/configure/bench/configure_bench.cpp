// dynamo-configure-bench: how many candidate deployments dynamo-configure's
// simulator evaluates per minute of one core's CPU time (issue 16 target:
// 10,000). The profile is the mocker's, measured by the profiler as
// dynamo-profile would; the search space and traffic are dynamo-configure's
// defaults. Prints one JSON object.
#include "runtime/configure/search.hpp"
#include "runtime/core/cli.hpp"
#include "runtime/mocker/mock_executor.hpp"
#include "runtime/plan/profiler.hpp"

#include <nlohmann/json.hpp>

#include <ctime>
#include <iostream>

using namespace dynamo;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

} // namespace

int main(int argc, char** argv) {
  uint32_t rounds = 3, requests = 400, budget = 8;
  double rate = 20, ttft = 500, itl = 50;
  std::string isl = "normal:1024,256", osl = "normal:128,32";
  uint32_t prefix_groups = 4;
  double prefix_share = 0.5;
  bool smoke = false;
  cli c("dynamo-configure-bench", "candidate deployments simulated per CPU-minute by dynamo-configure's search");
  c.option("rounds", &rounds, "times the whole search runs")
    .option("requests", &requests, "simulated requests per candidate")
    .option("gpu-budget", &budget, "GPUs (the search space grows with it)")
    .option("rate", &rate, "requests per second")
    .option("isl", &isl, "prompt lengths: fixed:N | normal:MEAN,SD | uniform:LO,HI")
    .option("osl", &osl, "output lengths, same forms")
    .option("prefix-groups", &prefix_groups, "shared system prompts")
    .option("prefix-share", &prefix_share, "share of each prompt that is its group's")
    .option("ttft-ms", &ttft, "TTFT target")
    .option("itl-ms", &itl, "ITL target")
    .option("smoke", &smoke, "tiny run (CTest): 1 round, 20 requests, budget 3");
  if (auto code = cli_exit_code("dynamo-configure-bench", c.parse(argc, argv)))
    return *code;
  if (smoke) {
    rounds = 1;
    requests = 20;
    budget = 3;
  }
  auto i = configure::parse_length_dist(isl);
  auto o = configure::parse_length_dist(osl);
  if (!i || !o) {
    std::cerr << "dynamo-configure-bench: " << message_of(i ? o.error() : i.error()) << "\n";
    return 2;
  }
  mocker::mocker_config mc; // the mocker's defaults, as dynamo-profile on a default pool
  auto profile = plan::run_profile([mc] { return mocker::make_engine(mc); }, plan::profile_sweep{});
  if (!profile) {
    std::cerr << "dynamo-configure-bench: profile: " << message_of(profile.error()) << "\n";
    return 1;
  }
  profile->engine = "mocker";
  configure::traffic_spec t{.isl = *i, .osl = *o, .rate = rate, .requests = requests,
                            .prefix_groups = prefix_groups, .prefix_share = prefix_share};
  const auto reqs = configure::make_requests(t);
  configure::search_space space;
  space.gpu_budget = budget;
  const auto candidates = configure::enumerate(space);
  configure::simulator sim(*profile, configure::sim_options{});
  nlohmann::json runs = nlohmann::json::array();
  double best = 0;
  size_t meeting = 0;
  for (uint32_t r = 0; r < rounds; ++r) {
    const double c0 = cpu_seconds();
    auto results = configure::evaluate(sim, candidates, reqs, {ttft, itl});
    auto front = configure::pareto_front(results);
    auto win = configure::pick_winner(results);
    const double cpu = cpu_seconds() - c0;
    uint64_t steps = 0;
    meeting = 0;
    for (const auto& e : results) {
      steps += e.r.steps;
      meeting += e.meets_sla ? 1 : 0;
    }
    const double per_min = cpu > 0 ? static_cast<double>(results.size()) * 60.0 / cpu : 0;
    best = std::max(best, per_min);
    runs.push_back({{"cpu_s", cpu},
                    {"configs_per_cpu_minute", per_min},
                    {"engine_steps", steps},
                    {"steps_per_cpu_s", cpu > 0 ? static_cast<double>(steps) / cpu : 0},
                    {"pareto_front", front.size()},
                    {"winner", win ? configure::describe(results[*win].d) : std::string{}}});
  }
  nlohmann::json out{{"bench", "dynamo-configure"},
                     {"candidates", candidates.size()},
                     {"requests_per_candidate", reqs.requests.size()},
                     {"traffic", {{"isl", configure::to_string(*i)}, {"osl", configure::to_string(*o)},
                                  {"rate", rate}, {"prefix_groups", prefix_groups},
                                  {"prefix_share", prefix_share}}},
                     {"gpu_budget", budget},
                     {"meeting_sla", meeting},
                     {"runs", runs},
                     {"best_configs_per_cpu_minute", best},
                     {"target_configs_per_minute", 10000}};
  std::cout << out.dump(2) << "\n";
  return 0;
}
