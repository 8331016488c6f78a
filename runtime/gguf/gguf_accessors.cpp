// Typed metadata accessors and tensor data access of gguf::file.
#include "runtime/gguf/gguf_file.hpp"

#include "kernels/reference/dequantize.hpp"

#include <cstring>
#include <limits>

namespace dynamo::gguf {

namespace {

caf::error missing(std::string_view key) {
  return make_error(errc::not_found, "metadata key '" + std::string(key) + "' not found");
}

caf::error wrong(std::string_view key, const value& v, std::string_view want) {
  return make_error(errc::corrupt_file, "metadata key '" + std::string(key) + "' is " + value_type_name(v.type()) +
                                            " " + v.summary() + ", expected " + std::string(want));
}

template <class Int>
expected<Int> narrow(std::string_view key, const value& v) {
  if constexpr (std::is_unsigned_v<Int>) {
    auto u = v.to_uint();
    if (v.is_integer() && u && *u <= std::numeric_limits<Int>::max())
      return static_cast<Int>(*u);
  } else {
    auto i = v.to_int();
    if (v.is_integer() && i && *i >= std::numeric_limits<Int>::min() && *i <= std::numeric_limits<Int>::max())
      return static_cast<Int>(*i);
  }
  return wrong(key, v, std::is_unsigned_v<Int> ? "an unsigned integer in range" : "an integer in range");
}

} // namespace

const value* file::find(std::string_view key) const noexcept {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

expected<uint64_t> file::get_u64(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  return narrow<uint64_t>(key, *v);
}

expected<uint32_t> file::get_u32(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  return narrow<uint32_t>(key, *v);
}

expected<int64_t> file::get_i64(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  return narrow<int64_t>(key, *v);
}

expected<int32_t> file::get_i32(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  return narrow<int32_t>(key, *v);
}

expected<float> file::get_f32(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  if (auto d = v->to_double())
    return static_cast<float>(*d);
  return wrong(key, *v, "a number");
}

expected<bool> file::get_bool(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  if (auto b = v->to_bool())
    return *b;
  return wrong(key, *v, "a bool");
}

expected<std::string_view> file::get_string(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  if (auto s = v->to_string())
    return *s;
  return wrong(key, *v, "a string");
}

expected<const value::array*> file::get_array(std::string_view key) const {
  const value* v = find(key);
  if (!v)
    return missing(key);
  if (auto a = v->to_array())
    return a;
  return wrong(key, *v, "an array");
}

expected<std::vector<std::string_view>> file::get_string_array(std::string_view key) const {
  auto a = get_array(key);
  if (!a)
    return std::move(a.error());
  std::vector<std::string_view> out;
  out.reserve((*a)->items.size());
  for (const auto& item : (*a)->items) {
    auto s = item.to_string();
    if (!s)
      return wrong(key, *find(key), "an array of strings");
    out.push_back(*s);
  }
  return out;
}

expected<std::vector<int64_t>> file::get_int_array(std::string_view key) const {
  auto a = get_array(key);
  if (!a)
    return std::move(a.error());
  std::vector<int64_t> out;
  out.reserve((*a)->items.size());
  for (const auto& item : (*a)->items) {
    auto i = item.to_int();
    if (!item.is_integer() || !i)
      return wrong(key, *find(key), "an array of integers");
    out.push_back(*i);
  }
  return out;
}

expected<std::vector<float>> file::get_f32_array(std::string_view key) const {
  auto a = get_array(key);
  if (!a)
    return std::move(a.error());
  std::vector<float> out;
  out.reserve((*a)->items.size());
  for (const auto& item : (*a)->items) {
    auto d = item.to_double();
    if (!d)
      return wrong(key, *find(key), "an array of numbers");
    out.push_back(static_cast<float>(*d));
  }
  return out;
}

expected<uint32_t> file::get_u32(std::string_view key, uint32_t fallback) const {
  return has(key) ? get_u32(key) : expected<uint32_t>{fallback};
}

expected<float> file::get_f32(std::string_view key, float fallback) const {
  return has(key) ? get_f32(key) : expected<float>{fallback};
}

expected<bool> file::get_bool(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : expected<bool>{fallback};
}

expected<std::string_view> file::get_string(std::string_view key, std::string_view fallback) const {
  return has(key) ? get_string(key) : expected<std::string_view>{fallback};
}

const tensor_info* file::find_tensor(std::string_view name) const noexcept {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const std::byte> file::tensor_data(const tensor_info& t) const noexcept {
  return bytes_.subspan(data_offset_ + t.offset, t.n_bytes);
}

expected<void> file::dequantize_row(const tensor_info& t, uint64_t row, std::span<float> out) const {
  if (row >= t.n_rows())
    return make_error(errc::invalid_argument, "tensor '" + t.name + "': row " + std::to_string(row) + " out of " +
                                                  std::to_string(t.n_rows()));
  if (out.size() != t.ne[0])
    return make_error(errc::invalid_argument, "tensor '" + t.name + "': row has " + std::to_string(t.ne[0]) +
                                                  " elements, output has " + std::to_string(out.size()));
  if (!kernels::ref::is_computed(t.type))
    return make_error(errc::unsupported, "tensor '" + t.name + "': dequantization of " +
                                             kernels::ref::type_name(t.type) + " not supported");
  if (out.empty())
    return {}; // ne[0] = 0: nothing to copy (and no null pointer into memcpy)
  const uint64_t rb = t.row_bytes();
  const std::byte* src = tensor_data(t).data() + row * rb;
  if (reinterpret_cast<uintptr_t>(src) % alignof(uint16_t) != 0) {
    // Only an odd general.alignment puts data here; the blocks' fp16 fields need 2-byte alignment.
    std::vector<uint16_t> aligned((rb + 1) / 2);
    std::memcpy(aligned.data(), src, rb);
    kernels::ref::dequantize_row(t.type, aligned.data(), out.data(), out.size());
  } else {
    kernels::ref::dequantize_row(t.type, src, out.data(), out.size());
  }
  return {};
}

expected<std::vector<float>> file::dequantize(const tensor_info& t) const {
  if (!kernels::ref::is_computed(t.type))
    return make_error(errc::unsupported, "tensor '" + t.name + "': dequantization of " + kernels::ref::type_name(t.type) +
                                             " not supported");
  std::vector<float> out(t.n_elements());
  if (out.empty())
    return out; // a zero dim: no rows to walk (ne[1..3] may still be huge)
  const uint64_t n0 = t.ne[0];
  for (uint64_t r = 0; r < t.n_rows(); ++r)
    if (auto ok = dequantize_row(t, r, std::span<float>(out.data() + r * n0, n0)); !ok)
      return std::move(ok.error());
  return out;
}

} // namespace dynamo::gguf
