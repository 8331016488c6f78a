#include "runtime/core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>

namespace dynamo {

void init_logging(std::string_view process, std::string_view level) {
  std::string lvl{level};
  if (lvl.empty()) {
    const char* env = std::getenv("DYNAMO_LOG");
    lvl = env ? env : "info";
  }
  auto logger = spdlog::get(std::string{process});
  if (!logger)
    logger = spdlog::stderr_color_mt(std::string{process});
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  auto parsed = spdlog::level::from_str(lvl);
  if (parsed == spdlog::level::off && lvl != "off")
    parsed = spdlog::level::info;
  spdlog::set_level(parsed);
}

} // namespace dynamo
