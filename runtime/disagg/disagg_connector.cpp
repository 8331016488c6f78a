#include "runtime/disagg/disagg_connector.hpp"
#include "runtime/kv/block_count.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace dynamo::disagg {

std::string load_refusal(const protocol::kv_prefill_result& r, size_t prompt_len, uint32_t block_size,
                         const std::optional<protocol::kv_layout>& local, std::string_view executor) {
  if (!local)
    return "the " + std::string{executor} + " executor exposes no KV layout";
  if (r.layout.block_size != block_size)
    return "block size " + std::to_string(r.layout.block_size) + " != local " + std::to_string(block_size);
  if (auto ok = protocol::check_compatible(*local, r.layout); !ok)
    return message_of(ok.error());
  if (r.num_tokens != prompt_len)
    return "prefill covers " + std::to_string(r.num_tokens) + " tokens, the prompt has " +
           std::to_string(prompt_len);
  if (r.block_ids.size() != kv::blocks_for_tokens(prompt_len, block_size))
    return std::to_string(r.block_ids.size()) + " prefill blocks for " + std::to_string(prompt_len) +
           " tokens of block size " + std::to_string(block_size);
  return {};
}

protocol::kv_push_request push_request(const kv_load& l) {
  return protocol::kv_push_request{l.source.hold_id, l.source_block_ids, l.destination_block_ids,
                                   l.source.layout, {}, true};
}

protocol::kv_push_request release_request(const protocol::kv_prefill_result& source) {
  protocol::kv_push_request r;
  r.hold_id = source.hold_id;
  r.layout = source.layout;
  r.release = true;
  return r;
}

expected<void> check_push(const protocol::kv_push_request& req, const std::optional<std::vector<uint32_t>>& saved) {
  if (!saved)
    return make_error(errc::not_found, "no held blocks named " + req.hold_id);
  const bool subset = std::all_of(req.source_block_ids.begin(), req.source_block_ids.end(), [&](uint32_t b) {
    return std::find(saved->begin(), saved->end(), b) != saved->end();
  });
  if (!subset)
    return make_error(errc::invalid_argument, "kv_push names blocks the hold does not have");
  return {};
}

disagg_connector::disagg_connector(kv::kv_cache_manager& kv, clock_fn clock)
  : kv_(kv), clock_(std::move(clock)) {}

bool disagg_connector::expect_save(const std::string& request_id) {
  saves_.insert(request_id);
  return release(request_id);
}

void disagg_connector::expect_load(const std::string& request_id, protocol::kv_prefill_result source) {
  loads_[request_id] = load{std::move(source), load_state::expected};
}

uint32_t disagg_connector::get_num_new_matched_tokens(std::string_view request_id, uint32_t num_prompt,
                                                      uint32_t num_computed) {
  auto it = loads_.find(std::string{request_id});
  if (it == loads_.end() || it->second.state != load_state::expected)
    return 0;
  // Everything after the local hit comes from the prefill worker; at least one
  // token, so that a request whose blocks are all cached locally still waits
  // for (and reports) the prefill's first token.
  return num_prompt > num_computed ? num_prompt - num_computed : 1;
}

void disagg_connector::update_state_after_alloc(std::string_view request_id, std::span<const uint32_t> block_table,
                                                size_t first_block) {
  auto it = loads_.find(std::string{request_id});
  if (it == loads_.end() || it->second.state != load_state::expected)
    return;
  it->second.state = load_state::pending;
  const auto& source = it->second.source.block_ids;
  kv_load l{.request_id = it->first, .source = it->second.source};
  const size_t first = std::min(first_block, std::min(source.size(), block_table.size()));
  l.source_block_ids.assign(source.begin() + static_cast<std::ptrdiff_t>(first), source.end());
  l.destination_block_ids.assign(block_table.begin() + static_cast<std::ptrdiff_t>(first), block_table.end());
  pending_.push_back(std::move(l));
}

std::vector<kv_load> disagg_connector::take_loads() {
  for (const kv_load& l : pending_)
    loads_.at(l.request_id).state = load_state::started;
  return std::exchange(pending_, {});
}

bool disagg_connector::finish_load(std::string_view request_id, bool ok) {
  const std::string id{request_id};
  auto it = loads_.find(id);
  if (it == loads_.end() || it->second.state == load_state::expected) {
    // Its request went while the blocks were being written: now nothing writes there.
    if (auto q = quarantined_.find(id); q != quarantined_.end()) {
      kv_.free_detached(q->second);
      quarantined_.erase(q);
    }
    return false;
  }
  std::erase_if(pending_, [&](const kv_load& l) { return l.request_id == id; });
  kv::finished_load f{id, ok, std::nullopt};
  if (ok)
    f.next_token = it->second.source.first_token;
  loads_.erase(it);
  finished_.push_back(std::move(f));
  return true;
}

kv::release_action disagg_connector::on_release(std::string_view request_id, bool completed) {
  const std::string id{request_id};
  if (saves_.erase(id) > 0 && completed)
    return kv::release_action::save;
  auto it = loads_.find(id);
  if (it == loads_.end())
    return kv::release_action::free;
  const bool started = it->second.state == load_state::started;
  if (!started) { // nobody will load it: the prefill worker's save can go now
    std::erase_if(pending_, [&](const kv_load& l) { return l.request_id == id; });
    refused_.push_back(std::move(it->second.source));
  }
  loads_.erase(it);
  return started ? kv::release_action::quarantine : kv::release_action::free;
}

std::optional<protocol::kv_prefill_result> disagg_connector::save(std::string_view request_id,
                                                                  std::vector<uint32_t> blocks,
                                                                  uint32_t num_prompt, uint32_t last_token) {
  protocol::kv_prefill_result r;
  r.hold_id = std::string{request_id};
  r.block_ids = blocks;
  r.num_tokens = num_prompt;
  r.first_token = last_token;
  saved_[r.hold_id] = saved{std::move(blocks), clock_ ? clock_() : std::chrono::steady_clock::now()};
  return r;
}

void disagg_connector::adopt(std::string_view request_id, std::vector<uint32_t> blocks) {
  auto& q = quarantined_[std::string{request_id}];
  q.insert(q.end(), blocks.begin(), blocks.end());
}

void disagg_connector::clear_requests() {
  loads_.clear();
  pending_.clear();
  finished_.clear();
  saves_.clear();
}

std::optional<std::vector<uint32_t>> disagg_connector::saved_blocks(std::string_view request_id) const {
  auto it = saved_.find(std::string{request_id});
  if (it == saved_.end())
    return std::nullopt;
  return it->second.blocks;
}

bool disagg_connector::release(std::string_view request_id) {
  auto it = saved_.find(std::string{request_id});
  if (it == saved_.end())
    return false;
  kv_.free_detached(it->second.blocks);
  saved_.erase(it);
  return true;
}

size_t disagg_connector::release_expired(std::chrono::steady_clock::time_point now, std::chrono::milliseconds ttl) {
  size_t n = 0;
  for (auto it = saved_.begin(); it != saved_.end();) {
    if (now - it->second.since >= ttl) {
      spdlog::warn("saved prompt {}: {} blocks not loaded within {} ms; freed", it->first,
                   it->second.blocks.size(), ttl.count());
      kv_.free_detached(it->second.blocks);
      it = saved_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

size_t disagg_connector::release_all() {
  const size_t n = saved_.size();
  for (auto& [id, s] : saved_)
    kv_.free_detached(s.blocks);
  saved_.clear();
  return n;
}

} // namespace dynamo::disagg
