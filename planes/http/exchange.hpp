// Internal to planes/http: the state one request shares between its
// connection (io side, on the session strand) and its http_responder (handler
// side, any thread). Every member locks `mutex_`; the disconnect callback is
// always called without the lock held.
#pragma once

#include "planes/http/router.hpp"

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

namespace dynamo::http::detail {

struct full_response {
  unsigned status = 200;
  std::string content_type;
  std::string body;
  std::vector<header_field> headers;
};
struct stream_start {
  std::vector<header_field> headers;
};
struct stream_data {
  std::string text; ///< already SSE-formatted
};
struct stream_end {};
struct abandoned {}; ///< the responder died before completing the response

using action = std::variant<full_response, stream_start, stream_data, stream_end, abandoned>;

class exchange {
public:
  /// `wake` is called with the lock held after each accepted action; it must
  /// only post work (never run the session inline).
  explicit exchange(std::function<void()> wake) : wake_(std::move(wake)) {}

  // -- handler side ---------------------------------------------------------
  /// Queues `a` if it is a legal next step; false otherwise.
  bool push(action a);
  void set_on_disconnect(std::function<void()> cb);
  [[nodiscard]] bool gone() const;

  // -- io side --------------------------------------------------------------
  /// Everything queued since the last call, in order.
  [[nodiscard]] std::vector<action> take();
  /// The client went away: further pushes fail, the callback fires (once).
  void mark_gone();
  /// The response was written completely: further pushes fail, no callback.
  void mark_complete();
  /// The connection is going away (session ended or server stopping):
  /// no more wake-ups; the callback fires when the response was incomplete.
  void detach();

private:
  enum class phase { idle, streaming, ended };
  [[nodiscard]] std::function<void()> take_callback_locked();

  mutable std::mutex mutex_;
  std::function<void()> wake_;
  std::function<void()> on_disconnect_;
  std::deque<action> outbox_;
  phase phase_ = phase::idle; ///< as the handler sees it
  bool gone_ = false;
  bool complete_ = false;
  bool attached_ = true;
};

} // namespace dynamo::http::detail
