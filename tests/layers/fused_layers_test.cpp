// LayerNormLinear and LayerNormMLP: FP32 gradients against a double
// reference written here (analytic, plus finite differences of its forward),
// FP8 results identical across profiles, fused norm+quantize (delayed) equal
// to the composed path's codes.
#include <cmath>
#include <map>

#include "layer_test_helpers.hpp"

namespace layers_test {
namespace {

struct Shape {
  int64_t rows = 4, hidden = 8, ffn = 6;
  int32_t norm = OCTET_LAYER_LAYERNORM;
  int32_t activation = OCTET_LAYER_GELU;
  bool mlp = true;
  int64_t fc1_out() const { return activation == OCTET_LAYER_SWIGLU ? 2 * ffn : ffn; }
  int64_t out() const { return mlp ? hidden : ffn; }  // LayerNormLinear: hidden -> ffn
};

using Params = std::map<std::string, Vec>;

Params make_params(const Shape& s) {
  Params p;
  p["norm_weight"] = random_vec(size_t(s.hidden), 21, 1.0);
  for (double& g : p["norm_weight"]) g += 1.0;
  if (s.norm == OCTET_LAYER_LAYERNORM) p["norm_bias"] = random_vec(size_t(s.hidden), 22, 0.1);
  if (s.mlp) {
    p["fc1_weight"] = random_vec(size_t(s.fc1_out() * s.hidden), 23, 0.4);
    p["fc1_bias"] = random_vec(size_t(s.fc1_out()), 24, 0.1);
    p["fc2_weight"] = random_vec(size_t(s.hidden * s.ffn), 25, 0.4);
    p["fc2_bias"] = random_vec(size_t(s.hidden), 26, 0.1);
  } else {
    p["weight"] = random_vec(size_t(s.ffn * s.hidden), 23, 0.4);
    p["bias"] = random_vec(size_t(s.ffn), 24, 0.1);
  }
  return p;
}

double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_d(double x) {
  const double t = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}
double sigm(double a) { return 1 / (1 + std::exp(-a)); }

Vec add_bias(Vec y, const Vec& b, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y[size_t(i * cols + j)] += b[size_t(j)];
  return y;
}

Vec col_sums(const Vec& d, int64_t rows, int64_t cols) {
  Vec s(size_t(cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) s[size_t(j)] += d[size_t(i * cols + j)];
  return s;
}

// Forward (and, with dy, backward) in double: returns y and fills grads.
Vec reference(const Shape& s, const Params& p, const Vec& x, const Vec* dy, Params* g, Vec* dx) {
  const int64_t R = s.rows, H = s.hidden;
  const bool ln = s.norm == OCTET_LAYER_LAYERNORM;
  Vec xhat(x.size(), 0.0), rstd(static_cast<size_t>(R), 0.0), n(x.size(), 0.0);
  for (int64_t i = 0; i < R; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < H; ++j) mean += x[size_t(i * H + j)];
    mean = ln ? mean / double(H) : 0.0;
    for (int64_t j = 0; j < H; ++j) var += (x[size_t(i * H + j)] - mean) * (x[size_t(i * H + j)] - mean);
    rstd[size_t(i)] = 1 / std::sqrt(var / double(H) + 1e-5);
    for (int64_t j = 0; j < H; ++j) {
      const size_t k = size_t(i * H + j);
      xhat[k] = (x[k] - mean) * rstd[size_t(i)];
      n[k] = xhat[k] * p.at("norm_weight")[size_t(j)] + (ln ? p.at("norm_bias")[size_t(j)] : 0.0);
    }
  }
  Vec y, h, a, dn;
  if (!s.mlp) {
    y = add_bias(matmul_nt(n, p.at("weight"), R, s.ffn, H), p.at("bias"), R, s.ffn);
    if (!dy) return y;
    (*g)["weight"] = matmul_nt(transpose(*dy, R, s.ffn), transpose(n, R, H), s.ffn, H, R);
    (*g)["bias"] = col_sums(*dy, R, s.ffn);
    dn = matmul_nt(*dy, transpose(p.at("weight"), s.ffn, H), R, H, s.ffn);
  } else {
    const int64_t F1 = s.fc1_out(), F = s.ffn;
    h = add_bias(matmul_nt(n, p.at("fc1_weight"), R, F1, H), p.at("fc1_bias"), R, F1);
    a.assign(size_t(R * F), 0.0);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < F; ++j) {
        const double u = h[size_t(i * F1 + j)];
        a[size_t(i * F + j)] = s.activation == OCTET_LAYER_GELU ? gelu(u) : u * sigm(u) * h[size_t(i * F1 + j + F)];
      }
    y = add_bias(matmul_nt(a, p.at("fc2_weight"), R, H, F), p.at("fc2_bias"), R, H);
    if (!dy) return y;
    (*g)["fc2_weight"] = matmul_nt(transpose(*dy, R, H), transpose(a, R, F), H, F, R);
    (*g)["fc2_bias"] = col_sums(*dy, R, H);
    Vec da = matmul_nt(*dy, transpose(p.at("fc2_weight"), H, F), R, F, H);
    Vec dh(size_t(R * F1), 0.0);
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < F; ++j) {
        const double u = h[size_t(i * F1 + j)], d = da[size_t(i * F + j)];
        if (s.activation == OCTET_LAYER_GELU) {
          dh[size_t(i * F1 + j)] = d * gelu_d(u);
        } else {
          const double b = h[size_t(i * F1 + j + F)], sg = sigm(u);
          dh[size_t(i * F1 + j)] = d * b * sg * (1 + u * (1 - sg));
          dh[size_t(i * F1 + j + F)] = d * u * sg;
        }
      }
    (*g)["fc1_weight"] = matmul_nt(transpose(dh, R, F1), transpose(n, R, H), F1, H, R);
    (*g)["fc1_bias"] = col_sums(dh, R, F1);
    dn = matmul_nt(dh, transpose(p.at("fc1_weight"), F1, H), R, H, F1);
  }
  // Norm backward.
  Vec dgamma(size_t(H), 0.0), dbeta(size_t(H), 0.0);
  dx->assign(x.size(), 0.0);
  for (int64_t i = 0; i < R; ++i) {
    double mg = 0, mgx = 0;
    for (int64_t j = 0; j < H; ++j) {
      const size_t k = size_t(i * H + j);
      const double gg = dn[k] * p.at("norm_weight")[size_t(j)];
      mg += gg;
      mgx += gg * xhat[k];
      dgamma[size_t(j)] += dn[k] * xhat[k];
      dbeta[size_t(j)] += dn[k];
    }
    mg /= double(H);
    mgx /= double(H);
    for (int64_t j = 0; j < H; ++j) {
      const size_t k = size_t(i * H + j);
      const double gg = dn[k] * p.at("norm_weight")[size_t(j)];
      (*dx)[k] = rstd[size_t(i)] * (gg - (ln ? mg : 0.0) - xhat[k] * mgx);
    }
  }
  (*g)["norm_weight"] = dgamma;
  if (ln) (*g)["norm_bias"] = dbeta;
  return y;
}

