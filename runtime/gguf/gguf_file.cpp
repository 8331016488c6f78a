#include "runtime/gguf/gguf_file.hpp"


#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dynamo::gguf {

namespace {

constexpr uint32_t gguf_magic = 0x46554747; // "GGUF" read as little-endian uint32
constexpr uint32_t max_array_depth = 8;

std::string quoted(std::string_view s) {
  std::string out = "'";
  out.append(s.substr(0, 80));
  return out + (s.size() > 80 ? "...'" : "'");
}

// Smallest encoded size of one value of `t` (for rejecting hostile counts early).
uint64_t min_encoded_size(value_type t) noexcept {
  switch (t) {
    case value_type::u8:
    case value_type::i8:
    case value_type::boolean: return 1;
    case value_type::u16:
    case value_type::i16: return 2;
    case value_type::u32:
    case value_type::i32:
    case value_type::f32: return 4;
    case value_type::u64:
    case value_type::i64:
    case value_type::f64:
    case value_type::string: return 8;
    case value_type::array: return 12;
  }
  return 1;
}

} // namespace

// Bounds-checked little-endian cursor over the file image. The first failure
// is kept (code + message); every read after it fails too.
class file_parser {
public:
  explicit file_parser(file& f) : f_(f), bytes_(f.bytes_) {}

