// The UCX (ucp) KV transport: the receiver maps (or allocates, in shared memory) its region
// and offers its worker address and rkey; the sender opens an endpoint and moves blocks by
// active messages (rendezvous, CMA on one host), RMA put + flush, or memcpy on its copy
// threads into a same-host receiver's shared memory it mapped (ucp_rkey_ptr), then sends
// done and waits for the receiver's ack. One progress thread per object (plus the sender's
// copy threads). Thread rules: as kv_transport.hpp.
#pragma once

#include "planes/transfer/kv_transport.hpp"

#include <memory>

namespace dynamo::planes {

[[nodiscard]] expected<std::unique_ptr<kv_receiver>> make_ucx_receiver(kv_receiver_config config);
[[nodiscard]] expected<std::unique_ptr<kv_sender>> make_ucx_sender(kv_sender_config config);

} // namespace dynamo::planes
