#include "runtime/plan/planner_metrics.hpp"


namespace dynamo::plan {

expected<std::unique_ptr<planner_metrics>> planner_metrics::create(metrics::registry& reg) {
  std::unique_ptr<planner_metrics> m{new planner_metrics()};
  const std::vector<std::string> pool{"pool"};
  metrics::first_error step;
  using metrics::take;
  step(take(reg.add_counter("dynamo_planner_steps_total", "Planning steps taken"), m->steps_));
  step(take(reg.add_counter("dynamo_planner_decisions_total", "Target changes decided, by direction",
                            {"pool", "direction"}),
            m->decisions_));
  step(take(reg.add_gauge("dynamo_planner_target_replicas", "Replicas the planner wants (desired)", pool),
            m->target_));
  step(take(reg.add_gauge("dynamo_planner_observed_replicas", "Replicas seen in discovery (actual)", pool),
            m->observed_));
  step(take(reg.add_gauge("dynamo_planner_reporting_engines", "Engines that reported load in the last interval",
                          pool),
            m->engines_));
  step(take(reg.add_gauge("dynamo_planner_observed_load", "Mean engine load (KV usage or prefill load) in the "
                                                          "last interval", pool),
            m->load_));
  step(take(reg.add_gauge("dynamo_planner_predicted_load", "Mean engine load predicted for the next interval", pool),
            m->predicted_load_));
  step(take(reg.add_gauge("dynamo_planner_observed_waiting", "Mean waiting requests per engine in the last interval",
                          pool),
            m->waiting_));
  step(take(reg.add_gauge("dynamo_planner_predicted_waiting", "Mean waiting requests per engine predicted next",
                          pool),
            m->predicted_waiting_));
  step(take(reg.add_gauge("dynamo_planner_pending_decision", "1 while a decision waits for its replicas", pool),
            m->pending_));
  step(take(reg.add_gauge("dynamo_planner_throughput_floor_replicas",
                          "Replicas the traffic needs (load mode: a lower bound; sla mode: the target)", pool),
            m->throughput_floor_));
  step(take(reg.add_gauge("dynamo_planner_sla_prefill_seconds",
                          "SLA mode: one prompt's prefill time at the predicted ISL, from the profile", pool),
            m->sla_prefill_seconds_));
  step(take(reg.add_gauge("dynamo_planner_sla_decode_batch",
                          "SLA mode: the largest decode batch meeting the ITL target (0: none)", pool),
            m->sla_decode_batch_));
  if (step.error)
    return step.error;
  return m;
}

void planner_metrics::observe(const step_result& r) {
  steps_->get().inc();
  for (const scaling_decision& d : r.decisions)
    decisions_->with({d.pool, d.target > d.current ? "up" : "down"}).inc();
  for (const pool_status& s : r.pools) {
    const metrics::label_values pool{s.pool};
    target_->with(pool).set(s.target);
    observed_->with(pool).set(s.observed);
    engines_->with(pool).set(static_cast<double>(s.engines));
    load_->with(pool).set(s.mean_load);
    predicted_load_->with(pool).set(s.predicted_load);
    waiting_->with(pool).set(s.mean_waiting);
    predicted_waiting_->with(pool).set(s.predicted_waiting);
    pending_->with(pool).set(s.pending ? 1.0 : 0.0);
    if (s.throughput_floor)
      throughput_floor_->with(pool).set(*s.throughput_floor);
    if (s.sla) {
      sla_prefill_seconds_->with(pool).set(s.sla->prefill_ms / 1000.0);
      sla_decode_batch_->with(pool).set(s.sla->decode_batch);
    }
  }
}

} // namespace dynamo::plan
