#include "actors/worker/worker_endpoint.hpp"

#include "actors/worker/worker_actor.hpp"
#include "runtime/protocol/codec.hpp"

#include <caf/all.hpp>

namespace dynamo::actors {

namespace {

// Streams chunks into a response_stream; fails it if destroyed unfinished
// (the worker actor died with the request in flight).
class stream_sink final : public output_sink {
public:
  explicit stream_sink(planes::response_stream_ptr stream) : stream_(std::move(stream)) {}

  ~stream_sink() override {
    if (!done_)
      stream_->fail(make_error(errc::closed, "worker actor stopped with the request in flight"));
  }

  bool send(const protocol::engine_output& chunk) override {
    bool last = chunk.finish != protocol::finish_reason::none;
    bool ok = stream_->send(protocol::encode(chunk));
    if (last) {
      done_ = true;
      stream_->finish();
    }
    return ok;
  }

private:
  planes::response_stream_ptr stream_;
  bool done_ = false;
};

} // namespace

expected<void> serve_worker(planes::request_server& server, const std::string& endpoint_path,
                            std::shared_ptr<worker_handle> worker) {
  return server.serve(endpoint_path, [worker](planes::bytes request,
                                              planes::response_stream_ptr stream) {
    auto req = protocol::decode<protocol::preprocessed_request>(request);
    if (!req) {
      stream->fail(req.error());
      return;
    }
    auto actor = worker->get();
    if (!actor) {
      stream->fail(make_error(errc::closed, "worker is restarting"));
      return;
    }
    std::string id = req->request_id;
    auto job = std::make_shared<generate_job>();
    job->request = std::move(*req);
    job->sink = std::make_shared<stream_sink>(stream);
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
