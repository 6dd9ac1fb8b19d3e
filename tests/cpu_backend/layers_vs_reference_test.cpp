// Every layer kind on the cpu backend against the same layer on the
// reference, through octet.h: Linear with bias, LayerNormLinear (LayerNorm,
// RMSNorm) and LayerNormMLP (GELU, SwiGLU; LayerNorm and RMSNorm), forward
// and backward, in FP32, BF16, with every FP8 recipe (delayed, current,
// static, MXFP8 RCEIL/FLOOR, 1x128/128x128 blocks, per-row, plain and with a
// high-precision wgrad; OCP and FNUZ formats) and with the FP4 recipes
// (MXFP4, NVFP4 with and without stochastic rounding, the Hadamard transform
// and 16x16 weights), each where the backend declares what its roles take
// (else it must be refused naming the dtype and the backend; kokkos has no
// FP4). FP4 GEMMs keep numerics.md 15.4's bound, section 8's with the block
// scales inside the sum, over operands bounded block by block (fp4_quantize
// below). The layers' GEMMs differ
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
  octet::Tensor tx = make_tensor(ctx, dtype, c.rows, c.hidden);
  octet::Tensor ty = make_tensor(ctx, dtype, c.rows, c.out());
  octet::Tensor tdy = make_tensor(ctx, dtype, c.rows, c.out());
  octet::Tensor tdx = make_tensor(ctx, dtype, c.rows, c.hidden);
  Vec x = random_vec(size_t(c.rows * c.hidden), 7, 2.0);
  for (size_t i = 0; i < x.size(); ++i) x[i] += 0.25 * double((i / size_t(c.hidden)) % 4);
  upload(tx.get(), x);
  upload(tdy.get(), random_vec(size_t(c.rows * c.out()), 8, 0.5));
  r.x = download(tx.get());
  r.dy = download(tdy.get());
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(layer, tx.get(), ty.get(), 1, &saved));
  EXPECT_OK(octet_layer_backward(layer, &saved, tdy.get(), tdx.get(), 0));
  r.y = download(ty.get());
  r.dx = download(tdx.get());
  for (const std::string& n : names) r.grads[n] = download(grad(layer, n.c_str()));
  for (octet::Tensor* t : {&tx, &ty, &tdy, &tdx}) *t = octet::Tensor();  // before the layer
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

// FP4 quantization (numerics.md section 15.3) of a code matrix [rows, cols]
// with blocks of br x bc, after the random Hadamard transform of groups of
// 16 along each row where `rht` (15.2). The transform's signs are not
// modelled: the transformed value is bounded by its magnitude alone (v = 0,
// e >= |y| <= sum of the group's |x| / 4, each t exact, the FP32 sum within
// 16 ulp). Every rule of 15.3 gives a block's decode scale X <= amax / 3 +
// 2^-18 A (RCEIL: the power of two at or above amax / 6; FLOOR: amax / 4 at
// most; NVFP4: the E4M3 rounding of amax / 6 / g, 2^-4 relative or 2^-10
// absolute with g = A / 2688), A the tensor's amax, and a code within 2 X of
// its value (a spacing at most, 2 X at the top of E2M1, whether rounded to
// nearest, stochastically or saturated; X = 0 only for a block below 2^-18
// A). Identical inputs give identical codes on both backends (15.3 is
// exact, the random bits the same); where they may differ every code, and
// with NVFP4's tensor scale every block's scale, may move: a code within 2 X
// on either side.
Bounded fp4_quantize(Bounded b, int64_t rows, int64_t cols, int64_t br, int64_t bc, bool rht) {
  double dmax = 0.0;
  for (double d : b.d) dmax = std::max(dmax, d);
  if (rht && cols % 16 == 0) {
    Bounded y = Bounded::zeros(b.v.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t g = 0; g < cols; g += 16) {
        double sm = 0.0, sd = 0.0, smd = 0.0;
        for (int64_t j = g; j < g + 16; ++j) {
          const size_t i = size_t(r * cols + j);
          sm += b.m(i) / 4.0;
          sd += b.d[i] / 4.0;
          smd += (b.m(i) + b.d[i]) / 4.0;
        }
        for (int64_t j = g; j < g + 16; ++j) {
          const size_t i = size_t(r * cols + j);
          y.e[i] = sm * (1.0 + kEval);
          y.d[i] = dmax > 0.0 ? sd + 2.0 * kEval * smd : 0.0;
        }
      }
    b = y;
  }
  double a = 0.0;
  for (size_t i = 0; i < b.v.size(); ++i) a = std::max(a, b.m(i) + b.d[i]);
  const double tiny = std::ldexp(a, -18);
  for (int64_t r0 = 0; r0 < rows; r0 += br)
    for (int64_t c0 = 0; c0 < cols; c0 += bc) {
      const int64_t r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
      double amax = 0.0, amax_both = 0.0;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const size_t i = size_t(r * cols + c);
          amax = std::max(amax, b.m(i));
          amax_both = std::max(amax_both, b.m(i) + b.d[i]);
        }
      const double x_ref = amax / 3.0 + tiny, x_both = amax_both / 3.0 + tiny;
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = c0; c < c1; ++c) {
          const size_t i = size_t(r * cols + c);
          b.e[i] += 2.0 * x_ref;
          if (dmax > 0.0) b.d[i] += 4.0 * x_both;
        }
    }
  return b;
}

