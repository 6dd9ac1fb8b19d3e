// Every layer kind on the cpu backend against the same layer on the
// reference, through octet.h: Linear with bias, LayerNormLinear (LayerNorm,
// RMSNorm) and LayerNormMLP (GELU, SwiGLU; LayerNorm and RMSNorm), forward
// and backward, in FP32, BF16 and with every FP8 recipe (delayed, current,
// static, MXFP8 RCEIL/FLOOR, 1x128/128x128 blocks). The layers' GEMMs differ
// from the reference's only in summation order (within the bound of
// numerics.md section 8). Linear's outputs are each one GEMM of operands
// both backends hold bit for bit (the same uploads, quantized bit-exactly),
// so every element of y, dx and dweight is checked against that per-element
// bound. In the composed layers a difference in one GEMM passes through
// norms, activations and FP8 re-quantization; every element of every output
// is checked against a bound propagated from that GEMM bound through those
// kernels (see "per-element bounds for the composed layers" below). The
// output bias gradient (column sums of the given dy, no GEMM before it) must
// be bit-identical. (numerics.md's GEMM bound is its section 5.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "layer_test_helpers.hpp"

// The backend compared with the reference (tests/kokkos_backend reuses this suite).
#ifndef OCTET_TEST_BACKEND
#define OCTET_TEST_BACKEND "cpu"
#endif

