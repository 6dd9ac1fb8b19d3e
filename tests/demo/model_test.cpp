// The demo's model (api/cli/demo/model.*): its loss is the MSE of the network
// computed here on the host from the layers' definition, and the parameter
// gradients the layers return for it (through the host-side residual sums)
// match central finite differences of that loss, in FP32 on the reference.
#include <gtest/gtest.h>

#include <octet/octet.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "demo/model.hpp"

namespace {

using namespace octet_cli::demo;

ModelShape small_shape() {
  ModelShape s;
  s.batch = 4;
  s.hidden = 8;
  s.ffn = 16;
  s.out = 3;
  return s;
}

std::vector<float> batch(Rng& rng, size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = rng.normal();
  return v;
}

std::vector<float> read(octet_tensor* t, size_t n) { return download_floats(t, OCTET_DTYPE_FP32, n); }

size_t count_of(octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  octet::check(octet_tensor_get_info(t, &info));
  size_t n = 1;
  for (int d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
  return n;
}

// Host forward of the model from its parameters (double precision):
// h = x + FC2(gelu(FC1(LN(x)))) twice, then y = head(h).
double host_loss(Model& model, const ModelShape& s, const std::vector<float>& x, const std::vector<float>& t) {
  auto param = [&](size_t layer, const char* name) {
    size_t i = 0;
    octet::check(octet_layer_find_parameter(model.layer(layer), name, &i));
    octet_tensor* p = nullptr;
    octet::check(octet_layer_get_parameter(model.layer(layer), i, &p));
    return read(p, count_of(p));
  };
  const size_t B = size_t(s.batch), H = size_t(s.hidden), F = size_t(s.ffn), O = size_t(s.out);
  std::vector<double> h(x.begin(), x.end());
  for (size_t l = 0; l < 2; ++l) {
    const auto g = param(l, "norm_weight"), be = param(l, "norm_bias");
    const auto w1 = param(l, "fc1_weight"), b1 = param(l, "fc1_bias");
    const auto w2 = param(l, "fc2_weight"), b2 = param(l, "fc2_bias");
    std::vector<double> next = h;
    for (size_t r = 0; r < B; ++r) {
      double mean = 0, var = 0;
      for (size_t k = 0; k < H; ++k) mean += h[r * H + k];
      mean /= double(H);
      for (size_t k = 0; k < H; ++k) var += (h[r * H + k] - mean) * (h[r * H + k] - mean);
      var /= double(H);
      std::vector<double> n(H), a(F);
      for (size_t k = 0; k < H; ++k) n[k] = (h[r * H + k] - mean) / std::sqrt(var + 1e-5) * g[k] + be[k];
      for (size_t j = 0; j < F; ++j) {
        double acc = b1[j];
        for (size_t k = 0; k < H; ++k) acc += w1[j * H + k] * n[k];
        // GELU, tanh form (octet_backend.h)
        a[j] = 0.5 * acc * (1.0 + std::tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)));
      }
      for (size_t k = 0; k < H; ++k) {
        double acc = b2[k];
        for (size_t j = 0; j < F; ++j) acc += w2[k * F + j] * a[j];
        next[r * H + k] += acc;
      }
    }
    h = next;
  }
  const auto w = param(2, "weight"), b = param(2, "bias");
  double loss = 0;
  for (size_t r = 0; r < B; ++r)
    for (size_t o = 0; o < O; ++o) {
      double acc = b[o];
      for (size_t k = 0; k < H; ++k) acc += w[o * H + k] * h[r * H + k];
      loss += (acc - t[r * O + o]) * (acc - t[r * O + o]);
    }
  return loss / double(B * O);
}

TEST(DemoModel, LossMatchesHostForward) {
  octet::Context ctx("reference");
  const ModelShape s = small_shape();
  Model model(ctx, s, OCTET_DTYPE_FP32, 5);
  Rng rng(9);
  const auto x = batch(rng, size_t(s.batch * s.hidden));
  const auto t = batch(rng, size_t(s.batch * s.out));
  const double loss = model.step(x, t, nullptr, nullptr, 1);
  const double expected = host_loss(model, s, x, t);
  EXPECT_NEAR(loss, expected, 1e-4 * expected);
}

TEST(DemoModel, ParameterGradientsMatchFiniteDifferences) {
  octet::Context ctx("reference");
  const ModelShape s = small_shape();
  Model model(ctx, s, OCTET_DTYPE_FP32, 5);
  Rng rng(11);
  const auto x = batch(rng, size_t(s.batch * s.hidden));
  const auto t = batch(rng, size_t(s.batch * s.out));
  model.step(x, t, nullptr, nullptr, 1);  // fills the gradients, no update

  const struct {
    size_t layer;
    const char* name;
  } probes[] = {{0, "norm_weight"}, {0, "fc1_weight"}, {0, "fc2_bias"}, {1, "norm_bias"},
                {1, "fc1_bias"},    {1, "fc2_weight"}, {2, "weight"},   {2, "bias"}};
  for (const auto& probe : probes) {
    octet_layer* layer = model.layer(probe.layer);
    size_t index = 0;
    octet::check(octet_layer_find_parameter(layer, probe.name, &index));
    octet_tensor *p = nullptr, *g = nullptr;
    octet::check(octet_layer_get_parameter(layer, index, &p));
    octet::check(octet_layer_get_gradient(layer, index, &g));
    const size_t n = count_of(p);
    const auto grad = read(g, n);
    const auto original = read(p, n);
    for (size_t i : {size_t(0), n / 2, n - 1}) {
      const float h = 1e-2f;
      auto perturbed = original;
      perturbed[i] = original[i] + h;
      upload_floats(p, OCTET_DTYPE_FP32, perturbed);
      const double up = model.step(x, t, nullptr, nullptr, 1);
      perturbed[i] = original[i] - h;
      upload_floats(p, OCTET_DTYPE_FP32, perturbed);
      const double down = model.step(x, t, nullptr, nullptr, 1);
      upload_floats(p, OCTET_DTYPE_FP32, original);
      const double fd = (up - down) / (2.0 * h);
      EXPECT_NEAR(grad[i], fd, 2e-3 + 2e-2 * std::fabs(fd))
          << "layer " << probe.layer << " " << probe.name << "[" << i << "]";
    }
  }
}

TEST(DemoModel, Fp8StepStaysCloseToFp32) {
  // One step under current scaling: same data, same initial parameters; the
  // loss differs only by FP8 rounding (a few percent at most).
  const ModelShape s = small_shape();
  Rng rng(13);
  const auto x = batch(rng, size_t(s.batch * s.hidden));
  const auto t = batch(rng, size_t(s.batch * s.out));
  octet::Context a("reference"), b("reference");
  Model fp32(a, s, OCTET_DTYPE_FP32, 3), fp8(b, s, OCTET_DTYPE_FP32, 3);
  octet_recipe* recipe = nullptr;
  octet::check(octet_recipe_create_current(nullptr, &recipe));
  const double l32 = fp32.step(x, t, nullptr, nullptr, 1);
  const double l8 = fp8.step(x, t, recipe, nullptr, 1);
  octet_recipe_destroy(recipe);
  EXPECT_NE(l32, l8);  // FP8 really ran
  EXPECT_NEAR(l8, l32, 0.05 * l32);
}

}  // namespace