// How a recipe quantizes the GEMM operands, for the bounds: `row` gives the
// rowwise copy of x [rows, cols] (the operand used as stored), `col` the
// columnwise copy x^T [cols, rows] (the operand used transposed), as the
// GEMMs read them. FP8 (every FP8 recipe, per-tensor, block or per-row):
// fp8_quantize's per-element rule, which holds for either copy. FP4: the
// recipe's blocks over the copy's code matrix (numerics.md 15.5: MXFP4 1x32
// every role; NVFP4 1x16, 16x16 for the weight role with weight_2d, and the
// transform of the columnwise copies of the input and gradient roles).
struct Quant {
  enum Family { None, Fp8, Fp4 } family = None;
  int64_t block = 32;      // FP4: 32 (MXFP4) or 16 (NVFP4)
  bool weight_2d = false;  // NVFP4: 16x16 blocks for the weight role
  bool rht = false;        // NVFP4: the transform of the wgrad operands
  Bounded fp4(const Bounded& b, int64_t rows, int64_t cols, int32_t role, bool columnwise) const {
    const bool square = role == OCTET_ROLE_WEIGHT && weight_2d;
    return fp4_quantize(b, rows, cols, square ? block : 1, block, columnwise && rht && role != OCTET_ROLE_WEIGHT);
  }
  Bounded row(Bounded b, int64_t rows, int64_t cols, int32_t role) const {
    if (family == Fp8) fp8_quantize(b);
    if (family == Fp4) return fp4(b, rows, cols, role, false);
    return b;
  }
  Bounded col(Bounded b, int64_t rows, int64_t cols, int32_t role) const {
    if (family == Fp8) fp8_quantize(b);
    if (family == Fp4) return fp4(transposed(b, rows, cols), cols, rows, role, true);
    return transposed(b, rows, cols);
  }
};

// A bound's check: every element within it, the worst ratio logged.
void check_bounded(const Vec& g, const Vec& r, const Bounded& b, const std::string& what) {
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
}

