// dynamo-matmul-bench: CPU time of one matmul (one weight matrix of random
// quantized rows in its lane layout, n_tokens activations) on the calling
// thread, as JSON. For A/B of kernel variants with less noise than a whole
// prefill; single-threaded; not used by anything else.

#include "kernels/reference/cpu_features.hpp"
#include "kernels/reference/matmul.hpp"
#include "kernels/reference/quantize.hpp"
#include "kernels/reference/repack.hpp"
#include "kernels/reference/tensor_type.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using namespace dynamo::kernels::ref;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int usage(int rc) {
  std::fputs("usage: dynamo-matmul-bench [--type q4_k|q5_k|q6_k] [--k 1024] [--n 3072] [--tokens 128]\n"
             "                           [--repeat 30] [--isa scalar|avx2|avx2_vnni|amx]\n"
             "Prints JSON: best and median thread CPU ms of one matmul call over the repeats.\n",
             rc == 0 ? stdout : stderr);
  return rc;
}

} // namespace

int main(int argc, char** argv) {
  std::string type = "q6_k", isa;
  uint32_t k = 1024, n = 3072, tokens = 128, repeat = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help") return usage(0);
    if (i + 1 >= argc) return usage(2);
    const char* v = argv[++i];
    if (a == "--type") type = v;
    else if (a == "--isa") isa = v;
    else if (a == "--k") k = static_cast<uint32_t>(std::atoi(v));
    else if (a == "--n") n = static_cast<uint32_t>(std::atoi(v));
    else if (a == "--tokens") tokens = static_cast<uint32_t>(std::atoi(v));
    else if (a == "--repeat") repeat = static_cast<uint32_t>(std::max(1, std::atoi(v)));
    else return usage(2);
  }
  const tensor_type t = type == "q4_k" ? tensor_type::q4_k : type == "q5_k" ? tensor_type::q5_k : tensor_type::q6_k;
  for (const cpu_isa c : {cpu_isa::scalar, cpu_isa::avx2, cpu_isa::avx2_vnni, cpu_isa::amx}) {
    if (!isa.empty() && to_string(c) == isa) (void)set_isa(c);
  }
  const size_t rb = row_bytes(t, k).value_or(0);
  if (rb == 0 || !lanes_fit(t, k)) return usage(2);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> src(k), x(static_cast<size_t>(tokens) * k), y(static_cast<size_t>(tokens) * n);
  std::vector<std::byte> bytes(rb * n);
  for (uint32_t r = 0; r < n; ++r) {
    for (float& f : src) f = dist(rng);
    (void)quantize_row(t, src.data(), bytes.data() + rb * r, k);
  }
  for (float& f : x) f = dist(rng);
  weight_matrix w{t, k, n, bytes.data()};
  const std::vector<std::byte> lanes = repack_lanes(w);
  w.lanes = lanes.data();
  w.lanes_stride = lanes_row_bytes(t, k);
  matmul_workspace ws;
  std::vector<double> ms;
  for (uint32_t i = 0; i <= repeat; ++i) { // the first call warms the workspace and caches
    const double t0 = thread_cpu_ms();
    matmul({x.data(), k, tokens, {&w, 1}, y.data(), n, nullptr, &ws});
    if (i > 0) ms.push_back(thread_cpu_ms() - t0);
  }
  std::sort(ms.begin(), ms.end());
  double check = 0.0;
  for (const float v : y) check += v;
  std::printf("{\"type\": \"%s\", \"isa\": \"%s\", \"k\": %u, \"n\": %u, \"tokens\": %u, \"repeat\": %u, "
              "\"best_ms\": %.4f, \"median_ms\": %.4f, \"checksum\": %.6g}\n",
              type_name(t).c_str(), std::string(to_string(active_isa())).c_str(), k, n, tokens, repeat, ms.front(),
              ms[ms.size() / 2], check);
  return 0;
}
