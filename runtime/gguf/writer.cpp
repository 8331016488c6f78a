#include "runtime/gguf/writer.hpp"

#include "kernels/reference/quantize.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace dynamo::gguf {

namespace {

template <class T>
void put(std::vector<std::byte>& out, T v) {
  // resize + memcpy, not insert: g++ 12 at -O1 with -fsanitize=thread warns
  // (-Wstringop-overflow, a false positive) on insert into an empty vector.
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<std::byte>& out, std::string_view s) {
  put<uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

template <class T>
std::vector<std::byte> scalar(T v) {
  std::vector<std::byte> out;
  put(out, v);
  return out;
}

template <class T>
std::vector<std::byte> array_of(value_type elem, std::span<const T> v) {
  std::vector<std::byte> out;
  put<uint32_t>(out, static_cast<uint32_t>(elem));
  put<uint64_t>(out, v.size());
  for (const T& x : v)
    put(out, x);
  return out;
}

uint64_t pad_to(uint64_t x, uint64_t a) { return x + (a - x % a) % a; }

} // namespace

writer::writer(uint32_t alignment) : alignment_(alignment == 0 ? default_alignment : alignment) {
  if (alignment_ != default_alignment)
    set_u32("general.alignment", alignment_);
}

void writer::set(std::string_view key, value_type type, std::vector<std::byte> payload) {
  for (auto& e : kvs_) {
    if (e.key == key) {
      e.type = type;
      e.payload = std::move(payload);
      return;
    }
  }
  kvs_.push_back({std::string(key), type, std::move(payload)});
}

void writer::set_u8(std::string_view key, uint8_t v) { set(key, value_type::u8, scalar(v)); }
void writer::set_u32(std::string_view key, uint32_t v) { set(key, value_type::u32, scalar(v)); }
void writer::set_i32(std::string_view key, int32_t v) { set(key, value_type::i32, scalar(v)); }
void writer::set_u64(std::string_view key, uint64_t v) { set(key, value_type::u64, scalar(v)); }
void writer::set_i64(std::string_view key, int64_t v) { set(key, value_type::i64, scalar(v)); }
void writer::set_f32(std::string_view key, float v) { set(key, value_type::f32, scalar(v)); }
void writer::set_f64(std::string_view key, double v) { set(key, value_type::f64, scalar(v)); }
void writer::set_bool(std::string_view key, bool v) { set(key, value_type::boolean, scalar<uint8_t>(v ? 1 : 0)); }

void writer::set_string(std::string_view key, std::string_view v) {
  std::vector<std::byte> out;
  put_string(out, v);
  set(key, value_type::string, std::move(out));
}

void writer::set_string_array(std::string_view key, const std::vector<std::string>& v) {
  std::vector<std::byte> out;
  put<uint32_t>(out, static_cast<uint32_t>(value_type::string));
  put<uint64_t>(out, v.size());
  for (const auto& s : v)
    put_string(out, s);
  set(key, value_type::array, std::move(out));
}

void writer::set_i32_array(std::string_view key, std::span<const int32_t> v) {
  set(key, value_type::array, array_of(value_type::i32, v));
}

void writer::set_f32_array(std::string_view key, std::span<const float> v) {
  set(key, value_type::array, array_of(value_type::f32, v));
}

void writer::set_encoded(std::string_view key, value_type type, std::vector<std::byte> payload) {
  set(key, type, std::move(payload));
}

expected<void> writer::add_tensor(std::string_view name, std::vector<uint64_t> dims, tensor_type type,
                                  std::span<const float> data) {
  uint64_t n = 1;
  for (auto d : dims)
    n *= d;
  if (n != data.size())
    return make_error(errc::invalid_argument, "tensor '" + std::string(name) + "': " + std::to_string(data.size()) +
                                                  " values for a shape of " + std::to_string(n) + " elements");
  if (!kernels::ref::can_quantize(type))
    return make_error(errc::unsupported, "tensor '" + std::string(name) + "': cannot encode " +
                                             kernels::ref::type_name(type));
  auto size = check_tensor(name, dims, type);
  if (!size)
    return size.error();
  std::vector<std::byte> bytes(*size);
  const uint64_t n0 = dims[0], rows = n0 == 0 ? 0 : n / n0, rb = rows == 0 ? 0 : *size / rows;
  for (uint64_t r = 0; r < rows; ++r)
    (void)kernels::ref::quantize_row(type, data.data() + r * n0, bytes.data() + r * rb, n0); // checked above
  return add_raw_tensor(name, std::move(dims), type, std::move(bytes));
}

expected<uint64_t> writer::check_tensor(std::string_view name, const std::vector<uint64_t>& dims,
                                        tensor_type type) const {
  const std::string who = "tensor '" + std::string(name) + "': ";
  if (dims.empty() || dims.size() > max_dims)
    return make_error(errc::invalid_argument, who + std::to_string(dims.size()) + " dimensions (need 1..4)");
  for (const auto& t : tensors_)
    if (t.name == name)
      return make_error(errc::invalid_argument, who + "duplicate name");
  uint64_t n = 1;
  for (auto d : dims)
    n *= d;
  auto rb = kernels::ref::row_bytes(type, dims[0]);
  if (!rb)
    return make_error(errc::invalid_argument, who + "ne[0] = " + std::to_string(dims[0]) + " does not fit type " +
                                                  kernels::ref::type_name(type));
  return dims[0] == 0 ? 0 : *rb * (n / dims[0]);
}

expected<void> writer::add_raw_tensor(std::string_view name, std::vector<uint64_t> dims, tensor_type type,
                                      std::vector<std::byte> data) {
  auto expect = check_tensor(name, dims, type);
  if (!expect)
    return expect.error();
  if (data.size() != *expect)
    return make_error(errc::invalid_argument, "tensor '" + std::string(name) + "': " + std::to_string(data.size()) +
                                                  " bytes, shape needs " + std::to_string(*expect));
  const uint64_t offset = pad_to(data_size_, alignment_);
  data_size_ = offset + data.size();
  const uint64_t size = data.size();
  tensors_.push_back({std::string(name), std::move(dims), type, offset, std::move(data), size, false});
  return {};
}

expected<void> writer::declare_tensor(std::string_view name, std::vector<uint64_t> dims, tensor_type type) {
  auto size = check_tensor(name, dims, type);
  if (!size)
    return size.error();
  const uint64_t offset = pad_to(data_size_, alignment_);
  data_size_ = offset + *size;
  tensors_.push_back({std::string(name), std::move(dims), type, offset, {}, *size, true});
  return {};
}

std::vector<std::byte> writer::header_bytes() const {
  std::vector<std::byte> out;
  put<uint32_t>(out, 0x46554747u); // "GGUF"
  put<uint32_t>(out, 3);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size());
  for (const auto& e : kvs_) {
    put_string(out, e.key);
    put<uint32_t>(out, static_cast<uint32_t>(e.type));
    out.insert(out.end(), e.payload.begin(), e.payload.end());
  }
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (auto d : t.dims)
      put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, t.offset);
  }
  out.resize(pad_to(out.size(), alignment_));
  return out;
}

