#include "runtime/engine/scheduler.hpp"
#include "runtime/kv/block_count.hpp"

#include "runtime/engine/stop_check.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
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

bool scheduler::add_request(protocol::preprocessed_request req, std::optional<gram::matcher> guide) {
  const uint64_t id = next_seq_id_;
  const uint32_t n = std::max(1u, req.sampling.n);
  if (!by_request_id_.emplace(req.request_id, request_group{{id}, n}).second)
    return false;
  ++next_seq_id_;
  sequence s{.id = id,
             .request_id = std::move(req.request_id),
             .tokens = kv::token_blocks{cfg_.block_size, std::move(req.token_ids)},
             .sampling = req.sampling,
             .stop = std::move(req.stop),
             .embed = req.embed};
  s.num_prompt = s.tokens.size();
  s.pending_forks = n - 1;
  // Penalties count what was generated, also before a migration.
  const auto all = s.tokens.tokens();
  const size_t prompt = req.prompt_tokens == 0 ? all.size() : std::min<size_t>(req.prompt_tokens, all.size());
  s.edits = logit_edit_state(s.sampling, all.first(prompt), all.subspan(prompt));
  s.guide = std::move(guide);
  s.loads_prompt = connector_ != nullptr &&
                   connector_->get_num_new_matched_tokens(s.request_id, s.tokens.size(), 0) > 0;
  auto [it, inserted] = seqs_.emplace(id, std::move(s));
  waiting_.push_back(id);
  if (it->second.loads_prompt && waiting_.size() == 1 && num_admitted() < cfg_.max_num_seqs)
    (void)admit_for_load(it->second);
  return true;
}

