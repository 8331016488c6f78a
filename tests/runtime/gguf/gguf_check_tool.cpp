// Test helper for dequant_check.py: exposes our dequantizers, quantizers and
// type table on the command line so the PyPI `gguf` package can cross-check
// them. Not installed; test code only.
#include "runtime/gguf/gguf_file.hpp"

#include "kernels/reference/quantize.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

using namespace dynamo;
using namespace dynamo::gguf;

namespace {

int usage() {
  std::puts(
      "usage: gguf_check_tool types\n"
      "       gguf_check_tool dequant FILE TENSOR OUT [MAX_ROWS]   raw fp32 of the first rows\n"
      "       gguf_check_tool quant FILE TENSOR TYPE_ID OUT        re-encode a tensor as TYPE_ID\n");
  return 2;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "gguf_check_tool: %s\n", what.c_str());
  return 1;
}

bool write_all(const std::string& path, const void* p, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
  return static_cast<bool>(out);
}

int types() {
  for (uint32_t id = 0; id < 64; ++id)
    if (auto g = kernels::ref::geometry_of(static_cast<tensor_type>(id)))
      std::printf("%u %u %u %.*s\n", id, g->block_elems, g->block_bytes, static_cast<int>(g->name.size()),
                  g->name.data());
  return 0;
}

int dequant(const file& f, const tensor_info& t, const std::string& out, uint64_t max_rows) {
  const uint64_t rows = std::min<uint64_t>(t.n_rows(), max_rows);
  std::vector<float> y(rows * t.ne[0]);
  for (uint64_t r = 0; r < rows; ++r)
    if (auto ok = f.dequantize_row(t, r, std::span<float>(y.data() + r * t.ne[0], t.ne[0])); !ok)
      return fail(describe(ok.error()));
  return write_all(out, y.data(), y.size() * sizeof(float)) ? 0 : fail("write " + out);
}

int quant(const file& f, const tensor_info& t, uint32_t type_id, const std::string& out) {
  auto x = f.dequantize(t);
  if (!x)
    return fail(describe(x.error()));
  const auto type = static_cast<tensor_type>(type_id);
  const auto rb = row_bytes(type, t.ne[0]);
  if (!rb)
    return fail("tensor rows do not fit type " + type_name(type));
  std::vector<std::byte> q(*rb * t.n_rows());
  for (uint64_t r = 0; r < t.n_rows(); ++r)
    if (!kernels::ref::quantize_row(type, x->data() + r * t.ne[0], q.data() + r * *rb, t.ne[0]))
      return fail("cannot encode " + type_name(type));
  return write_all(out, q.data(), q.size()) ? 0 : fail("write " + out);
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0)
    return usage();
  const std::string cmd = argv[1];
  if (cmd == "types")
    return types();
  if (argc < 5)
    return usage();
  auto f = file::open(argv[2]);
  if (!f)
    return fail(describe(f.error()));
  const tensor_info* t = (*f)->find_tensor(argv[3]);
  if (!t)
    return fail(std::string("no tensor ") + argv[3]);
  if (cmd == "dequant")
    return dequant(**f, *t, argv[4], argc > 5 ? std::strtoull(argv[5], nullptr, 10) : ~0ull);
  if (cmd == "quant" && argc > 5)
    return quant(**f, *t, static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10)), argv[5]);
  return usage();
}
