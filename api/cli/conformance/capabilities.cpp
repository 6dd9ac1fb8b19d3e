// Section (b) of `octet conformance`: every capability the backend
// declares (dtypes, scaling modes, FP8 GEMM layouts, features) is run
// through octet.h on a context of it and compared with the reference: bit
// for bit where numerics.md makes a result exact (codes, scales, amax,
// dequantized and converted values), within a bound for GEMMs and layers. A
// declared capability that fails or answers UNSUPPORTED fails; an
// undeclared one is probed too, and UNSUPPORTED from it is reported only.
#include <octet/octet.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "capability_words.hpp"
#include "conformance/sections.hpp"
#include "conformance/tensors.hpp"

namespace octet_cli {
namespace {

// Thrown by a probe when the reference itself refuses its combination (an
// FP8 dtype the core does not offer in a scaling mode, say): there is
// nothing the backend could be held to, so the probe is skipped.
struct NotOffered {
  std::string reason;
};

// Runs `body(c)` for the reference (c = 1) first, then the backend (c = 0):
// a refusal by the reference becomes NotOffered.
template <typename Body>
void reference_first(Body&& body) {
  for (int c : {1, 0}) {
    try {
      body(c);
    } catch (const octet::Error& e) {
      if (c == 1) throw NotOffered{e.what()};
      throw;
    }
  }
}

// A capability probe: runs `body` on a context of the backend and on the
// reference; "" when they agree, else what differs.
using Probe = std::function<std::string(octet::Context& ctx, octet::Context& ref)>;

class Prober {
 public:
  Prober(Section* section, const std::string& backend) : section_(section), ctx_(backend), ref_("reference") {}

  // Runs one probe: declared capabilities must pass; undeclared ones may
  // answer UNSUPPORTED. `excuse`, when set, says whether an UNSUPPORTED
  // answer's message names something undeclared (then it is only reported).
  void run(const std::string& name, bool declared, const Probe& probe,
           const std::function<bool(const std::string&)>& excuse = nullptr) {
    std::string outcome;
    try {
      outcome = probe(ctx_, ref_);
    } catch (const NotOffered& n) {
      section_->add(name, Outcome::Skipped, "the reference refuses this combination too: " + n.reason);
      return;
    } catch (const octet::Error& e) {
      if (e.status() == OCTET_STATUS_UNSUPPORTED) {
        if (!declared || (excuse && excuse(e.message())))
          section_->add(
              name, Outcome::Unsupported,
              std::string(declared ? "declared, but needs something undeclared: " : "not declared: ") + e.what());
        else
          section_->add(name, Outcome::Fail, std::string("declared, but answers UNSUPPORTED: ") + e.what());
      } else {
        section_->add(name, Outcome::Fail, e.what());
      }
      return;
    } catch (const std::exception& e) {
      section_->add(name, Outcome::Fail, e.what());
      return;
    }
    if (!outcome.empty())
      section_->add(name, Outcome::Fail, outcome);
    else
      section_->add(name, Outcome::Pass, declared ? "declared" : "not declared; works (composed by the core)");
  }

