#include "runtime/metrics/frontend_metrics.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace dynamo::metrics {

std::string_view to_string(endpoint_label v) noexcept {
  switch (v) {
    case endpoint_label::chat_completions: return "chat_completions";
    case endpoint_label::completions: return "completions";
    case endpoint_label::responses: return "responses";
    case endpoint_label::anthropic_messages: return "anthropic_messages";
    case endpoint_label::anthropic_count_tokens: return "anthropic_count_tokens";
    case endpoint_label::embeddings: return "embeddings";
    case endpoint_label::tokenize: return "tokenize";
    case endpoint_label::detokenize: return "detokenize";
  }
  return "unknown";
}

std::string_view to_string(request_type v) noexcept {
  switch (v) {
    case request_type::unary: return "unary";
    case request_type::stream: return "stream";
  }
  return "unknown";
}

std::string_view to_string(error_type v) noexcept {
  switch (v) {
    case error_type::none: return "";
    case error_type::validation: return "validation";
    case error_type::not_found: return "not_found";
    case error_type::overload: return "overload";
    case error_type::cancelled: return "cancelled";
    case error_type::response_timeout: return "response_timeout";
    case error_type::internal: return "internal";
    case error_type::not_implemented: return "not_implemented";
  }
  return "internal";
}

error_type error_type_of(errc code) noexcept {
  switch (code) {
    case errc::invalid_argument:
    case errc::context_length_exceeded:
    case errc::malformed_message: return error_type::validation;
    case errc::unsupported: return error_type::not_implemented;
    case errc::not_found: return error_type::not_found;
    case errc::overloaded:
    case errc::no_workers: return error_type::overload;
    case errc::cancelled: return error_type::cancelled;
    case errc::timeout: return error_type::response_timeout;
    case errc::io_error:
    case errc::corrupt_file:
    case errc::closed:
    case errc::disconnected:
    case errc::device_error:
    case errc::config_error:
    case errc::internal: return error_type::internal;
  }
  return error_type::internal;
}

namespace {

/// Reads DYN_METRICS_<name>_{MIN,MAX,COUNT} over `spec`.
caf::error read_buckets(const std::function<const char*(const char*)>& env, const std::string& name,
                        bucket_spec& spec) {
  auto number = [&](const std::string& var, double& out) -> caf::error {
    const char* v = env(var.c_str());
    if (v == nullptr || *v == '\0')
      return {};
    char* end = nullptr;
    const double d = std::strtod(v, &end);
    if (end == v || *end != '\0' || !std::isfinite(d))
      return make_error(errc::config_error, var + "='" + v + "': not a number");
    out = d;
    return {};
  };
  const std::string base = "DYN_METRICS_" + name;
  double count = static_cast<double>(spec.count);
  if (auto e = number(base + "_MIN", spec.min))
    return e;
  if (auto e = number(base + "_MAX", spec.max))
    return e;
  if (auto e = number(base + "_COUNT", count))
    return e;
  if (!(spec.min > 0 && spec.min < spec.max))
    return make_error(errc::config_error, fmt::format("{}_MIN/_MAX: need 0 < min < max (got {} and {})", base,
                                                      spec.min, spec.max));
  if (!(count >= 1 && count <= 64 && count == std::floor(count)))
    return make_error(errc::config_error, fmt::format("{}_COUNT: a whole number in [1, 64] (got {})", base, count));
  spec.count = static_cast<size_t>(count);
  return {};
}

} // namespace

expected<frontend_metrics_config>
frontend_metrics_config_from_env(const std::function<const char*(const char*)>& env) {
  frontend_metrics_config cfg;
  if (const char* p = env("DYN_METRICS_PREFIX"); p != nullptr && *p != '\0') {
    if (!is_metric_name(p))
      return make_error(errc::config_error,
                        std::string{"DYN_METRICS_PREFIX='"} + p + "': not a Prometheus metric name");
    cfg.prefix = p;
  }
  if (auto e = read_buckets(env, "REQUEST_DURATION", cfg.request_duration))
    return e;
  if (auto e = read_buckets(env, "TTFT", cfg.time_to_first_token))
    return e;
  if (auto e = read_buckets(env, "ITL", cfg.inter_token_latency))
    return e;
  return cfg;
}

