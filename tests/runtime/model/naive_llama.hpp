// An independent, deliberately plain Llama forward pass for tests: every
// weight dequantized to fp32 by the GGUF library (not by the kernels), fp32
// activations, contiguous (unpaged) KV, double accumulations, one sequence.
// Slow; for tiny random models only. Test code; single-threaded.
#pragma once

#include "runtime/gguf/gguf_file.hpp"
#include "runtime/model/decoder_config.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace dynamo::model::test {

class naive_llama {
public:
  naive_llama(const gguf::file& f, const decoder_config& c) : c_(c) {
    auto get = [&](const std::string& name) {
      const auto* t = f.find_tensor(name);
      if (t == nullptr) throw std::runtime_error("missing " + name);
      auto v = f.dequantize(*t);
      if (!v) throw std::runtime_error("cannot dequantize " + name);
      return std::move(*v);
    };
    embd_ = get("token_embd.weight");
    out_norm_ = get("output_norm.weight");
    out_ = f.find_tensor("output.weight") != nullptr ? get("output.weight") : embd_;
    for (uint32_t l = 0; l < c.n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      layers_.push_back({get(p + "attn_norm.weight"), get(p + "attn_q.weight"), get(p + "attn_k.weight"),
                         get(p + "attn_v.weight"), get(p + "attn_output.weight"), get(p + "ffn_norm.weight"),
                         get(p + "ffn_gate.weight"), get(p + "ffn_up.weight"), get(p + "ffn_down.weight")});
    }
  }

  /// Logits [n_vocab] after the last of `tokens` (positions 0..n-1).
  [[nodiscard]] std::vector<double> last_logits(const std::vector<uint32_t>& tokens) const {
    const uint32_t E = c_.n_embd, D = c_.head_dim, H = c_.n_head, KV = c_.n_kv_head;
    std::vector<std::vector<double>> x;
    for (uint32_t t : tokens) x.emplace_back(embd_.begin() + size_t(t) * E, embd_.begin() + size_t(t + 1) * E);
    for (const auto& L : layers_) {
      std::vector<std::vector<double>> q, k, v;
      for (size_t p = 0; p < x.size(); ++p) {
        const auto h = norm(x[p], L.attn_norm);
        q.push_back(rope(matvec(L.wq, h, H * D), p));
        k.push_back(rope(matvec(L.wk, h, KV * D), p));
        v.push_back(matvec(L.wv, h, KV * D));
      }
      for (size_t p = 0; p < x.size(); ++p) {
        std::vector<double> att(H * D, 0.0);
        for (uint32_t hh = 0; hh < H; ++hh) {
          const uint32_t g = hh / (H / KV);
          std::vector<double> s(p + 1);
          double mx = -1e300, z = 0.0;
          for (size_t j = 0; j <= p; ++j) {
            double d = 0.0;
            for (uint32_t e = 0; e < D; ++e) d += q[p][hh * D + e] * k[j][g * D + e];
            s[j] = d / std::sqrt(double(D));
            mx = std::max(mx, s[j]);
          }
          for (auto& sj : s) z += (sj = std::exp(sj - mx));
          for (size_t j = 0; j <= p; ++j) {
            for (uint32_t e = 0; e < D; ++e) att[hh * D + e] += s[j] / z * v[j][g * D + e];
          }
        }
        const auto o = matvec(L.wo, att, E);
        for (uint32_t i = 0; i < E; ++i) x[p][i] += o[i];
        const auto h = norm(x[p], L.ffn_norm);
        const auto g = matvec(L.w_gate, h, c_.n_ff), u = matvec(L.w_up, h, c_.n_ff);
        std::vector<double> a(c_.n_ff);
        for (uint32_t i = 0; i < c_.n_ff; ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        const auto d = matvec(L.w_down, a, E);
        for (uint32_t i = 0; i < E; ++i) x[p][i] += d[i];
      }
    }
    return matvec(out_, norm(x.back(), out_norm_), c_.n_vocab);
  }

private:
  struct layer {
    std::vector<float> attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
  };

  [[nodiscard]] std::vector<double> norm(const std::vector<double>& x, const std::vector<float>& w) const {
    double ss = 0.0;
    for (double v : x) ss += v * v;
    const double s = 1.0 / std::sqrt(ss / x.size() + c_.rms_eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
    return y;
  }

  /// W is [rows, k] row-major (GGUF ne0 = k); returns W x.
  [[nodiscard]] static std::vector<double> matvec(const std::vector<float>& w, const std::vector<double>& x,
                                                  uint32_t rows) {
    std::vector<double> y(rows, 0.0);
    for (uint32_t r = 0; r < rows; ++r) {
      for (size_t i = 0; i < x.size(); ++i) y[r] += double(w[r * x.size() + i]) * x[i];
    }
    return y;
  }

  /// Adjacent-pair RoPE over every head of `v` at position p.
  [[nodiscard]] std::vector<double> rope(std::vector<double> v, size_t p) const {
    for (size_t h = 0; h < v.size() / c_.head_dim; ++h) {
      for (uint32_t i = 0; i < c_.rot_dim / 2; ++i) {
        const double th = double(p) * std::pow(double(c_.rope_base), -2.0 * i / c_.rot_dim);
        double& a = v[h * c_.head_dim + 2 * i];
        double& b = v[h * c_.head_dim + 2 * i + 1];
        const double a0 = a, b0 = b;
        a = a0 * std::cos(th) - b0 * std::sin(th);
        b = a0 * std::sin(th) + b0 * std::cos(th);
      }
    }
    return v;
  }

  decoder_config c_;
  std::vector<float> embd_, out_norm_, out_;
  std::vector<layer> layers_;
};

} // namespace dynamo::model::test
