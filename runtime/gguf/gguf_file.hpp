// A parsed GGUF file: header, metadata key/values, tensor infos, and zero-copy
// access to tensor bytes through a read-only mmap (or an owned buffer in tests).
// The model loader, tokenizer loader and tools call it. Immutable after open():
// safe for concurrent readers (release_pages() included); views it hands out live as long as the file.
#pragma once

#include "runtime/core/error.hpp"
#include "runtime/gguf/value.hpp"

#include "kernels/reference/tensor_type.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dynamo::gguf {

/// A tensor's ggml storage type (one home: kernels/reference/tensor_type.hpp).
using kernels::ref::tensor_type;

inline constexpr uint32_t default_alignment = 32; ///< when general.alignment is absent
inline constexpr uint32_t max_dims = 4;           ///< GGML_MAX_DIMS
/// Metadata array elements in one file, all arrays together: each costs ~40 bytes
/// in memory for 1 on disk, so the file size alone would let a u8 array of a
/// 500 MB file take 20 GB. Real files: ~1.5 M (a 262k vocab, scores, types, merges).
inline constexpr uint64_t max_metadata_array_elements = uint64_t{8} << 20;

struct tensor_info {
  std::string name;
  uint32_t n_dims = 0;
  std::array<uint64_t, max_dims> ne{1, 1, 1, 1}; ///< ne[0] innermost (contiguous)
  tensor_type type = tensor_type::f32;
  uint64_t offset = 0;  ///< from the start of the data section (aligned)
  uint64_t n_bytes = 0; ///< bytes of data

  [[nodiscard]] uint64_t n_elements() const noexcept { return ne[0] * ne[1] * ne[2] * ne[3]; }
  /// Rows of ne[0] elements (all outer dims flattened).
  [[nodiscard]] uint64_t n_rows() const noexcept { return ne[1] * ne[2] * ne[3]; }
  [[nodiscard]] uint64_t row_bytes() const noexcept { return n_rows() ? n_bytes / n_rows() : 0; }
};

/// The whole `page`-byte pages inside `range` (`page` a power of two): what
/// file::release_pages() drops. Empty when no page fits (a range shorter than a
/// page, or one that only straddles a boundary); never reaches outside `range`.
[[nodiscard]] std::span<const std::byte> whole_pages_inside(std::span<const std::byte> range, size_t page) noexcept;

struct metadata_kv {
  std::string_view key;
  gguf::value value;
};

class file {
public:
  /// Maps `path` read-only and parses it. Errors: not_found / io_error from the
  /// OS; corrupt_file for bad magic, truncation, bad offsets or counts;
  /// unsupported for versions other than 2/3 or unknown tensor types.
  [[nodiscard]] static expected<std::shared_ptr<const file>> open(const std::string& path);

  /// Parses an in-memory image (tests, tools); same checks as open().
  [[nodiscard]] static expected<std::shared_ptr<const file>> from_bytes(std::vector<std::byte> bytes);

  file(const file&) = delete;
  file& operator=(const file&) = delete;
  ~file();

  [[nodiscard]] uint32_t version() const noexcept { return version_; }
  [[nodiscard]] uint32_t alignment() const noexcept { return alignment_; }
  [[nodiscard]] uint64_t data_offset() const noexcept { return data_offset_; }
  [[nodiscard]] uint64_t size() const noexcept { return bytes_.size(); }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  // ---- metadata --------------------------------------------------------
  [[nodiscard]] std::span<const metadata_kv> metadata() const noexcept { return kvs_; }
  [[nodiscard]] const value* find(std::string_view key) const noexcept;
  [[nodiscard]] bool has(std::string_view key) const noexcept { return find(key) != nullptr; }

  // Typed accessors. Missing key: errc::not_found; wrong type or out of range:
  // errc::corrupt_file naming the key. Integers of any width are accepted.
  [[nodiscard]] expected<uint64_t> get_u64(std::string_view key) const;
  [[nodiscard]] expected<uint32_t> get_u32(std::string_view key) const;
  [[nodiscard]] expected<int64_t> get_i64(std::string_view key) const;
  [[nodiscard]] expected<int32_t> get_i32(std::string_view key) const;
  [[nodiscard]] expected<float> get_f32(std::string_view key) const;
  [[nodiscard]] expected<bool> get_bool(std::string_view key) const;
  [[nodiscard]] expected<std::string_view> get_string(std::string_view key) const;
  [[nodiscard]] expected<const value::array*> get_array(std::string_view key) const;
  [[nodiscard]] expected<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  [[nodiscard]] expected<std::vector<int64_t>> get_int_array(std::string_view key) const;
  [[nodiscard]] expected<std::vector<float>> get_f32_array(std::string_view key) const;

  // The same with a fallback when the key is absent (a wrong type is still an error).
  [[nodiscard]] expected<uint32_t> get_u32(std::string_view key, uint32_t fallback) const;
  [[nodiscard]] expected<float> get_f32(std::string_view key, float fallback) const;
  [[nodiscard]] expected<bool> get_bool(std::string_view key, bool fallback) const;
  [[nodiscard]] expected<std::string_view> get_string(std::string_view key, std::string_view fallback) const;

  // ---- tensors ---------------------------------------------------------
  [[nodiscard]] std::span<const tensor_info> tensors() const noexcept { return tensors_; }
  [[nodiscard]] const tensor_info* find_tensor(std::string_view name) const noexcept;
  /// The tensor's raw bytes inside the mapping (bounds were checked at open).
  /// For files opened from disk the data starts at a multiple of alignment()
  /// from a page-aligned base, so it may be read as block_q4_1[] etc. directly.
  [[nodiscard]] std::span<const std::byte> tensor_data(const tensor_info& t) const noexcept;
  /// Lets the OS take back this process's resident copies of the whole pages
  /// inside `range` (a part of tensor_data(); the CPU repack calls it once a
  /// matrix has its lane copy). For files opened from disk only: the mapping is
  /// read-only and MAP_SHARED, so a later read faults the same bytes back in from
  /// the page cache, costing time and RSS, never content. A no-op for in-memory
  /// images (MADV_DONTNEED would zero their bytes) and for a range outside the file.
  void release_pages(std::span<const std::byte> range) const noexcept;
  /// Dequantizes row `row` (ne[0] floats) into `out`.
  [[nodiscard]] expected<void> dequantize_row(const tensor_info& t, uint64_t row, std::span<float> out) const;
  /// The whole tensor as fp32, rows in order (n_elements floats).
  [[nodiscard]] expected<std::vector<float>> dequantize(const tensor_info& t) const;

private:
  file() = default;
  [[nodiscard]] static expected<std::shared_ptr<const file>> parse(std::shared_ptr<file> f);

  std::string path_;
  void* map_ = nullptr; ///< mmap base when opened from disk
  size_t map_len_ = 0;
  std::vector<std::byte> owned_; ///< storage when built from bytes
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = default_alignment;
  uint64_t data_offset_ = 0;
  std::vector<metadata_kv> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<tensor_info> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;

  friend class file_parser;
};

} // namespace dynamo::gguf
