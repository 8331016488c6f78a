// Builds GGUF v3 files: metadata key/values and tensors (fp32 data encoded as
// any type kernels/reference/quantize.hpp produces, or raw blocks of any type).
// Used by tests and by tools that write random-weight Llama models.
// One writer per file being built; not thread-safe.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/gguf/value.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dynamo::gguf {

class writer {
public:
  /// REQUIRES: `alignment` is a power of two; it is written as general.alignment
  /// when it differs from the default 32.
  explicit writer(uint32_t alignment = default_alignment);

  // Metadata. Setting a key again replaces its value (first position kept).
  void set_u8(std::string_view key, uint8_t v);
  void set_u32(std::string_view key, uint32_t v);
  void set_i32(std::string_view key, int32_t v);
  void set_u64(std::string_view key, uint64_t v);
  void set_i64(std::string_view key, int64_t v);
  void set_f32(std::string_view key, float v);
  void set_f64(std::string_view key, double v);
  void set_bool(std::string_view key, bool v);
  void set_string(std::string_view key, std::string_view v);
  void set_string_array(std::string_view key, const std::vector<std::string>& v);
  void set_i32_array(std::string_view key, std::span<const int32_t> v);
  void set_f32_array(std::string_view key, std::span<const float> v);
  /// Any value already encoded in GGUF's value layout (tests: nested arrays).
  void set_encoded(std::string_view key, value_type type, std::vector<std::byte> payload);

  /// Adds a tensor of shape `dims` (ne[0] first) from fp32 `data`, encoded as
  /// `type`. Errors: data size != product of dims, ne[0] not a multiple of the
  /// block size, a type the quantizers lack, a duplicate name, more than 4 dims.
  [[nodiscard]] expected<void> add_tensor(std::string_view name, std::vector<uint64_t> dims, tensor_type type,
                                          std::span<const float> data);
  /// Adds a tensor whose bytes are already encoded (size must match the shape).
  [[nodiscard]] expected<void> add_raw_tensor(std::string_view name, std::vector<uint64_t> dims, tensor_type type,
                                              std::vector<std::byte> data);

  /// Declares a tensor whose bytes are produced only while writing
  /// (write_streaming), for files too large to hold in memory. Same shape
  /// checks as add_raw_tensor; bytes() gives zeros for it, write() refuses it.
  [[nodiscard]] expected<void> declare_tensor(std::string_view name, std::vector<uint64_t> dims, tensor_type type);

  /// Appends bytes to the tensor being streamed; false stops the write.
  using byte_sink = std::function<bool(std::span<const std::byte>)>;
  /// Produces the bytes of declared tensor `name` (row_bytes * rows of them,
  /// in order) by calling `sink`; called once per declared tensor, in order.
  using tensor_source = std::function<expected<void>(std::string_view name, const byte_sink& sink)>;

  /// Writes the file like write(), streaming declared tensors from `source`.
  /// Errors: io_error, the source's errors, invalid_argument when a source
  /// delivers the wrong number of bytes.
  [[nodiscard]] expected<void> write_streaming(const std::string& path, const tensor_source& source) const;

  /// The complete file image.
  [[nodiscard]] std::vector<std::byte> bytes() const;
  /// Writes the file image to `path` (errc::io_error on failure).
  [[nodiscard]] expected<void> write(const std::string& path) const;

private:
  struct kv {
    std::string key;
    value_type type;
    std::vector<std::byte> payload;
  };
  struct tensor {
    std::string name;
    std::vector<uint64_t> dims;
    tensor_type type;
    uint64_t offset;
    std::vector<std::byte> data;
    uint64_t size = 0;     ///< bytes of data (also for a declared tensor)
    bool declared = false; ///< bytes come from write_streaming's source
  };

  void set(std::string_view key, value_type type, std::vector<std::byte> payload);
  [[nodiscard]] expected<uint64_t> check_tensor(std::string_view name, const std::vector<uint64_t>& dims,
                                                tensor_type type) const;
  [[nodiscard]] std::vector<std::byte> header_bytes() const;

  uint32_t alignment_;
  std::vector<kv> kvs_;
  std::vector<tensor> tensors_;
  uint64_t data_size_ = 0;
};

} // namespace dynamo::gguf
