// Logging setup: spdlog, level from DYNAMO_LOG (trace|debug|info|warn|error|off)
// or a --log-level flag. Call init_logging() once from main(); afterwards use
// spdlog::info(...) etc. from any thread (the default logger is thread-safe).
#pragma once

#include <string_view>

namespace dynamo {

/// Sets up the default stderr logger named `process`. An empty `level` reads
/// DYNAMO_LOG and falls back to "info". Unknown levels fall back to "info".
void init_logging(std::string_view process, std::string_view level = {});

} // namespace dynamo
