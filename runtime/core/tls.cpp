#include "runtime/core/tls.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

namespace dynamo {

std::optional<tls_problem> check_tls_shape(const tls_files& t, bool server) {
  if (t.cert_file.empty() != t.key_file.empty())
    return tls_problem{t.cert_file.empty() ? "cert_file" : "key_file", "cert_file and key_file go together"};
  if (server && t.cert_file.empty())
    return tls_problem{"cert_file", "a TLS server needs cert_file and key_file"};
  if (!server && !t.client_ca_file.empty())
    return tls_problem{"client_ca_file", "only for a server (the CA of the client certificates it accepts)"};
  return std::nullopt;
}

std::optional<tls_problem> check_tls_files(const tls_files& t, bool server) {
  if (auto bad = check_tls_shape(t, server))
    return bad;
  for (auto [key, path] : {std::pair{"ca_file", &t.ca_file}, std::pair{"cert_file", &t.cert_file},
                           std::pair{"key_file", &t.key_file},
                           std::pair{"client_ca_file", &t.client_ca_file}}) {
    if (path->empty())
      continue;
    std::ifstream in(*path);
    if (!in)
      return tls_problem{key, "cannot read '" + *path + "': " + std::strerror(errno)};
  }
  return std::nullopt;
}

} // namespace dynamo
