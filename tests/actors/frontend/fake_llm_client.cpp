#include "tests/actors/frontend/fake_llm_client.hpp"

#include "runtime/protocol/output_error.hpp"
#include "runtime/tokenizer/tokenizer.hpp"

namespace dynamo::test {

namespace {

// A worker's refusal of a prompt past its context, as the worker sends it.
protocol::engine_output refusal() {
  protocol::engine_output out;
  out.finish = protocol::finish_reason::error;
  out.error_code = static_cast<uint8_t>(errc::context_length_exceeded);
  out.error = "the prompt has 40 tokens; this model's context length is 32 (prompt + output), "
              "so at most 31 prompt tokens fit";
  return out;
}

} // namespace

class fake_llm_client::fake_generation final : public engine::generation {
public:
  explicit fake_generation(fake_llm_client& owner) : owner_(&owner) {}
  void cancel() override {
    if (!cancelled_.exchange(true))
      owner_->note_cancel();
  }
  [[nodiscard]] bool cancelled() const { return cancelled_.load(); }

private:
  fake_llm_client* owner_;
  std::atomic<bool> cancelled_{false};
};

fake_llm_client::~fake_llm_client() {
  stopping_ = true;
  std::vector<std::thread> threads;
  {
    std::lock_guard lock{mutex_};
    threads.swap(threads_);
  }
  for (auto& t : threads)
    t.join();
}

std::shared_ptr<engine::generation> fake_llm_client::generate(protocol::preprocessed_request req,
                                                              engine::chunk_callback on_chunk) {
  auto g = std::make_shared<fake_generation>(*this);
  std::lock_guard lock{mutex_};
  last_ = req;
  ++started_;
  cv_.notify_all();
  threads_.emplace_back([this, g, req = std::move(req), cb = std::move(on_chunk)]() mutable {
    run(g, std::move(req), std::move(cb));
  });
  return g;
}

void fake_llm_client::run(std::shared_ptr<fake_generation> g, protocol::preprocessed_request req,
                          engine::chunk_callback cb) {
  using behaviour = fake_options::behaviour;
  using protocol::finish_reason;
  if (opts_.mode == behaviour::fail_first)
    return cb(make_error(errc::no_workers, "no worker serves " + req.model));
  if (opts_.mode == behaviour::refuse) // what routed_client delivers for a worker's refusal
    return cb(protocol::error_of(refusal()));
  if (opts_.mode == behaviour::refuse_chunk)
    return cb(refusal());
  if (opts_.mode == behaviour::error_chunk) {
    protocol::engine_output out;
    out.finish = finish_reason::error;
    out.error = "CUDA error: an illegal memory access was encountered";
    return cb(std::move(out));
  }
  if (opts_.mode == behaviour::silent) {
    while (!stopping_ && !g->cancelled())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return;
  }
  const auto& reply = opts_.reply;
  uint32_t produced = 0;
  size_t chunks = 0;
  for (;;) {
    if (stopping_ || g->cancelled()) {
      protocol::engine_output last;
      last.finish = finish_reason::cancelled;
      return cb(std::move(last)); // the one final chunk allowed after cancel()
    }
    if (opts_.mode == behaviour::fail_mid && chunks == 2)
      return cb(make_error(errc::disconnected, "worker vanished"));
    protocol::engine_output out;
    out.cached_tokens = chunks == 0 ? opts_.cached_tokens : 0;
    for (size_t i = 0; i < opts_.tokens_per_chunk && out.finish == finish_reason::none; ++i) {
      const bool endless = opts_.mode == behaviour::endless || req.stop.ignore_eos;
      if (!endless && produced == reply.size()) {
        out.token_ids.push_back(tok::byte_tokenizer::eos_id);
        out.finish = finish_reason::stop;
        break;
      }
      out.token_ids.push_back(static_cast<unsigned char>(reply[produced % reply.size()]));
      if (++produced == req.stop.max_tokens)
        out.finish = finish_reason::length;
    }
    const bool last = out.finish != finish_reason::none;
    cb(std::move(out));
    ++chunks;
    if (last) {
      std::lock_guard lock{mutex_};
      ++completed_;
      return;
    }
    if (opts_.delay.count() > 0)
      std::this_thread::sleep_for(opts_.delay);
  }
}

void fake_llm_client::note_cancel() {
  std::lock_guard lock{mutex_};
  ++cancelled_;
  cv_.notify_all();
}

size_t fake_llm_client::cancellations() const {
  std::lock_guard lock{mutex_};
  return cancelled_;
}

bool fake_llm_client::wait_for_cancellations(size_t n) {
  std::unique_lock lock{mutex_};
  return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return cancelled_ >= n; });
}

bool fake_llm_client::wait_for_started(size_t n) {
  std::unique_lock lock{mutex_};
  return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return started_ >= n; });
}

size_t fake_llm_client::started() const {
  std::lock_guard lock{mutex_};
  return started_;
}

size_t fake_llm_client::completions() const {
  std::lock_guard lock{mutex_};
  return completed_;
}

protocol::preprocessed_request fake_llm_client::last_request() const {
  std::lock_guard lock{mutex_};
  return last_;
}

} // namespace dynamo::test
