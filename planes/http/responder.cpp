#include "planes/http/responder.hpp"

#include "planes/http/exchange.hpp"

namespace dynamo::http {

// -- exchange -----------------------------------------------------------------

namespace detail {

bool exchange::push(action a) {
  std::lock_guard lock{mutex_};
  if (gone_ || complete_ || !attached_)
    return false;
  switch (phase_) {
    case phase::idle:
      if (std::holds_alternative<stream_data>(a) || std::holds_alternative<stream_end>(a))
        return false;
      phase_ = std::holds_alternative<stream_start>(a) ? phase::streaming : phase::ended;
      break;
    case phase::streaming:
      if (std::holds_alternative<full_response>(a) || std::holds_alternative<stream_start>(a))
        return false;
      if (!std::holds_alternative<stream_data>(a))
        phase_ = phase::ended;
      break;
    case phase::ended: return false;
  }
  if (phase_ == phase::ended)
    on_disconnect_ = nullptr; // nothing is owed any more: nothing to cancel
  outbox_.push_back(std::move(a));
  if (wake_)
    wake_();
  return true;
}

void exchange::set_on_disconnect(std::function<void()> cb) {
  std::unique_lock lock{mutex_};
  if (complete_ || phase_ == phase::ended)
    return; // the response is already out of the handler's hands
  if (gone_ || !attached_) {
    lock.unlock();
    if (cb)
      cb();
    return;
  }
  on_disconnect_ = std::move(cb);
}

bool exchange::gone() const {
  std::lock_guard lock{mutex_};
  return gone_;
}

std::vector<action> exchange::take() {
  std::lock_guard lock{mutex_};
  std::vector<action> out(std::make_move_iterator(outbox_.begin()),
                          std::make_move_iterator(outbox_.end()));
  outbox_.clear();
  return out;
}

std::function<void()> exchange::take_callback_locked() {
  return std::exchange(on_disconnect_, nullptr);
}

void exchange::mark_gone() {
  std::function<void()> cb;
  {
    std::lock_guard lock{mutex_};
    if (complete_ || gone_)
      return;
    gone_ = true;
    outbox_.clear();
    cb = take_callback_locked();
  }
  if (cb)
    cb();
}

void exchange::mark_complete() {
  std::lock_guard lock{mutex_};
  complete_ = true;
  on_disconnect_ = nullptr;
}

void exchange::detach() {
  std::function<void()> cb;
  {
    std::lock_guard lock{mutex_};
    attached_ = false;
    wake_ = nullptr;
    if (!complete_ && !gone_) {
      gone_ = true;
      cb = take_callback_locked();
    }
  }
  if (cb)
    cb();
}

} // namespace detail

// -- http_responder -----------------------------------------------------------

http_responder::http_responder(std::shared_ptr<detail::exchange> ex) : ex_(std::move(ex)) {}

http_responder::~http_responder() { ex_->push(detail::abandoned{}); }

bool http_responder::respond(unsigned status, std::string content_type, std::string body,
                             std::vector<header_field> headers) {
  return ex_->push(detail::full_response{status, std::move(content_type), std::move(body),
                                         std::move(headers)});
}

bool http_responder::start_stream(std::vector<header_field> headers) {
  return ex_->push(detail::stream_start{std::move(headers)});
}

bool http_responder::send_event(std::string_view data, std::string_view event) {
  return ex_->push(detail::stream_data{format_sse_event(data, event)});
}

bool http_responder::finish() { return ex_->push(detail::stream_end{}); }

void http_responder::on_disconnect(std::function<void()> cb) {
  ex_->set_on_disconnect(std::move(cb));
}

bool http_responder::client_gone() const { return ex_->gone(); }

} // namespace dynamo::http
