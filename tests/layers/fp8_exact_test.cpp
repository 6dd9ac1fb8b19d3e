// Every layer in FP8, with every recipe (delayed, current, static, MXFP8,
// 1x128/128x128 blocks, rowwise with and without high-precision wgrad), against a reference written here that quantizes
// exactly as numerics.md says (sections 7, 11), with the scalar codecs
// octet_fp8_encode/decode and octet_e8m0_encode/decode as the codec oracle,
// and runs each GEMM in the order of sections 8/12 (FP32). The layer's GEMM
// results must lie within the section 8/12 bound of it; the values after a
// GEMM (norm, activation, bias sums) follow the FP32 formulas of
// octet_backend.h, which the embedded reference backend runs in order, so
// downstream quantizations see the same values. Shapes are ragged (not
// multiples of 32 or 128) and cross block boundaries. Also: the per-option
// results of LayerNormLinear and LayerNormMLP, and the static recipe's
// observation counts collected inside layers.
#include <octet/octet_math.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "layer_test_helpers.hpp"

namespace layers_test {
namespace {

using Fvec = std::vector<float>;

// ---- the test's description of a recipe -----------------------------------

enum class Mode { Delayed, Current, Static, Mx, Block, Rowwise };

struct Rule {
  Mode mode = Mode::Static;
  float static_scale = 1.0f;   // Static; Delayed: the first step's scale is 1
  int32_t mx_rounding = OCTET_MX_ROUND_RCEIL;
  int32_t format = OCTET_FORMAT_HYBRID;
  bool fprop = true, dgrad = true, wgrad = true;  // false: that GEMM in high precision
  const char* name = "";
  int32_t dtype(int32_t role) const {
    if (format == OCTET_FORMAT_E4M3) return OCTET_DTYPE_E4M3;
    if (format == OCTET_FORMAT_E5M2) return OCTET_DTYPE_E5M2;
    return role == OCTET_ROLE_GRADIENT ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;
  }
};

float fp8_max(int32_t dtype) { return dtype == OCTET_DTYPE_E4M3 ? 448.0f : 57344.0f; }

// numerics.md 14.1 / 11: fp8_max / max(amax, epsilon = 0); 1 when that is 0.
float amax_scale(float amax, int32_t dtype) {
  if (amax == 0.0f || std::isinf(amax) || std::isnan(amax)) return 1.0f;
  float s = fp8_max(dtype) / amax;
  return std::isinf(s) ? 3.40282347e38f : s;
}

// A GEMM operand, K-contiguous: values are the decoded codes (or the high-
// precision values), s the scale_inv of block (row / br, k / bk).
struct Operand {
  int64_t rows = 0, cols = 0, br = 1, bk = 1;
  Fvec v, s;
  float scale_at(int64_t r, int64_t kb) const {
    return s[size_t((r / br) * ((cols + bk - 1) / bk) + kb)];
  }
};

Operand high_precision(const Fvec& m, int64_t rows, int64_t cols) {
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.br = rows;
  o.bk = cols;
  o.v = m;
  o.s = {1.0f};
  return o;
}

uint8_t floor_code(float amax, int32_t dtype) {
  int e = 0;
  std::frexp(amax, &e);  // amax = f * 2^e, f in [0.5, 1): floor(log2 amax) = e - 1
  const int emax = dtype == OCTET_DTYPE_E4M3 ? 8 : 15;
  return uint8_t(std::clamp(e - 1 - emax + 127, 0, 254));
}

// Rowwise quantization of m [rows, cols] for `role` (numerics.md 7 and 11).
// The columnwise usage of a tensor is this applied to its transpose.
Operand quantize_rows(const Rule& r, int32_t role, const Fvec& m, int64_t rows, int64_t cols) {
  const int32_t dt = r.dtype(role);
  Operand o;
  o.rows = rows;
  o.cols = cols;
  o.v.resize(m.size());
  auto code = [&](float y) { return octet_fp8_decode(octet_fp8_encode(y, dt, 1), dt); };
  if (r.mode == Mode::Delayed || r.mode == Mode::Current || r.mode == Mode::Static) {
    float scale = r.mode == Mode::Static ? r.static_scale : 1.0f;
    if (r.mode == Mode::Current) {
      float amax = 0.0f;
      for (float x : m) amax = std::fmax(amax, std::fabs(x));
      scale = amax_scale(amax, dt);
    }
    o.br = rows;
    o.bk = cols;
    for (size_t i = 0; i < m.size(); ++i) o.v[i] = code(m[i] * scale);
    o.s = {1.0f / scale};
    return o;
  }
  o.br = r.mode == Mode::Block && role == OCTET_ROLE_WEIGHT ? 128 : 1;
  o.bk = r.mode == Mode::Mx ? 32 : 128;
  if (r.mode == Mode::Rowwise) {
    // numerics.md section 16: one scale per row, from max(amax, 1e-12),
    // rounded down to a power of two (the recipe's torchao defaults).
    o.bk = std::max<int64_t>(cols, 1);
    o.s.resize(size_t(rows));
    for (int64_t i = 0; i < rows; ++i) {
      float amax = 1e-12f;
      for (int64_t j = 0; j < cols; ++j) amax = std::fmax(amax, std::fabs(m[size_t(i * cols + j)]));
      int e = 0;
      std::frexp(fp8_max(dt) / amax, &e);  // the quotient is in [2^(e-1), 2^e)
      const float scale = std::ldexp(1.0f, e - 1);
      for (int64_t j = 0; j < cols; ++j) o.v[size_t(i * cols + j)] = code(m[size_t(i * cols + j)] * scale);
      o.s[size_t(i)] = 1.0f / scale;
    }
    return o;
  }
  const int64_t gr = (rows + o.br - 1) / o.br, gc = (cols + o.bk - 1) / o.bk;
  o.s.resize(size_t(gr * gc));
  for (int64_t bi = 0; bi < gr; ++bi)
    for (int64_t bj = 0; bj < gc; ++bj) {
      const int64_t r0 = bi * o.br, r1 = std::min(rows, r0 + o.br), c0 = bj * o.bk, c1 = std::min(cols, c0 + o.bk);
      float amax = 0.0f;
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = c0; j < c1; ++j) amax = std::fmax(amax, std::fabs(m[size_t(i * cols + j)]));
      if (r.mode == Mode::Mx) {
        uint8_t c = 0;
        if (amax != 0.0f)
          c = r.mx_rounding != OCTET_MX_ROUND_RCEIL ? floor_code(amax, dt)
              : amax / fp8_max(dt) == 0.0f        ? uint8_t(0)  // quotient underflows: smallest scale
                                                  : octet_e8m0_encode(amax / fp8_max(dt), OCTET_E8M0_ROUND_CEIL);
        const float X = octet_e8m0_decode(c);
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) o.v[size_t(i * cols + j)] = code(m[size_t(i * cols + j)] / X);
        o.s[size_t(bi * gc + bj)] = X;
      } else {
        const float scale = amax_scale(amax, dt);
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) o.v[size_t(i * cols + j)] = code(m[size_t(i * cols + j)] * scale);
        o.s[size_t(bi * gc + bj)] = 1.0f / scale;
      }
    }
  return o;
}

