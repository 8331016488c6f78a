#include "runtime/kvbm/kvbm_config.hpp"

#include <cmath>

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

expected<uint64_t> gib_to_bytes(double gib, const char* field) {
  if (!std::isfinite(gib) || gib < 0 || gib > 1e6)
    return make_error(errc::config_error, std::string{field} + " must be a size in GiB in [0, 1e6]");
  return static_cast<uint64_t>(gib * 1073741824.0);
}

} // namespace dynamo::kvbm