 private:
  Section* section_;
  octet::Context ctx_;
  octet::Context ref_;
};

// ---- host data and tensors ----------------------------------------------------

std::vector<float> values(size_t n, uint32_t seed, float range) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

octet::Tensor create(octet::Context& ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0,
                     int32_t mode = 0) {
  return create_tensor_2d(ctx, dtype, rows, cols, usages, mode);
}

octet_tensor_info info_of(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  octet::check(octet_tensor_get_info(t, &info));
  return info;
}

std::vector<uint8_t> bytes_of(const octet_tensor* t, int32_t component, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  octet::check(octet_tensor_copy_to_host(t, component, out.data(), out.size()));
  return out;
}

// An FP32 tensor holding v (rows x cols).
octet::Tensor fp32_tensor(octet::Context& ctx, const std::vector<float>& v, int64_t rows, int64_t cols) {
  octet::Tensor t = create(ctx, OCTET_DTYPE_FP32, rows, cols);
  octet::check(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
  return t;
}

std::vector<float> fp32_of(const octet_tensor* t) {
  const octet_tensor_info info = info_of(t);
  std::vector<float> v(size_t(info.rowwise_bytes / 4));
  octet::check(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
  return v;
}

// The columnwise codes of a tensor read natively along columns (no separate
// copy): its rowwise codes, [rows, cols] with cols the last dimension,
// transposed to [cols, rows] as a separate copy holds them.
std::vector<uint8_t> native_columnwise_codes(const octet_tensor* t, const octet_tensor_info& info) {
  const std::vector<uint8_t> rowwise = bytes_of(t, OCTET_COMPONENT_DATA, info.rowwise_bytes);
  const size_t cols = info.ndim > 0 ? size_t(info.shape[info.ndim - 1]) : 1;
  const size_t rows = cols == 0 ? 0 : rowwise.size() / cols;
  std::vector<uint8_t> out(rowwise.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) out[c * rows + r] = rowwise[r * cols + c];
  return out;
}

// Every component of a tensor, as the names of octet.h give them. A
// quantized tensor lists the codes of the usages it was created with, so a
// backend that keeps a transposed copy compares with the reference, which
// reads columns natively (a per-tensor FP8 code is one byte).
std::vector<std::pair<std::string, std::vector<uint8_t>>> components(const octet_tensor* t) {
  const octet_tensor_info info = info_of(t);
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  const bool quantized = info.usages != 0;
  const bool rowwise = quantized ? (info.usages & OCTET_USAGE_ROWWISE) != 0 : info.has_rowwise_data != 0;
  if (rowwise) out.push_back({"data", bytes_of(t, OCTET_COMPONENT_DATA, info.rowwise_bytes)});
  if (info.has_columnwise_data)
    out.push_back({"columnwise data", bytes_of(t, OCTET_COMPONENT_COLUMNWISE_DATA, info.columnwise_bytes)});
  else if (quantized && (info.usages & OCTET_USAGE_COLUMNWISE) && info.has_rowwise_data)
    out.push_back({"columnwise data", native_columnwise_codes(t, info)});
  if (!quantized) return out;
  if (info.scaling_mode == OCTET_SCALING_PER_TENSOR) {
    out.push_back({"scale_inv", bytes_of(t, OCTET_COMPONENT_SCALE_INV, 4)});
  } else {
    if (info.rowwise_scale_inv_bytes)
      out.push_back(
          {"rowwise scale_inv", bytes_of(t, OCTET_COMPONENT_ROWWISE_SCALE_INV, info.rowwise_scale_inv_bytes)});
    if (info.columnwise_scale_inv_bytes)
      out.push_back(
          {"columnwise scale_inv", bytes_of(t, OCTET_COMPONENT_COLUMNWISE_SCALE_INV, info.columnwise_scale_inv_bytes)});
  }
  out.push_back({"amax", bytes_of(t, OCTET_COMPONENT_AMAX, 4)});
  return out;
}

// "" when every component is bit-identical.
std::string same_components(const octet_tensor* t, const octet_tensor* r) {
  const auto a = components(t), b = components(r);
  if (a.size() != b.size()) return "the tensors have different components";
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].second == b[i].second) continue;
    size_t at = 0;
    while (at < a[i].second.size() && at < b[i].second.size() && a[i].second[at] == b[i].second[at]) ++at;
    return a[i].first + " differs from the reference's at byte " + std::to_string(at);
  }
  return "";
}

// "" when |x - r| <= tol * (1 + max |r|) everywhere.
std::string close(const std::vector<float>& x, const std::vector<float>& r, double tol, const std::string& what) {
  if (x.size() != r.size()) return what + ": sizes differ";
  double scale = 1;
  for (float v : r) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::fabs(double(x[i]) - double(r[i]));
    if (!(e <= tol * scale))
      return what + " element " + std::to_string(i) + ": " + std::to_string(x[i]) + ", the reference " +
             std::to_string(r[i]) + " (bound " + std::to_string(tol * scale) + ")";
  }
  return "";
}

// ---- the probes -----------------------------------------------------------------

constexpr int64_t kRows = 48, kCols = 256;

std::string probe_dtype(octet::Context& ctx, int32_t dtype) {
  const int64_t rows = 4, cols = 64;
  octet::Tensor t = create(ctx, dtype, rows, cols);
  const size_t bytes = size_t(rows * cols) * octet_dtype_size(dtype);
  std::vector<uint8_t> in(bytes);
  for (size_t i = 0; i < bytes; ++i) in[i] = uint8_t((i * 37 + 11) & 0x7f);  // no NaN patterns
  octet::check(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, in.data(), in.size()));
  return bytes_of(t.get(), OCTET_COMPONENT_DATA, bytes) == in ? "" : "the bytes copied in did not come back";
}

// quantize (and dequantize) one FP32 tensor into `dtype` codes in `mode`
// with `usages`.
std::string probe_quantize(octet::Context& ctx, octet::Context& ref, int32_t dtype, int32_t mode, uint32_t usages,
                           float scale, bool dequantize, bool stats) {
  const auto v = values(size_t(kRows * kCols), 7, 6.0f);
  std::string result;
  std::vector<float> deq[2];
  octet_quantize_stats st[2];
  octet::Tensor q[2];
  octet::Context* contexts[2] = {&ctx, &ref};
  reference_first([&](int c) {
    octet::Tensor x = fp32_tensor(*contexts[c], v, kRows, kCols);
    q[c] = create(*contexts[c], dtype, kRows, kCols, usages, mode);
    if (mode == OCTET_SCALING_PER_TENSOR)
      octet::check(octet_tensor_copy_from_host(q[c].get(), OCTET_COMPONENT_SCALE, &scale, 4));
    octet_quantize_options o = octet::quantize_options();
    if (stats) {
      st[c] = octet::quantize_stats();
      octet::check(octet_quantize_with_stats(contexts[c]->get(), x.get(), q[c].get(), &o, &st[c]));
    } else {
      octet::check(octet_quantize(contexts[c]->get(), x.get(), q[c].get(), &o));
    }
    if (dequantize) {
      octet::Tensor y = create(*contexts[c], OCTET_DTYPE_FP32, kRows, kCols);
      octet::check(octet_dequantize(contexts[c]->get(), q[c].get(), y.get()));
      deq[c] = fp32_of(y.get());
    }
  });
  result = same_components(q[0].get(), q[1].get());
  if (!result.empty()) return result;
  if (dequantize && deq[0] != deq[1]) return "the dequantized values differ from the reference's";
  if (stats && (st[0].nan_count != st[1].nan_count || st[0].saturated_count != st[1].saturated_count ||
                st[0].flushed_count != st[1].flushed_count || st[0].total_count != st[1].total_count ||
                std::memcmp(&st[0].amax, &st[1].amax, 4) != 0))
    return "the statistics differ from the reference's";
  return "";
}

