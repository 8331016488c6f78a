// The file-backed record store (Dynamo's `file` discovery backend): one file
// per record at <root>/<ns>/<component>/<endpoint>/<instance hex>, written to
// a dot-prefixed temp file and renamed into place, so readers never see half a
// record. Used by file_discovery. Thread-safe; several processes may share a root.
#pragma once

#include "planes/discovery/record_store.hpp"

#include <memory>

namespace dynamo::planes {

/// Temp files older than this are left-overs of killed writers and are deleted by scans.
inline constexpr int64_t stale_temp_file_seconds = 60;

[[nodiscard]] std::unique_ptr<record_store> make_file_store(std::string root);

} // namespace dynamo::planes
