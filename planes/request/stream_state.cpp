#include "planes/request/stream_state.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>

namespace dynamo::planes::detail {

bool stream_state::close() {
  std::lock_guard lock{mutex_};
  if (status_ != status::open)
    return false;
  status_ = status::closed;
  callbacks_.clear();
  return true;
}

bool stream_state::cancel() {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard lock{mutex_};
    if (status_ != status::open)
      return false;
    status_ = status::cancelled;
    run.swap(callbacks_);
  }
  for (auto& fn : run) {
    try {
      fn();
    } catch (const std::exception& e) {
      spdlog::error("request plane: on_cancel callback threw: {}", e.what());
    }
  }
  return true;
}

bool stream_state::is_open() const {
  std::lock_guard lock{mutex_};
  return status_ == status::open;
}

bool stream_state::cancelled() const {
  std::lock_guard lock{mutex_};
  return status_ == status::cancelled;
}

void stream_state::on_cancel(std::function<void()> fn) {
  {
    std::lock_guard lock{mutex_};
    if (status_ == status::open) {
      callbacks_.push_back(std::move(fn));
      return;
    }
    if (status_ == status::closed)
      return;
  }
  fn(); // already cancelled
}

basic_response_stream::basic_response_stream(std::shared_ptr<stream_state> state,
                                             std::unique_ptr<stream_sink> sink,
                                             size_t max_item_bytes)
    : state_(std::move(state)), sink_(std::move(sink)), max_item_bytes_(max_item_bytes) {}

basic_response_stream::~basic_response_stream() {
  if (state_->close())
    sink_->deliver_end(make_error(errc::internal, "handler dropped the stream without finishing"));
}

bool basic_response_stream::send(bytes item) {
  if (!state_->is_open())
    return false;
  if (item.size() > max_item_bytes_) {
    fail(make_error(errc::invalid_argument,
                    fmt::format("response item of {} bytes exceeds the {} byte limit", item.size(),
                                max_item_bytes_)));
    return false;
  }
  return sink_->deliver_item(std::move(item));
}

void basic_response_stream::finish() {
  if (state_->close())
    sink_->deliver_end(caf::error{});
}

void basic_response_stream::fail(const caf::error& err) {
  if (state_->close())
    sink_->deliver_end(err ? err : make_error(errc::internal, "failed without an error"));
}

bool basic_response_stream::cancelled() const {
  return state_->cancelled();
}

void basic_response_stream::on_cancel(std::function<void()> fn) {
  state_->on_cancel(std::move(fn));
}

} // namespace dynamo::planes::detail