std::string probe_convert(octet::Context& ctx, octet::Context& ref, uint32_t dtypes) {
  const auto v = values(size_t(kRows * kCols), 3, 300.0f);
  for (int32_t d : {OCTET_DTYPE_BF16, OCTET_DTYPE_FP16, OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ,
                    OCTET_DTYPE_E5M2FNUZ}) {
    if (!(dtypes & OCTET_DTYPE_BIT(d))) continue;
    std::vector<uint8_t> out[2];
    std::vector<float> back[2];
    octet::Context* contexts[2] = {&ctx, &ref};
    for (int c = 0; c < 2; ++c) {
      octet::Tensor x = fp32_tensor(*contexts[c], v, kRows, kCols);
      octet::Tensor y = create(*contexts[c], d, kRows, kCols);
      octet::Tensor z = create(*contexts[c], OCTET_DTYPE_FP32, kRows, kCols);
      octet::check(octet_convert(contexts[c]->get(), x.get(), y.get(), 1));
      octet::check(octet_convert(contexts[c]->get(), y.get(), z.get(), 0));
      out[c] = bytes_of(y.get(), OCTET_COMPONENT_DATA, size_t(kRows * kCols) * octet_dtype_size(d));
      back[c] = fp32_of(z.get());
    }
    if (out[0] != out[1]) return std::string("fp32 -> ") + octet_dtype_name(d) + " differs from the reference's";
    if (back[0] != back[1]) return std::string(octet_dtype_name(d)) + " -> fp32 differs from the reference's";
  }
  return "";
}

std::string probe_amax(octet::Context& ctx, octet::Context& ref, uint32_t dtypes) {
  auto v = values(size_t(kRows * kCols), 5, 40.0f);
  v[77] = -123.5f;
  v[78] = NAN;
  for (int32_t d : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    if (!(dtypes & OCTET_DTYPE_BIT(d))) continue;
    float a[2];
    octet::Context* contexts[2] = {&ctx, &ref};
    for (int c = 0; c < 2; ++c) {
      octet::Tensor x = fp32_tensor(*contexts[c], v, kRows, kCols);
      octet::Tensor y = create(*contexts[c], d, kRows, kCols);
      if (d == OCTET_DTYPE_FP32)
        octet::check(octet_amax(contexts[c]->get(), x.get(), &a[c]));
      else {
        // The conversion is the reference's on both sides: amax alone is probed.
        octet::Tensor r = fp32_tensor(ref, v, kRows, kCols);
        octet::Tensor rd = create(ref, d, kRows, kCols);
        octet::check(octet_convert(ref.get(), r.get(), rd.get(), 1));
        const auto raw = bytes_of(rd.get(), OCTET_COMPONENT_DATA, size_t(kRows * kCols) * 2);
        octet::check(octet_tensor_copy_from_host(y.get(), OCTET_COMPONENT_DATA, raw.data(), raw.size()));
        octet::check(octet_amax(contexts[c]->get(), y.get(), &a[c]));
      }
    }
    if (std::memcmp(&a[0], &a[1], 4) != 0)
      return std::string("amax of ") + octet_dtype_name(d) + ": " + std::to_string(a[0]) + ", the reference " +
             std::to_string(a[1]);
  }
  return "";
}

// FP8 dtypes of a GEMM probe: the operands' and, for an FP8 D, D's.
struct GemmDtypes {
  int32_t a = OCTET_DTYPE_E4M3, b = OCTET_DTYPE_E4M3, d = OCTET_DTYPE_E4M3;
};

