// Samples how many workers a cluster runs while dynamo-bench loads it: once a
// second, GET a Prometheus text page (the planner's system server) and sum
// dynamo_planner_observed_replicas over its pools; integrates GPU-seconds.
// start() spawns a thread; stop() joins it; the accessors read after stop().
#pragma once

#include "planes/http_client/http_client.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace dynamo::bench {

class replica_sampler {
public:
  struct sample {
    double t = 0;        ///< seconds since start()
    double replicas = 0; ///< summed over pools; the last good value when a scrape failed
  };

  /// `url`: http://host:port/metrics. `gpus_per_replica` scales GPU-seconds.
  replica_sampler(std::string host, uint16_t port, std::string target, double gpus_per_replica);
  ~replica_sampler();
  void start();
  void stop();

  [[nodiscard]] const std::vector<sample>& samples() const noexcept { return samples_; }
  [[nodiscard]] double gpu_seconds() const noexcept { return gpu_seconds_; }
  [[nodiscard]] uint64_t failed_scrapes() const noexcept { return failed_; }

private:
  void loop();

  http::http_client client_;
  std::string target_;
  double gpus_per_replica_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<sample> samples_;
  double gpu_seconds_ = 0;
  uint64_t failed_ = 0;
};

} // namespace dynamo::bench