Fvec transposed(const Fvec& a, int64_t rows, int64_t cols) {
  Fvec t(a.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[size_t(c * rows + r)] = a[size_t(r * cols + c)];
  return t;
}

// An operand of a GEMM: quantized for `usage` when `fp8`, else as is.
Operand operand(const Rule& r, bool fp8, int32_t role, bool columnwise, const Fvec& m, int64_t rows, int64_t cols) {
  const Fvec mm = columnwise ? transposed(m, rows, cols) : m;
  const int64_t rr = columnwise ? cols : rows, cc = columnwise ? rows : cols;
  return fp8 ? quantize_rows(r, role, mm, rr, cc) : high_precision(mm, rr, cc);
}

// D [M, N] = A B^T (+ bias) in the order of numerics.md 8/12, with the
// per-element bound of section 8 (per-block scales inside the sum).
struct Gemm {
  Fvec d;
  Vec bound;
};

Gemm gemm(const Operand& a, const Operand& b, const Fvec* bias) {
  const int64_t M = a.rows, N = b.rows, K = a.cols;
  EXPECT_EQ(b.cols, K);
  const int64_t bk = std::min(a.bk, b.bk);  // per-tensor operands: one block over K
  EXPECT_TRUE(a.bk == b.bk || (a.bk == K && b.bk == K));
  Gemm g;
  g.d.resize(size_t(M * N));
  g.bound.resize(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0.0f;
      double mag = 0.0;
      for (int64_t k0 = 0, kb = 0; k0 < K; k0 += bk, ++kb) {
        float partial = 0.0f;
        const float s = a.scale_at(m, kb) * b.scale_at(n, kb);
        for (int64_t k = k0; k < std::min(K, k0 + bk); ++k) {
          const float p = a.v[size_t(m * K + k)] * b.v[size_t(n * K + k)];
          partial = partial + p;
          mag += std::fabs(double(p) * double(s));
        }
        acc = acc + partial * s;
      }
      float v = 1.0f * acc;
      if (bias != nullptr) v = v + (*bias)[size_t(n)];
      g.d[size_t(m * N + n)] = v;
      g.bound[size_t(m * N + n)] = double(K) * std::ldexp(1.0, -23) * mag;
    }
  return g;
}

Fvec col_sums(const Fvec& d, int64_t rows, int64_t cols) {
  Fvec s(size_t(cols), 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) s[size_t(j)] += d[size_t(i * cols + j)];
  return s;
}

// ---- layers ------------------------------------------------------------------

enum class Kind { Linear, LnLinear, Mlp };

struct Spec {
  Kind kind = Kind::Linear;
  int32_t norm = OCTET_LAYER_LAYERNORM;
  int32_t act = OCTET_LAYER_GELU;
  int64_t rows = 130, hidden = 136, ffn = 140;  // ragged against 32 and 128
  int64_t fc1_out() const { return act == OCTET_LAYER_SWIGLU ? 2 * ffn : ffn; }
  int64_t out() const { return kind == Kind::Mlp ? hidden : ffn; }
  bool ln() const { return norm == OCTET_LAYER_LAYERNORM; }
  std::string text() const {
    const char* k = kind == Kind::Linear ? "Linear" : kind == Kind::LnLinear ? "LayerNormLinear" : "LayerNormMLP";
    return std::string(k) + (kind == Kind::Linear ? "" : ln() ? " LayerNorm" : " RMSNorm") +
           (kind == Kind::Mlp ? (act == OCTET_LAYER_GELU ? " GELU" : " SwiGLU") : "");
  }
};

using Params = std::map<std::string, Fvec>;

Fvec rand_f(size_t n, uint32_t seed, double scale) {
  Vec v = random_vec(n, seed, scale);
  return Fvec(v.begin(), v.end());
}

Params make_params(const Spec& s) {
  Params p;
  if (s.kind != Kind::Linear) {
    p["norm_weight"] = rand_f(size_t(s.hidden), 61, 0.5);
    for (float& g : p["norm_weight"]) g += 1.0f;
    if (s.ln()) p["norm_bias"] = rand_f(size_t(s.hidden), 62, 0.1);
  }
  if (s.kind == Kind::Mlp) {
    p["fc1_weight"] = rand_f(size_t(s.fc1_out() * s.hidden), 63, 0.3);
    p["fc1_bias"] = rand_f(size_t(s.fc1_out()), 64, 0.1);
    p["fc2_weight"] = rand_f(size_t(s.hidden * s.ffn), 65, 0.3);
    p["fc2_bias"] = rand_f(size_t(s.hidden), 66, 0.1);
  } else {
    p["weight"] = rand_f(size_t(s.ffn * s.hidden), 63, 0.3);
    p["bias"] = rand_f(size_t(s.ffn), 64, 0.1);
  }
  return p;
}

bool is_weight(const std::string& name) { return name == "weight" || name == "fc1_weight" || name == "fc2_weight"; }

struct Out {
  Fvec y, dx;
  Params grads;
  std::map<std::string, Vec> bounds;  // GEMM outputs only; others: exact up to FP32 output rounding
};

// ---- the reference chain -------------------------------------------------------

struct LinearRef {
  Fvec y;
  Fvec dx, dw, db;
  Vec y_bound, dx_bound, dw_bound;
};

LinearRef ref_linear_forward(const Rule& r, bool fp8, const Fvec& x, const Fvec& w, const Fvec& b, int64_t rows,
                             int64_t in, int64_t out) {
  LinearRef L;
  const bool f = fp8 && r.fprop;
  Gemm g = gemm(operand(r, f, OCTET_ROLE_INPUT, false, x, rows, in), operand(r, f, OCTET_ROLE_WEIGHT, false, w, out, in),
                &b);
  L.y = g.d;
  L.y_bound = g.bound;
  return L;
}

void ref_linear_backward(const Rule& r, bool fp8, const Fvec& x, const Fvec& w, const Fvec& dy, int64_t rows,
                         int64_t in, int64_t out, LinearRef& L) {
  const bool d = fp8 && r.dgrad, wg = fp8 && r.wgrad;
  // dgrad: dx = dy W (dy rowwise, W columnwise = W^T along its rows).
  Gemm gd = gemm(operand(r, d, OCTET_ROLE_GRADIENT, false, dy, rows, out),
                 operand(r, d, OCTET_ROLE_WEIGHT, true, w, out, in), nullptr);
  // wgrad: dW = dy^T x (both columnwise).
  Gemm gw = gemm(operand(r, wg, OCTET_ROLE_GRADIENT, true, dy, rows, out),
                 operand(r, wg, OCTET_ROLE_INPUT, true, x, rows, in), nullptr);
  L.dx = gd.d;
  L.dx_bound = gd.bound;
  L.dw = gw.d;
  L.dw_bound = gw.bound;
  L.db = col_sums(dy, rows, out);
}

struct NormRef {
  Fvec n, mean, rstd;
};

NormRef ref_norm(const Spec& s, const Params& p, const Fvec& x) {
  NormRef o;
  const int64_t R = s.rows, H = s.hidden;
  const float nn = float(H);
  o.n.resize(x.size());
  o.mean.assign(size_t(R), 0.0f);
  o.rstd.assign(size_t(R), 0.0f);
  const Fvec& gamma = p.at("norm_weight");
  for (int64_t i = 0; i < R; ++i) {
    const float* row = &x[size_t(i * H)];
    float mean = 0.0f, rstd;
    if (s.ln()) {
      float sum = 0.0f;
      for (int64_t j = 0; j < H; ++j) sum += row[j];
      mean = sum / nn;
      float var = 0.0f;
      for (int64_t j = 0; j < H; ++j) var += (row[j] - mean) * (row[j] - mean);
      rstd = 1.0f / std::sqrt(var / nn + 1e-5f);
    } else {
      float ms = 0.0f;
      for (int64_t j = 0; j < H; ++j) ms += row[j] * row[j];
      rstd = 1.0f / std::sqrt(ms / nn + 1e-5f);
    }
    for (int64_t j = 0; j < H; ++j) {
      float y = s.ln() ? ((row[j] - mean) * rstd) * gamma[size_t(j)] : (row[j] * rstd) * gamma[size_t(j)];
      if (s.ln()) y = y + p.at("norm_bias")[size_t(j)];
      o.n[size_t(i * H + j)] = y;
    }
    o.mean[size_t(i)] = mean;
    o.rstd[size_t(i)] = rstd;
  }
  return o;
}

void ref_norm_backward(const Spec& s, const Params& p, const Fvec& x, const NormRef& nr, const Fvec& dn, Out& o) {
  const int64_t R = s.rows, H = s.hidden;
  const float nn = float(H);
  const Fvec& gamma = p.at("norm_weight");
  Fvec dgamma(size_t(H), 0.0f), dbeta(size_t(H), 0.0f), xhat(size_t(H), 0.0f), g(size_t(H), 0.0f);
  o.dx.assign(x.size(), 0.0f);
  for (int64_t i = 0; i < R; ++i) {
    const float rstd = nr.rstd[size_t(i)], mean = nr.mean[size_t(i)];
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t j = 0; j < H; ++j) {
      const float xv = x[size_t(i * H + j)];
      xhat[size_t(j)] = s.ln() ? (xv - mean) * rstd : xv * rstd;
      g[size_t(j)] = dn[size_t(i * H + j)] * gamma[size_t(j)];
      sg += g[size_t(j)];
      sgx += g[size_t(j)] * xhat[size_t(j)];
    }
    const float mg = sg / nn, mgx = sgx / nn;
    for (int64_t j = 0; j < H; ++j) {
      const float inner = s.ln() ? g[size_t(j)] - mg - xhat[size_t(j)] * mgx : g[size_t(j)] - xhat[size_t(j)] * mgx;
      o.dx[size_t(i * H + j)] = rstd * inner;
      dgamma[size_t(j)] += dn[size_t(i * H + j)] * xhat[size_t(j)];
      dbeta[size_t(j)] += dn[size_t(i * H + j)];
    }
  }
  o.grads["norm_weight"] = dgamma;
  if (s.ln()) o.grads["norm_bias"] = dbeta;
}