namespace layers_test {
namespace {

enum class Kind { Linear, LnLinear, Mlp };

struct Case {
  Kind kind = Kind::Linear;
  int32_t norm = OCTET_LAYER_LAYERNORM;
  int32_t activation = OCTET_LAYER_GELU;
  int64_t rows = 48, hidden = 64, ffn = 96;
  std::string name() const {
    std::string n = kind == Kind::Linear ? "Linear" : kind == Kind::LnLinear ? "LayerNormLinear" : "LayerNormMLP";
    if (kind != Kind::Linear) n += norm == OCTET_LAYER_LAYERNORM ? " layernorm" : " rmsnorm";
    if (kind == Kind::Mlp) n += activation == OCTET_LAYER_GELU ? " gelu" : " swiglu";
    return n;
  }
  int64_t out() const { return kind == Kind::Mlp ? hidden : ffn; }
};

struct LayerRun {
  Vec x, dy;                      // the inputs as stored (rounded to the dtype)
  std::map<std::string, Vec> params;  // likewise
  Vec y, dx;
  std::map<std::string, Vec> grads;
  std::string output_bias;  // the parameter whose gradient is sum_rows(dy)
};

LayerRun run(const char* backend, const Case& c, int32_t dtype, const octet_recipe* recipe) {
  LayerRun r;
  octet_context* ctx = make_context(backend, OCTET_PROFILE_NATIVE);
  EXPECT_NE(ctx, nullptr) << backend << ": " << octet_last_error_message();
  if (ctx == nullptr) return r;
  octet_linear_options lo;
  octet_linear_options_init(&lo);
  lo.in_features = c.hidden;
  lo.out_features = c.ffn;
  lo.params_dtype = dtype;
  lo.recipe = recipe;
  lo.bias = 1;
  octet_layer* layer = nullptr;
  if (c.kind == Kind::Linear) {
    EXPECT_OK(octet_layer_create_linear(ctx, &lo, &layer));
    r.output_bias = "bias";
  } else if (c.kind == Kind::LnLinear) {
    octet_layernorm_linear_options o;
    octet_layernorm_linear_options_init(&o);
    o.linear = &lo;
    o.norm = c.norm;
    EXPECT_OK(octet_layer_create_layernorm_linear(ctx, &o, &layer));
    r.output_bias = "bias";
  } else {
    octet_layernorm_mlp_options o;
    octet_layernorm_mlp_options_init(&o);
    o.linear = &lo;
    o.ffn_features = c.ffn;
    o.norm = c.norm;
    o.activation = c.activation;
    EXPECT_OK(octet_layer_create_layernorm_mlp(ctx, &o, &layer));
    r.output_bias = "fc2_bias";
  }
  if (layer == nullptr) {
    octet_context_destroy(ctx);
    return r;
  }
  size_t count = 0;
  EXPECT_OK(octet_layer_parameter_count(layer, &count));
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    EXPECT_OK(octet_layer_parameter_name(layer, i, &name));
    names.push_back(name);
    octet_tensor* p = param(layer, name);
    octet_tensor_info info{};
    info.struct_size = sizeof info;
    EXPECT_OK(octet_tensor_get_info(p, &info));
    size_t n = 1;
    for (int d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
    Vec v = random_vec(n, 100 + uint32_t(i), 0.3);
    if (std::string(name) == "norm_weight")
      for (double& g : v) g += 1.0;
    upload(p, v);
    r.params[name] = download(p);
  }
  octet_tensor* tx = make_tensor(ctx, dtype, c.rows, c.hidden);
  octet_tensor* ty = make_tensor(ctx, dtype, c.rows, c.out());
  octet_tensor* tdy = make_tensor(ctx, dtype, c.rows, c.out());
  octet_tensor* tdx = make_tensor(ctx, dtype, c.rows, c.hidden);
  Vec x = random_vec(size_t(c.rows * c.hidden), 7, 2.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 0.25 * double((i / size_t(c.hidden)) % 4);
  upload(tx, x);
  upload(tdy, random_vec(size_t(c.rows * c.out()), 8, 0.5));
  r.x = download(tx);
  r.dy = download(tdy);
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(layer, tx, ty, 1, &saved));
  EXPECT_OK(octet_layer_backward(layer, &saved, tdy, tdx, 0));
  r.y = download(ty);
  r.dx = download(tdx);
  for (const std::string& n : names) r.grads[n] = download(grad(layer, n.c_str()));
  for (octet_tensor* t : {tx, ty, tdy, tdx}) octet_tensor_destroy(t);
  octet_layer_destroy(layer);
  octet_context_destroy(ctx);
  return r;
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  Case c;
  out.push_back(c);
  for (int32_t norm : {OCTET_LAYER_LAYERNORM, OCTET_LAYER_RMSNORM}) {
    c.kind = Kind::LnLinear;
    c.norm = norm;
    out.push_back(c);
    for (int32_t act : {OCTET_LAYER_GELU, OCTET_LAYER_SWIGLU}) {
      c.kind = Kind::Mlp;
      c.activation = act;
      out.push_back(c);
    }
  }
  return out;
}

// Linear: y = x W^T + b, dx = dy W, dW = dy^T x, each one GEMM, each element
// within the bound of numerics.md section 8 of the reference's. `magnitude`
// multiplies the operands' sum of |products|: 1 for high-precision operands;
// for FP8 operands the bound is over the dequantized values, which the test
// does not recompute per recipe: a normal E4M3/E5M2 code is within a factor
// (1 + 2^-3) of its input, so 2 covers a product of two. `out_ulp` is the
// relative rounding step of the output dtype (both backends round their
// FP32 results, which may differ within the bound, to it).
void expect_linear_within_bound(const LayerRun& got, const LayerRun& want, const Case& c, double magnitude,
                                double out_ulp) {
  ASSERT_EQ(c.kind, Kind::Linear);
  ASSERT_TRUE(want.params.count("weight"));
  const Vec& w = want.params.at("weight");  // [ffn, hidden]
  const auto check = [&](const Vec& g, const Vec& r, Vec bound, const std::string& what) {
    for (size_t i = 0; i < bound.size(); ++i) bound[i] = magnitude * bound[i] + out_ulp * std::fabs(r[i]);
    expect_within(g, r, bound, what);
  };
  check(got.y, want.y, gemm_bound(want.x, w, c.rows, c.ffn, c.hidden), "y");
  check(got.dx, want.dx, gemm_bound(want.dy, transpose(w, c.ffn, c.hidden), c.rows, c.hidden, c.ffn), "dx");
  check(got.grads.at("weight"), want.grads.at("weight"),
        gemm_bound(transpose(want.dy, c.rows, c.ffn), transpose(want.x, c.rows, c.hidden), c.ffn, c.hidden, c.rows),
        "grad weight");
  expect_identical(got.grads.at("bias"), want.grads.at("bias"), "grad bias");
}

// ---- per-element bounds for the composed layers ---------------------------
//
// LayerNormLinear and LayerNormMLP are Linear's GEMMs joined by kernels that
// both backends compute bit for bit from the same inputs (norm, activation,
// bias gradient, quantize), so a difference between the backends starts only
// in a GEMM's summation order (numerics.md section 8) and then travels
// through those kernels. The bound follows it element by element. Every
// intermediate t carries v (an exact, double, evaluation of the layer), e >=
// |t_ref - v| and d >= |t_cpu - t_ref|; |t_ref| <= |v| + e is the magnitude
// the rounding terms use. Both bounds propagate by the same rules:
//  - GEMM C = A B^T: sum_k (D_A |B| + |A| D_B + D_A D_B) + the section 5 bound
//    k 2^-23 sum_k |A||B| (for d over both sides' magnitudes), then the
//    output rounding;
//  - rounding to a high-precision dtype: one spacing, <= ulp |t| (ulp 2^-23
//    FP32, 2^-7 BF16);
//  - FP8 quantization: e gains half a step (2^-3 |t| covers E5M2, the
//    coarser) and d, where the inputs may differ, a whole step (the codes may
//    fall on either side of a boundary, and with a scale taken from the data
//    every code may move), plus the dequantized subnormal step <= 2^-9
//    max(1, 2 amax / 448) (the largest of every recipe's first-step scale);
//  - GELU/SwiGLU forward and backward: Lipschitz constants over the interval
//    (|gelu'| <= 1.13, |gelu''| <= 0.8, |silu'| <= 1.1, |silu''| <= 0.5,
//    |silu(p)| <= |p|) plus the FP32 evaluation error (16 ulp of the largest
//    term per side, octet_math's tanhf/expf included);
//  - column sums over rows (bias gradients, dgamma, dbeta): the sum of the
//    bounds plus the summation error (rows + 2) 2^-24 sum |t| per side;
//  - the norm's backward is linear in its dy (x, mean and rstd are the same
//    bits on both sides): with g = dy gamma, |D dx_j| <= rstd (|gamma_j| D_j
//    + mean_k |gamma_k| D_k + |xhat_j| mean_k |gamma_k xhat_k| D_k) plus the
//    FP32 evaluation (cols + 8) 2^-24 rstd (|g_j| + mean|g| + |xhat_j|
//    mean|g xhat|) per side; xhat and rstd come from the double forward with a
//    2^-10 relative slack for the FP32 forward's rounding.
// Nothing here is fitted to observed differences. Where a recipe may move an
// FP8 code (every FP8 recipe: a GEMM result that differs in its last bit can
// cross a rounding boundary) the bound holds a whole step of that element,
// which through the next GEMM is a sum over k of such steps: those outputs'
// bounds are of the order of the values themselves (the test logs the
// ratios with OCTET_TEST_VERBOSE=1), the tightest a per-element argument
// gives without knowing which codes moved.
struct Bounded {
  Vec v;  // the value of an exact (double) evaluation of the layer
  Vec e;  // >= |reference - v| (its FP32 roundings and FP8 quantizations)
  Vec d;  // >= |cpu - reference|
  double m(size_t i) const { return std::fabs(v[i]) + e[i]; }  // >= |reference|
  static Bounded zeros(size_t n) { return Bounded{Vec(n, 0.0), Vec(n, 0.0), Vec(n, 0.0)}; }
};

double ulp_of(int32_t dtype) { return dtype == OCTET_DTYPE_FP32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -7); }

Bounded exact(const Vec& v) { return Bounded{v, Vec(v.size(), 0.0), Vec(v.size(), 0.0)}; }

void round_to(Bounded& b, int32_t dtype) {
  const double u = ulp_of(dtype);
  for (size_t i = 0; i < b.v.size(); ++i) {
    const double m = b.m(i);
    b.e[i] += u * m;
    b.d[i] += u * (m + b.d[i]);
  }
}

void fp8_quantize(Bounded& b) {
  double amax = 0.0, dmax = 0.0;
  for (size_t i = 0; i < b.v.size(); ++i) {
    amax = std::max(amax, b.m(i));
    dmax = std::max(dmax, b.d[i]);
  }
  // Half a step from the value (round to nearest) for the reference; a whole
  // step between the backends where the inputs may differ.
  const double sub = std::ldexp(1.0, -9) * std::max(1.0, 2.0 * amax / 448.0);
  for (size_t i = 0; i < b.v.size(); ++i) {
    b.e[i] += 0.125 * b.m(i) + sub;
    if (dmax > 0.0) b.d[i] += 0.25 * (b.m(i) + b.d[i]) + sub;
  }
}

// C[m,n] = A[m,k] B[n,k]^T (+ bias[n]), rounded to `dtype`. The reference
// sums in FP32 (its own error against v: the section 5 bound again).
Bounded gemm(const Bounded& a, const Bounded& b, int64_t m, int64_t n, int64_t k, int32_t dtype,
             const Vec* bias = nullptr) {
  Bounded c = Bounded::zeros(size_t(m * n));
  const double unit = double(k) * std::ldexp(1.0, -23);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double v = 0.0, pe = 0.0, pd = 0.0, mm = 0.0, all = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        const size_t ia = size_t(i * k + l), ib = size_t(j * k + l);
        const double ma = a.m(ia), mb = b.m(ib);
        v += a.v[ia] * b.v[ib];
        pe += a.e[ia] * std::fabs(b.v[ib]) + std::fabs(a.v[ia]) * b.e[ib] + a.e[ia] * b.e[ib];
        pd += a.d[ia] * mb + ma * b.d[ib] + a.d[ia] * b.d[ib];
        mm += ma * mb;
        all += (ma + a.d[ia]) * (mb + b.d[ib]);
      }
      const size_t o = size_t(i * n + j);
      c.v[o] = v + (bias ? (*bias)[size_t(j)] : 0.0);
      c.e[o] = pe + unit * mm;
      c.d[o] = pd + unit * all;
    }
  round_to(c, dtype);
  return c;
}