// D (FP32) = A' B'^T for quantized operands of `mode_a`/`mode_b` (0: high
// precision of dtype `hp`) in dtypes `fp8.a`/`fp8.b`, compared with the
// reference's within an accumulation-order bound. fp8_out: D is a
// per-tensor tensor of dtype `fp8.d`.
std::string probe_gemm(octet::Context& ctx, octet::Context& ref, bool ta, bool tb, int32_t mode_a, int32_t mode_b,
                       int32_t hp, bool fp8_out, GemmDtypes fp8 = GemmDtypes()) {
  const int64_t m = 32, n = 48, k = 256;
  const auto va = values(size_t(m * k), 11, 2.0f), vb = values(size_t(n * k), 13, 2.0f);
  std::vector<float> d[2];
  octet::Context* contexts[2] = {&ctx, &ref};
  reference_first([&](int c) {
    octet::Context& cx = *contexts[c];
    // A quantized operand has the one usage its transpose flag reads.
    auto operand = [&](const std::vector<float>& v, int64_t rows, int64_t cols, int32_t mode, bool transposed,
                       int32_t dtype) {
      octet::Tensor x = fp32_tensor(cx, v, rows, cols);
      if (mode == 0 && hp == OCTET_DTYPE_FP32) return x;
      octet::Tensor y =
          mode == 0 ? create(cx, hp, rows, cols)
                    : create(cx, dtype, rows, cols, transposed ? OCTET_USAGE_COLUMNWISE : OCTET_USAGE_ROWWISE, mode);
      if (mode == 0) {
        // High-precision operands come from the reference's conversion.
        octet::Tensor rx = fp32_tensor(ref, v, rows, cols);
        octet::Tensor ry = create(ref, hp, rows, cols);
        octet::check(octet_convert(ref.get(), rx.get(), ry.get(), 1));
        const auto raw = bytes_of(ry.get(), OCTET_COMPONENT_DATA, size_t(rows * cols) * octet_dtype_size(hp));
        octet::check(octet_tensor_copy_from_host(y.get(), OCTET_COMPONENT_DATA, raw.data(), raw.size()));
      } else {
        octet_quantize_options o = octet::quantize_options();
        octet::check(octet_quantize(cx.get(), x.get(), y.get(), &o));
      }
      return y;
    };
    octet::Tensor a = ta ? operand(va, k, m, mode_a, true, fp8.a) : operand(va, m, k, mode_a, false, fp8.a);
    octet::Tensor b = tb ? operand(vb, k, n, mode_b, true, fp8.b) : operand(vb, n, k, mode_b, false, fp8.b);
    octet::Tensor out = fp8_out ? create(cx, fp8.d, m, n, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_TENSOR)
                                : create(cx, OCTET_DTYPE_FP32, m, n);
    octet_gemm_options o;
    octet_gemm_options_init(&o);
    o.trans_a = ta;
    o.trans_b = tb;
    octet::check(octet_gemm(cx.get(), a.get(), b.get(), out.get(), &o));
    if (fp8_out) {
      octet::Tensor y = create(cx, OCTET_DTYPE_FP32, m, n);
      octet::check(octet_dequantize(cx.get(), out.get(), y.get()));
      d[c] = fp32_of(y.get());
    } else {
      d[c] = fp32_of(out.get());
    }
  });
  // FP32 accumulation in another order: far below 1e-3 of the largest
  // |D| here; an FP8 output: one E4M3 step (2^-3).
  return close(d[0], d[1], fp8_out ? 0.13 : 1e-3, "D");
}

// A grouped GEMM (docs/grouped_gemm.md) of ragged groups, an empty one
// included: the forward layout in the primary FP8 dtype (one stacked input,
// a weight per group) and the wgrad layout in FP32 (split K). Each group must
// equal the backend's own octet_gemm on it bit for bit (the contract), and
// the reference's result as any GEMM does.
constexpr float kGroupedScale = 16.0f;

std::string probe_grouped_gemm(octet::Context& ctx, octet::Context& ref, int32_t fp8) {
  const int64_t splits[] = {5, 0, 19, 8};
  const size_t groups = 4;
  const int64_t rows = 32, n = 48, k = 256;
  const auto vx = values(size_t(rows * k), 17, 2.0f), vw = values(size_t(groups) * size_t(n * k), 19, 2.0f);
  const auto vdy = values(size_t(rows * n), 23, 2.0f);
  std::vector<float> forward[2], wgrad[2];
  std::string own_mismatch;
  octet::Context* contexts[2] = {&ctx, &ref};
  reference_first([&](int c) {
    octet::Context& cx = *contexts[c];
    auto quantized = [&](const std::vector<float>& v, size_t first, int64_t r, int64_t cols) {
      octet::Tensor x =
          fp32_tensor(cx, std::vector<float>(v.begin() + first, v.begin() + first + size_t(r * cols)), r, cols);
      octet::Tensor y = create(cx, fp8, r, cols, OCTET_USAGE_ROWWISE, OCTET_SCALING_PER_TENSOR);
      octet::check(octet_tensor_copy_from_host(y.get(), OCTET_COMPONENT_SCALE, &kGroupedScale, sizeof(float)));
      octet_quantize_options o = octet::quantize_options();
      octet::check(octet_quantize(cx.get(), x.get(), y.get(), &o));
      return y;
    };
    octet::Tensor x = quantized(vx, 0, rows, k);
    std::vector<octet::Tensor> w;
    std::vector<const octet_tensor*> wh;
    for (size_t g = 0; g < groups; ++g) {
      w.push_back(quantized(vw, g * size_t(n * k), n, k));
      wh.push_back(w.back().get());
    }
    octet::Tensor y = create(cx, OCTET_DTYPE_FP32, rows, n);
    octet_grouped_gemm_options o;
    octet_grouped_gemm_options_init(&o);
    const octet_tensor* xh = x.get();
    octet_tensor* yh = y.get();
    octet::check(octet_grouped_gemm(cx.get(), groups, splits, &xh, 1, wh.data(), groups, &yh, 1, &o));
    forward[c] = fp32_of(y.get());
    // wgrad: dW_g = dY_g^T X_g in FP32, stacked along the tokens.
    octet::Tensor dy = fp32_tensor(cx, vdy, rows, n), xf = fp32_tensor(cx, vx, rows, k);
    octet::Tensor dw_owner = octet::Tensor::create(cx, OCTET_DTYPE_FP32, {int64_t(groups), n, k});
    octet_tensor* dw = dw_owner.get();
    octet_grouped_gemm_options ko = o;
    ko.split = OCTET_GROUP_SPLIT_K;
    ko.trans_a = 1;
    ko.trans_b = 1;
    const octet_tensor* dyh = dy.get();
    const octet_tensor* xfh = xf.get();
    octet::check(octet_grouped_gemm(cx.get(), groups, splits, &dyh, 1, &xfh, 1, &dw, 1, &ko));
    wgrad[c] = fp32_of(dw);
    if (c != 0 || !own_mismatch.empty()) return;
    // The backend's own octet_gemm, group by group.
    int64_t first = 0;
    for (size_t g = 0; g < groups; ++g) {
      const int64_t m = splits[g];
      if (m > 0) {
        octet::Tensor xg = quantized(vx, size_t(first * k), m, k);
        octet::Tensor yg = create(cx, OCTET_DTYPE_FP32, m, n);
        octet_gemm_options go;
        octet_gemm_options_init(&go);
        octet::check(octet_gemm(cx.get(), xg.get(), w[g].get(), yg.get(), &go));
        const std::vector<float> own = fp32_of(yg.get());
        if (std::memcmp(own.data(), forward[0].data() + first * n, own.size() * sizeof(float)) != 0)
          own_mismatch = "group " + std::to_string(g) + " of the grouped GEMM differs from its own octet_gemm";
      }
      first += m;
    }
  });
  if (!own_mismatch.empty()) return own_mismatch;
  const std::string f = close(forward[0], forward[1], 1e-3, "grouped D (forward)");
  return f.empty() ? close(wgrad[0], wgrad[1], 1e-3, "grouped dW (wgrad)") : f;
}

