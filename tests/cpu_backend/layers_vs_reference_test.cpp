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
// norms, activations and FP8 re-quantization, where the section 8 bound no
// longer applies element by element; they are compared with a tolerance
// relative to each tensor's scale that follows the precision. The output
// bias gradient (column sums of the given dy, no GEMM before it) must be
// bit-identical.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "layer_test_helpers.hpp"

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

// |got - want| <= tol * max|want| element by element (a tolerance relative
// to the tensor's scale), and the tensor is not trivially zero.
void expect_scaled_close(const Vec& got, const Vec& want, double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  ASSERT_GT(scale, 0.0) << what << " is all zero";
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= tol * scale)) {
      if (bad++ == 0) first = i;
    }
  EXPECT_EQ(bad, 0u) << what << ": first at " << first << " got " << got[first] << " want "
                     << want[first] << " (scale " << scale << ", tol " << tol << ")";
}

void compare(const LayerRun& got, const LayerRun& want, double tol) {
  expect_scaled_close(got.y, want.y, tol, "y");
  expect_scaled_close(got.dx, want.dx, tol, "dx");
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (const auto& [name, v] : want.grads) {
    ASSERT_TRUE(got.grads.count(name)) << name;
    expect_scaled_close(got.grads.at(name), v, tol, "grad " + name);
  }
  // Column sums of the same dy, in the same order: identical.
  expect_identical(got.grads.at(want.output_bias), want.grads.at(want.output_bias),
                   "grad " + want.output_bias);
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

void compare_layer(const LayerRun& got, const LayerRun& want, const Case& c, double magnitude, double out_ulp,
                   double tol) {
  // Same inputs on both sides, or the comparison means nothing.
  expect_identical(got.x, want.x, "x");
  expect_identical(got.dy, want.dy, "dy");
  if (c.kind == Kind::Linear)
    expect_linear_within_bound(got, want, c, magnitude, out_ulp);
  else
    compare(got, want, tol);
}

bool cpu_available() {
  octet_context* probe = make_context("cpu", OCTET_PROFILE_NATIVE);
  if (probe == nullptr) return false;
  octet_context_destroy(probe);
  return true;
}

TEST(CpuLayers, HighPrecisionMatchReference) {
  ASSERT_TRUE(cpu_available()) << octet_last_error_message();
  for (const Case& c : all_cases())
    for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
      SCOPED_TRACE(c.name() + (dtype == OCTET_DTYPE_FP32 ? " fp32" : " bf16"));
      const LayerRun got = run("cpu", c, dtype, nullptr);
      const LayerRun want = run("reference", c, dtype, nullptr);
      // FP32: summation order only. BF16: a one-unit rounding difference
      // (2^-8) of an intermediate may follow from it.
      compare_layer(got, want, c, 1.0, dtype == OCTET_DTYPE_FP32 ? 0.0 : std::ldexp(1.0, -7),
                    dtype == OCTET_DTYPE_FP32 ? 1e-5 : 3e-2);
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
      const LayerRun got = run("cpu", c, OCTET_DTYPE_FP32, recipe);
      const LayerRun want = run("reference", c, OCTET_DTYPE_FP32, recipe);
      // The FP8 codes are the reference's wherever the GEMM results they are
      // quantized from agree; a last-bit GEMM difference can move a value
      // across a rounding boundary of E4M3/E5M2 (a relative step of 2^-3 or
      // 2^-2 of that element), which the following GEMMs average out.
      compare_layer(got, want, c, 2.0, 0.0, 0.05);
    }
  for (auto& entry : recipes) octet_recipe_destroy(entry.second);
}

}  // namespace
}  // namespace layers_test
