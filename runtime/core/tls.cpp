#include "runtime/core/tls.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace dynamo {

namespace {

std::string where(std::string_view field, std::string_view key) {
  return std::string{field} + "." + std::string{key};
}

} // namespace

expected<void> check_tls_files(const tls_files& t, std::string_view field, bool server) {
  if (t.cert_file.empty() != t.key_file.empty())
    return make_error(errc::config_error, where(field, t.cert_file.empty() ? "cert_file" : "key_file") +
                                            ": cert_file and key_file go together");
  if (server && t.cert_file.empty() && !t.ca_file.empty())
    return make_error(errc::config_error,
                      where(field, "cert_file") + ": a TLS server needs cert_file and key_file (ca_file alone "
                                                  "only says which client certificates to accept)");
  for (auto [key, path] : {std::pair{"ca_file", &t.ca_file}, std::pair{"cert_file", &t.cert_file},
                           std::pair{"key_file", &t.key_file}}) {
    if (path->empty())
      continue;
    std::ifstream in(*path);
    if (!in)
      return make_error(errc::config_error,
                        where(field, key) + ": cannot read '" + *path + "': " + std::strerror(errno));
  }
  return {};
}

} // namespace dynamo