// Linear with FP4 operands: both backends quantize the same uploads to the
// same codes and scales (15.3 is exact), so each output is one GEMM of
// identical operands, within section 15.4's bound (section 8's with the
// block scales inside the sum) over the dequantized operands, which `q`
// bounds element by element.
void expect_linear_quantized_within_bound(const LayerRun& got, const LayerRun& want, const Case& c, const Quant& q) {
  ASSERT_EQ(c.kind, Kind::Linear);
  const Vec& w = want.params.at("weight");  // [ffn, hidden]
  const Bounded x = exact(want.x), wb = exact(w), dy = exact(want.dy);
  const int64_t rows = c.rows, hidden = c.hidden, ffn = c.ffn;
  check_bounded(got.y, want.y,
                gemm(q.row(x, rows, hidden, OCTET_ROLE_INPUT), q.row(wb, ffn, hidden, OCTET_ROLE_WEIGHT), rows, ffn,
                     hidden, OCTET_DTYPE_FP32, &want.params.at("bias")),
                "y");
  check_bounded(got.dx, want.dx,
                gemm(q.row(dy, rows, ffn, OCTET_ROLE_GRADIENT), q.col(wb, ffn, hidden, OCTET_ROLE_WEIGHT), rows, hidden,
                     ffn, OCTET_DTYPE_FP32),
                "dx");
  check_bounded(got.grads.at("weight"), want.grads.at("weight"),
                gemm(q.col(dy, rows, ffn, OCTET_ROLE_GRADIENT), q.col(x, rows, hidden, OCTET_ROLE_INPUT), ffn, hidden,
                     rows, OCTET_DTYPE_FP32),
                "grad weight");
  expect_identical(got.grads.at("bias"), want.grads.at("bias"), "grad bias");
}

// Every output of a LayerNormLinear or LayerNormMLP within its propagated
// bound of the reference's; `q` how the recipe quantizes the GEMM operands
// (the quantized magnitudes are in e, so no `magnitude` factor).
void expect_composed_within_bound(const LayerRun& got, const LayerRun& want, const Case& c, int32_t dtype,
                                  const Quant& q) {
  const bool layernorm = c.norm == OCTET_LAYER_LAYERNORM;
  const Vec& gamma = want.params.at("norm_weight");
  const Vec* beta = layernorm ? &want.params.at("norm_bias") : nullptr;
  const int64_t rows = c.rows, hidden = c.hidden;
  NormForward f = norm_forward(want.x, gamma, beta, layernorm, rows, hidden, dtype);
  const Bounded& ln = f.ln;
  const Bounded dy = exact(want.dy);
  const auto check = [&](const Vec& g, const Vec& r, const Bounded& b, const std::string& what) {
    check_bounded(g, r, b, what);
  };
  constexpr int32_t kIn = OCTET_ROLE_INPUT, kW = OCTET_ROLE_WEIGHT, kGrad = OCTET_ROLE_GRADIENT;
  Bounded dln;
  if (c.kind == Kind::LnLinear) {
    const int64_t ffn = c.ffn;
    const Bounded w = exact(want.params.at("weight"));  // [ffn, hidden]
    check(got.y, want.y,
          gemm(q.row(ln, rows, hidden, kIn), q.row(w, ffn, hidden, kW), rows, ffn, hidden, dtype,
               &want.params.at("bias")),
          "y");
    check(got.grads.at("weight"), want.grads.at("weight"),
          gemm(q.col(dy, rows, ffn, kGrad), q.col(ln, rows, hidden, kIn), ffn, hidden, rows, dtype), "grad weight");
    dln = gemm(q.row(dy, rows, ffn, kGrad), q.col(w, ffn, hidden, kW), rows, hidden, ffn, dtype);
  } else {
    const bool swiglu = c.activation == OCTET_LAYER_SWIGLU;
    const Vec& w1 = want.params.at("fc1_weight");  // [width, hidden]
    const Vec& w2 = want.params.at("fc2_weight");  // [hidden, ffn]
    const int64_t width = int64_t(w1.size()) / hidden, n = swiglu ? width / 2 : width;
    ASSERT_EQ(n, c.ffn);
    const Bounded w1b = exact(w1), w2b = exact(w2);
    const Bounded h = gemm(q.row(ln, rows, hidden, kIn), q.row(w1b, width, hidden, kW), rows, width, hidden, dtype,
                           &want.params.at("fc1_bias"));
    const Bounded a = activation_forward(h, rows, width, swiglu, dtype);
    check(got.y, want.y,
          gemm(q.row(a, rows, n, kIn), q.row(w2b, hidden, n, kW), rows, hidden, n, dtype, &want.params.at("fc2_bias")),
          "y");
    check(got.grads.at("fc2_weight"), want.grads.at("fc2_weight"),
          gemm(q.col(dy, rows, hidden, kGrad), q.col(a, rows, n, kIn), hidden, n, rows, dtype), "grad fc2_weight");
    const Bounded da = gemm(q.row(dy, rows, hidden, kGrad), q.col(w2b, hidden, n, kW), rows, n, hidden, dtype);
    const Bounded dh = activation_backward(h, da, rows, width, swiglu, dtype);
    check(got.grads.at("fc1_bias"), want.grads.at("fc1_bias"), column_sums(dh, rows, width, dtype), "grad fc1_bias");
    check(got.grads.at("fc1_weight"), want.grads.at("fc1_weight"),
          gemm(q.col(dh, rows, width, kGrad), q.col(ln, rows, hidden, kIn), width, hidden, rows, dtype),
          "grad fc1_weight");
    dln = gemm(q.row(dh, rows, width, kGrad), q.col(w1b, width, hidden, kW), rows, hidden, width, dtype);
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
                   double out_ulp, const Quant& q) {
  // Same inputs on both sides, or the comparison means nothing.
  expect_identical(got.x, want.x, "x");
  expect_identical(got.dy, want.dy, "dy");
  if (c.kind == Kind::Linear && q.family == Quant::Fp4)
    expect_linear_quantized_within_bound(got, want, c, q);
  else if (c.kind == Kind::Linear)
    expect_linear_within_bound(got, want, c, magnitude, out_ulp);
  else
    expect_composed_within_bound(got, want, c, dtype, q);
}

const Quant kHighPrecision{};
const Quant kFp8{Quant::Fp8};

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
      compare_layer(got, want, c, dtype, 1.0, dtype == OCTET_DTYPE_FP32 ? 0.0 : std::ldexp(1.0, -7), kHighPrecision);
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
      compare_layer(got, want, c, OCTET_DTYPE_FP32, 2.0, 0.0, kFp8);
    }
  for (auto& entry : recipes) octet_recipe_destroy(entry.second);
}