float gelu_f(float x) { return 0.5f * x * (1.0f + octet_math_tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }
float gelu_df(float x) {
  const float t = octet_math_tanhf(0.7978845608f * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
}
// silu(a) = a * s with s = 1 / (1 + expf(-a)), the s of octet_backend.h's
// SwiGLU backward (the embedded reference forms silu this way too).
float sig_f(float a) { return 1.0f / (1.0f + octet_math_expf(-a)); }

Out reference(const Spec& s, const Rule& r, bool fp8, const Params& p, const Fvec& x, const Fvec& dy) {
  Out o;
  if (s.kind != Kind::Mlp) {
    NormRef nr;
    const Fvec* in = &x;
    if (s.kind == Kind::LnLinear) {
      nr = ref_norm(s, p, x);
      in = &nr.n;
    }
    LinearRef L = ref_linear_forward(r, fp8, *in, p.at("weight"), p.at("bias"), s.rows, s.hidden, s.ffn);
    ref_linear_backward(r, fp8, *in, p.at("weight"), dy, s.rows, s.hidden, s.ffn, L);
    o.y = L.y;
    o.bounds["y"] = L.y_bound;
    o.grads["weight"] = L.dw;
    o.bounds["weight"] = L.dw_bound;
    o.grads["bias"] = L.db;
    if (s.kind == Kind::Linear) {
      o.dx = L.dx;
      o.bounds["dx"] = L.dx_bound;
    } else {
      ref_norm_backward(s, p, x, nr, L.dx, o);
    }
    return o;
  }
  const int64_t R = s.rows, H = s.hidden, F = s.ffn, F1 = s.fc1_out();
  const bool swiglu = s.act == OCTET_LAYER_SWIGLU;
  NormRef nr = ref_norm(s, p, x);
  LinearRef l1 = ref_linear_forward(r, fp8, nr.n, p.at("fc1_weight"), p.at("fc1_bias"), R, H, F1);
  const Fvec& h = l1.y;
  Fvec a(size_t(R * F));
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < F; ++j) {
      const float u = h[size_t(i * F1 + j)];
      a[size_t(i * F + j)] = swiglu ? (u * sig_f(u)) * h[size_t(i * F1 + j + F)] : gelu_f(u);
    }
  LinearRef l2 = ref_linear_forward(r, fp8, a, p.at("fc2_weight"), p.at("fc2_bias"), R, F, H);
  o.y = l2.y;
  o.bounds["y"] = l2.y_bound;
  ref_linear_backward(r, fp8, a, p.at("fc2_weight"), dy, R, F, H, l2);
  o.grads["fc2_weight"] = l2.dw;
  o.bounds["fc2_weight"] = l2.dw_bound;
  o.grads["fc2_bias"] = l2.db;
  const Fvec& da = l2.dx;
  Fvec dh(size_t(R * F1), 0.0f);
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < F; ++j) {
      const float d = da[size_t(i * F + j)], u = h[size_t(i * F1 + j)];
      if (!swiglu) {
        dh[size_t(i * F1 + j)] = d * gelu_df(u);
        continue;
      }
      const float b = h[size_t(i * F1 + j + F)], sg = sig_f(u);
      dh[size_t(i * F1 + j)] = d * b * (sg * (1.0f + u * (1.0f - sg)));
      dh[size_t(i * F1 + j + F)] = d * (u * sg);
    }
  ref_linear_backward(r, fp8, nr.n, p.at("fc1_weight"), dh, R, H, F1, l1);
  o.grads["fc1_weight"] = l1.dw;
  o.bounds["fc1_weight"] = l1.dw_bound;
  o.grads["fc1_bias"] = l1.db;
  ref_norm_backward(s, p, x, nr, l1.dx, o);
  return o;
}