Bounded transposed(const Bounded& b, int64_t rows, int64_t cols) {
  return Bounded{transpose(b.v, rows, cols), transpose(b.e, rows, cols), transpose(b.d, rows, cols)};
}

// Column sums over rows, in FP32, then stored in `dtype`.
Bounded column_sums(const Bounded& x, int64_t rows, int64_t cols, int32_t dtype) {
  Bounded s = Bounded::zeros(size_t(cols));
  Vec mag(size_t(cols), 0.0), magd(size_t(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      s.v[size_t(c)] += x.v[i];
      s.e[size_t(c)] += x.e[i];
      s.d[size_t(c)] += x.d[i];
      mag[size_t(c)] += x.m(i);
      magd[size_t(c)] += x.m(i) + x.d[i];
    }
  const double u = double(rows + 2) * std::ldexp(1.0, -24);
  for (int64_t c = 0; c < cols; ++c) {
    s.e[size_t(c)] += u * mag[size_t(c)];
    s.d[size_t(c)] += 2.0 * u * magd[size_t(c)];
  }
  round_to(s, dtype);
  return s;
}

constexpr double kEval = 16.0 * 0x1p-24;  // one side's evaluation error, 16 ulp

double gelu_value(double x) { return 0.5 * x * (1.0 + std::tanh(0.7978845608 * (x + 0.044715 * x * x * x))); }
double gelu_slope(double x) {
  const double t = std::tanh(0.7978845608 * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * 0.7978845608 * (1.0 + 3.0 * 0.044715 * x * x);
}
double sigmoid_value(double a) { return 1.0 / (1.0 + std::exp(-a)); }

// The activation forward (h rows x width, SwiGLU width = 2 n) and backward.
// e and d follow the same Lipschitz rule, each with its own input bound.
Bounded activation_forward(const Bounded& h, int64_t rows, int64_t width, bool swiglu, int32_t dtype) {
  const int64_t n = swiglu ? width / 2 : width;
  Bounded a = Bounded::zeros(size_t(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const size_t o = size_t(r * n + c), ip = size_t(r * width + c);
      if (!swiglu) {
        a.v[o] = gelu_value(h.v[ip]);
        a.e[o] = 1.13 * h.e[ip] + kEval * 2.0 * h.m(ip);
        a.d[o] = 1.13 * h.d[ip] + 2.0 * kEval * 2.0 * (h.m(ip) + h.d[ip]);
      } else {
        const size_t iq = ip + size_t(n);
        a.v[o] = h.v[ip] * sigmoid_value(h.v[ip]) * h.v[iq];
        a.e[o] = 1.1 * h.e[ip] * h.m(iq) + h.m(ip) * h.e[iq] + kEval * 2.0 * h.m(ip) * h.m(iq);
        const double mp = h.m(ip) + h.d[ip], mq = h.m(iq) + h.d[iq];
        a.d[o] = 1.1 * h.d[ip] * mq + mp * h.d[iq] + 2.0 * kEval * 2.0 * mp * mq;
      }
    }
  round_to(a, dtype);
  return a;
}

Bounded activation_backward(const Bounded& h, const Bounded& da, int64_t rows, int64_t width, bool swiglu,
                            int32_t dtype) {
  const int64_t n = swiglu ? width / 2 : width;
  Bounded dh = Bounded::zeros(size_t(rows * width));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      const size_t g = size_t(r * n + c), ip = size_t(r * width + c);
      const double mg = da.m(g), mgd = mg + da.d[g];
      if (!swiglu) {
        dh.v[ip] = da.v[g] * gelu_slope(h.v[ip]);
        dh.e[ip] = 1.13 * da.e[g] + mg * 0.8 * h.e[ip] + kEval * 3.0 * mg;
        dh.d[ip] = 1.13 * da.d[g] + mgd * 0.8 * h.d[ip] + 2.0 * kEval * 3.0 * mgd;
      } else {
        const size_t iq = ip + size_t(n);
        const double p = h.v[ip], q = h.v[iq], sg = sigmoid_value(p);
        dh.v[ip] = da.v[g] * q * (sg * (1.0 + p * (1.0 - sg)));
        dh.v[iq] = da.v[g] * (p * sg);
        const double mp = h.m(ip), mq = h.m(iq);
        dh.e[ip] = 1.1 * da.e[g] * mq + 1.1 * mg * h.e[iq] + 0.5 * mg * mq * h.e[ip] + kEval * 3.0 * mg * mq;
        dh.e[iq] = da.e[g] * mp + 1.1 * mg * h.e[ip] + kEval * 2.0 * mg * mp;
        const double mpd = mp + h.d[ip], mqd = mq + h.d[iq];
        dh.d[ip] = 1.1 * da.d[g] * mqd + 1.1 * mgd * h.d[iq] + 0.5 * mgd * mqd * h.d[ip] +
                   2.0 * kEval * 3.0 * mgd * mqd;
        dh.d[iq] = da.d[g] * mpd + 1.1 * mgd * h.d[ip] + 2.0 * kEval * 2.0 * mgd * mpd;
      }
    }
  round_to(dh, dtype);
  return dh;
}

// The normalisation forward in double: rstd and xhat per element (the
// reference's FP32 ones are within a relative 2^-10 of them, far more than
// cols' rounding steps), ln = xhat gamma + beta, the same bits on both
// backends (d = 0).
struct NormForward {
  Vec rstd, xhat, xhat_slack;
  Bounded ln;
};

constexpr double kNormSlack = 0x1p-10;

NormForward norm_forward(const Vec& x, const Vec& gamma, const Vec* beta, bool layernorm, int64_t rows, int64_t cols,
                         int32_t dtype) {
  NormForward f;
  f.rstd.resize(size_t(rows));
  f.xhat.resize(size_t(rows * cols));
  f.xhat_slack.resize(size_t(rows * cols));
  f.ln = Bounded::zeros(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0.0, var = 0.0;
    for (int64_t c = 0; c < cols; ++c) mean += x[size_t(r * cols + c)];
    mean = layernorm ? mean / double(cols) : 0.0;
    for (int64_t c = 0; c < cols; ++c) var += (x[size_t(r * cols + c)] - mean) * (x[size_t(r * cols + c)] - mean);
    const double rstd = 1.0 / std::sqrt(var / double(cols) + 1e-5);
    f.rstd[size_t(r)] = rstd;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      f.xhat[i] = (x[i] - mean) * rstd;
      f.xhat_slack[i] = kNormSlack * (std::fabs(x[i] - mean) + std::fabs(x[i]) + std::fabs(mean)) * rstd;
      f.ln.v[i] = f.xhat[i] * gamma[size_t(c)] + (beta ? (*beta)[size_t(c)] : 0.0);
      f.ln.e[i] = f.xhat_slack[i] * std::fabs(gamma[size_t(c)]) + kNormSlack * (beta ? std::fabs((*beta)[size_t(c)]) : 0.0);
    }
  }
  round_to(f.ln, dtype);
  for (double& d : f.ln.d) d = 0.0;
  return f;
}

// The norm's backward from dln: dx rounded to `dtype`, dgamma and dbeta (FP32
// sums, then the parameters' dtype). Linear in dln, so e and d propagate by
// the same |Jacobian|; the reference's own rounding adds to e, both sides'
// to d.
void norm_backward(const NormForward& f, const Vec& gamma, const Bounded& dln, int64_t rows, int64_t cols,
                   int32_t dtype, Bounded& dx, Bounded& dgamma, Bounded& dbeta) {
  dx = Bounded::zeros(size_t(rows * cols));
  const double n = double(cols), eval = (n + 8.0) * std::ldexp(1.0, -24);
  Bounded gx = Bounded::zeros(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    double v_g = 0.0, v_gx = 0.0, e_g = 0.0, e_gx = 0.0, d_g = 0.0, d_gx = 0.0, m_g = 0.0, m_gx = 0.0;
    double md_g = 0.0, md_gx = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const double gm = std::fabs(gamma[size_t(c)]), xh = std::fabs(f.xhat[i]) + f.xhat_slack[i];
      v_g += gamma[size_t(c)] * dln.v[i];
      v_gx += gamma[size_t(c)] * dln.v[i] * f.xhat[i];
      e_g += gm * dln.e[i];
      e_gx += gm * xh * dln.e[i];
      d_g += gm * dln.d[i];
      d_gx += gm * xh * dln.d[i];
      m_g += gm * dln.m(i);
      m_gx += gm * xh * dln.m(i);
      md_g += gm * (dln.m(i) + dln.d[i]);
      md_gx += gm * xh * (dln.m(i) + dln.d[i]);
      gx.v[i] = dln.v[i] * f.xhat[i];
      gx.e[i] = dln.e[i] * xh + std::fabs(dln.v[i]) * f.xhat_slack[i];
      gx.d[i] = dln.d[i] * xh;
    }
    const double s = f.rstd[size_t(r)], sm = s * (1.0 + kNormSlack);
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r * cols + c);
      const double gm = std::fabs(gamma[size_t(c)]), xh = std::fabs(f.xhat[i]) + f.xhat_slack[i];
      const double g = gamma[size_t(c)] * dln.v[i];
      dx.v[i] = s * (g - v_g / n - f.xhat[i] * v_gx / n);
      const double mag = gm * dln.m(i) + m_g / n + xh * m_gx / n;
      const double magd = gm * (dln.m(i) + dln.d[i]) + md_g / n + xh * md_gx / n;
      // e: dln's e through the Jacobian, the slack of xhat and rstd, and the
      // reference's FP32 evaluation.
      dx.e[i] = sm * (gm * dln.e[i] + e_g / n + xh * e_gx / n) + 3.0 * kNormSlack * sm * mag + eval * sm * mag;
      dx.d[i] = sm * (gm * dln.d[i] + d_g / n + xh * d_gx / n) + 2.0 * eval * sm * magd;
    }
  }
  round_to(dx, dtype);
  dgamma = column_sums(gx, rows, cols, dtype);
  dbeta = column_sums(dln, rows, cols, dtype);
}

