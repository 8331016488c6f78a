// Where the simulated requests' time to first token goes, for
// dynamo-kv-routing-bench: a probe executor around the mocker's that lists each
// step's sequences, per-request queueing / onboarding / own prefill / shared
// step time, and how much of each prompt was cacheable anywhere versus hit on
// the routed worker. Single-threaded (the simulation's thread).
#pragma once

#include "runtime/engine/engine_core.hpp"
#include "runtime/engine/executor.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dynamo::route::bench {

/// Forwards to `inner` and remembers the sequences of the last batch it ran.
class probe_executor final : public engine::executor {
public:
  explicit probe_executor(std::unique_ptr<engine::executor> inner) : inner_(std::move(inner)) {}
  struct entry {
    uint64_t seq_id = 0;
    uint32_t tokens = 0;
    bool sample = false;
  };
  /// The last batch's entries and simulated time (cleared by the call).
  [[nodiscard]] std::vector<entry> take_batch(std::chrono::microseconds& simulated);

  [[nodiscard]] expected<engine::batch_result> execute(const engine::batch& b) override;
  [[nodiscard]] engine::kv_geometry geometry() const noexcept override { return inner_->geometry(); }
  [[nodiscard]] uint32_t context_length() const noexcept override { return inner_->context_length(); }
  [[nodiscard]] std::string name() const override { return inner_->name(); }
  [[nodiscard]] bool computes_embeddings() const noexcept override { return inner_->computes_embeddings(); }
  [[nodiscard]] bool computes_prompt_logprobs() const noexcept override { return inner_->computes_prompt_logprobs(); }
  [[nodiscard]] std::optional<protocol::kv_layout> kv_transfer_layout() override { return inner_->kv_transfer_layout(); }
  [[nodiscard]] std::chrono::microseconds simulated_onboard_time(uint64_t host, uint64_t disk) const override {
    return inner_->simulated_onboard_time(host, disk);
  }

private:
  std::unique_ptr<engine::executor> inner_;
  std::vector<entry> last_;
  std::chrono::microseconds simulated_{0};
};

/// One request's time to first token, split, and its prompt's cacheability (blocks).
struct request_probe {
  double arrival_us = 0;
  double in_flight_wait_us = 0; ///< the rest of the step running when it arrived
  double first_scheduled_us = -1;
  double onboard_us = 0;   ///< onboarding in its steps up to its first token
  double service_us = 0;   ///< its steps up to its first token, whole
  uint32_t computed = 0;   ///< prompt tokens it computed itself
  uint32_t prompt_blocks = 0;
  uint32_t seen_blocks = 0;       ///< prefix computed before anywhere (an infinite cache)
  uint32_t any_worker_blocks = 0; ///< longest prefix in some tier of the best worker
  uint32_t routed_blocks = 0;     ///< the same on the routed worker
  uint32_t router_best_blocks = 0;   ///< the router's view: longest lower-tier match of any worker
  uint32_t router_routed_blocks = 0; ///< the router's view of the routed worker
  uint32_t hit_blocks = 0;        ///< what the routed worker served (cached tokens / block size)
};

/// The prefix of `hashes` (capped at `max_blocks`) that `core` holds in G1,
/// then G1 or a KVBM tier, consecutively: what it could serve without compute.
[[nodiscard]] uint32_t tiered_prefix(const engine::engine_core& core, std::span<const uint64_t> hashes,
                                     size_t max_blocks);

/// Records one executed step of an engine: `seq_to_request` maps its sequence
/// ids (1, 2, ... in add_request order) to request indexes.
void record_step(std::span<const probe_executor::entry> batch, double start_us, double duration_us,
                 double onboard_us, std::span<const size_t> seq_to_request, std::vector<request_probe>& probes,
                 std::span<const double> first_token_us);

/// {"ttft_p50_ms", the timing model's p50 floor with an infinite cache (each
/// request computing only what was never computed before, alone, without
/// queueing, its step's decode term at its own KV usage of `num_blocks`), the
/// mean split of the requests between TTFT p40 and p60: queue (in-flight step,
/// behind others), onboard, own prefill alone, shared step time; and
/// cacheability means over all requests}.
[[nodiscard]] std::string breakdown_json(std::span<const request_probe> probes, std::span<const double> first_token_us,
                                         uint32_t block_size, uint32_t num_blocks);

} // namespace dynamo::route::bench