// A LayerNormMLP (layernorm, GELU, bias) forward and backward in FP32, no
// recipe: the norm, activation, bias-gradient and accumulate kernels.
std::string probe_layer(octet::Context& ctx, octet::Context& ref) {
  const int64_t tokens = 16, hidden = 64;
  std::vector<float> out[2];
  octet::Context* contexts[2] = {&ctx, &ref};
  for (int c = 0; c < 2; ++c) {
    octet::Context& cx = *contexts[c];
    octet_linear_options lo = octet::linear_options();
    lo.in_features = hidden;
    lo.out_features = hidden;
    lo.bias = 1;
    lo.params_dtype = OCTET_DTYPE_FP32;
    octet_layernorm_mlp_options mo = octet::layernorm_mlp_options();
    mo.norm = OCTET_LAYER_LAYERNORM;
    mo.activation = OCTET_LAYER_GELU;
    mo.ffn_features = hidden * 2;
    octet::Layer layer = octet::Layer::layernorm_mlp(cx, lo, mo);
    for (size_t i = 0; i < layer.parameter_count(); ++i) {
      octet_tensor* p = nullptr;
      octet::check(octet_layer_get_parameter(layer.get(), i, &p));
      const octet_tensor_info info = info_of(p);
      auto v = values(size_t(info.rowwise_bytes / 4), uint32_t(17 + i), 0.2f);
      if (layer.parameter_name(i) == "norm_weight")
        for (float& x : v) x += 1.0f;
      octet::check(octet_tensor_copy_from_host(p, OCTET_COMPONENT_DATA, v.data(), v.size() * 4));
    }
    octet::Tensor x = fp32_tensor(cx, values(size_t(tokens * hidden), 19, 2.0f), tokens, hidden);
    octet::Tensor dy = fp32_tensor(cx, values(size_t(tokens * hidden), 23, 1.0f), tokens, hidden);
    octet::Tensor y = create(cx, OCTET_DTYPE_FP32, tokens, hidden);
    octet::Tensor dx = create(cx, OCTET_DTYPE_FP32, tokens, hidden);
    octet::Saved saved = layer.forward(octet::TensorView(x.get()), octet::TensorView(y.get()), true);
    // Twice, accumulating: the gradients' accumulate path too.
    layer.backward(saved, octet::TensorView(dy.get()), octet::TensorView(dx.get()), false);
    saved = layer.forward(octet::TensorView(x.get()), octet::TensorView(y.get()), true);
    layer.backward(saved, octet::TensorView(dy.get()), octet::TensorView(dx.get()), true);
    out[c] = fp32_of(y.get());
    const auto g = fp32_of(dx.get());
    out[c].insert(out[c].end(), g.begin(), g.end());
    for (size_t i = 0; i < layer.parameter_count(); ++i) {
      octet_tensor* gp = nullptr;
      octet::check(octet_layer_get_gradient(layer.get(), i, &gp));
      const auto gv = fp32_of(gp);
      out[c].insert(out[c].end(), gv.begin(), gv.end());
    }
  }
  return close(out[0], out[1], 1e-4, "output, grad_input and parameter gradients");
}