// Every output of a LayerNormLinear or LayerNormMLP within its propagated
// bound of the reference's; `fp8` whether the recipe quantizes the GEMM
// operands (the FP8 magnitudes are in e, so no `magnitude` factor).
void expect_composed_within_bound(const LayerRun& got, const LayerRun& want, const Case& c, int32_t dtype,
                                  bool fp8) {
  const bool layernorm = c.norm == OCTET_LAYER_LAYERNORM;
  const Vec& gamma = want.params.at("norm_weight");
  const Vec* beta = layernorm ? &want.params.at("norm_bias") : nullptr;
  const int64_t rows = c.rows, hidden = c.hidden;
  NormForward f = norm_forward(want.x, gamma, beta, layernorm, rows, hidden, dtype);
  const auto maybe_fp8 = [&](Bounded b) {
    if (fp8) fp8_quantize(b);
    return b;
  };
  const Bounded ln = maybe_fp8(f.ln);
  const Bounded dy = maybe_fp8(exact(want.dy));
  const auto check = [&](const Vec& g, const Vec& r, const Bounded& b, const std::string& what) {
    ASSERT_EQ(b.d.size(), r.size()) << what;
    expect_within(g, r, b.d, what);
    // The worst observed difference relative to its bound, and the bound
    // relative to the values (how loose it is), for the log.
    double worst = 0.0, loose = 0.0, scale = 0.0;
    for (size_t i = 0; i < r.size(); ++i) {
      if (b.d[i] > 0.0) worst = std::max(worst, std::fabs(g[i] - r[i]) / b.d[i]);
      scale = std::max(scale, std::fabs(r[i]));
      loose = std::max(loose, b.d[i]);
    }
    if (std::getenv("OCTET_TEST_VERBOSE") != nullptr)
      std::printf("  %-18s worst |diff|/bound %.3g, max bound / max|value| %.3g\n", what.c_str(), worst,
                  scale > 0.0 ? loose / scale : 0.0);
  };
  Bounded dln;
  if (c.kind == Kind::LnLinear) {
    const Vec& w = want.params.at("weight");  // [ffn, hidden]
    const Bounded wq = maybe_fp8(exact(w));
    check(got.y, want.y, gemm(ln, wq, rows, c.ffn, hidden, dtype, &want.params.at("bias")), "y");
    check(got.grads.at("weight"), want.grads.at("weight"),
          gemm(transposed(dy, rows, c.ffn), transposed(ln, rows, hidden), c.ffn, hidden, rows, dtype),
          "grad weight");
    dln = gemm(dy, transposed(wq, c.ffn, hidden), rows, hidden, c.ffn, dtype);
  } else {
    const bool swiglu = c.activation == OCTET_LAYER_SWIGLU;
    const Vec& w1 = want.params.at("fc1_weight");  // [width, hidden]
    const Vec& w2 = want.params.at("fc2_weight");  // [hidden, ffn]
    const int64_t width = int64_t(w1.size()) / hidden, n = swiglu ? width / 2 : width;
    ASSERT_EQ(n, c.ffn);
    const Bounded w1q = maybe_fp8(exact(w1)), w2q = maybe_fp8(exact(w2));
    const Bounded h = gemm(ln, w1q, rows, width, hidden, dtype, &want.params.at("fc1_bias"));
    const Bounded a = activation_forward(h, rows, width, swiglu, dtype);
    const Bounded aq = maybe_fp8(a);
    check(got.y, want.y, gemm(aq, w2q, rows, hidden, n, dtype, &want.params.at("fc2_bias")), "y");
    check(got.grads.at("fc2_weight"), want.grads.at("fc2_weight"),
          gemm(transposed(dy, rows, hidden), transposed(aq, rows, n), hidden, n, rows, dtype),
          "grad fc2_weight");
    const Bounded da = gemm(dy, transposed(w2q, hidden, n), rows, n, hidden, dtype);
    const Bounded dh = activation_backward(h, da, rows, width, swiglu, dtype);
    check(got.grads.at("fc1_bias"), want.grads.at("fc1_bias"), column_sums(dh, rows, width, dtype), "grad fc1_bias");
    const Bounded dhq = maybe_fp8(dh);
    check(got.grads.at("fc1_weight"), want.grads.at("fc1_weight"),
          gemm(transposed(dhq, rows, width), transposed(ln, rows, hidden), width, hidden, rows, dtype),
          "grad fc1_weight");
    dln = gemm(dhq, transposed(w1q, width, hidden), rows, hidden, width, dtype);
  }
  Bounded dx, dgamma, dbeta;
  norm_backward(f, gamma, dln, rows, hidden, dtype, dx, dgamma, dbeta);
  check(got.dx, want.dx, dx, "dx");
  check(got.grads.at("norm_weight"), want.grads.at("norm_weight"), dgamma, "grad norm_weight");
  if (layernorm) check(got.grads.at("norm_bias"), want.grads.at("norm_bias"), dbeta, "grad norm_bias");
  // Column sums of the same dy, in the same order: identical.
  expect_identical(got.grads.at(want.output_bias), want.grads.at(want.output_bias), "grad " + want.output_bias);
  ASSERT_EQ(got.grads.size(), want.grads.size());
}