std::vector<std::byte> writer::bytes() const {
  std::vector<std::byte> out = header_bytes();
  const size_t base = out.size();
  out.resize(base + data_size_);
  for (const auto& t : tensors_)
    if (!t.data.empty())
      std::memcpy(out.data() + base + t.offset, t.data.data(), t.data.size()); // declared tensors stay zero
  return out;
}

expected<void> writer::write(const std::string& path) const {
  for (const auto& t : tensors_)
    if (t.declared)
      return make_error(errc::invalid_argument, "tensor '" + t.name + "' is declared: use write_streaming");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> fp(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!fp)
    return make_error(errc::io_error, "open " + path + ": " + std::strerror(errno));
  auto put_bytes = [&](const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, fp.get()) == n; };
  const auto header = header_bytes();
  bool ok = put_bytes(header.data(), header.size());
  uint64_t at = 0;
  const std::vector<std::byte> zeros(alignment_);
  for (const auto& t : tensors_) {
    ok = ok && put_bytes(zeros.data(), t.offset - at) && put_bytes(t.data.data(), t.data.size());
    at = t.offset + t.data.size();
  }
  if (!ok || std::fflush(fp.get()) != 0)
    return make_error(errc::io_error, "write " + path + ": " + std::strerror(errno));
  return {};
}

expected<void> writer::write_streaming(const std::string& path, const tensor_source& source) const {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> fp(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!fp)
    return make_error(errc::io_error, "open " + path + ": " + std::strerror(errno));
  auto put_bytes = [&](const void* p, size_t n) { return n == 0 || std::fwrite(p, 1, n, fp.get()) == n; };
  auto io_error = [&] { return make_error(errc::io_error, "write " + path + ": " + std::strerror(errno)); };
  const auto header = header_bytes();
  if (!put_bytes(header.data(), header.size()))
    return io_error();
  uint64_t at = 0;
  const std::vector<std::byte> zeros(alignment_);
  for (const auto& t : tensors_) {
    if (!put_bytes(zeros.data(), t.offset - at))
      return io_error();
    if (t.declared) {
      uint64_t written = 0;
      bool io_ok = true;
      const byte_sink sink = [&](std::span<const std::byte> chunk) {
        if (written + chunk.size() > t.size)
          return false;
        io_ok = put_bytes(chunk.data(), chunk.size());
        written += chunk.size();
        return io_ok;
      };
      if (auto r = source(t.name, sink); !r)
        return r.error();
      if (!io_ok)
        return io_error();
      if (written != t.size)
        return make_error(errc::invalid_argument, "tensor '" + t.name + "': source gave " + std::to_string(written) +
                                                      " bytes, shape needs " + std::to_string(t.size));
    } else if (!put_bytes(t.data.data(), t.data.size())) {
      return io_error();
    }
    at = t.offset + t.size;
  }
  if (std::fflush(fp.get()) != 0)
    return io_error();
  return {};
}

} // namespace dynamo::gguf
