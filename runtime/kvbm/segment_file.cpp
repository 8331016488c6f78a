#include "runtime/kvbm/segment_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace dynamo::kvbm {

namespace {

/// pwrite of every iovec at `offset`; 0 or the errno.
int pwritev_all(int fd, std::vector<iovec> iov, uint64_t offset) {
  size_t i = 0;
  while (i < iov.size()) {
    const ssize_t w = ::pwritev(fd, iov.data() + i, static_cast<int>(std::min<size_t>(iov.size() - i, IOV_MAX)),
                                static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (w == 0)
      return EIO;
    offset += static_cast<uint64_t>(w);
    for (auto left = static_cast<size_t>(w); left > 0;) {
      if (left >= iov[i].iov_len) {
        left -= iov[i].iov_len;
        ++i;
      } else {
        iov[i].iov_base = static_cast<char*>(iov[i].iov_base) + left;
        iov[i].iov_len -= left;
        left = 0;
      }
    }
    while (i < iov.size() && iov[i].iov_len == 0)
      ++i;
  }
  return 0;
}

/// Reads up to `n` bytes at `offset`; how many (short only at end of file), -1 on error.
ssize_t pread_full(int fd, void* data, size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
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

} // namespace

expected<std::shared_ptr<segment_file>> segment_file::create(const std::string& path, uint64_t tag, uint64_t id,
                                                             bool* no_space) {
  if (no_space != nullptr)
    *no_space = false;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (no_space != nullptr)
      *no_space = errno == ENOSPC || errno == EDQUOT;
    return make_error(errc::io_error, "cannot create " + path + ": " + std::strerror(errno));
  }
  segment_header h = make_segment_header(tag, id);
  const int err = pwritev_all(fd, {iovec{&h, sizeof h}}, 0);
  if (err != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    if (no_space != nullptr)
      *no_space = err == ENOSPC || err == EDQUOT;
    return make_error(errc::io_error, "cannot write " + path + ": " + std::strerror(err));
  }
  return std::shared_ptr<segment_file>(new segment_file(path, fd, h, sizeof h));
}

expected<std::shared_ptr<segment_file>> segment_file::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::io_error, "cannot open " + path + ": " + std::strerror(errno));
  segment_header h;
  if (pread_full(fd, &h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || !valid(h)) {
    ::close(fd);
    return make_error(errc::corrupt_file, path + " is not a KVBM segment");
  }
  return std::shared_ptr<segment_file>(new segment_file(path, fd, h, sizeof h));
}

segment_file::~segment_file() {
  if (fd_ >= 0)
    ::close(fd_);
}

segment_file::appended segment_file::append(const record_header* header, std::span<const std::byte> payload) {
  std::vector<iovec> iov;
  if (header != nullptr)
    iov.push_back(iovec{const_cast<record_header*>(header), sizeof *header});
  iov.push_back(iovec{const_cast<std::byte*>(payload.data()), payload.size()});
  appended a{end_, pwritev_all(fd_, std::move(iov), end_)};
  if (a.error == 0) {
    end_ += (header != nullptr ? sizeof *header : 0) + payload.size();
    record_header& h = records_.emplace_back();
    if (header != nullptr)
      h = *header;
    else
      std::memcpy(&h, payload.data(), std::min(sizeof h, payload.size()));
  }
  return a;
}

std::vector<segment_file::scanned> segment_file::scan() {
  std::vector<scanned> out;
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    return out;
  const auto size = static_cast<uint64_t>(st.st_size);
  uint64_t at = sizeof(segment_header);
  for (;;) {
    scanned s;
    s.offset = at;
    if (at + sizeof s.header > size ||
        pread_full(fd_, &s.header, sizeof s.header, at) != static_cast<ssize_t>(sizeof s.header) ||
        !valid(s.header) || s.header.length > size - at - sizeof s.header)
      break; // the end, or a torn tail: what follows is never trusted
    at += sizeof s.header + s.header.length;
    out.push_back(s);
  }
  end_ = at;
  records_.clear();
  for (const scanned& r : out)
    records_.push_back(r.header);
  return out;
}

