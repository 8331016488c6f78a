// The TLS files of one endpoint, server or client: one vocabulary for the
// etcd client, the HTTP servers (admin API, OpenAI frontend), their clients
// and the cluster config. PEM file paths, and the checks that they go
// together and can be read. Pure values (check_tls_files reads the file
// system). Any thread.
#pragma once

#include <optional>
#include <string>

namespace dynamo {

/// One process's TLS identity and trust. cert_file + key_file: its certificate
/// (a server's, required to serve HTTPS; a client presents it when the server
/// asks). ca_file: what it trusts as a client, the CA the servers it calls
/// chain to ("": the system's store). client_ca_file: as a server, it asks
/// every client for a certificate of that CA (mutual TLS); never for a client.
struct tls_files {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  [[nodiscard]] bool any() const noexcept {
    return !ca_file.empty() || !cert_file.empty() || !key_file.empty() || !client_ca_file.empty();
  }
  [[nodiscard]] bool operator==(const tls_files&) const = default;
};

/// What is wrong: the key ("ca_file", "cert_file", "key_file", "client_ca_file") and why.
/// Callers name it in their own terms ("admin.tls.cert_file", "--tls-cert").
struct tls_problem {
  std::string key;
  std::string why;
};

/// Pure: cert_file and key_file go together; a `server` needs them; a client
/// has no client_ca_file.
[[nodiscard]] std::optional<tls_problem> check_tls_shape(const tls_files& t, bool server);

/// check_tls_shape, then that every named file can be read (the why names the file).
[[nodiscard]] std::optional<tls_problem> check_tls_files(const tls_files& t, bool server);

} // namespace dynamo
