// The UCX (ucp) KV transport: the receiver maps its region (ucp_mem_map) and offers
// its worker address and packed rkey; the sender opens an endpoint to that address
// and moves blocks by active messages with rendezvous (ucx_method::am, CMA on one
// host) or by RMA put + flush (ucx_method::put), then sends done and waits for the
// receiver's ack. One progress thread per object. Thread rules: as kv_transport.hpp.
#pragma once

#include "planes/transfer/kv_transport.hpp"

#include <memory>

namespace dynamo::planes {

[[nodiscard]] expected<std::unique_ptr<kv_receiver>> make_ucx_receiver(kv_receiver_config config);
[[nodiscard]] expected<std::unique_ptr<kv_sender>> make_ucx_sender(kv_sender_config config);

} // namespace dynamo::planes