// ---- the recipes of users' ABI 1.7-1.8: per-row, FNUZ, FP4 -----------------

struct NamedRecipe {
  std::string name;
  octet_recipe* recipe = nullptr;
  Quant quant;
};

struct Recipes {
  std::vector<NamedRecipe> all;
  ~Recipes() {
    for (NamedRecipe& r : all) octet_recipe_destroy(r.recipe);
  }
  void add(const std::string& name, octet_status s, octet_recipe* r, const Quant& q) {
    EXPECT_EQ(s, OCTET_STATUS_SUCCESS) << name << ": " << octet_last_error_message();
    if (r != nullptr) all.push_back({name, r, q});
  }
};

// What the backend under test declares (its context's capabilities), and
// whether they hold every dtype and scaling mode a recipe's roles take
// (octet_recipe_tensor_format): the check the core makes before it refuses
// a recipe (octet.h, octet_fp8_format).
octet_backend_info backend_info() {
  octet_backend_info info{};
  info.struct_size = sizeof info;
  octet_context* ctx = make_context(OCTET_TEST_BACKEND, OCTET_PROFILE_NATIVE);
  EXPECT_NE(ctx, nullptr) << octet_last_error_message();
  if (ctx == nullptr) return info;
  EXPECT_OK(octet_context_get_info(ctx, &info));
  octet_context_destroy(ctx);
  return info;
}

bool declares(const octet_backend_info& info, const octet_recipe* recipe) {
  for (int32_t role : {OCTET_ROLE_INPUT, OCTET_ROLE_WEIGHT, OCTET_ROLE_GRADIENT}) {
    int32_t dtype = 0, mode = 0;
    EXPECT_OK(octet_recipe_tensor_format(recipe, role, &dtype, &mode));
    if ((info.dtypes & OCTET_DTYPE_BIT(dtype)) == 0 || (info.scaling_modes & uint32_t(mode)) == 0) return false;
  }
  return true;
}

