#include "runtime/engine/engine_core.hpp"
#include "runtime/kv/block_count.hpp"

#include "runtime/kv/block_hash.hpp"
#include "runtime/protocol/codec.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>

namespace dynamo::engine {

uint32_t engine_core::max_model_len_of(const executor& exec, const engine_config& cfg) noexcept {
  const kv_geometry g = exec.geometry();
  const uint64_t kv_tokens = uint64_t{cfg.num_blocks == 0 ? g.num_blocks : cfg.num_blocks} * g.block_size;
  const uint32_t ctx = cfg.max_model_len == 0 ? exec.context_length() : std::min(cfg.max_model_len, exec.context_length());
  return static_cast<uint32_t>(std::min<uint64_t>(ctx, kv_tokens));
}

expected<std::unique_ptr<engine_core>> engine_core::create(std::unique_ptr<executor> exec,
                                                           engine_config cfg) {
  if (exec == nullptr)
    return make_error(errc::config_error, "engine_core needs an executor");
  const kv_geometry g = exec->geometry();
  if (cfg.num_blocks > g.num_blocks)
    return make_error(errc::config_error,
                      "num_blocks " + std::to_string(cfg.num_blocks) + " exceeds the executor's " +
                          std::to_string(g.num_blocks));
  scheduler_config sc;
  sc.block_size = g.block_size;
  sc.num_blocks = cfg.num_blocks == 0 ? g.num_blocks : cfg.num_blocks;
  sc.max_model_len = max_model_len_of(*exec, cfg);
  sc.max_num_seqs = cfg.max_num_seqs;
  sc.max_num_batched_tokens = cfg.max_num_batched_tokens;
  sc.max_num_partial_prefills = cfg.max_num_partial_prefills;
  sc.enable_prefix_caching = cfg.enable_prefix_caching;
  sc.emit_kv_events = cfg.emit_kv_events;
  if (auto ok = validate(sc); !ok)
    return ok.error();
  if (cfg.hold_ttl.count() <= 0)
    return make_error(errc::config_error, "hold_ttl must be > 0");
  auto core = std::unique_ptr<engine_core>(
    new engine_core(std::move(exec), sc, cfg.hold_ttl, cfg.clock, std::move(cfg.grammars)));
  if (cfg.kvbm.enabled())
    if (auto ok = core->enable_kvbm(std::move(cfg.kvbm), std::move(cfg.clock)); !ok)
      return ok.error();
  return core;
}

expected<void> engine_core::enable_kvbm(kvbm::kvbm_config cfg, kvbm::kvbm_connector::clock_fn clock) {
  if (!sched_.config().enable_prefix_caching) {
    spdlog::warn("KVBM needs prefix caching (it offloads registered blocks); running without it");
    return {};
  }
  std::optional<kvbm::g1_view> g1;
  uint64_t block_bytes = 0;
  if (auto m = exec_->kv_memory()) {
    if (m->on_device) {
      spdlog::warn("KVBM: the {} executor's KV is in device memory, which this build cannot copy to host "
                   "tiers yet; running without KVBM", exec_->name());
      return {};
    }
    block_bytes = m->layout.bytes_per_block;
    g1 = kvbm::g1_view{static_cast<std::byte*>(m->base), m->block_stride, block_bytes, m->num_blocks};
  } else if (auto layout = exec_->kv_transfer_layout()) {
    block_bytes = layout->bytes_per_block; // no bytes: tiers of hashes sized as if they held them
  } else {
    spdlog::warn("KVBM: the {} executor exposes no KV layout; running without KVBM", exec_->name());
    return {};
  }
  auto c = kvbm::kvbm_connector::create(sched_.kv(), std::move(cfg), g1, block_bytes, std::move(clock));
  if (!c)
    return c.error();
  kvbm_ = std::move(*c);
  chain_ = std::make_unique<kv::connector_chain>(std::vector<kv::kv_connector*>{&connector_, kvbm_.get()});
  sched_.set_connector(chain_.get());
  spdlog::info("KVBM on: host tier {} blocks, disk tier {} blocks{} ({} bytes per block{})", kvbm_->host().capacity(),
               kvbm_->disk() ? kvbm_->disk()->capacity() : 0,
               kvbm_->disk() && kvbm_->disk()->has_files() ? " under " + kvbm_->disk()->directory() : std::string{},
               block_bytes, g1 ? "" : ", no bytes held");
  return {};
}

void engine_core::kvbm_before_schedule(std::vector<request_output>& out) {
  if (!sched_.has_schedulable() && out.empty() && kvbm_->loads_in_flight() > 0)
    kvbm_->wait_for_loads(std::chrono::milliseconds(2)); // nothing else to do: no busy loop
  (void)sched_.finish_loads(out);
  // Loads admitted now start before this step's forward pass; those that end
  // at once (inline: the mocker's) run in this step rather than the next.
  if (sched_.admit_loads() > 0) {
    kvbm_->start_loads();
    (void)sched_.finish_loads(out);
  }
}

std::chrono::microseconds engine_core::kvbm_onboard_time() {
  const kvbm::kvbm_connector::onboard_tally t = kvbm_->take_onboarded();
  return exec_->simulated_onboard_time(t.host_blocks, t.disk_blocks);
}

engine_core::engine_core(std::unique_ptr<executor> exec, const scheduler_config& cfg,
                         std::chrono::milliseconds hold_ttl, disagg::disagg_connector::clock_fn clock,
                         std::shared_ptr<gram::grammar_cache> grammars)
    : exec_(std::move(exec)), sched_(cfg), connector_(sched_.kv(), std::move(clock)), hold_ttl_(hold_ttl),
      grammars_(std::move(grammars)) {
  sched_.set_connector(&connector_);
}

expected<std::optional<gram::matcher>> engine_core::guide_of(const protocol::preprocessed_request& req) {
  if (req.sampling.guided.kind == protocol::guided_kind::none)
    return std::optional<gram::matcher>{};
  if (grammars_ == nullptr)
    return make_error(errc::unsupported, "guided decoding (structured outputs) is not available on the " +
                                             exec_->name() + " executor of this worker");
  auto cg = grammars_->get(req.sampling.guided);
  if (!cg)
    return cg.error();
  std::optional<gram::matcher> m(std::in_place, *cg);
  // After a migration the request carries its output so far: replay it.
  const size_t prompt = req.prompt_tokens == 0 ? req.token_ids.size()
                                               : std::min<size_t>(req.prompt_tokens, req.token_ids.size());
  for (size_t i = prompt; i < req.token_ids.size(); ++i)
    if (auto ok = m->accept_token(req.token_ids[i]); !ok)
      return make_error(errc::invalid_argument, "the output so far does not follow the grammar: " + message_of(ok.error()));
  return m;
}

std::string engine_core::rejection(const protocol::preprocessed_request& req) const {
  const uint32_t limit = max_model_len();
  if (req.token_ids.empty())
    return "the prompt is empty";
  if (exceeds_context(req))
    return "the prompt has " + std::to_string(req.token_ids.size()) +
           " tokens; this model's context length is " + std::to_string(limit) +
           " (prompt + output), so at most " + std::to_string(limit - 1) + " prompt tokens fit";
  const protocol::sampling_options& o = req.sampling;
  if (req.embed) { // computes the prompt only: no sampling, no stop rules
    if (!exec_->computes_embeddings())
      return "the " + exec_->name() + " executor does not compute embeddings";
    if (o.n != 1 || !req.disagg.empty() || o.guided.kind != protocol::guided_kind::none)
      return "an embedding request has one choice, no grammar and no disaggregation role";
    return {};
  }
  if (req.stop.max_tokens == 0)
    return "max_tokens must be at least 1";
  if (o.n == 0 || o.n > sched_.config().max_num_seqs)
    return "n is " + std::to_string(o.n) + "; this worker runs 1 to " +
           std::to_string(sched_.config().max_num_seqs) + " sequences at once";
  const uint64_t bs = sched_.config().block_size;
  const uint64_t fork_blocks = req.token_ids.size() % bs != 0 ? o.n - 1 : 0;
  if (kv::blocks_for_tokens(req.token_ids.size(), bs) + fork_blocks > sched_.config().num_blocks)
    return "the prompt and the copies of its last block for " + std::to_string(o.n) +
           " choices need more KV blocks than this worker has (" +
           std::to_string(sched_.config().num_blocks) + ")";
  if (o.n > 1 && !req.disagg.empty())
    return "n > 1 is not supported with disaggregated prefill/decode yet (its prefill result "
           "carries one first token)";
  if (o.logprobs && *o.logprobs > protocol::max_top_logprobs)
    return "logprobs asks for " + std::to_string(*o.logprobs) + " alternatives; at most " +
           std::to_string(protocol::max_top_logprobs);
  if (o.prompt_logprobs)
    if (std::string why = prompt_logprobs_rejection(req); !why.empty())
      return why;
  if (o.logit_bias.size() > protocol::max_logit_bias)
    return "logit_bias has " + std::to_string(o.logit_bias.size()) + " entries; at most " +
           std::to_string(protocol::max_logit_bias);
  return {};
}

std::string engine_core::prompt_logprobs_rejection(const protocol::preprocessed_request& req) const {
  const protocol::sampling_options& o = req.sampling;
  if (!exec_->computes_prompt_logprobs())
    return "the " + exec_->name() + " executor does not compute prompt logprobs";
  if (*o.prompt_logprobs > protocol::max_top_logprobs)
    return "prompt_logprobs asks for " + std::to_string(*o.prompt_logprobs) + " alternatives; at most " +
           std::to_string(protocol::max_top_logprobs);
  if (o.n != 1 || !req.disagg.empty())
    return "prompt logprobs need n = 1 and no disaggregation role";
  if (req.prompt_tokens != 0 && req.prompt_tokens != req.token_ids.size())
    return "prompt logprobs cannot be asked for again after output was generated (a migration)";
  return {};
}

std::string engine_core::apply_disagg(protocol::preprocessed_request& req, bool& save) {
  auto params = protocol::decode<protocol::disagg_params>(req.disagg);
  if (!params)
    return "disaggregation parameters do not decode: " + message_of(params.error());
  if (params->role == protocol::disagg_role::prefill) {
    // Its blocks could never be handed off: fail now (the router then
    // prefills on the decode worker) rather than compute and hold them.
    if (!exec_->kv_transfer_layout())
      return "the " + exec_->name() + " executor cannot hand off KV (prefill role)";
    save = true;
    req.stop.max_tokens = 1; // a prefill worker produces the first token only
  } else if (params->role == protocol::disagg_role::decode) {
    std::string refusal = params->prefill
                              ? disagg::load_refusal(*params->prefill, req.token_ids.size(),
                                                     sched_.config().block_size, exec_->kv_transfer_layout(),
                                                     exec_->name())
                              : std::string{"no prefill result"};
    if (refusal.empty()) {
      connector_.expect_load(req.request_id, std::move(*params->prefill));
    } else {
      spdlog::warn("request {}: cannot pull the prompt's KV ({}); prefilling locally", req.request_id, refusal);
      if (params->prefill) {
        connector_.refuse(std::move(*params->prefill));
        local_prefills_.insert(req.request_id);
      }
    }
  }
  return {};
}

expected<void> engine_core::add_request(protocol::preprocessed_request req) {
  std::string why = rejection(req);
  // What rejection() names is the request's own fault (a client error); a
  // disaggregation refusal below stays unknown.
  const errc fault = !req.token_ids.empty() && exceeds_context(req) ? errc::context_length_exceeded
                                                                   : errc::invalid_argument;
  uint8_t code = why.empty() ? 0 : static_cast<uint8_t>(fault);
  if (why.empty() && sched_.contains(req.request_id)) // before the connector hears of it
    return make_error(errc::invalid_argument, "request " + req.request_id + " is already in flight");
  bool save = false;
  if (why.empty() && !req.disagg.empty())
    why = apply_disagg(req, save);
  std::optional<gram::matcher> guide;
  if (why.empty()) {
    auto g = guide_of(req);
    if (!g) {
      why = message_of(g.error());
      code = static_cast<uint8_t>(code_of(g.error()));
    } else {
      guide = std::move(*g);
    }
  }
  if (why.empty()) {
    std::string id = req.request_id;
    if (kvbm_) {
      const std::vector<uint64_t> local = kv::local_block_hashes(req.token_ids, sched_.config().block_size);
      kvbm_->on_request(id, kv::sequence_hashes(local), local);
    }
    if (save && connector_.expect_save(id))
      spdlog::warn("request {}: prefill again; released the blocks still held from its last prefill", id);
    if (!sched_.add_request(std::move(req), std::move(guide)))
      return make_error(errc::invalid_argument, "request " + id + " is already in flight"); // unreachable
    return {};
  }
  protocol::engine_output out;
  out.finish = protocol::finish_reason::error;
  out.error = std::move(why);
  out.error_code = code;
  pending_.push_back(request_output{std::move(req.request_id), std::move(out)});
  return {};
}

bool engine_core::abort(std::string_view request_id) {
  // A decode request whose load had not started: the connector lists its
  // prefill result in take_refused_prefills() (the hold would wait for the TTL otherwise).
  if (!sched_.abort(request_id))
    return false;
  protocol::engine_output out;
  out.finish = protocol::finish_reason::cancelled;
  pending_.push_back(request_output{std::string{request_id}, std::move(out)});
  return true;
}

expected<step_result> engine_core::step() {
  step_result res;
  res.outputs.swap(pending_);
  std::chrono::microseconds onboarding{0};
  if (kvbm_) {
    kvbm_before_schedule(res.outputs);
    onboarding = kvbm_onboard_time(); // simulated (mocker): the blocks that just came in
  }
  batch b = sched_.schedule();
  if (kvbm_)
    kvbm_->start_loads(); // the I/O overlaps this step's forward pass
  if (!b.entries.empty() || !b.block_copies.empty()) {
    expected<batch_result> r = exec_->execute(b);
    if (r && r->sampled.size() != b.entries.size())
      r = make_error(errc::internal, exec_->name() + " executor returned " +
                                         std::to_string(r->sampled.size()) + " samples for " +
                                         std::to_string(b.entries.size()) + " entries");
    if (!r) {
      pending_ = std::move(res.outputs); // delivered with the error chunks next step
      fail_all(exec_->name() + " executor failed: " + describe(r.error()));
      return r.error();
    }
    res.duration = r->simulated;
    res.num_tokens = b.num_tokens;
    res.num_seqs = static_cast<uint32_t>(b.entries.size());
    auto outs = sched_.update(b, *r);
    attach_prefill_results(outs);
    std::move(outs.begin(), outs.end(), std::back_inserter(res.outputs));
  }
  if (kvbm_) // write-through, before the next schedule() may reuse the blocks
    kvbm_->offload(sched_.kv().drain_registered());
  res.duration += onboarding;
  flag_local_prefills(res.outputs);
  res.kv_events = sched_.kv().drain_events();
  return res;
}

void engine_core::attach_prefill_results(std::vector<request_output>& outs) {
  std::optional<protocol::kv_layout> layout;
  for (request_output& o : outs) {
    if (!o.prefill_result)
      continue;
    if (!layout)
      layout = exec_->kv_transfer_layout().value_or(protocol::kv_layout{});
    o.prefill_result->layout = *layout;
    o.output.disagg = protocol::encode(*o.prefill_result);
  }
}

std::vector<request_output> engine_core::take_pending() {
  std::vector<request_output> out = std::exchange(pending_, {});
  flag_local_prefills(out);
  return out;
}

bool engine_core::complete_transfer(std::string_view request_id, bool ok) {
  if (!connector_.finish_load(request_id, ok))
    return false;
  (void) sched_.finish_loads(pending_);
  if (!ok) {
    spdlog::warn("request {}: KV transfer failed; prefilling locally", request_id);
    local_prefills_.emplace(request_id);
  }
  return true;
}

void engine_core::flag_local_prefills(std::vector<request_output>& outs) {
  if (local_prefills_.empty())
    return;
  for (request_output& o : outs) {
    if (local_prefills_.erase(o.request_id) != 0)
      o.output.prefilled_locally = true;
  }
}

void engine_core::fail_all(const std::string& message) {
  // The executor failed: its KV memory is suspect, so nothing is handed out from it.
  (void) connector_.release_all();
  for (std::string& id : sched_.abort_all()) {
    protocol::engine_output out;
    out.finish = protocol::finish_reason::error;
    out.error = message;
    pending_.push_back(request_output{std::move(id), std::move(out)});
  }
}

bool engine_core::has_work() const noexcept {
  return sched_.has_schedulable() || !pending_.empty() || (kvbm_ && kvbm_->loads_in_flight() > 0);
}

protocol::load_metrics engine_core::load_metrics() const noexcept {
  const kv::block_pool& pool = sched_.kv().pool();
  protocol::load_metrics m;
  m.active_decode_blocks = pool.num_used_blocks();
  m.total_blocks = pool.num_blocks();
  m.active_prefill_tokens = sched_.num_pending_prefill_tokens();
  m.num_running = sched_.num_running();
  m.num_waiting = sched_.num_waiting() + sched_.num_waiting_for_kv();
  m.kv_usage = pool.usage();
  if (kvbm_) {
    const kvbm::kvbm_counters& c = kvbm_->counters();
    m.kvbm = protocol::kvbm_metrics{c.matched_tokens,     c.offload_blocks_d2h, c.offload_blocks_h2d,
                                    c.onboard_blocks_h2d, c.onboard_blocks_d2d, c.host_hit_rate(),
                                    c.disk_hit_rate()};
  }
  return m;
}

} // namespace dynamo::engine