// ---- running the layer -----------------------------------------------------------

struct Options {
  int32_t profile = OCTET_PROFILE_NATIVE;
  int32_t minimize = 0, cache = 0, skip = 0, save_original = 0;
};

octet_layer* create(octet_context* ctx, const Spec& s, const octet_recipe* recipe, const Options& opt) {
  octet_linear_options lo;
  octet_linear_options_init(&lo);
  lo.in_features = s.hidden;
  lo.out_features = s.ffn;
  lo.recipe = recipe;
  lo.minimize_memory = opt.minimize;
  lo.weight_cache = opt.cache;
  lo.skip_weight_allocation = opt.skip;
  lo.save_original_input = opt.save_original;
  octet_layer* layer = nullptr;
  if (s.kind == Kind::Linear) {
    EXPECT_OK(octet_layer_create_linear(ctx, &lo, &layer));
  } else if (s.kind == Kind::LnLinear) {
    octet_layernorm_linear_options o;
    octet_layernorm_linear_options_init(&o);
    o.linear = &lo;
    o.norm = s.norm;
    EXPECT_OK(octet_layer_create_layernorm_linear(ctx, &o, &layer));
  } else {
    octet_layernorm_mlp_options o;
    octet_layernorm_mlp_options_init(&o);
    o.linear = &lo;
    o.norm = s.norm;
    o.activation = s.act;
    o.ffn_features = s.ffn;
    EXPECT_OK(octet_layer_create_layernorm_mlp(ctx, &o, &layer));
  }
  return layer;
}

Vec to_vec(const Fvec& f) { return Vec(f.begin(), f.end()); }

// A layer with its parameters set (skip_weight_allocation: lent weights).
struct Rig {
  octet_context* ctx = nullptr;
  octet_layer* layer = nullptr;
  std::vector<octet::Tensor> tensors;
  Rig(const Spec& s, const octet_recipe* recipe, const Options& opt, const Params& p) {
    ctx = make_context("reference", opt.profile);
    EXPECT_NE(ctx, nullptr) << octet_last_error_message();
    layer = create(ctx, s, recipe, opt);
    for (const auto& [name, v] : p) {
      size_t index = 0;
      EXPECT_OK(octet_layer_find_parameter(layer, name.c_str(), &index));
      if (opt.skip && is_weight(name)) {
        octet_tensor* w = nullptr;
        if (name == "fc2_weight")
          w = tensor(s.hidden, s.ffn);
        else
          w = tensor(int64_t(v.size()) / s.hidden, s.hidden);
        upload(w, to_vec(v));
        EXPECT_OK(octet_layer_set_weight(layer, index, w));
      } else {
        upload(param(layer, name.c_str()), to_vec(v));
      }
    }
  }
  octet_tensor* tensor(int64_t rows, int64_t cols) {
    tensors.push_back(make_tensor(ctx, OCTET_DTYPE_FP32, rows, cols));
    return tensors.back().get();
  }
  ~Rig() {
    octet_layer_destroy(layer);
    tensors.clear();  // after the layer, before the context, as they came
    octet_context_destroy(ctx);
  }
};

Fvec down(const octet_tensor* t) {
  Vec v = download(t);
  return Fvec(v.begin(), v.end());
}

Out run(const Spec& s, const octet_recipe* recipe, const Options& opt, const Params& p, const Fvec& x, const Fvec& dy) {
  Out o;
  Rig rig(s, recipe, opt, p);
  octet_tensor *tx = rig.tensor(s.rows, s.hidden), *ty = rig.tensor(s.rows, s.out());
  octet_tensor *tdy = rig.tensor(s.rows, s.out()), *tdx = rig.tensor(s.rows, s.hidden);
  upload(tx, to_vec(x));
  upload(tdy, to_vec(dy));
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(rig.layer, tx, ty, 1, &saved));
  EXPECT_OK(octet_layer_backward(rig.layer, &saved, tdy, tdx, 0));
  octet_saved_destroy(saved);
  o.y = down(ty);
  o.dx = down(tdx);
  for (const auto& [name, v] : p) o.grads[name] = down(grad(rig.layer, name.c_str()));
  return o;
}

