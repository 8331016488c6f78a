#include "runtime/kvbm/disk_store.hpp"

#include <xxhash.h>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace dynamo::kvbm {

namespace {

constexpr std::string_view file_suffix = ".kvb";

/// Writes all of `data` to `fd`; false with errno set on failure.
bool write_all(int fd, const void* data, size_t n) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Reads up to `n` bytes; returns how many (short only at end of file), -1 on error.
ssize_t read_full(int fd, void* data, size_t n) {
  auto* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, p + got, n - got);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    if (r == 0)
      break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

/// Reads and verifies a block file from an open descriptor (from its start).
read_status read_block_fd(int fd, uint64_t hash, std::span<std::byte> out) {
  block_file_header h;
  read_status status = read_status::ok;
  const ssize_t n = read_full(fd, &h, sizeof h);
  if (n < 0)
    status = read_status::corrupt;
  else if (static_cast<size_t>(n) < sizeof h)
    status = read_status::truncated;
  else if (h.magic != block_file_header::magic_value || h.version != block_file_header::version_value ||
           h.sequence_hash != hash || h.length != out.size())
    status = read_status::corrupt;
  if (status == read_status::ok) {
    const ssize_t m = read_full(fd, out.data(), out.size());
    if (m < 0)
      status = read_status::corrupt;
    else if (static_cast<size_t>(m) < out.size())
      status = read_status::truncated;
    else if (block_checksum(out) != h.checksum)
      status = read_status::corrupt;
  }
  return status;
}

} // namespace

const char* to_string(read_status s) noexcept {
  switch (s) {
    case read_status::ok: return "ok";
    case read_status::missing: return "missing";
    case read_status::truncated: return "truncated";
    case read_status::corrupt: return "corrupt";
  }
  return "unknown";
}

uint64_t block_checksum(std::span<const std::byte> bytes) noexcept {
  return XXH3_64bits(bytes.data(), bytes.size());
}

read_status read_block_file(const std::string& path, uint64_t hash, std::span<std::byte> out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? read_status::missing : read_status::corrupt;
  const read_status s = read_block_fd(fd, hash, out);
  ::close(fd);
  return s;
}

expected<disk_store> disk_store::open(disk_store_config cfg) {
  if (!cfg.path.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(cfg.path, ec);
    if (ec || !fs::is_directory(cfg.path, ec))
      return make_error(errc::io_error, "KVBM disk path " + cfg.path + " is not a usable directory" +
                                            (ec ? ": " + ec.message() : std::string{}));
    // Blocks of an earlier process may be of another model: start empty.
    for (const auto& e : fs::directory_iterator(cfg.path, ec)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(file_suffix) || name.ends_with(std::string{file_suffix} + ".tmp"))
        fs::remove(e.path(), ec);
    }
  }
  return disk_store{std::move(cfg)};
}

std::string disk_store::path_of(uint64_t hash) const {
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
  return cfg_.path + "/" + name + std::string{file_suffix};
}

bool disk_store::room_for(uint64_t bytes) const {
  struct statvfs st {};
  if (::statvfs(cfg_.path.c_str(), &st) != 0)
    return false;
  const uint64_t free_bytes = uint64_t{st.f_bavail} * st.f_frsize;
  return free_bytes >= bytes && free_bytes - bytes >= cfg_.min_free_bytes;
}

disk_store::write_result disk_store::write(uint64_t hash, std::span<const std::byte> bytes, uint32_t priority,
                                           std::optional<uint64_t> parent) {
  write_result r;
  if (index_.contains(hash)) {
    (void)index_.insert(hash, nullptr, priority); // most recent, new priority
    r.status = write_status::present;
    return r;
  }
  if (has_files()) {
    if (!room_for(sizeof(block_file_header) + bytes.size())) {
      r.status = write_status::disk_full;
      return r;
    }
    const std::string path = path_of(hash);
    const std::string tmp = path + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      r.status = errno == ENOSPC || errno == EDQUOT ? write_status::disk_full : write_status::io_error;
      return r;
    }
    block_file_header h;
    h.sequence_hash = hash;
    h.length = bytes.size();
    h.checksum = block_checksum(bytes);
    const bool ok = write_all(fd, &h, sizeof h) && write_all(fd, bytes.data(), bytes.size());
    const int err = errno;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
      const int why = ok ? errno : err;
      ::unlink(tmp.c_str());
      r.status = why == ENOSPC || why == EDQUOT ? write_status::disk_full : write_status::io_error;
      return r;
    }
  }
  for (block_lru::evicted& e : index_.insert(hash, nullptr, priority, parent)) {
    if (has_files())
      ::unlink(path_of(e.sequence_hash).c_str());
    r.evicted.push_back(e.sequence_hash);
  }
  return r;
}

bool disk_store::erase(uint64_t hash) {
  if (!index_.erase(hash))
    return false;
  if (has_files())
    ::unlink(path_of(hash).c_str());
  return true;
}

} // namespace dynamo::kvbm
