#include "actors/worker/worker_endpoint.hpp"

#include "actors/worker/worker_actor.hpp"
#include "runtime/protocol/codec.hpp"

#include <caf/all.hpp>

#include <chrono>
#include <utility>

namespace dynamo::actors {

namespace {

// Streams chunks into a response_stream; fails it if destroyed unfinished
// (the worker actor died with the request in flight). Counts the request in
// the endpoint's metrics, if any.
class stream_sink final : public output_sink {
public:
  using clock = std::chrono::steady_clock;

  stream_sink(planes::response_stream_ptr stream, endpoint_metrics m, uint32_t prompt_tokens)
      : stream_(std::move(stream)), m_(std::move(m)), prompt_tokens_(prompt_tokens) {}

  ~stream_sink() override {
    if (done_)
      return;
    stream_->fail(make_error(errc::closed, "worker actor stopped with the request in flight"));
    if (m_.metrics) {
      m_.metrics->on_error(m_.labels, metrics::component_error::generate);
      m_.metrics->on_end(m_.labels, clock::now() - start_);
    }
  }

  bool send(const protocol::engine_output& chunk) override {
    bool last = chunk.finish != protocol::finish_reason::none;
    auto bytes = protocol::encode(chunk);
    const size_t size = bytes.size();
    bool ok = stream_->send(std::move(bytes));
    if (m_.metrics)
      count(chunk, size, ok);
    if (last) {
      done_ = true;
      stream_->finish();
    }
    return ok;
  }

private:
  void count(const protocol::engine_output& chunk, size_t size, bool sent) {
    auto& m = *m_.metrics;
    if (!std::exchange(first_seen_, true)) {
      m.on_first_response(m_.labels, clock::now() - start_);
      if (chunk.finish != protocol::finish_reason::error && chunk.finish != protocol::finish_reason::cancelled)
        m.on_prefix_lookup(m_.labels, m_.worker_id, prompt_tokens_, chunk.cached_tokens);
    }
    if (sent)
      m.on_response_bytes(m_.labels, size);
    else if (!std::exchange(send_failed_, true))
      m.on_error(m_.labels, metrics::component_error::response_stream);
    if (chunk.finish == protocol::finish_reason::none)
      return;
    if (chunk.finish == protocol::finish_reason::error)
      m.on_error(m_.labels, metrics::component_error::generate);
    else if (chunk.finish == protocol::finish_reason::cancelled)
      m.on_cancel(m_.labels);
    m.on_end(m_.labels, clock::now() - start_);
  }

  planes::response_stream_ptr stream_;
  endpoint_metrics m_;
  uint32_t prompt_tokens_ = 0;
  clock::time_point start_ = clock::now();
  bool done_ = false;
  bool first_seen_ = false;
  bool send_failed_ = false;
};

} // namespace

expected<void> serve_worker(planes::request_server& server, const std::string& endpoint_path,
                            std::shared_ptr<worker_handle> worker, endpoint_metrics m) {
  return server.serve(endpoint_path, [worker, m](planes::bytes request, planes::response_stream_ptr stream) {
    if (m.metrics)
      m.metrics->on_request(m.labels, request.size());
    auto refuse = [&](caf::error err, metrics::component_error why) {
      stream->fail(std::move(err));
      if (m.metrics) {
        m.metrics->on_error(m.labels, why);
        m.metrics->on_end(m.labels, std::chrono::duration<double>{0});
      }
    };
    auto req = protocol::decode<protocol::preprocessed_request>(request);
    if (!req)
      return refuse(req.error(), metrics::component_error::deserialization);
    auto actor = worker->get();
    if (!actor)
      return refuse(make_error(errc::closed, "worker is restarting"), metrics::component_error::generate);
    std::string id = req->request_id;
    auto job = std::make_shared<generate_job>();
    const auto prompt = static_cast<uint32_t>(req->token_ids.size());
    job->request = std::move(*req);
    job->sink = std::make_shared<stream_sink>(stream, m, prompt);
    caf::anon_send(actor, generate_atom::value, std::move(job));
    // After the job: a stream cancelled already runs this at once, and the
    // abort must reach the worker behind its request, not before it.
    stream->on_cancel([actor, id] { caf::anon_send(actor, abort_atom::value, id); });
  });
}

expected<void> serve_kv_push(planes::request_server& server, const std::string& endpoint_path,
                             std::shared_ptr<worker_handle> worker) {
  return server.serve(endpoint_path, [worker](planes::bytes request, planes::response_stream_ptr stream) {
    auto req = protocol::decode<protocol::kv_push_request>(request);
    if (!req)
      return stream->fail(req.error());
    auto actor = worker->get();
    if (!actor)
      return stream->fail(make_error(errc::closed, "worker is restarting"));
    auto job = std::make_shared<kv_push_job>();
    job->request = std::move(*req);
    job->stream = stream;
    job->reply = [stream](const protocol::kv_transfer_status& st) {
      (void) stream->send(protocol::encode(st));
      stream->finish();
    };
    caf::anon_send(actor, kv_push_atom::value, std::move(job));
  });
}

} // namespace dynamo::actors