// Thread safety (octet_backend.h: entries run concurrently on different
// backend contexts): threads, each with its own context, run the probes
// above at once, and each result must still match the reference. A probe
// the backend answers UNSUPPORTED for is left out.
void check_threads(Section& s, const std::string& backend, uint32_t features, int32_t fp8_dtype) {
  constexpr int kThreads = 4, kRounds = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<int> ran(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        octet::Context ctx(backend), ref("reference");
        std::vector<std::function<std::string()>> probes = {
            [&] { return probe_amax(ctx, ref, OCTET_DTYPE_BIT(OCTET_DTYPE_FP32)); },
            [&] {
              return probe_quantize(ctx, ref, fp8_dtype, OCTET_SCALING_PER_TENSOR, OCTET_USAGE_ROWWISE, 1.0f, true,
                                    false);
            },
        };
        if (features & OCTET_FEATURE_GEMM_HIGH_PRECISION)
          probes.push_back([&] { return probe_gemm(ctx, ref, false, false, 0, 0, OCTET_DTYPE_FP32, false); });
        for (int round = 0; round < kRounds && failures[size_t(t)].empty(); ++round)
          for (const auto& probe : probes) {
            try {
              const std::string r = probe();
              if (!r.empty()) failures[size_t(t)] = r;
              ++ran[size_t(t)];
            } catch (const octet::Error& e) {
              if (e.status() != OCTET_STATUS_UNSUPPORTED) failures[size_t(t)] = e.what();
            } catch (const NotOffered&) {
              // the reference refuses it too: nothing to compare
            }
          }
      } catch (const std::exception& e) {
        failures[size_t(t)] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  int total = 0;
  const std::string name = "thread safety: " + std::to_string(kThreads) + " threads, a context each";
  for (int t = 0; t < kThreads; ++t) {
    total += ran[size_t(t)];
    if (!failures[size_t(t)].empty()) {
      s.add(name, Outcome::Fail, "thread " + std::to_string(t) + ": " + failures[size_t(t)]);
      return;
    }
  }
  s.add(name, total > 0 ? Outcome::Pass : Outcome::Skipped,
        total > 0 ? std::to_string(total) +
                        " probes (amax, quantize+dequantize, fp32 gemm) at once, each equal to the "
                        "reference's"
                  : "every probe answered UNSUPPORTED");
}

}  // namespace