std::optional<std::vector<segment_file::scanned>> segment_file::read_footer() {
  struct stat st {};
  if (::fstat(fd_, &st) != 0)
    return std::nullopt;
  const auto size = static_cast<uint64_t>(st.st_size);
  std::vector<std::byte> tail(std::min<uint64_t>(size, 64 << 10));
  auto read_tail = [&] {
    return pread_full(fd_, tail.data(), tail.size(), size - tail.size()) == static_cast<ssize_t>(tail.size());
  };
  if (tail.size() < sizeof(segment_footer) || !read_tail())
    return std::nullopt;
  segment_footer last;
  std::memcpy(&last, tail.data() + tail.size() - sizeof last, sizeof last);
  if (last.magic == segment_footer::magic_value && last.count <= size / sizeof(record_header) &&
      last.bytes() > tail.size() && last.bytes() <= size) { // a long footer: read it whole
    tail.resize(last.bytes());
    if (!read_tail())
      return std::nullopt;
  }
  auto headers = parse_segment_footer(tail, size, id());
  if (!headers)
    return std::nullopt;
  std::vector<scanned> out;
  out.reserve(headers->size());
  uint64_t at = sizeof(segment_header);
  for (const record_header& h : *headers) {
    out.push_back(scanned{h, at});
    at += sizeof h + h.length;
  }
  end_ = at;
  sealed_ = true;
  records_.clear();
  return out;
}

bool segment_file::seal() {
  const segment_footer f = make_segment_footer(id(), end_, records_);
  std::vector<iovec> iov{iovec{const_cast<segment_footer*>(&f), sizeof f},
                         iovec{records_.data(), records_.size() * sizeof(record_header)},
                         iovec{const_cast<segment_footer*>(&f), sizeof f}};
  const bool ok = pwritev_all(fd_, std::move(iov), end_) == 0 &&
                  ::ftruncate(fd_, static_cast<off_t>(end_ + f.bytes())) == 0; // drops a torn tail past it
  if (!ok)
    (void)::ftruncate(fd_, static_cast<off_t>(end_));
  sealed_ = true;
  records_.clear();
  records_.shrink_to_fit();
  return ok;
}

read_status segment_file::read(uint64_t offset, uint64_t hash, std::span<std::byte> payload) const {
  record_header h;
  const ssize_t n = pread_full(fd_, &h, sizeof h, offset);
  if (n < 0)
    return read_status::corrupt;
  if (static_cast<size_t>(n) < sizeof h)
    return read_status::truncated;
  if (!valid(h) || h.sequence_hash != hash || h.length != payload.size())
    return read_status::corrupt;
  const ssize_t m = pread_full(fd_, payload.data(), payload.size(), offset + sizeof h);
  if (m < 0)
    return read_status::corrupt;
  if (static_cast<size_t>(m) < payload.size())
    return read_status::truncated;
  return verify(h, hash, payload);
}

void segment_file::read_run(uint64_t offset, std::span<const uint64_t> hashes,
                            std::span<const std::span<std::byte>> payloads, std::span<read_status> status) const {
  const size_t n = hashes.size();
  std::vector<record_header> headers(n);
  std::vector<iovec> iov;
  iov.reserve(2 * n);
  uint64_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    iov.push_back(iovec{&headers[i], sizeof(record_header)});
    iov.push_back(iovec{payloads[i].data(), payloads[i].size()});
    total += sizeof(record_header) + payloads[i].size();
  }
  ssize_t got = -1;
  if (n > 0 && iov.size() <= IOV_MAX) {
    do
      got = ::preadv(fd_, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(offset));
    while (got < 0 && errno == EINTR);
  }
  if (got == static_cast<ssize_t>(total)) {
    for (size_t i = 0; i < n; ++i)
      status[i] = verify(headers[i], hashes[i], payloads[i]);
    return;
  }
  // Short (the file ends inside the run) or failed: record by record, which
  // tells truncated from corrupt exactly.
  for (size_t i = 0; i < n; ++i) {
    status[i] = read(offset, hashes[i], payloads[i]);
    offset += sizeof(record_header) + payloads[i].size();
  }
}

std::vector<std::byte> segment_file::read_raw(uint64_t offset, uint64_t length) const {
  std::vector<std::byte> out(sizeof(record_header) + length);
  if (pread_full(fd_, out.data(), out.size(), offset) != static_cast<ssize_t>(out.size()))
    out.clear();
  return out;
}

void segment_file::remove() const { ::unlink(path_.c_str()); }

} // namespace dynamo::kvbm