struct LayerRun {
  Vec y, dx;
  Params grads;
};

LayerRun run_layer(const Shape& s, const Params& p, const Vec& x, const Vec& dy, int32_t profile, const octet_recipe* recipe,
              int32_t dtype = OCTET_DTYPE_FP32) {
  LayerRun r;
  octet_context* ctx = make_context("reference", profile);
  octet_linear_options lo;
  octet_linear_options_init(&lo);
  lo.in_features = s.hidden;
  lo.out_features = s.ffn;
  lo.params_dtype = dtype;
  lo.recipe = recipe;
  octet_layer* layer = nullptr;
  if (s.mlp) {
    octet_layernorm_mlp_options o;
    octet_layernorm_mlp_options_init(&o);
    o.linear = &lo;
    o.ffn_features = s.ffn;
    o.norm = s.norm;
    o.activation = s.activation;
    EXPECT_OK(octet_layer_create_layernorm_mlp(ctx, &o, &layer));
  } else {
    octet_layernorm_linear_options o;
    octet_layernorm_linear_options_init(&o);
    o.linear = &lo;
    o.norm = s.norm;
    EXPECT_OK(octet_layer_create_layernorm_linear(ctx, &o, &layer));
  }
  size_t count = 0;
  EXPECT_OK(octet_layer_parameter_count(layer, &count));
  EXPECT_EQ(count, p.size());
  for (const auto& [name, v] : p) upload(param(layer, name.c_str()), v);
  octet::Tensor tx = make_tensor(ctx, dtype, s.rows, s.hidden);
  octet::Tensor ty = make_tensor(ctx, dtype, s.rows, s.out());
  octet::Tensor tdy = make_tensor(ctx, dtype, s.rows, s.out());
  octet::Tensor tdx = make_tensor(ctx, dtype, s.rows, s.hidden);
  upload(tx.get(), x);
  upload(tdy.get(), dy);
  octet_saved* saved = nullptr;
  EXPECT_OK(octet_layer_forward(layer, tx.get(), ty.get(), 1, &saved));
  EXPECT_OK(octet_layer_backward(layer, &saved, tdy.get(), tdx.get(), 0));
  r.y = download(ty.get());
  r.dx = download(tdx.get());
  for (const auto& [name, v] : p) r.grads[name] = download(grad(layer, name.c_str()));
  for (octet::Tensor* t : {&tx, &ty, &tdy, &tdx}) *t = octet::Tensor();  // before the layer
  octet_layer_destroy(layer);
  octet_context_destroy(ctx);
  return r;
}