void compare_layer(const LayerRun& got, const LayerRun& want, const Case& c, int32_t dtype, double magnitude,
                   double out_ulp, bool fp8) {
  // Same inputs on both sides, or the comparison means nothing.
  expect_identical(got.x, want.x, "x");
  expect_identical(got.dy, want.dy, "dy");
  if (c.kind == Kind::Linear)
    expect_linear_within_bound(got, want, c, magnitude, out_ulp);
  else
    expect_composed_within_bound(got, want, c, dtype, fp8);
}

bool cpu_available() {
  octet_context* probe = make_context(OCTET_TEST_BACKEND, OCTET_PROFILE_NATIVE);
  if (probe == nullptr) return false;
  octet_context_destroy(probe);
  return true;
}

TEST(CpuLayers, HighPrecisionMatchReference) {
  ASSERT_TRUE(cpu_available()) << octet_last_error_message();
  for (const Case& c : all_cases())
    for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
      SCOPED_TRACE(c.name() + (dtype == OCTET_DTYPE_FP32 ? " fp32" : " bf16"));
      const LayerRun got = run(OCTET_TEST_BACKEND, c, dtype, nullptr);
      const LayerRun want = run("reference", c, dtype, nullptr);
      // FP32: summation order only. BF16: a one-unit rounding difference
      // (2^-8) of an intermediate may follow from it.
      compare_layer(got, want, c, dtype, 1.0, dtype == OCTET_DTYPE_FP32 ? 0.0 : std::ldexp(1.0, -7), false);
    }
}

