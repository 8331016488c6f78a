// The etcd backend's watch: one thread per watch that lists the prefix, reports
// the difference to what it reported before, then follows an etcd watch stream
// from the revision after that list; whenever the stream ends or cannot be
// trusted it lists again (with backoff while etcd is unreachable).
#include "planes/discovery/etcd_core.hpp"

#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <thread>

namespace dynamo::planes::etcd_detail {
namespace {

namespace ec = etcd_codec;
using namespace std::chrono_literals;

// Bytes of one watch stream, filled by the HTTP client's I/O thread.
struct stream_sink {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::string> chunks;
  bool done = false;
};

struct watch_state {
  std::shared_ptr<core> c;
  std::vector<std::string> segments;
  ec::key_range range;
  discovery_callback callback;
  std::mutex callback_mutex; // held while callbacks run
  std::atomic<bool> cancelled{false};
  std::mutex mutex; // guards token, wakes sleeps
  std::condition_variable cv;
  std::shared_ptr<http::cancel_token> token;
  std::thread thread;

  void sleep(std::chrono::milliseconds d) {
    std::unique_lock lock{mutex};
    cv.wait_for(lock, d, [this] { return cancelled.load(); });
  }

  void deliver(std::vector<discovery_event> events) {
    std::lock_guard lock{callback_mutex};
    for (auto& ev : events) {
      if (cancelled)
        return;
      try {
        callback(ev);
      } catch (const std::exception& e) {
        spdlog::error("discovery: watch callback threw: {}", e.what());
      }
    }
  }

  // Follows one stream until it ends or turns untrustworthy; true when etcd
  // accepted the watch (so the next reconnect starts with a short delay).
  bool follow(const std::shared_ptr<stream_sink>& sink, etcd_watch_view& view) {
    ec::line_splitter split;
    bool created = false;
    std::vector<std::string> lines;
    for (;;) {
      std::deque<std::string> chunks;
      bool done = false;
      {
        std::unique_lock lock{sink->mutex};
        sink->cv.wait_for(lock, 200ms, [&] { return !sink->chunks.empty() || sink->done; });
        chunks.swap(sink->chunks);
        done = sink->done;
      }
      if (cancelled)
        return created;
      lines.clear();
      for (auto& chunk : chunks)
        split.feed(chunk, lines);
      if (split.oversized() > 0) {
        c->corrupt().note_unreadable(split.oversized());
        spdlog::warn("discovery: etcd watch message over {} bytes; listing again", ec::max_watch_message_bytes);
        return created;
      }
      for (auto& line : lines) {
        auto msg = ec::parse_watch_message(line);
        if (!msg) {
          if (code_of(msg.error()) == errc::malformed_message)
            c->corrupt().note_unreadable(1);
          spdlog::warn("discovery: etcd watch: {}; listing again", describe(msg.error()));
          return created;
        }
        created = created || msg->created;
        deliver(view.apply(*msg));
        if (msg->canceled) {
          spdlog::info("discovery: etcd cancelled a watch (compacted at {}); listing again",
                       msg->compact_revision);
          return created;
        }
      }
      if (done)
        return created;
    }
  }

  void run() {
    etcd_watch_view view{c->options().key_prefix, c->corrupt()};
    auto backoff = 50ms;
    bool warned = false;
    while (!cancelled) {
      auto snap = c->range(range);
      if (!snap) {
        if (!warned)
          spdlog::warn("discovery: etcd watch cannot list ({}); keeping the last view", describe(snap.error()));
        warned = true;
        sleep(backoff);
        backoff = std::min(backoff * 2, c->options().max_backoff);
        continue;
      }
      if (warned)
        spdlog::info("discovery: etcd watch listing again after an outage");
      warned = false;
      deliver(view.reset(*snap));
      auto sink = std::make_shared<stream_sink>();
      http::client_callbacks cb;
      cb.on_data = [sink](std::string_view d) {
        std::lock_guard lock{sink->mutex};
        sink->chunks.emplace_back(d);
        sink->cv.notify_one();
      };
      cb.on_done = [sink](expected<void>) {
        std::lock_guard lock{sink->mutex};
        sink->done = true;
        sink->cv.notify_one();
      };
      auto token = c->client().stream("/v3/watch", ec::watch_body(range, snap->revision + 1), std::move(cb));
      {
        std::lock_guard lock{mutex};
        this->token = token;
      }
      if (cancelled)
        token->cancel();
      bool created = follow(sink, view);
      token->cancel();
      backoff = created ? 50ms : std::min(backoff * 2, c->options().max_backoff);
      if (!cancelled)
        sleep(backoff);
    }
  }
};

class watch_handle final : public discovery_watch {
public:
  explicit watch_handle(std::shared_ptr<watch_state> w) : w_(std::move(w)) {}
  ~watch_handle() override {
    w_->cancelled = true;
    {
      std::lock_guard lock{w_->mutex};
      if (w_->token)
        w_->token->cancel();
    }
    w_->cv.notify_all();
    if (std::this_thread::get_id() == w_->thread.get_id())
      w_->thread.detach(); // destroyed from its own callback: the thread ends after it
    else
      w_->thread.join();
  }

private:
  std::shared_ptr<watch_state> w_;
};

} // namespace

std::unique_ptr<discovery_watch> start_watch(std::shared_ptr<core> c, std::vector<std::string> segments,
                                             discovery_callback callback) {
  auto w = std::make_shared<watch_state>();
  w->range = ec::prefix_range(c->options().key_prefix, segments);
  w->c = std::move(c);
  w->segments = std::move(segments);
  w->callback = std::move(callback);
  w->thread = std::thread([w] { w->run(); });
  return std::make_unique<watch_handle>(w);
}

} // namespace dynamo::planes::etcd_detail