std::vector<Shape> all_shapes() {
  std::vector<Shape> out;
  for (bool mlp : {false, true})
    for (int32_t norm : {OCTET_LAYER_LAYERNORM, OCTET_LAYER_RMSNORM})
      for (int32_t act : {OCTET_LAYER_GELU, OCTET_LAYER_SWIGLU}) {
        if (!mlp && act == OCTET_LAYER_SWIGLU) continue;
        Shape s;
        s.mlp = mlp;
        s.norm = norm;
        s.activation = act;
        out.push_back(s);
      }
  return out;
}

TEST(FusedLayersHighPrecision, GradientsMatchDoubleReference) {
  for (const Shape& s : all_shapes()) {
    SCOPED_TRACE(testing::Message() << "mlp " << s.mlp << " norm " << s.norm << " act " << s.activation);
    const Params p = make_params(s);
    const Vec x = random_vec(size_t(s.rows * s.hidden), 31, 2.0), dy = random_vec(size_t(s.rows * s.out()), 32, 0.5);
    LayerRun got = run_layer(s, p, x, dy, OCTET_PROFILE_NATIVE, nullptr);
    Params want;
    Vec dx;
    Vec y = reference(s, p, x, &dy, &want, &dx);
    expect_close(got.y, y, 1e-4, 1e-5, "y");
    expect_close(got.dx, dx, 1e-3, 1e-5, "dx");
    for (const auto& [name, v] : want) expect_close(got.grads[name], v, 1e-3, 1e-5, name);
  }
}

// The analytic double reference against central differences of its own
// forward (L = sum(y * dy)), so the formulas above are checked too.
TEST(FusedLayersHighPrecision, ReferenceGradientsMatchFiniteDifferences) {
  for (Shape s : all_shapes()) {
    s.rows = 2;
    s.hidden = 4;
    s.ffn = 3;
    const Params p = make_params(s);
    const Vec x = random_vec(size_t(s.rows * s.hidden), 41, 2.0), dy = random_vec(size_t(s.rows * s.out()), 42);
    Params g;
    Vec dx;
    reference(s, p, x, &dy, &g, &dx);
    auto loss = [&](const Params& pp, const Vec& xx) {
      Vec y = reference(s, pp, xx, nullptr, nullptr, nullptr);
      double l = 0;
      for (size_t i = 0; i < y.size(); ++i) l += y[i] * dy[i];
      return l;
    };
    const double h = 1e-6;
    for (size_t i = 0; i < x.size(); ++i) {
      Vec a = x, b = x;
      a[i] += h;
      b[i] -= h;
      EXPECT_NEAR(dx[i], (loss(p, a) - loss(p, b)) / (2 * h), 1e-6) << "dx " << i;
    }
    for (const auto& [name, v] : p)
      for (size_t i = 0; i < v.size(); ++i) {
        Params a = p, b = p;
        a[name][i] += h;
        b[name][i] -= h;
        EXPECT_NEAR(g[name][i], (loss(a, x) - loss(b, x)) / (2 * h), 1e-6) << name << " " << i;
      }
    // And the layer's FP32 result on this small shape against the same reference.
    LayerRun got = run_layer(s, p, x, dy, OCTET_PROFILE_NATIVE, nullptr);
    expect_close(got.dx, dx, 1e-3, 1e-5, "layer dx");
  }
}

