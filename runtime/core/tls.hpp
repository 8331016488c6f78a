// The TLS files of one endpoint, server or client: one vocabulary for the
// etcd client, the HTTP servers (admin API, OpenAI frontend) and their
// clients. PEM file paths; a check that they go together and can be read.
// Pure values; the check reads the file system. Any thread.
#pragma once

#include "runtime/core/error.hpp"

#include <string>
#include <string_view>

namespace dynamo {

/// A server serves HTTPS with cert_file + key_file; with ca_file it also asks
/// every client for a certificate signed by that CA (mutual TLS). A client
/// trusts ca_file ("": the system's store) and, with cert_file + key_file,
/// presents that certificate.
struct tls_files {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  /// A server's TLS is on with a certificate; a client's with any file.
  [[nodiscard]] bool any() const noexcept { return !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
  [[nodiscard]] bool operator==(const tls_files&) const = default;
};

/// errc::config_error "<field>.<key>: <why>" (`field` e.g. "admin.tls") when
/// cert_file and key_file are not both set or both empty, when `server` and
/// there is no cert_file, or when a named file cannot be read.
[[nodiscard]] expected<void> check_tls_files(const tls_files& t, std::string_view field, bool server);

} // namespace dynamo
