// The plain TCP KV transport, always available: one connection per (sender,
// receiver), framed by frame.hpp: hello, then per run a data header and the bytes
// (received straight into the destination blocks), then done; the receiver answers
// ack. One poll thread per receiver and per sender. Thread rules: as kv_transport.hpp.
#pragma once

#include "planes/transfer/kv_transport.hpp"

#include <memory>

namespace dynamo::planes {

[[nodiscard]] expected<std::unique_ptr<kv_receiver>> make_tcp_receiver(kv_receiver_config config);

/// The tcp sender, with one extra for transports that move bytes out of band
/// (cuda-ipc uses it as its completion channel).
class tcp_kv_sender : public kv_sender {
public:
  /// Tells the tcp receiver described by `connection` that transfer `transfer_id`
  /// wrote `blocks` blocks (`bytes`) out of band; `done` runs when it acknowledged.
  virtual void notify(const protocol::kv_connection_info& connection, uint64_t transfer_id,
                      uint64_t source_worker_id, uint64_t blocks, uint64_t bytes,
                      std::chrono::milliseconds timeout, kv_status_callback done) = 0;
};

[[nodiscard]] expected<std::unique_ptr<tcp_kv_sender>> make_tcp_sender(kv_sender_config config);

} // namespace dynamo::planes