Section check_capabilities(const std::string& backend) {
  Section s;
  s.id = "capabilities";
  s.title = "every declared dtype, scaling mode, FP8 GEMM layout and feature, run through octet.h";
  octet::BackendInfo info;
  bool found = false;
  for (const auto& b : octet::backends())
    if (b.name == backend) {
      info = b;
      found = true;
    }
  if (!found || !info.available) {
    s.add("backend usable", found ? Outcome::Skipped : Outcome::Fail,
          found ? "unavailable here: " + info.unavailable_reason : "no backend named '" + backend + "' is registered");
    return s;
  }
  std::unique_ptr<Prober> prober;
  try {
    prober = std::make_unique<Prober>(&s, backend);
  } catch (const std::exception& e) {
    s.add("context create", Outcome::Fail, e.what());
    return s;
  }
  Prober& p = *prober;
  const uint32_t dtypes = info.dtypes, modes = info.scaling_modes, layouts = info.fp8_gemm_layouts,
                 features = info.features;
  auto has = [&](uint32_t feature) { return (features & feature) != 0; };

  for (int32_t d : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16, OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2,
                    OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ})
    p.run(std::string("dtype ") + octet_dtype_name(d), (dtypes & OCTET_DTYPE_BIT(d)) != 0,
          [d](octet::Context& c, octet::Context&) { return probe_dtype(c, d); });
  if (dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E8M0))
    s.add("dtype e8m0", Outcome::Pass, "declared: the scale format of mxfp8_1x32, probed with that mode");

  // The FP8 dtypes the backend declares, OCP and FNUZ alike. `primary`
  // (E4M3, else E4M3FNUZ, else E5M2, else E5M2FNUZ) serves the probes of one
  // feature; E4M3 when none is declared (those probes then report
  // UNSUPPORTED for an undeclared feature, or fail for a declared one).
  const int32_t kFp8Order[] = {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ};
  std::vector<int32_t> fp8_dtypes;
  for (int32_t d : kFp8Order)
    if (dtypes & OCTET_DTYPE_BIT(d)) fp8_dtypes.push_back(d);
  int32_t primary = OCTET_DTYPE_E4M3;
  for (int32_t d : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2, OCTET_DTYPE_E5M2FNUZ})
    if (dtypes & OCTET_DTYPE_BIT(d)) {
      primary = d;
      break;
    }
  // The E4M3-class dtype of primary's family, for an FP8 GEMM output (one
  // E4M3 step is the bound below).
  const int32_t fp8_output =
      primary == OCTET_DTYPE_E4M3FNUZ || primary == OCTET_DTYPE_E5M2FNUZ ? OCTET_DTYPE_E4M3FNUZ : OCTET_DTYPE_E4M3;
  const GemmDtypes primary_gemm{primary, primary, fp8_output};

  // A scaling mode is declared for quantizing when the backend quantizes in
  // it: per-tensor (which every backend declares for plain tensors) with
  // the quantize feature, the block modes with block_quantize. A declared
  // mode is probed in every declared FP8 dtype (a combination the reference
  // refuses too, such as MXFP8 in an FNUZ dtype, is skipped); an undeclared
  // one once, in the primary dtype.
  for (uint32_t mode :
       {uint32_t(OCTET_SCALING_PER_TENSOR), uint32_t(OCTET_SCALING_MXFP8_1X32), uint32_t(OCTET_SCALING_BLOCK_1X128),
        uint32_t(OCTET_SCALING_BLOCK_128X128), uint32_t(OCTET_SCALING_PER_ROW), uint32_t(OCTET_SCALING_PER_COLUMN)}) {
    const bool declared = (modes & mode) != 0 &&
                          has(mode == OCTET_SCALING_PER_TENSOR ? OCTET_FEATURE_QUANTIZE : OCTET_FEATURE_BLOCK_QUANTIZE);
    const std::vector<int32_t> probed = declared && !fp8_dtypes.empty() ? fp8_dtypes : std::vector<int32_t>{primary};
    for (int32_t d : probed)
      p.run("scaling mode " + scaling_mode_list(mode) + " " + octet_dtype_name(d) + " (quantize, dequantize)",
            declared && (dtypes & OCTET_DTYPE_BIT(d)) != 0, [mode, d](octet::Context& c, octet::Context& r) {
              return probe_quantize(c, r, d, int32_t(mode), OCTET_USAGE_ROWWISE, 1.0f, true, false);
            });
  }

  for (uint32_t layout : {uint32_t(OCTET_GEMM_LAYOUT_TN), uint32_t(OCTET_GEMM_LAYOUT_NN),
                          uint32_t(OCTET_GEMM_LAYOUT_TT), uint32_t(OCTET_GEMM_LAYOUT_NT)}) {
    const bool ta = layout == OCTET_GEMM_LAYOUT_TT || layout == OCTET_GEMM_LAYOUT_NT;
    const bool tb = layout == OCTET_GEMM_LAYOUT_NN || layout == OCTET_GEMM_LAYOUT_NT;
    p.run("fp8 gemm layout " + gemm_layout_list(layout) + " (" + octet_dtype_name(primary) + ")",
          (layouts & layout) != 0, [ta, tb, primary_gemm](octet::Context& c, octet::Context& r) {
            return probe_gemm(c, r, ta, tb, OCTET_SCALING_PER_TENSOR, OCTET_SCALING_PER_TENSOR, 0, false, primary_gemm);
          });
  }

  p.run("feature convert", has(OCTET_FEATURE_CONVERT),
        [dtypes](octet::Context& c, octet::Context& r) { return probe_convert(c, r, dtypes); });
  p.run("feature amax", has(OCTET_FEATURE_AMAX),
        [dtypes](octet::Context& c, octet::Context& r) { return probe_amax(c, r, dtypes); });
  // Every declared FP8 dtype through quantize with a scale and saturation
  // (the scaling-mode rows above quantize with scale 1).
  for (int32_t d : fp8_dtypes.empty() ? std::vector<int32_t>{primary} : fp8_dtypes)
    p.run(std::string("feature quantize (") + octet_dtype_name(d) + ", scale 2, saturating)",
          has(OCTET_FEATURE_QUANTIZE), [d](octet::Context& c, octet::Context& r) {
            return probe_quantize(c, r, d, OCTET_SCALING_PER_TENSOR, OCTET_USAGE_ROWWISE, 2.0f, false, false);
          });
  p.run("feature dequantize", has(OCTET_FEATURE_DEQUANTIZE), [primary](octet::Context& c, octet::Context& r) {
    return probe_quantize(c, r, primary, OCTET_SCALING_PER_TENSOR, OCTET_USAGE_ROWWISE, 0.5f, true, false);
  });
  p.run("feature fused_cast_transpose (both usages)", has(OCTET_FEATURE_FUSED_CAST_TRANSPOSE),
        [primary](octet::Context& c, octet::Context& r) {
          return probe_quantize(c, r, primary, OCTET_SCALING_PER_TENSOR, OCTET_USAGE_BOTH, 1.0f, false, false);
        });
  p.run("feature transpose (columnwise usage)", has(OCTET_FEATURE_TRANSPOSE),
        [primary](octet::Context& c, octet::Context& r) {
          return probe_quantize(c, r, primary, OCTET_SCALING_PER_TENSOR, OCTET_USAGE_COLUMNWISE, 1.0f, false, false);
        });
  p.run("feature quantize_statistics", has(OCTET_FEATURE_QUANTIZE_STATISTICS),
        [primary](octet::Context& c, octet::Context& r) {
          return probe_quantize(c, r, primary, OCTET_SCALING_PER_TENSOR, OCTET_USAGE_ROWWISE, 64.0f, false, true);
        });
  // MXFP8 takes OCP FP8 elements only: an FNUZ primary dtype is probed in
  // the other block modes.
  const bool fnuz_primary = primary == OCTET_DTYPE_E4M3FNUZ || primary == OCTET_DTYPE_E5M2FNUZ;
  const uint32_t mx_modes = fnuz_primary ? 0u : modes;
  const uint32_t block_mode = (mx_modes & OCTET_SCALING_MXFP8_1X32)   ? OCTET_SCALING_MXFP8_1X32
                              : (modes & OCTET_SCALING_BLOCK_1X128)   ? OCTET_SCALING_BLOCK_1X128
                              : (modes & OCTET_SCALING_BLOCK_128X128) ? OCTET_SCALING_BLOCK_128X128
                                                                      : OCTET_SCALING_MXFP8_1X32;
  p.run("feature block_quantize (" + scaling_mode_list(block_mode) + ", both usages)",
        has(OCTET_FEATURE_BLOCK_QUANTIZE), [block_mode, primary](octet::Context& c, octet::Context& r) {
          return probe_quantize(c, r, primary, int32_t(block_mode), OCTET_USAGE_BOTH, 1.0f, true, false);
        });
  const bool deepseek = !(mx_modes & OCTET_SCALING_MXFP8_1X32) && (modes & OCTET_SCALING_BLOCK_1X128) &&
                        (modes & OCTET_SCALING_BLOCK_128X128);
  const int32_t mode_a = deepseek ? OCTET_SCALING_BLOCK_1X128 : OCTET_SCALING_MXFP8_1X32;
  const int32_t mode_b = deepseek ? OCTET_SCALING_BLOCK_128X128 : OCTET_SCALING_MXFP8_1X32;
  p.run(std::string("feature block_gemm (") + (deepseek ? "1x128 x 128x128" : "mxfp8 x mxfp8") + ")",
        has(OCTET_FEATURE_BLOCK_GEMM), [mode_a, mode_b, primary_gemm](octet::Context& c, octet::Context& r) {
          return probe_gemm(c, r, false, false, mode_a, mode_b, 0, false, primary_gemm);
        });
  // Every declared FP8 dtype as both operands, and E4M3 x E5M2 of a family
  // (a backward GEMM's operands) where both are declared.
  std::vector<GemmDtypes> gemm_pairs;
  for (int32_t d : fp8_dtypes.empty() ? std::vector<int32_t>{primary} : fp8_dtypes)
    gemm_pairs.push_back({d, d, fp8_output});
  for (const auto& family : {std::pair<int32_t, int32_t>{OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
                             std::pair<int32_t, int32_t>{OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ}})
    if ((dtypes & OCTET_DTYPE_BIT(family.first)) && (dtypes & OCTET_DTYPE_BIT(family.second)))
      gemm_pairs.push_back({family.first, family.second, fp8_output});
  for (const GemmDtypes& g : gemm_pairs)
    p.run(std::string("feature gemm_fp8 (TN, ") + octet_dtype_name(g.a) + " x " + octet_dtype_name(g.b) + ")",
          has(OCTET_FEATURE_GEMM_FP8), [g](octet::Context& c, octet::Context& r) {
            return probe_gemm(c, r, false, false, OCTET_SCALING_PER_TENSOR, OCTET_SCALING_PER_TENSOR, 0, false, g);
          });
  for (int32_t hp : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    if (hp != OCTET_DTYPE_FP32 && !(dtypes & OCTET_DTYPE_BIT(hp))) continue;
    p.run(std::string("feature gemm_high_precision (") + octet_dtype_name(hp) + ")",
          has(OCTET_FEATURE_GEMM_HIGH_PRECISION),
          [hp](octet::Context& c, octet::Context& r) { return probe_gemm(c, r, false, false, 0, 0, hp, false); });
  }
  p.run(std::string("feature gemm_fp8_output (") + octet_dtype_name(fp8_output) + ")",
        has(OCTET_FEATURE_GEMM_FP8_OUTPUT), [primary_gemm](octet::Context& c, octet::Context& r) {
          return probe_gemm(c, r, false, false, OCTET_SCALING_PER_TENSOR, OCTET_SCALING_PER_TENSOR, 0, true,
                            primary_gemm);
        });
  p.run(std::string("feature grouped_gemm (") + octet_dtype_name(primary_gemm.a) + " split m, fp32 split k)",
        has(OCTET_FEATURE_GROUPED_GEMM),
        [primary_gemm](octet::Context& c, octet::Context& r) { return probe_grouped_gemm(c, r, primary_gemm.a); });
  // One layer step serves the four layer kernels; an UNSUPPORTED that names
  // the entry of an undeclared one is only reported.
  const uint32_t layer_features =
      OCTET_FEATURE_NORM | OCTET_FEATURE_ACTIVATION | OCTET_FEATURE_BIAS_GRADIENT | OCTET_FEATURE_ACCUMULATE;
  auto names_undeclared = [features](const std::string& message) {
    const std::pair<const char*, uint32_t> entries[] = {{"norm_", OCTET_FEATURE_NORM},
                                                        {"activation_", OCTET_FEATURE_ACTIVATION},
                                                        {"bias_gradient", OCTET_FEATURE_BIAS_GRADIENT},
                                                        {"accumulate", OCTET_FEATURE_ACCUMULATE},
                                                        {"gemm", OCTET_FEATURE_GEMM_HIGH_PRECISION},
                                                        {"amax", OCTET_FEATURE_AMAX},
                                                        {"convert", OCTET_FEATURE_CONVERT}};
    for (const auto& e : entries)
      if (message.find(e.first) != std::string::npos && !(features & e.second)) return true;
    return false;
  };
  p.run(
      "features " + feature_list(layer_features) + " (layernorm_mlp fwd+bwd, fp32)", (features & layer_features) != 0,
      [](octet::Context& c, octet::Context& r) { return probe_layer(c, r); }, names_undeclared);
  check_threads(s, backend, features, primary);
  return s;
}

}  // namespace octet_cli
