// The in-process KV transport: a sender copies into a receiver of this process (memcpy;
// cudaMemcpy when either side is device memory, in CUDA builds), found through a
// process-wide registry. For tests and single-process prefill/decode.
// Thread rules: as kv_transport.hpp; on_received runs on the sender's thread, and a
// receiver's destructor waits for a copy into it to finish.
#pragma once

#include "planes/transfer/kv_transport.hpp"

#include <memory>

namespace dynamo::planes {

class inproc_receiver : public kv_receiver {
public:
  /// Fault injection: while paused, transfers into this receiver wait (then time out).
  virtual void set_paused(bool paused) = 0;
};

[[nodiscard]] expected<std::unique_ptr<inproc_receiver>> make_inproc_receiver(kv_receiver_config config);
[[nodiscard]] expected<std::unique_ptr<kv_sender>> make_inproc_sender(kv_sender_config config);

} // namespace dynamo::planes
