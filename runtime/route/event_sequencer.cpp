#include "runtime/route/event_sequencer.hpp"

#include <algorithm>
#include <limits>

namespace dynamo::route {

namespace {
constexpr uint64_t all_ids = std::numeric_limits<uint64_t>::max();
} // namespace

event_sequencer::event_sequencer(size_t max_pending) : max_pending_(max_pending) {}

protocol::kv_resync_request event_sequencer::make_request(const worker_key& w, uint64_t from,
                                                          uint64_t to) {
  return protocol::kv_resync_request{w.worker_id, w.dp_rank, from, to};
}

void event_sequencer::hold(stream& s, const protocol::router_event& event) {
  uint64_t id = event.event.event_id;
  auto it = std::lower_bound(s.held.begin(), s.held.end(), id,
                             [](const auto& e, uint64_t v) { return e.event.event_id < v; });
  if (it != s.held.end() && it->event.event_id == id)
    return; // the same event twice
  s.held.insert(it, event);
}

sequence_step event_sequencer::on_event(const protocol::router_event& event) {
  worker_key w{event.worker_id, event.event.dp_rank};
  uint64_t id = event.event.event_id;
  stream& s = streams_[w];
  if (s.last && id <= *s.last)
    return {sequence_verdict::duplicate, std::nullopt};
  uint64_t expected = s.last ? *s.last + 1 : 0;
  if (!s.awaiting && id == expected) {
    s.last = id;
    return {sequence_verdict::apply, std::nullopt};
  }
  sequence_step step{sequence_verdict::held, std::nullopt};
  if (!s.awaiting) {
    s.awaiting = true;
    step.resync = make_request(w, expected, id - 1);
  }
  if (s.held.size() >= max_pending_) {
    // Too far behind: stop buffering and rebuild from a full dump.
    s.held.clear();
    step.resync = make_request(w, 0, all_ids);
  }
  hold(s, event);
  return step;
}

void event_sequencer::drain(stream& s, const worker_key& w, recovery_step& out) {
  size_t i = 0;
  for (; i < s.held.size(); ++i) {
    uint64_t id = s.held[i].event.event_id;
    if (s.last && id <= *s.last)
      continue;
    uint64_t expected = s.last ? *s.last + 1 : 0;
    if (id != expected)
      break;
    out.ready.push_back(std::move(s.held[i]));
    s.last = id;
  }
  s.held.erase(s.held.begin(), s.held.begin() + static_cast<std::ptrdiff_t>(i));
  if (s.held.empty()) {
    s.awaiting = false;
    return;
  }
  uint64_t expected = s.last ? *s.last + 1 : 0;
  out.resync = make_request(w, expected, s.held.front().event.event_id - 1);
}

recovery_step event_sequencer::on_replay(const protocol::kv_replay& replay) {
  recovery_step out;
  worker_key w{replay.worker_id, replay.dp_rank};
  auto it = streams_.find(w);
  if (it == streams_.end() || !it->second.awaiting)
    return out; // stale: the gap closed already, the state is consistent
  stream& s = it->second;
  if (replay.is_dump) {
    out.replace = true;
    out.dump = replay.events;
    s.last = replay.last_event_id;
  } else {
    for (const protocol::kv_event& ev : replay.events) {
      uint64_t expected = s.last ? *s.last + 1 : 0;
      if (ev.event_id != expected)
        continue; // duplicates, or beyond a hole the worker could not fill
      out.ready.push_back(protocol::router_event{replay.worker_id, ev});
      out.ready.back().event.dp_rank = replay.dp_rank;
      s.last = ev.event_id;
    }
  }
  drain(s, w, out);
  return out;
}

protocol::kv_resync_request event_sequencer::request_dump(const worker_key& worker) {
  stream& s = streams_[worker];
  s.awaiting = true;
  return make_request(worker, 0, all_ids);
}

void event_sequencer::forget(uint64_t worker_id) {
  std::erase_if(streams_, [&](const auto& kv) { return kv.first.worker_id == worker_id; });
}

std::optional<uint64_t> event_sequencer::last_event_id(const worker_key& worker) const {
  auto it = streams_.find(worker);
  return it == streams_.end() ? std::nullopt : it->second.last;
}

bool event_sequencer::awaiting(const worker_key& worker) const {
  auto it = streams_.find(worker);
  return it != streams_.end() && it->second.awaiting;
}

size_t event_sequencer::pending(const worker_key& worker) const {
  auto it = streams_.find(worker);
  return it == streams_.end() ? 0 : it->second.held.size();
}

} // namespace dynamo::route