// FP8: bit-identical across profiles; delayed scaling (fused norm+quantize)
// equals static scaling with the same scale (composed quantize of ln_out
// goes through the same codes), and stays within a loose distance of FP32.
TEST(FusedLayersFp8, ProfilesAreBitIdenticalAndCloseToHighPrecision) {
  octet_recipe* delayed = nullptr;
  ASSERT_EQ(octet_recipe_create_delayed(nullptr, &delayed), OCTET_STATUS_SUCCESS);
  octet_recipe* current = nullptr;
  ASSERT_EQ(octet_recipe_create_current(nullptr, &current), OCTET_STATUS_SUCCESS);
  for (const Shape& s : all_shapes()) {
    const Params p = make_params(s);
    const Vec x = random_vec(size_t(s.rows * s.hidden), 51, 2.0), dy = random_vec(size_t(s.rows * s.out()), 52);
    LayerRun hp = run_layer(s, p, x, dy, OCTET_PROFILE_NATIVE, nullptr);
    for (octet_recipe* r : {delayed, current}) {
      LayerRun a = run_layer(s, p, x, dy, OCTET_PROFILE_HOPPER_LIKE, r);
      LayerRun b = run_layer(s, p, x, dy, OCTET_PROFILE_BLACKWELL_LIKE, r);
      expect_identical(a.y, b.y, "y");
      expect_identical(a.dx, b.dx, "dx");
      for (const auto& [name, v] : a.grads) expect_identical(v, b.grads[name], name);
      expect_close(a.y, hp.y, 0.25, 0.25, "y vs fp32");
    }
  }
  octet_recipe_destroy(delayed);
  octet_recipe_destroy(current);
}

// A backward that fails after its checks passed writes no gradient. With
// current scaling and reduce_amax, LayerNormMLP's backward calls the
// communicator twice: for FC2's dy, then for FC1's dh, which needs FC2's
// dgrad first. A communicator failing at either call must leave every
// parameter gradient and grad_input as they were (docs/abi.md: a result is
// not half-written); the handle is consumed (octet.h). Before the fix, the
// failure at the second call came after FC2's weight and bias gradients had
// been written.
struct FailingCommunicator {
  int calls = 0;
  int fail_at = 0;
};

octet_status allreduce_failing_at(float* /*values*/, size_t /*count*/, void* user_data) {
  auto* c = static_cast<FailingCommunicator*>(user_data);
  return ++c->calls == c->fail_at ? OCTET_STATUS_UNAVAILABLE : OCTET_STATUS_SUCCESS;
}

