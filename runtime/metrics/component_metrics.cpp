#include "runtime/metrics/component_metrics.hpp"

#include "runtime/metrics/log_buckets.hpp"

#include <fmt/format.h>

namespace dynamo::metrics {

namespace {

constexpr std::string_view prefix = "dynamo_component_";

std::string name(std::string_view suffix) { return std::string{prefix} + std::string{suffix}; }

} // namespace

std::string_view to_string(component_error e) noexcept {
  switch (e) {
    case component_error::deserialization: return "deserialization";
    case component_error::generate: return "generate";
    case component_error::response_stream: return "response_stream";
  }
  return "generate";
}

expected<std::unique_ptr<component_metrics>> component_metrics::create(registry& reg) {
  std::unique_ptr<component_metrics> m{new component_metrics()};
  const std::vector<std::string> ep{"dynamo_namespace", "dynamo_component", "dynamo_endpoint"};
  std::vector<std::string> worker = ep;
  worker.emplace_back("worker_id");
  std::vector<std::string> err = ep;
  err.emplace_back("error_type");
  first_error step;
  step(take(reg.add_counter(name("requests_total"), "Requests received by the endpoint", ep), m->requests_total_));
  step(take(reg.add_counter(name("request_bytes_total"), "Request bytes received", ep), m->request_bytes_total_));
  step(take(reg.add_counter(name("response_bytes_total"), "Response bytes sent", ep), m->response_bytes_total_));
  step(take(reg.add_gauge(name("inflight_requests"), "Requests being processed", ep), m->inflight_requests_));
  step(take(reg.add_histogram(name("request_duration_seconds"), "Time from request to last response chunk", ep,
                              log_buckets(0.001, 480.0, 18)),
            m->request_duration_));
  step(take(reg.add_histogram(name("time_to_first_response_seconds"), "Time from request to first response chunk",
                              ep, log_buckets(0.001, 480.0, 18)),
            m->time_to_first_response_));
  step(take(reg.add_counter(name("errors_total"), "Requests that ended in an error", err), m->errors_total_));
  step(take(reg.add_counter(name("cancellation_total"), "Requests cancelled by their client", ep),
            m->cancellation_total_));
  step(take(reg.add_gauge(name("uptime_seconds"), "Seconds since the process started serving"), m->uptime_seconds_));
  step(take(reg.add_gauge(name("kvstats_active_blocks"), "KV blocks held by running requests", worker),
            m->active_blocks_));
  step(take(reg.add_gauge(name("kvstats_total_blocks"), "KV blocks in the worker's pool", worker), m->total_blocks_));
  step(take(reg.add_gauge(name("kvstats_gpu_cache_usage_percent"),
                          "Share of the KV pool in use, 0..1 (the engine's KV memory, GPU or RAM)", worker),
            m->cache_usage_percent_));
  step(take(reg.add_gauge(name("kvstats_gpu_prefix_cache_hit_rate"),
                          "Prompt tokens found in the prefix cache over prompt tokens received, 0..1", worker),
            m->prefix_hit_rate_));
  step(take(reg.add_gauge(name("engine_requests_running"), "Requests the engine is running", worker),
            m->requests_running_));
  step(take(reg.add_gauge(name("engine_requests_waiting"), "Requests waiting for admission or for their KV", worker),
            m->requests_waiting_));
  step(take(reg.add_histogram(name("engine_step_seconds"), "Time one engine step took (a batch's forward pass)",
                              worker, log_buckets(0.0001, 60.0, 24)),
            m->step_seconds_));
  step(take(reg.add_histogram(name("engine_step_tokens"), "Tokens one engine step computed (prompt and decode)",
                              worker, log_buckets(1.0, 65536.0, 17)),
            m->step_tokens_));
  step(take(reg.add_counter("kvbm_matched_tokens", "KVBM: prompt tokens found in the host or disk tier", worker),
            m->kvbm_matched_tokens_));
  step(take(reg.add_counter("kvbm_offload_blocks_d2h", "KVBM: blocks offloaded from the engine to the host tier",
                            worker),
            m->kvbm_offload_d2h_));
  step(take(reg.add_counter("kvbm_offload_blocks_h2d", "KVBM: blocks offloaded from the host to the disk tier", worker),
            m->kvbm_offload_h2d_));
  step(take(reg.add_counter("kvbm_onboard_blocks_h2d", "KVBM: blocks onboarded from the host tier into the engine",
                            worker),
            m->kvbm_onboard_h2d_));
  step(take(reg.add_counter("kvbm_onboard_blocks_d2d", "KVBM: blocks onboarded from the disk tier into the engine",
                            worker),
            m->kvbm_onboard_d2d_));
  step(take(reg.add_gauge("kvbm_host_cache_hit_rate", "KVBM: blocks found in the host tier over blocks looked up",
                          worker),
            m->kvbm_host_hit_rate_));
  step(take(reg.add_gauge("kvbm_disk_cache_hit_rate", "KVBM: blocks found in the disk tier over blocks looked up",
                          worker),
            m->kvbm_disk_hit_rate_));
  if (step.error)
    return step.error;
  m->uptime_seconds_->get().set(0.0);
  return m;
}

label_values component_metrics::labels(const endpoint_labels& ep) const {
  return {ep.dynamo_namespace, ep.dynamo_component, ep.dynamo_endpoint};
}

label_values component_metrics::worker_labels(const endpoint_labels& ep, uint64_t worker) const {
  return {ep.dynamo_namespace, ep.dynamo_component, ep.dynamo_endpoint, fmt::format("{:016x}", worker)};
}

void component_metrics::on_request(const endpoint_labels& ep, size_t request_bytes) {
  auto l = labels(ep);
  requests_total_->with(l).inc();
  request_bytes_total_->with(l).inc(static_cast<double>(request_bytes));
  inflight_requests_->with(std::move(l)).inc();
}

void component_metrics::on_first_response(const endpoint_labels& ep, std::chrono::duration<double> since) {
  time_to_first_response_->with(labels(ep)).observe(since.count());
}

void component_metrics::on_response_bytes(const endpoint_labels& ep, size_t bytes) {
  response_bytes_total_->with(labels(ep)).inc(static_cast<double>(bytes));
}

void component_metrics::on_end(const endpoint_labels& ep, std::chrono::duration<double> took) {
  auto l = labels(ep);
  request_duration_->with(l).observe(took.count());
  inflight_requests_->with(std::move(l)).dec();
}

void component_metrics::on_error(const endpoint_labels& ep, component_error error) {
  auto l = labels(ep);
  l.emplace_back(to_string(error));
  errors_total_->with(std::move(l)).inc();
}

void component_metrics::on_cancel(const endpoint_labels& ep) { cancellation_total_->with(labels(ep)).inc(); }

void component_metrics::on_prefix_lookup(const endpoint_labels& ep, uint64_t worker, uint32_t prompt,
                                         uint32_t cached) {
  double rate = 0.0;
  {
    std::lock_guard lk{prefix_mutex_};
    auto& [p, c] = prefix_tokens_[worker];
    p += prompt;
    c += std::min(cached, prompt);
    rate = p == 0 ? 0.0 : static_cast<double>(c) / static_cast<double>(p);
  }
  prefix_hit_rate_->with(worker_labels(ep, worker)).set(rate);
}

component_metrics::step_observer component_metrics::steps_of(const endpoint_labels& ep, uint64_t worker) {
  auto l = worker_labels(ep, worker);
  histogram& seconds = step_seconds_->with(l);
  return {seconds, step_tokens_->with(std::move(l))};
}

void component_metrics::step_observer::operator()(std::chrono::duration<double> took, uint32_t tokens) const {
  seconds_->observe(took.count());
  tokens_->observe(tokens);
}

void component_metrics::on_load(const endpoint_labels& ep, const protocol::load_metrics& load) {
  auto l = worker_labels(ep, load.worker_id);
  active_blocks_->with(l).set(load.active_decode_blocks);
  total_blocks_->with(l).set(load.total_blocks);
  cache_usage_percent_->with(l).set(load.kv_usage);
  requests_running_->with(l).set(load.num_running);
  requests_waiting_->with(l).set(load.num_waiting);
  if (!load.kvbm)
    return;
  const protocol::kvbm_metrics& k = *load.kvbm;
  protocol::kvbm_metrics last;
  {
    std::lock_guard lk{kvbm_mutex_};
    last = std::exchange(kvbm_last_[load.worker_id], k);
  }
  // A counter below its last report: the engine restarted; all of it is new.
  auto advance = [&](counter_family* f, uint64_t now, uint64_t before) {
    f->with(l).inc(static_cast<double>(now >= before ? now - before : now));
  };
  advance(kvbm_matched_tokens_, k.kvbm_matched_tokens, last.kvbm_matched_tokens);
  advance(kvbm_offload_d2h_, k.kvbm_offload_blocks_d2h, last.kvbm_offload_blocks_d2h);
  advance(kvbm_offload_h2d_, k.kvbm_offload_blocks_h2d, last.kvbm_offload_blocks_h2d);
  advance(kvbm_onboard_h2d_, k.kvbm_onboard_blocks_h2d, last.kvbm_onboard_blocks_h2d);
  advance(kvbm_onboard_d2d_, k.kvbm_onboard_blocks_d2d, last.kvbm_onboard_blocks_d2d);
  kvbm_host_hit_rate_->with(l).set(k.kvbm_host_cache_hit_rate);
  kvbm_disk_hit_rate_->with(std::move(l)).set(k.kvbm_disk_cache_hit_rate);
}

void component_metrics::refresh_uptime() {
  uptime_seconds_->get().set(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

} // namespace dynamo::metrics
