// libFuzzer target: a cluster config file (YAML) parsed and validated.
#include "runtime/config/cluster_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)dynamo::config::parse_cluster_config(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
