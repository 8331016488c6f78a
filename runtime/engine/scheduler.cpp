#include "runtime/engine/scheduler.hpp"

#include "runtime/engine/stop_check.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace dynamo::engine {

expected<void> validate(const scheduler_config& cfg) {
  auto bad = [](const char* field, const char* why) {
    return make_error(errc::config_error, std::string{field} + " " + why);
  };
  if (cfg.block_size == 0)
    return bad("block_size", "must be > 0");
  if (cfg.num_blocks == 0)
    return bad("num_blocks", "must be > 0");
  if (cfg.max_num_seqs == 0)
    return bad("max_num_seqs", "must be > 0");
  if (cfg.max_num_batched_tokens == 0)
    return bad("max_num_batched_tokens", "must be > 0");
  if (cfg.max_num_partial_prefills == 0)
    return bad("max_num_partial_prefills", "must be > 0");
  if (cfg.max_model_len < 2)
    return bad("max_model_len", "must be >= 2 (a prompt token and an output token)");
  if (static_cast<uint64_t>(cfg.max_model_len) > uint64_t{cfg.num_blocks} * cfg.block_size)
    return bad("max_model_len", "exceeds the KV cache (num_blocks * block_size tokens)");
  return {};
}

scheduler::scheduler(scheduler_config cfg)
    : cfg_(cfg), kv_(cfg.num_blocks, cfg.block_size, cfg.enable_prefix_caching, cfg.emit_kv_events) {}

bool scheduler::add_request(protocol::preprocessed_request req, disagg_mode mode) {
  const uint64_t id = next_seq_id_;
  if (!by_request_id_.emplace(req.request_id, id).second)
    return false;
  ++next_seq_id_;
  if (mode.hold_prompt && release_hold(req.request_id))
    spdlog::warn("request {}: prefill again; released the blocks still held from its last prefill",
                 req.request_id);
  sequence s{.id = id,
             .request_id = std::move(req.request_id),
             .tokens = kv::token_blocks{cfg_.block_size, std::move(req.token_ids)},
             .sampling = req.sampling,
             .stop = std::move(req.stop)};
  s.num_prompt = s.tokens.size();
  s.hold_prompt = mode.hold_prompt;
  s.remote_prompt = std::move(mode.remote_prompt);
  auto [it, inserted] = seqs_.emplace(id, std::move(s));
  waiting_.push_back(id);
  if (it->second.remote_prompt && waiting_.size() == 1 && num_admitted() < cfg_.max_num_seqs)
    (void)admit_for_kv(it->second);
  return true;
}

batch scheduler::schedule() {
  ++step_;
  for (;;) {
    uint32_t budget = cfg_.max_num_batched_tokens;
    batch b;
    schedule_decodes(budget, b.entries);
    std::vector<batch_entry> prefills;
    const uint32_t num_partial = schedule_prefills(budget, prefills);
    admit_waiting(budget, num_partial, prefills);
    if (b.entries.empty() && prefills.empty() && !running_.empty()) {
      // Every running request is a prefill starved of blocks held by the
      // others: give the newest one's blocks back and try again.
      preempt(seq(running_.back()));
      continue;
    }
    std::move(prefills.begin(), prefills.end(), std::back_inserter(b.entries));
    b.num_tokens = cfg_.max_num_batched_tokens - budget;
    return b;
  }
}

void scheduler::schedule_decodes(uint32_t& budget, std::vector<batch_entry>& out) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    sequence& s = seq(running_[i]);
    if (s.remaining() != 1)
      continue;
    bool self_preempted = false;
    bool fits = false;
    while (!self_preempted && !(fits = kv_.allocate_slots(s.id, s.num_computed + 1).has_value())) {
      // Requests after i are unscheduled, so the victim is the newest; it may be s.
      sequence* victim = newest_unscheduled(-1);
      if (victim == nullptr)
        break; // unreachable: s itself is unscheduled
      self_preempted = victim == &s;
      preempt(*victim);
    }
    if (self_preempted)
      break; // s was the last running request
    if (!fits)
      continue;
    out.push_back(make_entry(s, 1));
    budget -= 1;
  }
}

