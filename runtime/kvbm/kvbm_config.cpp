#include "runtime/kvbm/kvbm_config.hpp"

namespace dynamo::kvbm {

expected<void> validate(const kvbm_config& cfg, bool moves_bytes) {
  if (cfg.disk_bytes > 0 && moves_bytes && cfg.disk_path.empty())
    return make_error(errc::config_error, "kvbm disk_path must be set with a disk tier (--kvbm-disk-path)");
  if (cfg.disk_readers == 0 || cfg.disk_read_bytes == 0)
    return make_error(errc::config_error, "kvbm disk_readers and disk_read_bytes must be > 0");
  if (cfg.disk_segment_bytes < (uint64_t{1} << 20))
    return make_error(errc::config_error, "kvbm disk_segment_bytes must be >= 1 MiB");
  if (cfg.disk_filter.min_frequency < 1)
    return make_error(errc::config_error, "kvbm disk_filter.min_frequency must be >= 1");
  return {};
}

} // namespace dynamo::kvbm
