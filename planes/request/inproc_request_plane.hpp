// The in-process fake of the request plane (same contract, no sockets): servers
// get an "inproc-fake://request/N" address in a shared network; servers and
// clients run callbacks on their own executor threads. Destroying a server fails
// its calls with errc::disconnected; destroying a client cancels its streams. Thread-safe.
#pragma once

#include "planes/request/request_plane.hpp"

#include <memory>

namespace dynamo::planes {

/// The address book that fake clients and servers share (one per test or process).
class inproc_request_network;

[[nodiscard]] std::shared_ptr<inproc_request_network> make_inproc_request_network();

[[nodiscard]] std::unique_ptr<request_server>
make_inproc_request_server(std::shared_ptr<inproc_request_network> network,
                           request_plane_timing timing = {});

[[nodiscard]] std::unique_ptr<request_client>
make_inproc_request_client(std::shared_ptr<inproc_request_network> network,
                           request_plane_timing timing = {});

} // namespace dynamo::planes