uint32_t scheduler::schedule_prefills(uint32_t& budget, std::vector<batch_entry>& out) {
  uint32_t num_partial = 0;
  for (size_t i = 0; i < running_.size(); ++i) {
    sequence& s = seq(running_[i]);
    if (s.remaining() <= 1 || s.scheduled_step == step_)
      continue;
    uint32_t n = chunk_size(s.remaining(), budget);
    while (n > 0 && kv_.blocks_missing(s.id, s.num_computed + n) > 0) {
      sequence* victim = newest_unscheduled(static_cast<std::ptrdiff_t>(i));
      if (victim == nullptr)
        break;
      preempt(*victim);
    }
    n = fitting_chunk(s, n);
    if (n > 0) {
      if (!kv_.allocate_slots(s.id, s.num_computed + n))
        n = 0; // unreachable: fitting_chunk() said it fits
    }
    if (n > 0) {
      out.push_back(make_entry(s, n));
      budget -= n;
    }
    if (n < s.remaining())
      ++num_partial;
  }
  return num_partial;
}

void scheduler::admit_waiting(uint32_t& budget, uint32_t num_partial, std::vector<batch_entry>& out) {
  while (!waiting_.empty() && num_admitted() < cfg_.max_num_seqs) {
    sequence& s = seq(waiting_.front());
    if (s.remote_prompt) { // computes nothing here: no budget needed
      if (!admit_for_kv(s))
        break; // first come first served: nobody overtakes the head
      continue;
    }
    if (budget == 0)
      break;
    const kv::computed_blocks prefix = kv_.find_computed_blocks(s.tokens);
    const uint32_t remaining = s.tokens.size() - prefix.num_tokens;
    const uint32_t n = chunk_size(remaining, budget);
    const bool partial = n < remaining;
    if (partial && num_partial >= cfg_.max_num_partial_prefills)
      break;
    if (!kv_.allocate_slots(s.id, prefix.num_tokens + n, prefix))
      break; // first come first served: nobody overtakes the head
    waiting_.pop_front();
    running_.push_back(s.id);
    s.num_computed = prefix.num_tokens;
    if (!s.admitted_before) {
      s.admitted_before = true;
      s.cached_tokens = prefix.num_tokens;
    }
    out.push_back(make_entry(s, n));
    budget -= n;
    num_partial += partial ? 1 : 0;
  }
}

bool scheduler::admit_for_kv(sequence& s) {
  const kv::computed_blocks prefix = kv_.find_computed_blocks(s.tokens);
  if (!kv_.allocate_slots(s.id, s.tokens.size(), prefix))
    return false;
  waiting_.pop_front();
  kv_waiting_.push_back(s.id);
  s.waiting_for_kv = true;
  s.num_computed = prefix.num_tokens;
  s.admitted_before = true;
  s.cached_tokens = prefix.num_tokens;
  const auto table = kv_.block_table(s.id);
  const auto& source = s.remote_prompt->block_ids;
  const size_t first = prefix.block_ids.size();
  kv_pull p{.request_id = s.request_id, .source = *s.remote_prompt};
  p.source_block_ids.assign(source.begin() + static_cast<std::ptrdiff_t>(first), source.end());
  p.destination_block_ids.assign(table.begin() + static_cast<std::ptrdiff_t>(first), table.end());
  pulls_.push_back(std::move(p));
  return true;
}

std::vector<kv_pull> scheduler::take_pulls() {
  std::vector<kv_pull> out;
  out.swap(pulls_);
  return out;
}

bool scheduler::complete_transfer(std::string_view request_id, bool ok, std::vector<request_output>& out) {
  auto found = by_request_id_.find(std::string{request_id});
  if (found == by_request_id_.end()) {
    // Aborted while its blocks were being written: now nothing writes there.
    if (auto o = orphaned_pulls_.find(std::string{request_id}); o != orphaned_pulls_.end()) {
      kv_.free_detached(o->second);
      orphaned_pulls_.erase(o);
    }
    return false;
  }
  sequence& s = seq(found->second);
  if (!s.waiting_for_kv)
    return false;
  std::erase(kv_waiting_, s.id);
  std::erase_if(pulls_, [&](const kv_pull& p) { return p.request_id == s.request_id; });
  s.waiting_for_kv = false;
  const uint32_t first_token = s.remote_prompt->first_token;
  s.remote_prompt.reset();
  if (!ok) { // local prefill from the local prefix hit, into the blocks it holds
    running_.push_back(s.id);
    return true;
  }
  s.num_computed = s.tokens.size();
  kv_.cache_blocks(s.id, s.tokens, s.num_computed);
  request_output o{s.request_id, {}, std::nullopt};
  o.output.token_ids.push_back(first_token);
  o.output.finish = append_token(s, first_token);
  o.output.cached_tokens = s.cached_tokens;
  s.first_chunk_sent = true;
  const bool finished = o.output.finish != protocol::finish_reason::none;
  out.push_back(std::move(o));
  if (finished)
    forget(s.id);
  else
    running_.push_back(s.id);
  return true;
}

