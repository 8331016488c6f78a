#include "runtime/route/worker_event_buffer.hpp"

#include <fmt/format.h>

namespace dynamo::route {

worker_event_buffer::worker_event_buffer(worker_key self, size_t capacity)
    : self_(self), ring_(capacity == 0 ? 1 : capacity),
      blocks_(radix_index_options{.max_blocks = 0}) {}

expected<void> worker_event_buffer::record(const protocol::kv_event& event) {
  if (last_ && event.event_id != *last_ + 1)
    return make_error(errc::invalid_argument,
                      fmt::format("event id {} after {}: ids must be consecutive",
                                  event.event_id, *last_));
  protocol::router_event re{self_.worker_id, event};
  re.event.dp_rank = self_.dp_rank;
  // The worker's own view: statuses other than ok mean the engine sent
  // something odd, which the router will count too; the ring keeps it as is.
  (void)blocks_.apply(re);
  size_t slot = (head_ + count_) % ring_.size();
  ring_[slot] = re.event;
  if (count_ < ring_.size())
    ++count_;
  else
    head_ = (head_ + 1) % ring_.size();
  last_ = event.event_id;
  return {};
}

const protocol::kv_event& worker_event_buffer::at(size_t i) const {
  return ring_[(head_ + i) % ring_.size()];
}

std::optional<uint64_t> worker_event_buffer::last_event_id() const noexcept { return last_; }

std::optional<uint64_t> worker_event_buffer::oldest_buffered_id() const noexcept {
  if (count_ == 0)
    return std::nullopt;
  return at(0).event_id;
}

protocol::kv_replay worker_event_buffer::query(uint64_t from_id, uint64_t to_id) const {
  auto oldest = oldest_buffered_id();
  if (!oldest || from_id < *oldest)
    return dump();
  protocol::kv_replay out;
  out.worker_id = self_.worker_id;
  out.dp_rank = self_.dp_rank;
  out.last_event_id = last_;
  if (to_id < from_id)
    return out;
  // Ids in the ring are consecutive, so positions follow from the id.
  for (uint64_t id = from_id; id <= to_id && id <= *last_; ++id) {
    out.events.push_back(at(static_cast<size_t>(id - *oldest)));
    if (id == to_id)
      break; // to_id may be UINT64_MAX
  }
  return out;
}

protocol::kv_replay worker_event_buffer::query(const protocol::kv_resync_request& req) const {
  return query(req.from_id, req.to_id);
}

protocol::kv_replay worker_event_buffer::dump() const {
  protocol::kv_replay out;
  out.worker_id = self_.worker_id;
  out.dp_rank = self_.dp_rank;
  out.is_dump = true;
  out.last_event_id = last_;
  out.events = blocks_.dump_worker(self_, last_.value_or(0));
  return out;
}

} // namespace dynamo::route
