// ZeroMQ CURVE for the plane sockets (docs/CLUSTER.md "Security"): one cluster
// keypair; a server socket (ROUTER, PUB) uses it and, through the process's ZAP
// handler, admits only clients whose CURVE key is that same public key; a
// client socket (DEALER, SUB) presents it and checks the server's. Called by the
// ZeroMQ planes before bind/connect, on the thread that owns the socket; the
// ZAP handler has a thread of its own. Key generation for dynamo-launch.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/core/secret.hpp"

#include <zmq.hpp>

#include <memory>
#include <string_view>

namespace dynamo::planes {

/// A fresh keypair (zmq_curve_keypair). errc::unsupported without CURVE in libzmq.
[[nodiscard]] expected<curve_keypair> generate_curve_keypair();

/// errc::config_error unless both keys are Z85 and secret_key's public key is
/// public_key; errc::unsupported when libzmq has no CURVE.
[[nodiscard]] expected<void> check_curve_keypair(const curve_keypair& keys);

/// The process's ZAP handler (one per ZeroMQ context, bound on
/// inproc://zeromq.zap.01): a CURVE client is admitted when its public key
/// equals the ZAP domain, which curve_server sets to the server's public key.
/// Server sockets hold it while they live.
class zap_handler;
using zap_handle = std::shared_ptr<zap_handler>;

/// Makes `s` a CURVE server with `keys` (check_curve_keypair first) and
/// returns the ZAP handler it needs; keep it while `s` lives. `ctx` must be
/// shared_zmq_context() (errc::internal otherwise). Call before bind.
[[nodiscard]] expected<zap_handle> curve_server(zmq::context_t& ctx, zmq::socket_t& s,
                                                const curve_keypair& keys);

/// The ZAP domain of the NULL-mechanism server sockets (null_server).
inline constexpr std::string_view null_zap_domain = "dynamo-null";

/// Makes `s`, a server socket (ROUTER, PUB) without CURVE, refuse peers older
/// than ZMTP 3.0: libzmq 4.3.4 rejects ZMTP 1.0/2.0 handshakes on a socket with
/// a ZAP domain, before its v1 path, whose subscription injection can abort a
/// PUB (docs/FUZZING.md, "Findings"). ZMTP 3 NULL peers are still admitted:
/// with no ZAP handler in the context libzmq skips ZAP, and ours admits the
/// NULL mechanism on this domain. Call before bind.
[[nodiscard]] expected<void> null_server(zmq::socket_t& s);

/// Makes `s` a CURVE client of servers holding `keys`. Call before connect.
[[nodiscard]] expected<void> curve_client(zmq::socket_t& s, const curve_keypair& keys);

} // namespace dynamo::planes