void expect_matches(const Out& got, const Out& want, const std::string& what) {
  auto check = [&](const Fvec& g, const Fvec& w, const char* key) {
    auto it = want.bounds.find(key);
    const Vec bound = it != want.bounds.end() ? it->second : Vec(w.size(), 0.0);
    expect_within(to_vec(g), to_vec(w), bound, what + " " + key);
  };
  check(got.y, want.y, "y");
  check(got.dx, want.dx, "dx");
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (const auto& [name, w] : want.grads) check(got.grads.at(name), w, name.c_str());
}

void expect_same(const Out& a, const Out& b, const std::string& what) {
  expect_identical(to_vec(a.y), to_vec(b.y), what + " y");
  expect_identical(to_vec(a.dx), to_vec(b.dx), what + " dx");
  for (const auto& [name, v] : a.grads) expect_identical(to_vec(v), to_vec(b.grads.at(name)), what + " " + name);
}

std::vector<Spec> all_specs() {
  std::vector<Spec> out;
  Spec s;
  s.kind = Kind::Linear;
  out.push_back(s);
  for (int32_t norm : {OCTET_LAYER_LAYERNORM, OCTET_LAYER_RMSNORM}) {
    s.kind = Kind::LnLinear;
    s.norm = norm;
    out.push_back(s);
    for (int32_t act : {OCTET_LAYER_GELU, OCTET_LAYER_SWIGLU}) {
      s.kind = Kind::Mlp;
      s.act = act;
      out.push_back(s);
    }
  }
  return out;
}

struct RecipeCase {
  Rule rule;
  octet_recipe* recipe = nullptr;
};

std::vector<RecipeCase> all_recipes() {
  std::vector<RecipeCase> out;
  RecipeCase c;
  c.rule.mode = Mode::Delayed;
  c.rule.name = "delayed";
  EXPECT_OK(octet_recipe_create_delayed(nullptr, &c.recipe));
  out.push_back(c);
  c.rule.mode = Mode::Current;
  c.rule.name = "current";
  EXPECT_OK(octet_recipe_create_current(nullptr, &c.recipe));
  out.push_back(c);
  octet_static_scaling_options so;
  octet_static_scaling_options_init(&so);
  so.scale = 2.0f;
  c.rule.mode = Mode::Static;
  c.rule.static_scale = 2.0f;
  c.rule.name = "static";
  EXPECT_OK(octet_recipe_create_static(&so, &c.recipe));
  out.push_back(c);
  for (int32_t rounding : {OCTET_MX_ROUND_RCEIL, OCTET_MX_ROUND_FLOOR}) {
    octet_mxfp8_options mo;
    octet_mxfp8_options_init(&mo);
    mo.rounding = rounding;
    mo.format = OCTET_FORMAT_HYBRID;
    c.rule = Rule{};
    c.rule.mode = Mode::Mx;
    c.rule.mx_rounding = rounding;
    c.rule.format = OCTET_FORMAT_HYBRID;
    c.rule.name = rounding == OCTET_MX_ROUND_RCEIL ? "mxfp8 rceil hybrid" : "mxfp8 floor hybrid";
    EXPECT_OK(octet_recipe_create_mxfp8(&mo, &c.recipe));
    out.push_back(c);
  }
  c.rule = Rule{};
  c.rule.mode = Mode::Block;
  c.rule.format = OCTET_FORMAT_E4M3;  // the block recipe's default
  c.rule.name = "block 1x128/128x128 e4m3";
  EXPECT_OK(octet_recipe_create_block(nullptr, &c.recipe));
  out.push_back(c);
  for (int hp_wgrad : {0, 1}) {
    octet_rowwise_scaling_options ro;
    octet_rowwise_scaling_options_init(&ro);
    ro.high_precision_wgrad = hp_wgrad;
    c.rule = Rule{};
    c.rule.mode = Mode::Rowwise;
    c.rule.format = OCTET_FORMAT_E4M3;  // the rowwise recipe's default
    c.rule.wgrad = hp_wgrad == 0;
    c.rule.name = hp_wgrad ? "rowwise e4m3, high-precision wgrad" : "rowwise e4m3";
    EXPECT_OK(octet_recipe_create_rowwise(&ro, &c.recipe));
    out.push_back(c);
  }
  return out;
}

void destroy(std::vector<RecipeCase>& cases) {
  for (RecipeCase& c : cases) octet_recipe_destroy(c.recipe);
}

// Rows of very different magnitudes (x: 2^0 .. 2^-18, dy: 2^0 .. 2^-16), so
// that a block down a column is scaled differently from the blocks along its
// rows (for MXFP8 enough to push small rows into the subnormals): a
// columnwise usage made by transposing the rowwise codes would not match.
Fvec row_scaled(Fvec v, int64_t cols, int period, int step) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::ldexp(v[i], -step * int((int64_t(i) / cols) % period));
  return v;
}
Fvec data_x(const Spec& s) { return row_scaled(rand_f(size_t(s.rows * s.hidden), 71, 2.0), s.hidden, 7, 3); }
Fvec data_dy(const Spec& s) { return row_scaled(rand_f(size_t(s.rows * s.out()), 72, 0.5), s.out(), 5, 4); }

// Issue requirement: every layer, every recipe, gradients within the bound
// of a reference that quantizes exactly.
TEST(LayersFp8Exact, EveryLayerEveryRecipeMatchesQuantizingReference) {
  std::vector<RecipeCase> cases = all_recipes();
  for (const Spec& s : all_specs()) {
    const Params p = make_params(s);
    const Fvec x = data_x(s), dy = data_dy(s);
    for (const RecipeCase& c : cases) {
      const std::string what = s.text() + ", " + c.rule.name;
      SCOPED_TRACE(what);
      Out want = reference(s, c.rule, true, p, x, dy);
      Out got = run(s, c.recipe, Options{}, p, x, dy);
      expect_matches(got, want, what);
    }
  }
  destroy(cases);
}