expected<std::unique_ptr<frontend_metrics>>
frontend_metrics::create(registry& reg, const frontend_metrics_config& cfg) {
  std::unique_ptr<frontend_metrics> m{new frontend_metrics()};
  auto name = [&](std::string_view suffix) { return cfg.prefix + "_" + std::string{suffix}; };
  const std::vector<std::string> model{"model"};
  auto isl = cfg.input_sequence.bounds();
  first_error step;
  step(take(reg.add_counter(name("requests_total"), "Total number of LLM requests processed",
                            {"model", "endpoint", "request_type", "status", "error_type"}),
            m->requests_total));
  step(take(reg.add_gauge(name("inflight_requests"), "Number of inflight requests", model),
            m->inflight_requests));
  step(take(reg.add_gauge(name("queued_requests"), "Number of requests in HTTP processing queue",
                          model),
            m->queued_requests));
  step(take(reg.add_counter(name("disconnected_clients"), "Number of disconnected clients"),
            m->disconnected_clients));
  step(take(reg.add_histogram(name("request_duration_seconds"), "Duration of LLM requests", model,
                              cfg.request_duration.bounds()),
            m->request_duration));
  step(take(reg.add_histogram(name("input_sequence_tokens"), "Input sequence length in tokens",
                              model, isl),
            m->input_sequence_tokens));
  step(take(reg.add_histogram(name("output_sequence_tokens"), "Output sequence length in tokens",
                              model, cfg.output_sequence.bounds()),
            m->output_sequence_tokens));
  step(take(reg.add_histogram(name("cached_tokens"),
                              "Number of cached tokens (prefix cache hits) per request", model, isl),
            m->cached_tokens));
  step(take(reg.add_counter(name("output_tokens_total"),
                            "Total number of output tokens generated (updates in real-time)", model),
            m->output_tokens_total));
  step(take(reg.add_counter(name("model_migration_total"),
                            "Requests re-routed to another worker after theirs failed",
                            {"model", "migration_type"}),
            m->model_migration_total));
  step(take(reg.add_counter(name("disagg_requests_total"),
                            "Requests sent prefill-first to a prefill worker (remote) or prefilled "
                            "locally after the remote prefill failed (local_fallback)",
                            {"model", "prefill"}),
            m->disagg_requests_total));
  step(take(reg.add_histogram(name("time_to_first_token_seconds"), "Time to first token in seconds",
                              model, cfg.time_to_first_token.bounds()),
            m->time_to_first_token));
  step(take(reg.add_histogram(name("inter_token_latency_seconds"), "Inter-token latency in seconds",
                              model, cfg.inter_token_latency.bounds()),
            m->inter_token_latency));
  if (step.error)
    return step.error;
  return m;
}

void frontend_metrics::register_model(std::string_view model) {
  const std::string m{model};
  auto zero = [&](endpoint_label ep, request_type rt) {
    requests_total->with({m, std::string{to_string(ep)}, std::string{to_string(rt)}, "success", ""}).inc(0);
  };
  for (auto ep : {endpoint_label::chat_completions, endpoint_label::completions})
    for (auto rt : {request_type::unary, request_type::stream})
      zero(ep, rt);
  zero(endpoint_label::embeddings, request_type::unary);
  (void)inflight_requests->with({m}); // created at 0, or left as they are
  (void)queued_requests->with({m});
  output_tokens_total->with({m}).inc(0);
}

void frontend_metrics::count_request(std::string_view model, endpoint_label ep, request_type rt,
                                     error_type err) {
  requests_total
    ->with({std::string{model}, std::string{to_string(ep)}, std::string{to_string(rt)},
            err == error_type::none ? "success" : "error", std::string{to_string(err)}})
    .inc();
}

// -- request_recorder ---------------------------------------------------------

request_recorder::request_recorder(frontend_metrics& m, std::string model, endpoint_label ep,
                                   request_type rt, clock::time_point start)
  : m_(&m), model_(std::move(model)), endpoint_(ep), type_(rt), start_(start) {
  m_->inflight_requests->with({model_}).inc();
  m_->queued_requests->with({model_}).inc();
}

request_recorder::~request_recorder() { finish(clock::now()); }

void request_recorder::observe_prompt(uint32_t prompt_tokens) {
  if (std::exchange(prompt_observed_, true))
    return;
  m_->input_sequence_tokens->with({model_}).observe(prompt_tokens);
}

void request_recorder::observe_cached(uint32_t cached) {
  if (std::exchange(cached_observed_, true))
    return;
  m_->cached_tokens->with({model_}).observe(cached);
}

void request_recorder::observe_tokens(uint32_t n, clock::time_point now) {
  if (n == 0 || finished_)
    return;
  output_tokens_ += n;
  m_->output_tokens_total->with({model_}).inc(n);
  if (!last_chunk_) {
    // With several tokens in the first chunk, the whole wait counts as TTFT.
    std::chrono::duration<double> ttft = now - start_;
    m_->time_to_first_token->with({model_}).observe(ttft.count());
    if (std::exchange(queued_, false))
      m_->queued_requests->with({model_}).dec();
  } else {
    std::chrono::duration<double> gap = now - *last_chunk_;
    const double itl = gap.count() / n;
    auto& h = m_->inter_token_latency->with({model_});
    for (uint32_t i = 0; i < n; ++i)
      h.observe(itl);
  }
  last_chunk_ = now;
}

void request_recorder::mark_disconnected() {
  m_->disconnected_clients->get().inc();
  error_ = error_type::cancelled;
}

void request_recorder::finish(clock::time_point now) {
  if (std::exchange(finished_, true))
    return;
  m_->inflight_requests->with({model_}).dec();
  if (queued_)
    m_->queued_requests->with({model_}).dec();
  m_->count_request(model_, endpoint_, type_, error_);
  std::chrono::duration<double> took = now - start_;
  m_->request_duration->with({model_}).observe(took.count());
  if (output_tokens_ > 0)
    m_->output_sequence_tokens->with({model_}).observe(output_tokens_);
}

} // namespace dynamo::metrics
