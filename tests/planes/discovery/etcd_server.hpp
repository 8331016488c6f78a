// A real etcd for the etcd discovery tests: the `etcd` binary ($DYNAMO_ETCD_BIN,
// else /usr/bin/etcd or PATH; Debian package etcd-server) on free loopback
// ports with a temporary data directory, killed and restarted on the same
// ports and data; it dies with the test process. Heartbeat 50 ms / election
// 500 ms, so etcd grants 1 s leases. Optionally over TLS (the certificates in
// tls/, client certificates required) and with auth enabled. One owner thread.
#pragma once

#include "planes/discovery/etcd_client.hpp"

#include <boost/test/unit_test.hpp>

#include <sys/types.h>

#include <optional>
#include <string>

namespace dynamo::planes::testing {

/// tests/planes/discovery/tls ($DYNAMO_SOURCE_DIR, set by CTest): ca.crt, a
/// server certificate for IP 127.0.0.1, a client certificate (CN dynamo).
[[nodiscard]] std::string etcd_tls_dir();

class etcd_server {
public:
  /// The etcd binary, or "" when none is installed.
  [[nodiscard]] static std::string binary();
  /// Starts etcd and waits until it answers; nullopt (reason on stderr) on
  /// failure. `tls`: https only, and clients must present a certificate of the test CA.
  [[nodiscard]] static std::optional<etcd_server> start(bool tls = false);

  /// Adds users root and `user` (role `user`: read-write under `prefix`),
  /// both with `password`, and enables auth. False (reason on stderr) on failure.
  [[nodiscard]] bool enable_auth(const std::string& user, const std::string& password,
                                 const std::string& prefix);
  /// Auth off and on again (as root): etcd forgets every token it handed out.
  [[nodiscard]] bool invalidate_tokens();
  /// What a client needs to reach it as `user` ("": no auth): the TLS files when tls.
  [[nodiscard]] etcd_security security(const std::string& user = "", const std::string& password = "") const;

  etcd_server(etcd_server&& o) noexcept;
  etcd_server& operator=(etcd_server&&) = delete;
  ~etcd_server(); ///< kills etcd and removes its data

  /// SIGKILL (as a crash) and reap. Idempotent.
  void kill();
  /// Starts it again on the same ports; `wipe`: with an empty data directory
  /// (every key and lease lost). False when it does not answer within 10 s.
  [[nodiscard]] bool restart(bool wipe = false);

  [[nodiscard]] std::string url() const;
  [[nodiscard]] uint16_t port() const noexcept { return client_port_; }

private:
  etcd_server() = default;
  [[nodiscard]] bool launch();
  [[nodiscard]] bool wait_ready() const;

  std::string dir_;
  bool tls_ = false;
  etcd_security admin_; ///< what wait_ready uses (root once auth is on)
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
  pid_t pid_ = -1;
};

/// A Boost.Test precondition: the suite is skipped, saying why, without etcd.
[[nodiscard]] boost::test_tools::assertion_result etcd_installed(boost::unit_test::test_unit_id);

} // namespace dynamo::planes::testing