// The reference above is not blind: without quantization it differs from
// the FP8 results, and the high-precision layer matches its FP32 chain.
TEST(LayersFp8Exact, ReferenceDistinguishesQuantizationAndMatchesHighPrecision) {
  std::vector<RecipeCase> cases = all_recipes();
  for (const Spec& s : all_specs()) {
    const Params p = make_params(s);
    const Fvec x = data_x(s), dy = data_dy(s);
    SCOPED_TRACE(s.text());
    Out hp_want = reference(s, Rule{}, false, p, x, dy);
    expect_matches(run(s, nullptr, Options{}, p, x, dy), hp_want, s.text() + " high precision");
    for (const RecipeCase& c : cases) {
      Out fp8 = reference(s, c.rule, true, p, x, dy);
      size_t differ = 0;
      for (size_t i = 0; i < fp8.y.size(); ++i) differ += fp8.y[i] != hp_want.y[i];
      EXPECT_GT(differ, fp8.y.size() / 2) << c.rule.name;
    }
  }
  // Block recipes: the columnwise usage is quantized along columns, not the
  // transpose of the rowwise codes; the two differ on this data (x and dy).
  Spec s;
  for (Mode mode : {Mode::Mx, Mode::Block})
    for (const Fvec& m : {data_x(s), data_dy(s)}) {
      Rule r;
      r.mode = mode;
      const int64_t cols = int64_t(m.size()) / s.rows, bk = mode == Mode::Mx ? 32 : 128;
      Operand col = operand(r, true, OCTET_ROLE_INPUT, true, m, s.rows, cols);
      Operand row = operand(r, true, OCTET_ROLE_INPUT, false, m, s.rows, cols);
      size_t differ = 0;
      for (int64_t i = 0; i < s.rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          differ += col.v[size_t(j * s.rows + i)] * col.scale_at(j, i / bk) !=
                    row.v[size_t(i * cols + j)] * row.scale_at(i, j / bk);
      EXPECT_GT(differ, m.size() / 20) << (mode == Mode::Mx ? "mxfp8" : "1x128");
    }
  destroy(cases);
}

// Block recipes on every profile: the columnwise usages are separate copies
// everywhere, so the results are the same bits.
TEST(LayersFp8Exact, BlockRecipesAcrossProfiles) {
  std::vector<RecipeCase> cases = all_recipes();
  Spec s;
  s.kind = Kind::Mlp;
  s.act = OCTET_LAYER_SWIGLU;
  s.rows = 40;
  const Params p = make_params(s);
  const Fvec x = data_x(s), dy = data_dy(s);
  for (const RecipeCase& c : cases) {
    if (c.rule.mode != Mode::Mx && c.rule.mode != Mode::Block && c.rule.mode != Mode::Rowwise) continue;
    SCOPED_TRACE(c.rule.name);
    Out want = reference(s, c.rule, true, p, x, dy);
    for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
      Options o;
      o.profile = profile;
      expect_matches(run(s, c.recipe, o, p, x, dy), want, std::string(c.rule.name) + " profile " +
                                                              std::to_string(profile));
    }
  }
  destroy(cases);
}

// ---- options of LayerNormLinear and LayerNormMLP ---------------------------------

std::vector<Spec> fused_specs() {
  std::vector<Spec> out;
  for (const Spec& s : all_specs())
    if (s.kind != Kind::Linear) {
      Spec t = s;
      t.rows = 36;
      out.push_back(t);
    }
  return out;
}

// minimize_memory, weight_cache, skip_weight_allocation change what is kept,
// not what is computed: the same bits, on both capability profiles.
TEST(FusedLayersOptions, MemoryOptionsGiveIdenticalResults) {
  std::vector<RecipeCase> cases = all_recipes();
  for (const Spec& s : fused_specs()) {
    const Params p = make_params(s);
    const Fvec x = data_x(s), dy = data_dy(s);
    for (const RecipeCase& c : cases) {
      if (c.rule.mode == Mode::Static || c.rule.mode == Mode::Delayed) continue;  // same paths as current
      for (int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
        Options base;
        base.profile = profile;
        const std::string what = s.text() + ", " + c.rule.name + ", profile " + std::to_string(profile);
        SCOPED_TRACE(what);
        Out want = run(s, c.recipe, base, p, x, dy);
        expect_matches(want, reference(s, c.rule, true, p, x, dy), what);
        for (int option = 0; option < 4; ++option) {
          Options o = base;
          if (option == 0) o.minimize = 1;
          if (option == 1) o.cache = 1;
          if (option == 2) o.skip = 1;
          if (option == 3) o.minimize = o.cache = 1;
          expect_same(run(s, c.recipe, o, p, x, dy), want, what + " option " + std::to_string(option));
        }
      }
    }
  }
  destroy(cases);
}

// Linear with every recipe: save_original_input (backward quantizes the
// kept input again), minimize_memory and weight_cache give the same bits.
TEST(LayersFp8Exact, LinearOptionsWithEveryRecipe) {
  std::vector<RecipeCase> cases = all_recipes();
  Spec s;
  s.rows = 40;
  const Params p = make_params(s);
  const Fvec x = data_x(s), dy = data_dy(s);
  for (const RecipeCase& c : cases) {
    SCOPED_TRACE(c.rule.name);
    Options base;
    base.profile = OCTET_PROFILE_HOPPER_LIKE;
    Out want = run(s, c.recipe, base, p, x, dy);
    expect_matches(want, reference(s, c.rule, true, p, x, dy), c.rule.name);
    for (int option = 0; option < 4; ++option) {
      Options o = base;
      o.save_original = option == 0 || option == 3;
      o.minimize = option == 1 || option == 3;
      o.cache = option == 2 || option == 3;
      expect_same(run(s, c.recipe, o, p, x, dy), want, std::string(c.rule.name) + " option " + std::to_string(option));
    }
  }
  destroy(cases);
}

// override_fprop/dgrad/wgrad of a delayed recipe: that GEMM in high
// precision, the others in FP8, each against the reference chain.
TEST(FusedLayersOptions, OverridePrecisionPerGemm) {
  for (const Spec& s : fused_specs()) {
    const Params p = make_params(s);
    const Fvec x = data_x(s), dy = data_dy(s);
    for (int which = 0; which < 4; ++which) {
      octet_delayed_scaling_options o;
      octet_delayed_scaling_options_init(&o);
      o.override_fprop = which == 0 || which == 3;
      o.override_dgrad = which == 1 || which == 3;
      o.override_wgrad = which == 2 || which == 3;
      octet_recipe* recipe = nullptr;
      ASSERT_EQ(octet_recipe_create_delayed(&o, &recipe), OCTET_STATUS_SUCCESS);
      Rule r;
      r.mode = Mode::Delayed;
      r.fprop = !o.override_fprop;
      r.dgrad = !o.override_dgrad;
      r.wgrad = !o.override_wgrad;
      const std::string what = s.text() + ", override " + std::to_string(which);
      SCOPED_TRACE(what);
      Out got = run(s, recipe, Options{}, p, x, dy);
      expect_matches(got, reference(s, r, true, p, x, dy), what);
      if (which == 3) expect_same(got, run(s, nullptr, Options{}, p, x, dy), what + " vs high precision");
      octet_recipe_destroy(recipe);
    }
  }
}