// Each layer kind under each recipe the backend declares, against the
// reference; the others must be refused where the layer is created
// (UNSUPPORTED, naming the dtype and the backend).
void compare_recipes(const Recipes& recipes, const char* refused_dtype) {
  ASSERT_TRUE(cpu_available()) << octet_last_error_message();
  const octet_backend_info info = backend_info();
  int compared = 0;
  for (const NamedRecipe& r : recipes.all) {
    if (!declares(info, r.recipe)) {
      SCOPED_TRACE(r.name + " (not declared)");
      for (const Case& c : all_cases()) {
        octet_context* ctx = make_context(OCTET_TEST_BACKEND, OCTET_PROFILE_NATIVE);
        ASSERT_NE(ctx, nullptr);
        octet_linear_options lo;
        octet_linear_options_init(&lo);
        lo.in_features = c.hidden;
        lo.out_features = c.ffn;
        lo.recipe = r.recipe;
        octet_layer* layer = nullptr;
        octet_status s = OCTET_STATUS_SUCCESS;
        if (c.kind == Kind::Linear) {
          s = octet_layer_create_linear(ctx, &lo, &layer);
        } else if (c.kind == Kind::LnLinear) {
          octet_layernorm_linear_options o;
          octet_layernorm_linear_options_init(&o);
          o.linear = &lo;
          o.norm = c.norm;
          s = octet_layer_create_layernorm_linear(ctx, &o, &layer);
        } else {
          octet_layernorm_mlp_options o;
          octet_layernorm_mlp_options_init(&o);
          o.linear = &lo;
          o.ffn_features = c.ffn;
          o.norm = c.norm;
          o.activation = c.activation;
          s = octet_layer_create_layernorm_mlp(ctx, &o, &layer);
        }
        const std::string message = octet_last_error_message();
        EXPECT_EQ(s, OCTET_STATUS_UNSUPPORTED) << c.name();
        EXPECT_NE(message.find(std::string("backend '") + OCTET_TEST_BACKEND + "'"), std::string::npos) << message;
        EXPECT_NE(message.find(refused_dtype), std::string::npos) << message;
        EXPECT_EQ(layer, nullptr);
        octet_layer_destroy(layer);
        octet_context_destroy(ctx);
      }
      continue;
    }
    ++compared;
    for (const Case& c : all_cases()) {
      SCOPED_TRACE(c.name() + " " + r.name);
      const LayerRun got = run(OCTET_TEST_BACKEND, c, OCTET_DTYPE_FP32, r.recipe);
      const LayerRun want = run("reference", c, OCTET_DTYPE_FP32, r.recipe);
      compare_layer(got, want, c, OCTET_DTYPE_FP32, 2.0, 0.0, r.quant);
    }
  }
  std::printf("  %s: %d of %zu recipes compared, the others refused\n", OCTET_TEST_BACKEND, compared,
              recipes.all.size());
}

