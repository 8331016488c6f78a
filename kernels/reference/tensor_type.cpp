#include "kernels/reference/tensor_type.hpp"

#include <array>
#include <cctype>

namespace dynamo::kernels::ref {
namespace {

// Sizes as in ggml-common.h and gguf-py's GGML_QUANT_SIZES. Q8_1 (9) is left
// out on purpose: its size changed between ggml versions and no model file
// holds it.
constexpr std::array<type_geometry, 43> geometry_table = [] {
  std::array<type_geometry, 43> t{};
  t[0] = {1, 4, "F32"};
  t[1] = {1, 2, "F16"};
  t[2] = {32, 18, "Q4_0"};
  t[3] = {32, 20, "Q4_1"};
  t[6] = {32, 22, "Q5_0"};
  t[7] = {32, 24, "Q5_1"};
  t[8] = {32, 34, "Q8_0"};
  t[10] = {256, 84, "Q2_K"};
  t[11] = {256, 110, "Q3_K"};
  t[12] = {256, 144, "Q4_K"};
  t[13] = {256, 176, "Q5_K"};
  t[14] = {256, 210, "Q6_K"};
  t[15] = {256, 292, "Q8_K"};
  t[16] = {256, 66, "IQ2_XXS"};
  t[17] = {256, 74, "IQ2_XS"};
  t[18] = {256, 98, "IQ3_XXS"};
  t[19] = {256, 50, "IQ1_S"};
  t[20] = {32, 18, "IQ4_NL"};
  t[21] = {256, 110, "IQ3_S"};
  t[22] = {256, 82, "IQ2_S"};
  t[23] = {256, 136, "IQ4_XS"};
  t[24] = {1, 1, "I8"};
  t[25] = {1, 2, "I16"};
  t[26] = {1, 4, "I32"};
  t[27] = {1, 8, "I64"};
  t[28] = {1, 8, "F64"};
  t[29] = {256, 56, "IQ1_M"};
  t[30] = {1, 2, "BF16"};
  t[34] = {256, 54, "TQ1_0"};
  t[35] = {256, 66, "TQ2_0"};
  t[39] = {32, 17, "MXFP4"};
  t[40] = {64, 36, "NVFP4"};
  t[41] = {128, 18, "Q1_0"};
  t[42] = {64, 18, "Q2_0"};
  return t;
}();

} // namespace

std::optional<type_geometry> geometry_of(tensor_type t) noexcept {
  const auto id = static_cast<uint32_t>(t);
  if (id >= geometry_table.size() || geometry_table[id].block_elems == 0) return std::nullopt;
  return geometry_table[id];
}

std::string type_name(tensor_type t) {
  if (auto g = geometry_of(t)) return std::string(g->name);
  return "type" + std::to_string(static_cast<uint32_t>(t));
}

std::optional<tensor_type> type_from_name(std::string_view name) noexcept {
  for (uint32_t id = 0; id < geometry_table.size(); ++id) {
    const std::string_view n = geometry_table[id].name;
    if (n.empty() || n.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = std::toupper(static_cast<unsigned char>(name[i])) == static_cast<unsigned char>(n[i]);
    }
    if (same) return static_cast<tensor_type>(id);
  }
  return std::nullopt;
}

bool is_computed(tensor_type t) noexcept {
  switch (t) {
    case tensor_type::f32:
    case tensor_type::f16:
    case tensor_type::bf16:
    case tensor_type::q4_0:
    case tensor_type::q4_1:
    case tensor_type::q5_0:
    case tensor_type::q5_1:
    case tensor_type::q8_0:
    case tensor_type::q4_k:
    case tensor_type::q5_k:
    case tensor_type::q6_k:
    case tensor_type::iq4_nl:
    case tensor_type::iq4_xs: return true;
  }
  return false;
}

std::optional<uint64_t> row_bytes(tensor_type t, uint64_t n) noexcept {
  const auto g = geometry_of(t);
  if (!g || n % g->block_elems != 0) return std::nullopt;
  return n / g->block_elems * g->block_bytes;
}

} // namespace dynamo::kernels::ref