// Two micro-batches in flight, backwards in reverse order with accumulate:
// each gradient is the FP32 sum of the separate runs; overwrite restarts.
TEST(FusedLayersOptions, SeveralSavedHandlesAccumulateAndOverwrite) {
  std::vector<RecipeCase> cases = all_recipes();
  for (const Spec& s : fused_specs()) {
    const Params p = make_params(s);
    for (const RecipeCase& c : cases) {
      if (c.rule.mode != Mode::Current && c.rule.mode != Mode::Block) continue;
      const std::string what = s.text() + ", " + c.rule.name;
      SCOPED_TRACE(what);
      Options opt;
      opt.profile = OCTET_PROFILE_HOPPER_LIKE;
      opt.cache = c.rule.mode == Mode::Block;
      Rig rig(s, c.recipe, opt, p);
      const Fvec x1 = data_x(s), x2 = rand_f(x1.size(), 81, 1.5), d1 = data_dy(s), d2 = rand_f(d1.size(), 82, 0.3);
      octet_tensor *tx1 = rig.tensor(s.rows, s.hidden), *tx2 = rig.tensor(s.rows, s.hidden);
      octet_tensor *td1 = rig.tensor(s.rows, s.out()), *td2 = rig.tensor(s.rows, s.out());
      octet_tensor *ty = rig.tensor(s.rows, s.out()), *tdx = rig.tensor(s.rows, s.hidden);
      upload(tx1, to_vec(x1));
      upload(tx2, to_vec(x2));
      upload(td1, to_vec(d1));
      upload(td2, to_vec(d2));
      auto grads = [&] {
        Params g;
        for (const auto& [name, v] : p) g[name] = down(grad(rig.layer, name.c_str()));
        return g;
      };
      octet_saved *s1 = nullptr, *s2 = nullptr;
      OK(octet_layer_forward(rig.layer, tx1, ty, 1, &s1));
      OK(octet_layer_backward(rig.layer, &s1, td1, tdx, 0));
      const Params g1 = grads();
      OK(octet_layer_forward(rig.layer, tx2, ty, 1, &s2));
      OK(octet_layer_backward(rig.layer, &s2, td2, tdx, 0));
      const Params g2 = grads();
      // The separate runs are the reference's.
      Out want1 = reference(s, c.rule, true, p, x1, d1);
      for (const auto& [name, v] : want1.grads) {
        auto it = want1.bounds.find(name);
        expect_within(to_vec(g1.at(name)), to_vec(v), it != want1.bounds.end() ? it->second : Vec(v.size(), 0.0),
                      what + " " + name);
      }
      OK(octet_layer_forward(rig.layer, tx1, ty, 1, &s1));
      OK(octet_layer_forward(rig.layer, tx2, ty, 1, &s2));
      OK(octet_layer_backward(rig.layer, &s2, td2, tdx, 0));
      OK(octet_layer_backward(rig.layer, &s1, td1, tdx, 1));
      EXPECT_EQ(s1, nullptr);
      const Params g = grads();
      for (const auto& [name, v] : g)
        for (size_t i = 0; i < v.size(); ++i)
          ASSERT_EQ(v[i], g2.at(name)[i] + g1.at(name)[i]) << what << " " << name << "[" << i << "]";
      OK(octet_layer_forward(rig.layer, tx1, ty, 1, &s1));
      OK(octet_layer_backward(rig.layer, &s1, td1, tdx, 0));
      const Params again = grads();
      for (const auto& [name, v] : again) expect_identical(to_vec(v), to_vec(g1.at(name)), what + " overwrite " + name);
    }
  }
  destroy(cases);
}

// ---- observation (static recipe, observe = 1) ------------------------------------

struct Observed {
  float amax = 0.0f;
  uint64_t saturated = 0, total = 0;
};

// numerics.md section 10 for per-tensor quantization: y = x * scale,
// saturated when the non-saturating conversion would overflow.
void observe(Observed& o, const Fvec& v, float scale, int32_t dtype) {
  for (float x : v) {
    const float y = x * scale;
    o.amax = std::fmax(o.amax, std::fabs(x));
    o.saturated += dtype == OCTET_DTYPE_E4M3 ? std::fabs(y) > 464.0f : std::fabs(y) >= 61440.0f;
    ++o.total;
  }
}

void expect_observed(octet_layer* layer, size_t linear, int32_t role, const Observed& want, const std::string& what) {
  octet_quantizer* q = nullptr;
  OK(octet_layer_get_quantizer(layer, linear, role, &q));
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  OK(octet_quantizer_get_info(q, &info));
  EXPECT_EQ(info.observed_total, want.total) << what;
  EXPECT_EQ(info.observed_saturated, want.saturated) << what;
  EXPECT_EQ(info.observed_amax, want.amax) << what;
}

