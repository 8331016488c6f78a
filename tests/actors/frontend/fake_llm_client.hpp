// A deterministic llm_client for frontend tests and the e2e fake server: it
// streams the bytes of a fixed reply as byte-tokenizer tokens from its own
// thread, honours max_tokens, EOS and ignore_eos, and can fail on purpose or
// stream until cancelled. Thread-safe; the destructor stops and joins its threads.
#pragma once

#include "runtime/engine/llm_client.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dynamo::test {

struct fake_options {
  enum class behaviour {
    normal,      ///< the reply, then EOS (or length)
    endless,     ///< tokens until cancelled (for disconnect tests)
    fail_first,  ///< first callback is an error value (errc::no_workers)
    refuse,      ///< first callback is a worker's refusal (errc::context_length_exceeded)
    error_chunk, ///< first chunk has finish=error
    refuse_chunk, ///< first chunk is a worker's refusal as it sends it (finish=error, context_length_exceeded)
    fail_mid,    ///< two chunks, then an error value (errc::disconnected)
    silent,      ///< sends nothing until cancelled (for backend timeouts)
  };
  std::string reply = "Hello from the fake backend.";
  size_t tokens_per_chunk = 2;
  std::chrono::milliseconds delay{0}; ///< between chunks
  uint32_t cached_tokens = 0;          ///< reported on the first chunk
  behaviour mode = behaviour::normal;
};

class fake_llm_client final : public engine::llm_client {
public:
  explicit fake_llm_client(fake_options opts = {}) : opts_(std::move(opts)) {}
  ~fake_llm_client() override;

  [[nodiscard]] std::shared_ptr<engine::generation>
  generate(protocol::preprocessed_request req, engine::chunk_callback on_chunk) override;

  /// Generations cancelled so far.
  [[nodiscard]] size_t cancellations() const;
  /// Waits (5 s at most) until `n` generations were cancelled.
  bool wait_for_cancellations(size_t n);
  /// Waits (5 s at most) until `n` generations were started.
  bool wait_for_started(size_t n);
  /// Generations started so far (generate() calls).
  [[nodiscard]] size_t started() const;
  /// Generations that ran to their own end (not cancelled).
  [[nodiscard]] size_t completions() const;
  [[nodiscard]] protocol::preprocessed_request last_request() const;

private:
  class fake_generation;
  void run(std::shared_ptr<fake_generation> g, protocol::preprocessed_request req,
           engine::chunk_callback cb);
  void note_cancel();

  fake_options opts_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
  protocol::preprocessed_request last_;
  size_t started_ = 0;
  size_t cancelled_ = 0;
  size_t completed_ = 0;
  std::atomic<bool> stopping_{false};
};

} // namespace dynamo::test
