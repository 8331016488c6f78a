// The file-based discovery plane (default; Dynamo's `file` backend): records
// are files under a root directory shared by every process on the host (or a
// shared filesystem whose clients agree on the wall clock). Layout and
// format: planes/README.md. Called by apps that wire a process. Thread-safe.
#pragma once

#include "planes/discovery/discovery_plane.hpp"

#include <memory>
#include <string>

namespace dynamo::planes {

/// $DYNAMO_DISCOVERY_DIR, or /tmp/dynamo_discovery.
[[nodiscard]] std::string default_discovery_root();

/// errc::io_error when `root` cannot be created; errc::config_error for bad options.
[[nodiscard]] expected<std::unique_ptr<discovery_plane>>
make_file_discovery(std::string root = default_discovery_root(), discovery_options options = {});

} // namespace dynamo::planes