TEST(FusedLayersFp8, BackwardFailingInTheCommunicatorWritesNoGradient) {
  octet_current_scaling_options co;
  octet_current_scaling_options_init(&co);
  co.reduce_amax = 1;
  octet_recipe* recipe = nullptr;
  OK(octet_recipe_create_current(&co, &recipe));
  Shape s;  // LayerNormMLP, LayerNorm, GELU, with biases
  const Params p = make_params(s);
  for (int fail_at : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "the communicator fails at its call " << fail_at << " in backward");
    octet_context* ctx = make_context("reference", OCTET_PROFILE_NATIVE);
    octet_linear_options lo;
    octet_linear_options_init(&lo);
    lo.in_features = s.hidden;
    lo.recipe = recipe;
    octet_layernorm_mlp_options o;
    octet_layernorm_mlp_options_init(&o);
    o.linear = &lo;
    o.ffn_features = s.ffn;
    octet_layer* layer = nullptr;
    OK(octet_layer_create_layernorm_mlp(ctx, &o, &layer));
    for (const auto& [name, v] : p) upload(param(layer, name.c_str()), v);
    octet::Tensor x = make_tensor(ctx, OCTET_DTYPE_FP32, s.rows, s.hidden);
    octet::Tensor y = make_tensor(ctx, OCTET_DTYPE_FP32, s.rows, s.hidden);
    octet::Tensor dy = make_tensor(ctx, OCTET_DTYPE_FP32, s.rows, s.hidden);
    octet::Tensor dx = make_tensor(ctx, OCTET_DTYPE_FP32, s.rows, s.hidden);
    upload(x.get(), random_vec(size_t(s.rows * s.hidden), 61, 2.0));
    upload(dy.get(), random_vec(size_t(s.rows * s.hidden), 62));
    upload(dx.get(), random_vec(size_t(s.rows * s.hidden), 63));
    // One step with no communicator: every gradient exists and is non-zero.
    octet_saved* saved = nullptr;
    OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
    OK(octet_layer_backward(layer, &saved, dy.get(), nullptr, 0));
    std::map<std::string, Vec> before;
    for (const auto& [name, v] : p) before[name] = download(grad(layer, name.c_str()));
    const Vec dx_before = download(dx.get());

    OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
    FailingCommunicator fc;
    fc.fail_at = fail_at;
    octet_communicator c{};
    c.struct_size = sizeof(c);
    c.allreduce_max = allreduce_failing_at;
    c.user_data = &fc;
    OK(octet_context_set_communicator(ctx, &c));
    EXPECT_EQ(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 1), OCTET_STATUS_UNAVAILABLE);
    EXPECT_STRNE(octet_last_error_message(), "");
    EXPECT_EQ(fc.calls, fail_at);
    EXPECT_EQ(saved, nullptr);  // consumed: the checks had passed
    for (const auto& [name, v] : before) expect_identical(download(grad(layer, name.c_str())), v, name);
    expect_identical(download(dx.get()), dx_before, "grad_input");

    // The same backward with a working communicator adds to the gradients.
    OK(octet_context_set_communicator(ctx, nullptr));
    OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
    fc = FailingCommunicator{};
    OK(octet_context_set_communicator(ctx, &c));
    OK(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 1));
    EXPECT_EQ(fc.calls, 2);
    EXPECT_NE(download(grad(layer, "fc2_weight")), before["fc2_weight"]);
    for (octet::Tensor* t : {&x, &y, &dy, &dx}) *t = octet::Tensor();  // before the layer
    octet_layer_destroy(layer);
    octet_context_destroy(ctx);
  }
  octet_recipe_destroy(recipe);
}

TEST(FusedLayersBadArguments, OptionsAreChecked) {
  octet_context* ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  octet_linear_options lo;
  octet_linear_options_init(&lo);
  lo.in_features = 8;
  lo.out_features = 4;
  octet_layernorm_linear_options o;
  octet_layernorm_linear_options_init(&o);
  octet_layer* layer = nullptr;
  EXPECT_EQ(octet_layer_create_layernorm_linear(ctx, &o, &layer), OCTET_STATUS_INVALID_ARGUMENT);
  o.linear = &lo;
  o.norm = 7;
  EXPECT_EQ(octet_layer_create_layernorm_linear(ctx, &o, &layer), OCTET_STATUS_INVALID_ARGUMENT);
  o.norm = OCTET_LAYER_RMSNORM;
  lo.save_original_input = 1;
  EXPECT_EQ(octet_layer_create_layernorm_linear(ctx, &o, &layer), OCTET_STATUS_INVALID_ARGUMENT);
  lo.save_original_input = 0;
  octet_layernorm_mlp_options m;
  octet_layernorm_mlp_options_init(&m);
  m.linear = &lo;
  EXPECT_EQ(octet_layer_create_layernorm_mlp(ctx, &m, &layer), OCTET_STATUS_INVALID_ARGUMENT);  // ffn 0
  m.ffn_features = 4;
  m.activation = 9;
  EXPECT_EQ(octet_layer_create_layernorm_mlp(ctx, &m, &layer), OCTET_STATUS_INVALID_ARGUMENT);
  octet_context_destroy(ctx);
}

}  // namespace
}  // namespace layers_test