batch scheduler::schedule() {
  ++step_;
  for (const block_copy& c : inflight_copies_) // a batch that was never applied
    kv_.release(std::array{c.src, c.dst});
  inflight_copies_ = std::exchange(pending_copies_, {}); // the last step's forks
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
    b.block_copies = inflight_copies_;
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
    auto allocate = [&] {
      return kv_.blocks_missing(s.id, s.num_computed + 1, {}, fork_blocks(s, 1)) == 0 &&
             kv_.allocate_slots(s.id, s.num_computed + 1).has_value();
    };
    while (!self_preempted && !(fits = allocate())) {
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
    push_entry(s, 1, out);
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
    while (n > 0 && kv_.blocks_missing(s.id, s.num_computed + n, {}, fork_blocks(s, n)) > 0) {
      sequence* victim = newest_unscheduled(static_cast<std::ptrdiff_t>(i));
      if (victim == nullptr)
        break;
      preempt(*victim);
    }
    n = fork_fitting(s, fitting_chunk(s, n));
    if (n > 0) {
      if (!kv_.allocate_slots(s.id, s.num_computed + n))
        n = 0; // unreachable: fitting_chunk() said it fits
    }
    if (n > 0) {
      push_entry(s, n, out);
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
    if (const std::optional<bool> admitted = admit_for_load(s)) { // computes nothing here: no budget needed
      if (!*admitted)
        break; // first come first served: nobody overtakes the head
      continue;
    }
    if (budget == 0 || num_admitted() + 1 + s.pending_forks > cfg_.max_num_seqs)
      break;
    // Positions served from the prefix cache would have no logits.
    const kv::computed_blocks prefix =
        s.gathers_prompt_logprobs() ? kv::computed_blocks{} : kv_.find_computed_blocks(s.tokens);
    const uint32_t remaining = s.tokens.size() - prefix.num_tokens;
    uint32_t n = chunk_size(remaining, budget);
    s.num_computed = prefix.num_tokens; // for fork_blocks(); restored when it stays waiting
    if (fork_blocks(s, n) > 0 && kv_.blocks_missing(s.id, prefix.num_tokens + n, prefix, fork_blocks(s, n)) > 0)
      --n; // the fork's blocks do not fit: stop one token short of it
    const bool partial = n < remaining;
    if (n == 0 || (partial && num_partial >= cfg_.max_num_partial_prefills) ||
        !kv_.allocate_slots(s.id, prefix.num_tokens + n, prefix)) {
      s.num_computed = 0;
      break; // first come first served: nobody overtakes the head
    }
    waiting_.pop_front();
    running_.push_back(s.id);
    reserved_forks_ += s.pending_forks;
    if (!s.admitted_before) {
      s.admitted_before = true;
      s.cached_tokens = prefix.num_tokens;
    }
    push_entry(s, n, out);
    budget -= n;
    num_partial += partial ? 1 : 0;
  }
}

std::optional<bool> scheduler::admit_for_load(sequence& s) {
  // The cheap question first (anything at all?), then the exact one.
  if (connector_ == nullptr || connector_->get_num_new_matched_tokens(s.request_id, s.tokens.size(), 0) == 0)
    return std::nullopt;
  const kv::computed_blocks prefix = kv_.find_computed_blocks(s.tokens);
  const uint32_t matched = connector_->get_num_new_matched_tokens(s.request_id, s.tokens.size(), prefix.num_tokens);
  if (matched == 0)
    return std::nullopt;
  const uint32_t target = std::min<uint32_t>(prefix.num_tokens + matched, s.tokens.size());
  if (!kv_.allocate_slots(s.id, target, prefix))
    return false;
  waiting_.pop_front();
  kv_waiting_.push_back(s.id);
  s.waiting_for_kv = true;
  s.load_target = target;
  s.num_computed = prefix.num_tokens;
  s.admitted_before = true;
  s.cached_tokens = prefix.num_tokens;
  connector_->update_state_after_alloc(s.request_id, kv_.block_table(s.id), prefix.block_ids.size());
  return true;
}

size_t scheduler::admit_loads() {
  size_t n = 0;
  while (!waiting_.empty() && num_admitted() < cfg_.max_num_seqs) {
    const std::optional<bool> admitted = admit_for_load(seq(waiting_.front()));
    if (!admitted || !*admitted)
      break;
    ++n;
  }
  return n;
}

size_t scheduler::finish_loads(std::vector<request_output>& out) {
  if (connector_ == nullptr)
    return 0;
  size_t n = 0;
  for (const kv::finished_load& f : connector_->get_finished()) {
    sequence* found = first_seq(f.request_id);
    if (found == nullptr || !found->waiting_for_kv)
      continue;
    finish_load(*found, f, out);
    ++n;
  }
  return n;
}

void scheduler::finish_load(sequence& s, const kv::finished_load& f, std::vector<request_output>& out) {
  std::erase(kv_waiting_, s.id);
  s.waiting_for_kv = false;
  s.loads_prompt = false;
  if (!f.ok) { // local prefill from the local prefix hit, into the blocks it holds
    running_.push_back(s.id);
    return;
  }
  s.num_computed = s.load_target;
  if (f.cached)
    s.cached_tokens = s.load_target;
  kv_.cache_blocks(s.id, s.tokens, s.num_computed);
  if (!f.next_token) {
    running_.push_back(s.id);
    return;
  }
  request_output o{s.request_id, {}, std::nullopt};
  o.output.token_ids.push_back(*f.next_token);
  const protocol::finish_reason finish = append_token(s, *f.next_token);
  if (finish == protocol::finish_reason::error) // a prefill worker that ignored the grammar
    o.output.error = "the prefill worker's first token " + std::to_string(*f.next_token) +
                     " is not allowed by the grammar";
  end_choice(s, finish, o.output);
  o.output.cached_tokens = s.cached_tokens;
  s.first_chunk_sent = true;
  const bool finished = o.output.choice_end() != protocol::finish_reason::none;
  out.push_back(std::move(o));
  if (finished)
    forget(s.id);
  else
    running_.push_back(s.id);
}

std::optional<protocol::kv_prefill_result> scheduler::release_completed(sequence& s, uint32_t last_token) {
  if (connector_ == nullptr || connector_->on_release(s.request_id, true) != kv::release_action::save)
    return std::nullopt;
  std::vector<uint32_t> blocks = kv_.detach(s.id);
  // The table covers the prompt (a prefill generates one token, whose KV is
  // never computed); anything past the prompt's blocks is not saved.
  const size_t prompt_blocks = kv::blocks_for_tokens(s.num_prompt, cfg_.block_size);
  if (blocks.size() > prompt_blocks) {
    kv_.free_detached(std::span<const uint32_t>{blocks}.subspan(prompt_blocks));
    blocks.resize(prompt_blocks);
  }
  return connector_->save(s.request_id, std::move(blocks), s.num_prompt, last_token);
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
  const bool last = s.num_computed + num_new == s.tokens.size();
  e.sample = last && !s.embed;
  e.embed = last && s.embed;
  e.sampling = s.sampling;
  e.sample_position = s.num_computed + num_new;
  e.choice = s.choice;
  if (s.gathers_prompt_logprobs() && s.num_computed + 1 < s.num_prompt) { // token i predicts the prompt token after it
    const uint32_t end = std::min(s.num_computed + num_new + 1, s.num_prompt);
    const auto targets = s.tokens.tokens().subspan(s.num_computed + 1, end - s.num_computed - 1);
    e.prompt_targets.assign(targets.begin(), targets.end());
  }
  if (e.sample) {
    const bool mask = s.num_output < s.stop.min_tokens; // stop tokens cannot be drawn yet
    e.logit_edits = s.edits.edits(mask ? std::span<const uint32_t>{s.stop.stop_token_ids}
                                       : std::span<const uint32_t>{});
    if (s.guide) {
      e.allowed_tokens.resize(s.guide->mask_words());
      s.guide->fill_next_token_bitmask(e.allowed_tokens);
    }
  }
  s.scheduled_step = step_;
  return e;
}

uint32_t scheduler::fork_blocks(const sequence& s, uint32_t n) const noexcept {
  if (s.pending_forks == 0 || s.num_computed + n != s.tokens.size())
    return 0;
  return s.tokens.size() % cfg_.block_size != 0 ? s.pending_forks : 0;
}

uint32_t scheduler::fork_fitting(const sequence& s, uint32_t n) const {
  const uint32_t extra = fork_blocks(s, n);
  if (n == 0 || extra == 0)
    return n;
  return kv_.blocks_missing(s.id, s.num_computed + n, {}, extra) == 0 ? n : n - 1;
}

void scheduler::push_entry(sequence& s, uint32_t num_new, std::vector<batch_entry>& out) {
  out.push_back(make_entry(s, num_new));
  if (out.back().sample && s.pending_forks > 0)
    fork_choices(s, batch_entry{out.back()}, out);
}

void scheduler::fork_choices(sequence& parent, const batch_entry& parent_entry, std::vector<batch_entry>& out) {
  const uint32_t forks = std::exchange(parent.pending_forks, 0);
  reserved_forks_ -= forks;
  const uint32_t prompt = parent.tokens.size();
  request_group& group = by_request_id_.at(parent.request_id);
  for (uint32_t c = 1; c <= forks; ++c) {
    const uint64_t id = next_seq_id_++;
    const auto copy = kv_.fork(parent.id, id, prompt);
    if (!copy) { // unreachable: fork_blocks() made room; the choice ends with an error
      spdlog::error("request {}: no block to fork choice {}", parent.request_id, c);
      --group.unfinished;
      continue;
    }
    if (*copy) {
      pending_copies_.push_back(block_copy{(*copy)->src, (*copy)->dst});
      kv_.retain(std::array{(*copy)->src, (*copy)->dst});
    }
    sequence child{.id = id, .request_id = parent.request_id, .tokens = parent.tokens,
                   .num_prompt = parent.num_prompt, .num_computed = prompt, .num_output = 0,
                   .sampling = parent.sampling, .stop = parent.stop};
    if (child.sampling.seed)
      *child.sampling.seed += c; // vLLM's rule: choice c of seed s draws as seed s + c
    child.admitted_before = child.first_chunk_sent = true; // the prompt's cached_tokens is choice 0's
    child.scheduled_step = step_;
    child.choice = c;
    child.edits = parent.edits;
    child.guide = parent.guide; // the same grammar state: nothing generated yet
    batch_entry e;
    e.seq_id = id;
    e.start_pos = prompt;
    e.sample = true;
    e.sampling = child.sampling;
    e.sample_position = prompt;
    e.logit_edits = parent_entry.logit_edits;
    e.allowed_tokens = parent_entry.allowed_tokens;
    e.choice = c;
    e.fork_of = parent.id;
    out.push_back(std::move(e));
    seqs_.emplace(id, std::move(child));
    running_.push_back(id);
    group.seqs.push_back(id);
  }
}

void scheduler::end_choice(const sequence& s, protocol::finish_reason finish, protocol::engine_output& o) {
  o.index = s.choice;
  if (finish == protocol::finish_reason::none)
    return;
  request_group& group = by_request_id_.at(s.request_id);
  if (finish != protocol::finish_reason::error && group.unfinished > 1) {
    --group.unfinished;
    o.choice_finish = finish; // the others go on: the stream does not end here
    return;
  }
  group.unfinished = 0;
  o.finish = finish;
}

sequence* scheduler::first_seq(std::string_view request_id) {
  auto it = by_request_id_.find(std::string{request_id});
  return it == by_request_id_.end() || it->second.seqs.empty() ? nullptr : &seq(it->second.seqs.front());
}

const sequence* scheduler::first_seq(std::string_view request_id) const {
  auto it = by_request_id_.find(std::string{request_id});
  return it == by_request_id_.end() || it->second.seqs.empty() ? nullptr : &seqs_.at(it->second.seqs.front());
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
  reserved_forks_ -= s.pending_forks; // re-admission reserves them again
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
  for (const block_copy& c : std::exchange(inflight_copies_, {})) // the executor has run them
    kv_.release(std::array{c.src, c.dst});
  std::vector<request_output> out;
  std::vector<uint64_t> finished;
  for (size_t i = 0; i < b.entries.size(); ++i) {
    const batch_entry& e = b.entries[i];
    auto it = seqs_.find(e.seq_id);
    if (it == seqs_.end() || it->second.num_computed != e.start_pos ||
        std::find(finished.begin(), finished.end(), e.seq_id) != finished.end())
      continue; // not from the last schedule(), or its request failed; nothing to apply
    sequence& s = it->second;
    s.num_computed += static_cast<uint32_t>(e.tokens.size());
    kv_.cache_blocks(s.id, s.tokens, s.num_computed);
    if (!e.prompt_targets.empty())
      gather_prompt_logprobs(s, e, i < r.prompt_logprobs.size() ? std::span{r.prompt_logprobs[i]}
                                                                 : std::span<const protocol::token_logprob>{});
    if (e.embed) {
      out.push_back(embedding_output(s, i < r.embeddings.size() ? r.embeddings[i] : std::vector<float>{}));
      finished.push_back(s.id);
      continue;
    }
    if (!e.sample)
      continue;
    request_output o{s.request_id, {}, std::nullopt};
    const std::optional<uint32_t> token = i < r.sampled.size() ? r.sampled[i] : std::nullopt;
    const protocol::token_logprob* lp =
        i < r.logprobs.size() && r.logprobs[i] ? &*r.logprobs[i] : nullptr;
    protocol::finish_reason finish = protocol::finish_reason::error;
    if (!token) {
      o.output.error = "executor returned no token for a sampling entry";
    } else if (s.sampling.logprobs && lp == nullptr) {
      o.output.error = "executor returned no logprobs for a request that asked for them";
    } else if (s.gathers_prompt_logprobs()) {
      o.output.error = "executor returned no logprobs for some prompt tokens";
    } else {
      o.output.token_ids.push_back(*token);
      if (s.sampling.logprobs)
        o.output.logprobs.push_back(*lp);
      finish = append_token(s, *token);
      if (finish == protocol::finish_reason::error)
        o.output.error = "the executor sampled token " + std::to_string(*token) + ", which the grammar does not allow";
      if (finish != protocol::finish_reason::none)
        o.prefill_result = release_completed(s, *token);
    }
    end_choice(s, finish, o.output);
    if (!s.first_chunk_sent) {
      o.output.cached_tokens = s.cached_tokens;
      if (finish != protocol::finish_reason::error)
        o.output.prompt_logprobs = std::move(s.prompt_logprobs);
      s.first_chunk_sent = true;
    }
    if (finish == protocol::finish_reason::error) // one failed choice ends them all
      for (uint64_t id : by_request_id_.at(s.request_id).seqs)
        finished.push_back(id);
    else if (finish != protocol::finish_reason::none)
      finished.push_back(s.id);
    out.push_back(std::move(o));
  }
  for (uint64_t id : finished)
    forget(id);
  return out;
}

void scheduler::gather_prompt_logprobs(sequence& s, const batch_entry& e,
                                       std::span<const protocol::token_logprob> lps) {
  // Target i is prompt position start_pos + i + 1; a recompute after
  // preemption gives again what is held already.
  for (size_t i = 0; i < lps.size() && i < e.prompt_targets.size(); ++i)
    if (e.start_pos + i == s.prompt_logprobs.size())
      s.prompt_logprobs.push_back(lps[i]);
}

request_output scheduler::embedding_output(sequence& s, std::vector<float> embedding) {
  request_output o{s.request_id, {}, std::nullopt};
  protocol::finish_reason finish = protocol::finish_reason::stop;
  if (embedding.empty()) {
    finish = protocol::finish_reason::error;
    o.output.error = "executor returned no embedding for an embed entry";
  }
  o.output.embedding = std::move(embedding);
  end_choice(s, finish, o.output);
  o.output.cached_tokens = s.cached_tokens;
  s.first_chunk_sent = true;
  return o;
}

protocol::finish_reason scheduler::append_token(sequence& s, uint32_t token) {
  s.tokens.append(token);
  s.edits.on_output(token);
  ++s.num_output;
  if (s.guide) {
    if (auto ok = s.guide->accept_token(token); !ok) { // the executor ignored the mask: a bug
      spdlog::error("request {}: sampled token {} outside the grammar: {}", s.request_id, token,
                    message_of(ok.error()));
      return protocol::finish_reason::error;
    }
    // The grammar is complete: EOS was taken, or nothing but EOS could follow.
    if (s.guide->is_terminated() || !s.guide->can_continue())
      return protocol::finish_reason::stop;
  }
  return check_stop(token, s.num_output, s.tokens.size(), s.stop, cfg_.max_model_len);
}

bool scheduler::abort(std::string_view request_id) {
  auto it = by_request_id_.find(std::string{request_id});
  if (it == by_request_id_.end())
    return false;
  for (uint64_t id : std::vector<uint64_t>{it->second.seqs}) // every choice; forget() edits the group
    forget(id);
  return true;
}

std::vector<std::string> scheduler::abort_all() {
  std::vector<std::string> ids;
  ids.reserve(by_request_id_.size());
  auto add = [&](uint64_t id) { // once per request, whatever its choices
    const std::string& rid = seq(id).request_id;
    if (std::find(ids.begin(), ids.end(), rid) == ids.end())
      ids.push_back(rid);
  };
  std::for_each(running_.begin(), running_.end(), add);
  std::for_each(kv_waiting_.begin(), kv_waiting_.end(), add);
  std::for_each(waiting_.begin(), waiting_.end(), add);
  for (const auto& [id, s] : seqs_)
    kv_.free(id);
  for (const block_copy& c : std::exchange(pending_copies_, {}))
    kv_.release(std::array{c.src, c.dst});
  for (const block_copy& c : std::exchange(inflight_copies_, {}))
    kv_.release(std::array{c.src, c.dst});
  reserved_forks_ = 0;
  seqs_.clear();
  by_request_id_.clear();
  running_.clear();
  kv_waiting_.clear();
  waiting_.clear();
  if (connector_ != nullptr)
    connector_->clear_requests();
  return ids;
}

void scheduler::forget(uint64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end())
    return;
  const sequence& s = it->second;
  // A completed request was released in update() (saved or not); asking again is harmless.
  const kv::release_action action =
      connector_ != nullptr ? connector_->on_release(s.request_id, false) : kv::release_action::free;
  if (action == kv::release_action::quarantine)
    connector_->adopt(s.request_id, kv_.detach(id)); // a load may be writing into them
  else
    kv_.free(id); // a no-op for a saved prompt: its table was detached
  if (std::erase(running_, id) != 0)
    reserved_forks_ -= s.pending_forks;
  else if (std::erase(kv_waiting_, id) == 0)
    std::erase(waiting_, id);
  auto group = by_request_id_.find(s.request_id);
  std::erase(group->second.seqs, id);
  if (group->second.seqs.empty())
    by_request_id_.erase(group);
  seqs_.erase(it);
}

uint32_t scheduler::num_pending_prefill_tokens() const noexcept {
  uint32_t n = 0;
  for (const auto& [id, s] : seqs_)
    if (!s.loads_prompt && s.remaining() > 1) // a loaded prompt is not computed here
      n += s.remaining();
  return n;
}

} // namespace dynamo::engine