TEST(LayersObservation, StaticRecipeCountsEveryQuantizeInsideLayers) {
  const float scale = 300.0f;  // x in +-2 saturates E4M3 above |x| = 464 / 300
  octet_static_scaling_options so;
  octet_static_scaling_options_init(&so);
  so.scale = scale;
  so.observe = 1;
  octet_recipe* recipe = nullptr;
  ASSERT_EQ(octet_recipe_create_static(&so, &recipe), OCTET_STATUS_SUCCESS);
  for (Spec s : all_specs()) {
    if (s.kind == Kind::Mlp && s.act == OCTET_LAYER_SWIGLU) continue;
    s.rows = 20;
    const std::string what = s.text();
    SCOPED_TRACE(what);
    const Params p = make_params(s);
    const Fvec x = data_x(s), dy = rand_f(size_t(s.rows * s.out()), 91, 300.0);  // some E5M2 saturation too
    Rig rig(s, recipe, Options{}, p);
    octet_tensor *tx = rig.tensor(s.rows, s.hidden), *ty = rig.tensor(s.rows, s.out());
    octet_tensor *tdy = rig.tensor(s.rows, s.out()), *tdx = rig.tensor(s.rows, s.hidden);
    upload(tx, to_vec(x));
    upload(tdy, to_vec(dy));
    // Two steps: the counts add up.
    for (int step = 0; step < 2; ++step) {
      octet_saved* saved = nullptr;
      OK(octet_layer_forward(rig.layer, tx, ty, 1, &saved));
      OK(octet_layer_backward(rig.layer, &saved, tdy, tdx, 0));
    }
    Rule r;
    r.mode = Mode::Static;
    r.static_scale = scale;
    Observed in, w, g, in2, w2, g2;
    if (s.kind == Kind::Mlp) {
      // The reference chain gives the FC2 input and the FC1 gradient.
      const int64_t R = s.rows, H = s.hidden, F = s.ffn;
      NormRef nr = ref_norm(s, p, x);
      LinearRef l1 = ref_linear_forward(r, true, nr.n, p.at("fc1_weight"), p.at("fc1_bias"), R, H, F);
      Fvec a(size_t(R * F));
      for (size_t i = 0; i < a.size(); ++i) a[i] = gelu_f(l1.y[i]);
      LinearRef l2 = ref_linear_forward(r, true, a, p.at("fc2_weight"), p.at("fc2_bias"), R, F, H);
      ref_linear_backward(r, true, a, p.at("fc2_weight"), dy, R, F, H, l2);
      Fvec dh(a.size());
      for (size_t i = 0; i < dh.size(); ++i) dh[i] = l2.dx[i] * gelu_df(l1.y[i]);
      for (int step = 0; step < 2; ++step) {
        observe(in, nr.n, scale, OCTET_DTYPE_E4M3);
        observe(w, p.at("fc1_weight"), scale, OCTET_DTYPE_E4M3);
        observe(g, dh, scale, OCTET_DTYPE_E5M2);
        observe(in2, a, scale, OCTET_DTYPE_E4M3);
        observe(w2, p.at("fc2_weight"), scale, OCTET_DTYPE_E4M3);
        observe(g2, dy, scale, OCTET_DTYPE_E5M2);
      }
      expect_observed(rig.layer, 1, OCTET_ROLE_INPUT, in2, what + " fc2 input");
      expect_observed(rig.layer, 1, OCTET_ROLE_WEIGHT, w2, what + " fc2 weight");
      expect_observed(rig.layer, 1, OCTET_ROLE_GRADIENT, g2, what + " fc2 gradient");
    } else {
      const Fvec n = s.kind == Kind::Linear ? x : ref_norm(s, p, x).n;
      for (int step = 0; step < 2; ++step) {
        observe(in, n, scale, OCTET_DTYPE_E4M3);
        observe(w, p.at("weight"), scale, OCTET_DTYPE_E4M3);
        observe(g, dy, scale, OCTET_DTYPE_E5M2);
      }
    }
    EXPECT_GT(in.saturated, 0u);
    EXPECT_GT(g.saturated + g2.saturated, 0u);
    expect_observed(rig.layer, 0, OCTET_ROLE_INPUT, in, what + " input");
    expect_observed(rig.layer, 0, OCTET_ROLE_WEIGHT, w, what + " weight");
    expect_observed(rig.layer, 0, OCTET_ROLE_GRADIENT, g, what + " gradient");
  }
  octet_recipe_destroy(recipe);
}

}  // namespace
}  // namespace layers_test

namespace layers_test {
namespace {

// FP8-only (inference) weights with every recipe: quantized at load in the
// recipe's scaling mode; the output matches the quantizing reference's y.
TEST(LayersFp8Exact, Fp8OnlyWeightsWithEveryRecipe) {
  std::vector<RecipeCase> cases = all_recipes();
  Spec s;
  s.rows = 40;
  const Params p = make_params(s);
  const Fvec x = data_x(s), dy = data_dy(s);
  for (const RecipeCase& c : cases) {
    SCOPED_TRACE(c.rule.name);
    octet_context* ctx = make_context("reference", OCTET_PROFILE_HOPPER_LIKE);
    ASSERT_NE(ctx, nullptr);
    octet_linear_options lo;
    octet_linear_options_init(&lo);
    lo.in_features = s.hidden;
    lo.out_features = s.ffn;
    lo.recipe = c.recipe;
    lo.weight_storage = OCTET_WEIGHTS_FP8_ONLY;
    octet_layer* layer = nullptr;
    OK(octet_layer_create_linear(ctx, &lo, &layer));
    octet::Tensor w = make_tensor(ctx, OCTET_DTYPE_FP32, s.ffn, s.hidden);
    octet::Tensor tx = make_tensor(ctx, OCTET_DTYPE_FP32, s.rows, s.hidden);
    octet::Tensor ty = make_tensor(ctx, OCTET_DTYPE_FP32, s.rows, s.ffn);
    upload(w.get(), to_vec(p.at("weight")));
    upload(tx.get(), to_vec(x));
    upload(param(layer, "bias"), to_vec(p.at("bias")));
    EXPECT_OK(octet_layer_load_weight(layer, 0, w.get()));
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    EXPECT_OK(octet_tensor_get_info(param(layer, "weight"), &info));
    int32_t dtype = 0, mode = 0;
    EXPECT_OK(octet_recipe_tensor_format(c.recipe, OCTET_ROLE_WEIGHT, &dtype, &mode));
    EXPECT_EQ(info.dtype, dtype);
    EXPECT_EQ(info.scaling_mode, mode);
    EXPECT_OK(octet_layer_forward(layer, tx.get(), ty.get(), 0, nullptr));
    Out want = reference(s, c.rule, true, p, x, dy);
    expect_within(download(ty.get()), to_vec(want.y), want.bounds.at("y"), std::string(c.rule.name) + " y");
    for (octet::Tensor* t : {&w, &tx, &ty}) *t = octet::Tensor();  // before the layer
    octet_layer_destroy(layer);
    octet_context_destroy(ctx);
  }
  destroy(cases);
}

}  // namespace
}  // namespace layers_test
