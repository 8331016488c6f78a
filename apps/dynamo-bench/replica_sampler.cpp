#include "apps/dynamo-bench/replica_sampler.hpp"

#include "runtime/metrics/exposition.hpp"

namespace dynamo::bench {

replica_sampler::replica_sampler(std::string host, uint16_t port, std::string target, double gpus_per_replica)
    : client_(std::move(host), port, 1), target_(std::move(target)), gpus_per_replica_(gpus_per_replica) {}

replica_sampler::~replica_sampler() { stop(); }

void replica_sampler::start() {
  stop_ = false;
  thread_ = std::thread([this] { loop(); });
}

void replica_sampler::stop() {
  stop_ = true;
  if (thread_.joinable())
    thread_.join();
}

void replica_sampler::loop() {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  double last = 0;
  auto next = t0;
  while (!stop_) {
    auto r = client_.request({"GET", target_, "", ""}, std::chrono::seconds(2));
    std::optional<double> n;
    if (r && r->status == 200)
      if (auto page = metrics::parse_exposition(r->body))
        n = metrics::sum_samples(*page, "dynamo_planner_observed_replicas");
    if (n)
      last = *n;
    else
      ++failed_;
    const double t = std::chrono::duration<double>(clock::now() - t0).count();
    if (!samples_.empty())
      gpu_seconds_ += samples_.back().replicas * gpus_per_replica_ * (t - samples_.back().t);
    samples_.push_back({t, last});
    next += std::chrono::seconds(1);
    while (!stop_ && clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!samples_.empty()) { // the last stretch, to stop()
    const double t = std::chrono::duration<double>(clock::now() - t0).count();
    gpu_seconds_ += samples_.back().replicas * gpus_per_replica_ * (t - samples_.back().t);
  }
}

} // namespace dynamo::bench