protocol::kv_prefill_result scheduler::hold(sequence& s, uint32_t first_token) {
  std::vector<uint32_t> blocks = kv_.detach(s.id);
  // The table covers the prompt (a prefill generates one token, whose KV is
  // never computed); anything past the prompt's blocks is not part of the hold.
  const size_t prompt_blocks = (s.num_prompt + cfg_.block_size - 1) / cfg_.block_size;
  if (blocks.size() > prompt_blocks) {
    kv_.free_detached(std::span<const uint32_t>{blocks}.subspan(prompt_blocks));
    blocks.resize(prompt_blocks);
  }
  protocol::kv_prefill_result r;
  r.hold_id = s.request_id;
  r.block_ids = blocks;
  r.num_tokens = s.num_prompt;
  r.first_token = first_token;
  holds_[s.request_id] = kv_hold{std::move(blocks), now()};
  return r;
}

std::optional<std::vector<uint32_t>> scheduler::held_blocks(std::string_view hold_id) const {
  auto it = holds_.find(std::string{hold_id});
  if (it == holds_.end())
    return std::nullopt;
  return it->second.blocks;
}

bool scheduler::release_hold(std::string_view hold_id) {
  auto it = holds_.find(std::string{hold_id});
  if (it == holds_.end())
    return false;
  kv_.free_detached(it->second.blocks);
  holds_.erase(it);
  return true;
}

