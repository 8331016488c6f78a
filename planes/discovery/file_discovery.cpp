#include "planes/discovery/file_discovery.hpp"

#include "planes/discovery/file_store.hpp"
#include "planes/discovery/lease_discovery.hpp"

#include <cstdlib>
#include <filesystem>

namespace dynamo::planes {

std::string default_discovery_root() {
  if (const char* dir = std::getenv("DYNAMO_DISCOVERY_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  return "/tmp/dynamo_discovery";
}

expected<std::unique_ptr<discovery_plane>> make_file_discovery(std::string root,
                                                               discovery_options options) {
  std::error_code ec;
  std::filesystem::create_directories(root, ec);
  if (ec)
    return make_error(errc::io_error, "discovery root " + root + ": " + ec.message());
  return make_lease_discovery(std::shared_ptr<record_store>{make_file_store(std::move(root))},
                              std::move(options));
}

} // namespace dynamo::planes