// Per-row FP8 (the rowwise recipe, plain and with its weight-gradient GEMM in
// high precision) and the FNUZ formats under every recipe that takes them:
// FP8 GEMMs of operands quantized bit for bit, so the FP8 recipes' bounds
// (a per-row scale is a per-tensor scale of one row: the same factor per
// code, the same subnormal step at most). A high-precision wgrad GEMM is
// within the quantized operands' bound too (the bound only grows with e).
TEST(CpuLayers, RowwiseAndFnuzRecipesMatchReference) {
  Recipes recipes;
  octet_recipe* r = nullptr;
  for (int32_t hp : {0, 1}) {
    octet_rowwise_scaling_options o;
    octet_rowwise_scaling_options_init(&o);
    o.high_precision_wgrad = hp;
    recipes.add(hp ? "rowwise_with_gw_hp" : "rowwise", octet_recipe_create_rowwise(&o, &r), r, kFp8);
  }
  for (int32_t format : {OCTET_FORMAT_E4M3FNUZ, OCTET_FORMAT_HYBRID_FNUZ}) {
    const std::string f = format == OCTET_FORMAT_E4M3FNUZ ? " e4m3fnuz" : " hybrid_fnuz";
    octet_delayed_scaling_options d;
    octet_delayed_scaling_options_init(&d);
    d.format = format;
    recipes.add("delayed" + f, octet_recipe_create_delayed(&d, &r), r, kFp8);
    octet_current_scaling_options cu;
    octet_current_scaling_options_init(&cu);
    cu.format = format;
    recipes.add("current" + f, octet_recipe_create_current(&cu, &r), r, kFp8);
    octet_static_scaling_options so;
    octet_static_scaling_options_init(&so);
    so.format = format;
    so.scale = 2.0f;
    recipes.add("static" + f, octet_recipe_create_static(&so, &r), r, kFp8);
    octet_block_scaling_options b;
    octet_block_scaling_options_init(&b);
    b.format = format;
    recipes.add("block" + f, octet_recipe_create_block(&b, &r), r, kFp8);
    octet_rowwise_scaling_options ro;
    octet_rowwise_scaling_options_init(&ro);
    ro.format = format;
    recipes.add("rowwise" + f, octet_recipe_create_rowwise(&ro, &r), r, kFp8);
  }
  {
    // E5M2FNUZ alone: current scaling takes it (delayed refuses it).
    octet_current_scaling_options cu;
    octet_current_scaling_options_init(&cu);
    cu.format = OCTET_FORMAT_E5M2FNUZ;
    recipes.add("current e5m2fnuz", octet_recipe_create_current(&cu, &r), r, kFp8);
  }
  compare_recipes(recipes, "fnuz");
}

// MXFP4 (RCEIL, FLOOR, stochastic rounding of the gradient role) and NVFP4
// (Transformer Engine's defaults: 16x16 weights, stochastic rounding, the
// Hadamard transform; and each option alone or none) where the backend
// declares FP4; refused naming e2m1 where it does not (kokkos).
TEST(CpuLayers, Fp4RecipesMatchReference) {
  Recipes recipes;
  octet_recipe* r = nullptr;
  struct Mx {
    const char* name;
    int32_t rounding, sr;
  };
  for (const Mx& m : {Mx{"mxfp4 rceil", OCTET_MX_ROUND_RCEIL, 0}, Mx{"mxfp4 floor", OCTET_MX_ROUND_FLOOR, 0},
                      Mx{"mxfp4 rceil sr", OCTET_MX_ROUND_RCEIL, 1}}) {
    octet_mxfp4_options o;
    octet_mxfp4_options_init(&o);
    o.rounding = m.rounding;
    o.stochastic_rounding = m.sr;
    o.seed = 0x5eed;
    Quant q{Quant::Fp4};
    q.block = 32;
    recipes.add(m.name, octet_recipe_create_mxfp4(&o, &r), r, q);
  }
  struct Nv {
    const char* name;
    int32_t weight_2d, sr, rht;
  };
  for (const Nv& n : {Nv{"nvfp4 (defaults)", 1, 1, 1}, Nv{"nvfp4 plain", 0, 0, 0}, Nv{"nvfp4 2d", 1, 0, 0},
                      Nv{"nvfp4 sr", 0, 1, 0}, Nv{"nvfp4 rht", 0, 0, 1}}) {
    octet_nvfp4_options o;
    octet_nvfp4_options_init(&o);
    o.weight_2d = n.weight_2d;
    o.stochastic_rounding = n.sr;
    o.hadamard_transform = n.rht;
    o.seed = 0xC0FFEE;
    Quant q{Quant::Fp4};
    q.block = 16;
    q.weight_2d = n.weight_2d != 0;
    q.rht = n.rht != 0;
    recipes.add(n.name, octet_recipe_create_nvfp4(&o, &r), r, q);
  }
  compare_recipes(recipes, "e2m1");
}

}  // namespace
}  // namespace layers_test
