// Sequencing of one engine's vLLM KV-event stream: gaps, replays, restarts.
#include "runtime/route/vllm_relay.hpp"

#include <spdlog/spdlog.h>

namespace dynamo::route {

vllm_relay::vllm_relay(vllm_relay_options options)
    : opts_(options), converter_(options.worker_id, options.kv_block_size),
      buffer_({options.worker_id, options.dp_rank}) {}

bool vllm_relay::right_rank(const vllm_event_batch& batch) {
  if (batch.dp_rank.value_or(opts_.dp_rank) == static_cast<int64_t>(opts_.dp_rank))
    return true;
  if (stats_.wrong_rank++ == 0)
    spdlog::warn("vllm kv relay {:016x}: batch of data-parallel rank {} on the stream of rank {}; "
                 "dropped",
                 opts_.worker_id, *batch.dp_rank, opts_.dp_rank);
  return false;
}

void vllm_relay::emit(std::vector<protocol::router_event> events, vllm_relay_step& out) {
  for (auto& ev : events) {
    // Ids come from one converter, so they are consecutive: recording cannot fail.
    (void)buffer_.record(ev.event);
    ++stats_.events;
    out.events.push_back(std::move(ev));
  }
}

void vllm_relay::apply(uint64_t sequence, vllm_event_batch batch, vllm_relay_step& out) {
  batch.dp_rank = opts_.dp_rank;
  emit(converter_.convert(batch), out);
  next_seq_ = sequence + 1;
  ++stats_.batches;
}

void vllm_relay::clear(vllm_relay_step& out) {
  vllm_event_batch batch;
  batch.dp_rank = opts_.dp_rank;
  batch.events.push_back(vllm_event{.kind = vllm_event_kind::all_blocks_cleared});
  emit(converter_.convert(batch), out);
  ++stats_.clears;
}

void vllm_relay::hold(uint64_t sequence, vllm_event_batch batch) {
  if (held_.size() >= opts_.max_held) {
    ++stats_.overflow; // its absence shows as a gap once the replay ends
    return;
  }
  held_.push_back({sequence, std::move(batch)});
}

void vllm_relay::on_live(uint64_t sequence, vllm_event_batch batch, vllm_relay_step& out) {
  if (next_seq_ && sequence < *next_seq_) {
    // ZeroMQ neither reorders nor repeats: a lower number is a new publisher.
    ++stats_.restarts;
    spdlog::warn("vllm kv relay {:016x}: sequence went back from {} to {} (engine restarted); "
                 "its blocks are cleared",
                 opts_.worker_id, *next_seq_ - 1, sequence);
    clear(out);
    next_seq_.reset();
  }
  if (!next_seq_) {
    if (sequence > 0 && opts_.replay) { // joined late: fetch what the engine still buffers
      replaying_ = true;
      ++stats_.replays;
      hold(sequence, std::move(batch));
      out.replay_from = 0;
      return;
    }
    return apply(sequence, std::move(batch), out);
  }
  if (sequence == *next_seq_)
    return apply(sequence, std::move(batch), out);
  ++stats_.gaps;
  spdlog::warn("vllm kv relay {:016x}: batches #{}..#{} missed; {}", opts_.worker_id, *next_seq_,
               sequence - 1, opts_.replay ? "asking for a replay" : "clearing its blocks");
  if (opts_.replay) {
    replaying_ = true;
    ++stats_.replays;
    hold(sequence, std::move(batch));
    out.replay_from = *next_seq_;
    return;
  }
  clear(out);
  apply(sequence, std::move(batch), out);
}

vllm_relay_step vllm_relay::on_message(std::span<const std::span<const uint8_t>> frames) {
  vllm_relay_step out;
  auto msg = decode_vllm_frames(frames);
  if (!msg) {
    // Its sequence number is not applied, so the next batch reveals the hole.
    ++stats_.malformed;
    return out;
  }
  if (!right_rank(msg->batch))
    return out;
  if (replaying_)
    hold(msg->sequence, std::move(msg->batch));
  else
    on_live(msg->sequence, std::move(msg->batch), out);
  return out;
}

vllm_relay_step vllm_relay::on_replay_batch(uint64_t sequence, std::span<const uint8_t> payload) {
  vllm_relay_step out;
  if (!replaying_)
    return out;
  auto batch = decode_vllm_payload(payload);
  if (!batch) {
    ++stats_.malformed;
    return out;
  }
  if (!right_rank(*batch))
    return out;
  if (next_seq_ && sequence < *next_seq_) {
    ++stats_.stale;
    return out;
  }
  if (next_seq_ && sequence > *next_seq_) {
    // The engine no longer buffers the batches in between.
    ++stats_.replay_failures;
    clear(out);
  }
  apply(sequence, std::move(*batch), out);
  return out;
}

vllm_relay_step vllm_relay::on_replay_end(bool complete) {
  vllm_relay_step out;
  if (!replaying_)
    return out;
  replaying_ = false;
  if (!complete)
    ++stats_.replay_failures;
  bool first = true;
  while (!held_.empty()) {
    held_batch h = std::move(held_.front());
    held_.pop_front();
    if (next_seq_ && h.sequence < *next_seq_) {
      ++stats_.stale; // the replay brought it already
    } else {
      if (next_seq_ && h.sequence > *next_seq_) {
        // Still missing after the replay (or lost while it ran): stay correct, not complete.
        if (!first)
          ++stats_.gaps;
        else if (complete)
          ++stats_.replay_failures;
        clear(out);
      }
      apply(h.sequence, std::move(h.batch), out);
    }
    first = false;
  }
  return out;
}

protocol::kv_replay vllm_relay::answer(const protocol::kv_resync_request& request) const {
  return buffer_.query(request);
}

} // namespace dynamo::route