size_t scheduler::release_expired_holds(std::chrono::steady_clock::time_point now,
                                        std::chrono::milliseconds ttl) {
  size_t n = 0;
  for (auto it = holds_.begin(); it != holds_.end();) {
    if (now - it->second.since >= ttl) {
      spdlog::warn("hold {}: {} blocks not pulled within {} ms; freed", it->first,
                   it->second.blocks.size(), ttl.count());
      kv_.free_detached(it->second.blocks);
      it = holds_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

size_t scheduler::release_all_holds() {
  const size_t n = holds_.size();
  for (auto& [id, h] : holds_)
    kv_.free_detached(h.blocks);
  holds_.clear();
  return n;
}

uint32_t scheduler::chunk_size(uint32_t remaining, uint32_t budget) const noexcept {
  if (remaining <= budget)
    return remaining;
  const uint32_t cap = std::max(1u, cfg_.max_num_batched_tokens / cfg_.max_num_partial_prefills);
  return std::min(budget, cap);
}

batch_entry scheduler::make_entry(sequence& s, uint32_t num_new) {
  batch_entry e;
  e.seq_id = s.id;
  const auto tokens = s.tokens.tokens().subspan(s.num_computed, num_new);
  e.tokens.assign(tokens.begin(), tokens.end());
  e.start_pos = s.num_computed;
  const auto table = kv_.block_table(s.id);
  e.block_table.assign(table.begin(), table.end());
  e.sample = s.num_computed + num_new == s.tokens.size();
  e.sampling = s.sampling;
  e.sample_position = s.num_computed + num_new;
  s.scheduled_step = step_;
  return e;
}

sequence* scheduler::newest_unscheduled(std::ptrdiff_t after) {
  for (auto j = static_cast<std::ptrdiff_t>(running_.size()) - 1; j > after; --j) {
    sequence& s = seq(running_[static_cast<size_t>(j)]);
    if (s.scheduled_step != step_)
      return &s;
  }
  return nullptr;
}

void scheduler::preempt(sequence& s) {
  kv_.free(s.id);
  s.num_computed = 0;
  std::erase(running_, s.id);
  waiting_.push_front(s.id);
  ++num_preemptions_;
}

uint32_t scheduler::fitting_chunk(const sequence& s, uint32_t n) const {
  const uint64_t blocks = kv_.block_table(s.id).size() + uint64_t{kv_.pool().num_free_blocks()};
  const uint64_t capacity = blocks * cfg_.block_size;
  if (capacity <= s.num_computed)
    return 0;
  return static_cast<uint32_t>(std::min<uint64_t>(n, capacity - s.num_computed));
}

std::vector<request_output> scheduler::update(const batch& b, const batch_result& r) {
  std::vector<request_output> out;
  std::vector<uint64_t> finished;
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const batch_entry& e = b.entries[i];
    auto it = seqs_.find(e.seq_id);
    if (it == seqs_.end() || it->second.num_computed != e.start_pos)
      continue; // not from the last schedule(); nothing to apply
    sequence& s = it->second;
    s.num_computed += static_cast<uint32_t>(e.tokens.size());
    kv_.cache_blocks(s.id, s.tokens, s.num_computed);
    if (!e.sample)
      continue;
    request_output o{s.request_id, {}, std::nullopt};
    const std::optional<uint32_t> token = i < r.sampled.size() ? r.sampled[i] : std::nullopt;
    if (token) {
      o.output.token_ids.push_back(*token);
      o.output.finish = append_token(s, *token);
      if (s.hold_prompt && o.output.finish != protocol::finish_reason::none)
        o.prefill_result = hold(s, *token);
    } else {
      o.output.finish = protocol::finish_reason::error;
      o.output.error = "executor returned no token for a sampling entry";
    }
    if (!s.first_chunk_sent) {
      o.output.cached_tokens = s.cached_tokens;
      s.first_chunk_sent = true;
    }
    if (o.output.finish != protocol::finish_reason::none)
      finished.push_back(s.id);
    out.push_back(std::move(o));
  }
  for (uint64_t id : finished)
    forget(id);
  return out;
}

protocol::finish_reason scheduler::append_token(sequence& s, uint32_t token) {
  s.tokens.append(token);
  ++s.num_output;
  return check_stop(token, s.num_output, s.tokens.size(), s.stop, cfg_.max_model_len);
}

std::optional<protocol::kv_prefill_result> scheduler::unpulled_remote_prompt(std::string_view request_id) const {
  auto it = by_request_id_.find(std::string{request_id});
  if (it == by_request_id_.end())
    return std::nullopt;
  const sequence& s = seqs_.at(it->second);
  if (!s.remote_prompt)
    return std::nullopt;
  bool pull_taken = s.waiting_for_kv && std::none_of(pulls_.begin(), pulls_.end(), [&](const kv_pull& p) {
                      return p.request_id == s.request_id;
                    });
  return pull_taken ? std::nullopt : s.remote_prompt;
}

bool scheduler::abort(std::string_view request_id) {
  auto it = by_request_id_.find(std::string{request_id});
  if (it == by_request_id_.end())
    return false;
  forget(it->second);
  return true;
}

std::vector<std::string> scheduler::abort_all() {
  std::vector<std::string> ids;
  ids.reserve(seqs_.size());
  for (uint64_t id : running_)
    ids.push_back(seq(id).request_id);
  for (uint64_t id : kv_waiting_)
    ids.push_back(seq(id).request_id);
  for (uint64_t id : waiting_)
    ids.push_back(seq(id).request_id);
  for (const auto& [id, s] : seqs_)
    kv_.free(id);
  seqs_.clear();
  by_request_id_.clear();
  running_.clear();
  kv_waiting_.clear();
  pulls_.clear();
  waiting_.clear();
  return ids;
}

void scheduler::forget(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return;
  const sequence& s = it->second;
  const bool untaken = std::erase_if(pulls_, [&](const kv_pull& p) { return p.request_id == s.request_id; }) > 0;
  if (s.waiting_for_kv && !untaken)
    orphaned_pulls_[s.request_id] = kv_.detach(id); // a push may be writing into them
  else
    kv_.free(id); // a no-op for a held prefill: its table was detached
  if (std::erase(running_, id) == 0 && std::erase(kv_waiting_, id) == 0)
    std::erase(waiting_, id);
  by_request_id_.erase(it->second.request_id);
  seqs_.erase(it);
}

uint32_t scheduler::num_pending_prefill_tokens() const noexcept {
  uint32_t n = 0;
  for (const auto& [id, s] : seqs_)
    if (!s.remote_prompt && s.remaining() > 1) // a pulled prompt is not computed here
      n += s.remaining();
  return n;
}

} // namespace dynamo::engine