  [[nodiscard]] expected<void> run();

private:
  template <class T>
  bool read(T& out, std::string_view what) {
    if (bytes_.size() - pos_ < sizeof(T))
      return truncated(sizeof(T), what);
    std::memcpy(&out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  bool truncated(uint64_t need, std::string_view what) {
    return fail(errc::corrupt_file, "truncated: " + std::string(what) + " at offset " + std::to_string(pos_) +
                                        " needs " + std::to_string(need) + " bytes, file size " +
                                        std::to_string(bytes_.size()));
  }

  bool fail(errc code, std::string msg) {
    if (!failed_) {
      failed_ = true;
      code_ = code;
      msg_ = std::move(msg);
    }
    return false;
  }

  bool read_string(std::string_view& out, std::string_view what);
  bool read_header(uint64_t& n_tensors, uint64_t& n_kvs);
  bool read_value(value_type t, value& out, std::string_view key, uint32_t depth);
  bool read_array(value& out, std::string_view key, uint32_t depth);
  bool read_kvs(uint64_t n_kvs);
  bool read_tensor_info(tensor_info& t);
  bool check_tensor(tensor_info& t);
  bool read_alignment();

  file& f_;
  std::span<const std::byte> bytes_;
  uint64_t pos_ = 0;
  uint64_t array_elements_ = 0; ///< metadata array elements read so far (max_metadata_array_elements)
  bool failed_ = false;
  errc code_ = errc::corrupt_file;
  std::string msg_;
};

bool file_parser::read_string(std::string_view& out, std::string_view what) {
  uint64_t len = 0;
  if (!read(len, what))
    return false;
  if (len > bytes_.size() - pos_)
    return fail(errc::corrupt_file, "truncated: " + std::string(what) + " of length " + std::to_string(len) +
                                        " at offset " + std::to_string(pos_) + " exceeds file size " +
                                        std::to_string(bytes_.size()));
  out = std::string_view(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
  pos_ += len;
  return true;
}

bool file_parser::read_header(uint64_t& n_tensors, uint64_t& n_kvs) {
  uint32_t magic = 0, version = 0;
  if (bytes_.size() < 4)
    return fail(errc::corrupt_file, "not a GGUF file: only " + std::to_string(bytes_.size()) + " bytes");
  if (!read(magic, "magic") || magic != gguf_magic)
    return fail(errc::corrupt_file, "not a GGUF file: bad magic");
  if (!read(version, "version"))
    return false;
  if (version == 0x03000000u || version == 0x02000000u)
    return fail(errc::unsupported, "big-endian GGUF files are not supported");
  if (version != 2 && version != 3)
    return fail(errc::unsupported, "GGUF version " + std::to_string(version) + " not supported (need 2 or 3)");
  f_.version_ = version;
  if (!read(n_tensors, "tensor count") || !read(n_kvs, "metadata count"))
    return false;
  // Every KV needs at least 13 bytes: bound the count by the file size before reserving.
  if (n_kvs > (bytes_.size() - pos_) / 13)
    return fail(errc::corrupt_file, "metadata count " + std::to_string(n_kvs) + " cannot fit in a file of " +
                                        std::to_string(bytes_.size()) + " bytes");
  return true;
}

bool file_parser::read_value(value_type t, value& out, std::string_view key, uint32_t depth) {
  const std::string what = "value of " + quoted(key);
  auto scalar = [&]<class T>(T raw) {
    if (!read(raw, what))
      return false;
    if constexpr (std::is_floating_point_v<T>)
      out = value(t, static_cast<double>(raw));
    else if constexpr (std::is_signed_v<T>)
      out = value(t, static_cast<int64_t>(raw));
    else
      out = value(t, static_cast<uint64_t>(raw));
    return true;
  };
  switch (t) {
    case value_type::u8: return scalar(uint8_t{});
    case value_type::i8: return scalar(int8_t{});
    case value_type::u16: return scalar(uint16_t{});
    case value_type::i16: return scalar(int16_t{});
    case value_type::u32: return scalar(uint32_t{});
    case value_type::i32: return scalar(int32_t{});
    case value_type::u64: return scalar(uint64_t{});
    case value_type::i64: return scalar(int64_t{});
    case value_type::f32: return scalar(float{});
    case value_type::f64: return scalar(double{});
    case value_type::boolean: {
      uint8_t b = 0;
      if (!read(b, what))
        return false;
      if (b > 1)
        return fail(errc::corrupt_file, "metadata " + quoted(key) + ": bool byte " + std::to_string(b) + " is not 0/1");
      out = value(b == 1);
      return true;
    }
    case value_type::string: {
      std::string_view s;
      if (!read_string(s, what))
        return false;
      out = value(s);
      return true;
    }
    case value_type::array: return read_array(out, key, depth + 1);
  }
  return fail(errc::corrupt_file, "metadata " + quoted(key) + ": unknown value type " +
                                      std::to_string(static_cast<uint32_t>(t)));
}

bool file_parser::read_array(value& out, std::string_view key, uint32_t depth) {
  if (depth > max_array_depth)
    return fail(errc::corrupt_file, "metadata " + quoted(key) + ": arrays nested deeper than " +
                                        std::to_string(max_array_depth));
  uint32_t elem = 0;
  uint64_t count = 0;
  const std::string what = "array header of " + quoted(key);
  if (!read(elem, what) || !read(count, what))
    return false;
  const auto et = static_cast<value_type>(elem);
  if (elem > static_cast<uint32_t>(value_type::f64))
    return fail(errc::corrupt_file, "metadata " + quoted(key) + ": unknown array element type " + std::to_string(elem));
  if (count > (bytes_.size() - pos_) / min_encoded_size(et))
    return fail(errc::corrupt_file, "metadata " + quoted(key) + ": array of " + std::to_string(count) + " " +
                                        value_type_name(et) + " exceeds the " +
                                        std::to_string(bytes_.size() - pos_) + " bytes left in the file");
  if (count > max_metadata_array_elements - array_elements_)
    return fail(errc::corrupt_file, "metadata " + quoted(key) + ": array of " + std::to_string(count) +
                                        " elements exceeds the file's budget of " +
                                        std::to_string(max_metadata_array_elements) + " array elements");
  array_elements_ += count;
  value::array arr;
  arr.elem_type = et;
  arr.items.resize(count);
  for (auto& item : arr.items)
    if (!read_value(et, item, key, depth))
      return false;
  out = value(std::move(arr));
  return true;
}

bool file_parser::read_kvs(uint64_t n_kvs) {
  f_.kvs_.reserve(n_kvs);
  for (uint64_t i = 0; i < n_kvs; ++i) {
    std::string_view key;
    uint32_t type = 0;
    if (!read_string(key, "key of metadata #" + std::to_string(i)) || !read(type, "type of " + quoted(key)))
      return false;
    value v;
    if (!read_value(static_cast<value_type>(type), v, key, 0))
      return false;
    if (!f_.kv_index_.emplace(key, f_.kvs_.size()).second)
      return fail(errc::corrupt_file, "duplicate metadata key " + quoted(key));
    f_.kvs_.push_back({key, std::move(v)});
  }
  return true;
}

bool file_parser::read_alignment() {
  const value* v = f_.find("general.alignment");
  if (!v)
    return true;
  auto a = v->to_uint();
  if (!a || *a == 0 || *a > (1u << 30) || (*a & (*a - 1)) != 0)
    return fail(errc::corrupt_file, "general.alignment " + v->summary() + " is not a power of two");
  f_.alignment_ = static_cast<uint32_t>(*a);
  return true;
}

bool file_parser::read_tensor_info(tensor_info& t) {
  std::string_view name;
  if (!read_string(name, "tensor name"))
    return false;
  t.name = std::string(name);
  const std::string what = "info of tensor " + quoted(name);
  uint32_t type = 0;
  if (!read(t.n_dims, what))
    return false;
  if (t.n_dims > max_dims)
    return fail(errc::corrupt_file, "tensor " + quoted(name) + ": " + std::to_string(t.n_dims) + " dimensions (max 4)");
  for (uint32_t d = 0; d < t.n_dims; ++d)
    if (!read(t.ne[d], what))
      return false;
  if (!read(type, what) || !read(t.offset, what))
    return false;
  t.type = static_cast<tensor_type>(type);
  return true;
}

// Shape, type and size checks that need no file position.
bool file_parser::check_tensor(tensor_info& t) {
  const std::string name = quoted(t.name);
  auto geom = kernels::ref::geometry_of(t.type);
  if (!geom)
    return fail(errc::unsupported, "tensor " + name + ": unknown ggml type " +
                                       std::to_string(static_cast<uint32_t>(t.type)));
  uint64_t n = 1;
  for (auto d : t.ne) {
    if (d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        (d != 0 && n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / d))
      return fail(errc::corrupt_file, "tensor " + name + ": element count overflows");
    n *= d;
  }
  if (t.ne[0] % geom->block_elems != 0)
    return fail(errc::corrupt_file, "tensor " + name + ": ne[0] = " + std::to_string(t.ne[0]) +
                                        " is not a multiple of the " + std::string(geom->name) + " block size " +
                                        std::to_string(geom->block_elems));
  t.n_bytes = n / geom->block_elems * geom->block_bytes;
  if (t.offset % f_.alignment_ != 0)
    return fail(errc::corrupt_file, "tensor " + name + ": offset " + std::to_string(t.offset) +
                                        " is not a multiple of the alignment " + std::to_string(f_.alignment_));
  return true;
}

expected<void> file_parser::run() {
  uint64_t n_tensors = 0, n_kvs = 0;
  bool ok = read_header(n_tensors, n_kvs) && read_kvs(n_kvs) && read_alignment();
  // Every tensor info needs at least 24 bytes: bound the count before allocating.
  if (ok && n_tensors > (bytes_.size() - pos_) / 24)
    ok = fail(errc::corrupt_file, "tensor count " + std::to_string(n_tensors) + " cannot fit in the " +
                                      std::to_string(bytes_.size() - pos_) + " bytes left");
  if (ok)
    f_.tensors_.resize(n_tensors);
  for (uint64_t i = 0; ok && i < n_tensors; ++i)
    ok = read_tensor_info(f_.tensors_[i]) && check_tensor(f_.tensors_[i]);
  if (!ok)
    return make_error(code_, msg_);
  // Data starts at the next multiple of the alignment (it may equal the file end when there are no tensors).
  const uint64_t a = f_.alignment_;
  f_.data_offset_ = pos_ + (a - pos_ % a) % a;
  const uint64_t size = bytes_.size();
  if (!f_.tensors_.empty() && f_.data_offset_ > size)
    return make_error(errc::corrupt_file, "data section at " + std::to_string(f_.data_offset_) +
                                              " is past the end of the file (size " + std::to_string(size) + ")");
  for (const auto& t : f_.tensors_) {
    const uint64_t avail = f_.data_offset_ > size ? 0 : size - f_.data_offset_;
    if (t.offset > avail || t.n_bytes > avail - t.offset)
      return make_error(errc::corrupt_file, "tensor " + quoted(t.name) + ": data [" + std::to_string(t.offset) +
                                                ", " + std::to_string(t.offset) + "+" + std::to_string(t.n_bytes) +
                                                ") exceeds file size " + std::to_string(size) + " (data section at " +
                                                std::to_string(f_.data_offset_) + ")");
  }
  for (size_t i = 0; i < f_.tensors_.size(); ++i)
    if (!f_.tensor_index_.emplace(f_.tensors_[i].name, i).second)
      return make_error(errc::corrupt_file, "duplicate tensor name " + quoted(f_.tensors_[i].name));
  return {};
}

// ---- file ---------------------------------------------------------------

std::span<const std::byte> whole_pages_inside(std::span<const std::byte> range, size_t page) noexcept {
  const auto begin = reinterpret_cast<uintptr_t>(range.data());
  const uintptr_t end = begin + range.size();
  const uintptr_t first = (begin + page - 1) & ~uintptr_t(page - 1); // rounded up
  const uintptr_t last = end & ~uintptr_t(page - 1);                 // rounded down
  if (range.empty() || first < begin || last <= first) return {};
  return range.subspan(first - begin, last - first);
}

void file::release_pages(std::span<const std::byte> range) const noexcept {
  const auto at = reinterpret_cast<uintptr_t>(range.data()), base = reinterpret_cast<uintptr_t>(bytes_.data());
  if (map_ == nullptr || at < base || at - base > bytes_.size() || range.size() > bytes_.size() - (at - base)) return;
  static const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto pages = whole_pages_inside(range, page);
  if (!pages.empty()) (void)::madvise(const_cast<std::byte*>(pages.data()), pages.size(), MADV_DONTNEED);
}

file::~file() {
  if (map_)
    ::munmap(map_, map_len_);
}

expected<std::shared_ptr<const file>> file::parse(std::shared_ptr<file> f) {
  file_parser p(*f);
  if (auto r = p.run(); !r)
    return std::move(r.error());
  return std::shared_ptr<const file>(std::move(f));
}

expected<std::shared_ptr<const file>> file::from_bytes(std::vector<std::byte> bytes) {
  std::shared_ptr<file> f(new file());
  f->owned_ = std::move(bytes);
  f->bytes_ = f->owned_;
  f->path_ = "<memory>";
  return parse(std::move(f));
}

expected<std::shared_ptr<const file>> file::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return make_error(e == ENOENT ? errc::not_found : errc::io_error, "open " + path + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return make_error(errc::io_error, "stat " + path + ": " + std::strerror(e));
  }
  std::shared_ptr<file> f(new file());
  f->path_ = path;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return make_error(errc::io_error, "mmap " + path + ": " + std::strerror(e));
    }
    f->map_ = p;
    f->map_len_ = static_cast<size_t>(st.st_size);
    f->bytes_ = std::span<const std::byte>(static_cast<const std::byte*>(p), f->map_len_);
  }
  ::close(fd);
  auto r = parse(std::move(f));
  if (!r)
    return make_error(code_of(r.error()), path + ": " + message_of(r.error()));
  return r;
}

} // namespace dynamo::gguf