TEST(CpuLayers, EveryFp8RecipeMatchesReference) {
  ASSERT_TRUE(cpu_available()) << octet_last_error_message();
  std::vector<std::pair<std::string, octet_recipe*>> recipes;
  octet_recipe* r = nullptr;
  EXPECT_OK(octet_recipe_create_delayed(nullptr, &r));
  recipes.emplace_back("delayed", r);
  EXPECT_OK(octet_recipe_create_current(nullptr, &r));
  recipes.emplace_back("current", r);
  octet_static_scaling_options so;
  octet_static_scaling_options_init(&so);
  so.scale = 2.0f;
  EXPECT_OK(octet_recipe_create_static(&so, &r));
  recipes.emplace_back("static", r);
  for (int32_t rounding : {OCTET_MX_ROUND_RCEIL, OCTET_MX_ROUND_FLOOR}) {
    octet_mxfp8_options mo;
    octet_mxfp8_options_init(&mo);
    mo.rounding = rounding;
    EXPECT_OK(octet_recipe_create_mxfp8(&mo, &r));
    recipes.emplace_back(rounding == OCTET_MX_ROUND_RCEIL ? "mxfp8 rceil" : "mxfp8 floor", r);
  }
  EXPECT_OK(octet_recipe_create_block(nullptr, &r));
  recipes.emplace_back("block", r);
  for (const Case& c : all_cases())
    for (const auto& [name, recipe] : recipes) {
      SCOPED_TRACE(c.name() + " " + name);
      const LayerRun got = run(OCTET_TEST_BACKEND, c, OCTET_DTYPE_FP32, recipe);
      const LayerRun want = run("reference", c, OCTET_DTYPE_FP32, recipe);
      // The FP8 codes are the reference's wherever the GEMM results they are
      // quantized from agree; a last-bit GEMM difference can move a value
      // across a rounding boundary of E4M3/E5M2, which the composed layers'
      // bound carries (fp8_quantize).
      compare_layer(got, want, c, OCTET_DTYPE_FP32, 2.0, 0.0, true);
    }
  for (auto& entry : recipes) octet_recipe_destroy(entry.second);
}

}  // namespace
}  // namespace layers_test
