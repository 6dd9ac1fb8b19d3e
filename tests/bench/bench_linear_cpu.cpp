// The Linear target on the cpu backend: Linear forward + backward
// (tokens x in -> out, with bias) in FP8 with current scaling against the
// same layer in FP32, both timed in the same iterations (interleaved, the
// FP32 pass first); reports each time and the ratio fp8 / fp32 (target:
// at most 1.25 at 4096 tokens, 4096 -> 4096). Command: docs/benchmarks.md.
#include <benchmark/benchmark.h>

#include <octet/octet.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace {

void check(octet_status s, const char* what) {
  if (s != OCTET_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, octet_last_error_message());
    std::abort();
  }
}

octet::Tensor tensor(octet_context* c, int64_t rows, int64_t cols) {
  try {
    return octet::Tensor::create(c, OCTET_DTYPE_FP32, {rows, cols});
  } catch (const octet::Error& e) {
    check(e.status(), "tensor");
  }
  return octet::Tensor();
}

void fill(octet_tensor* t, size_t n, uint32_t seed, float scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  check(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v.data(), n * 4), "upload");
}

struct LinearRun {
  octet_layer* layer = nullptr;
  octet::Tensor x, y, dy, dx;
  LinearRun(octet_context* c, int64_t tokens, int64_t in, int64_t out, const octet_recipe* recipe) {
    octet_linear_options o;
    octet_linear_options_init(&o);
    o.in_features = in;
    o.out_features = out;
    o.recipe = recipe;
    check(octet_layer_create_linear(c, &o, &layer), "linear");
    size_t count = 0;
    check(octet_layer_parameter_count(layer, &count), "count");
    for (size_t i = 0; i < count; ++i) {
      octet_tensor* p = nullptr;
      check(octet_layer_get_parameter(layer, i, &p), "param");
      octet_tensor_info info{};
      info.struct_size = sizeof info;
      check(octet_tensor_get_info(p, &info), "info");
      size_t n = 1;
      for (int d = 0; d < info.ndim; ++d) n *= size_t(info.shape[d]);
      fill(p, n, 10 + uint32_t(i), 0.02f);
    }
    x = tensor(c, tokens, in);
    y = tensor(c, tokens, out);
    dy = tensor(c, tokens, out);
    dx = tensor(c, tokens, in);
    fill(x.get(), size_t(tokens * in), 1, 1.0f);
    fill(dy.get(), size_t(tokens * out), 2, 0.01f);
  }
  ~LinearRun() {
    for (octet::Tensor* t : {&x, &y, &dy, &dx}) *t = octet::Tensor();  // destroyed before the layer
    octet_layer_destroy(layer);
  }
  double step() {
    const auto t0 = std::chrono::steady_clock::now();
    check(octet_layer_new_step(layer), "new_step");
    octet_saved* saved = nullptr;
    check(octet_layer_forward(layer, x.get(), y.get(), 1, &saved), "forward");
    check(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0), "backward");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

// Args: tokens, in, out.
void BM_LinearFp8CurrentVsFp32(benchmark::State& state) {
  octet_context_options co;
  octet_context_options_init(&co);
  co.backend = "cpu";
  octet_context* c = nullptr;
  check(octet_context_create(&co, &c), "context (cpu backend)");
  octet_recipe* current = nullptr;
  check(octet_recipe_create_current(nullptr, &current), "recipe");
  {
    const int64_t tokens = state.range(0), in = state.range(1), out = state.range(2);
    LinearRun fp32(c, tokens, in, out, nullptr);
    LinearRun fp8(c, tokens, in, out, current);
    fp32.step();  // warm-up: workspaces, weight casts, first-touch pages
    fp8.step();
    double t32 = 0.0, t8 = 0.0;
    for (auto _ : state) {
      const double a = fp32.step();
      const double b = fp8.step();
      t32 += a;
      t8 += b;
      state.SetIterationTime(a + b);
    }
    const double n = double(state.iterations());
    state.counters["fp32_ms"] = 1e3 * t32 / n;
    state.counters["fp8_ms"] = 1e3 * t8 / n;
    state.counters["fp8_over_fp32"] = t8 / t32;
  }
  octet_recipe_destroy(current);
  octet_context_destroy(c);
}
BENCHMARK(BM_LinearFp8CurrentVsFp32)
    ->Args({4096, 4096, 4096})
    ->Args({1024, 1024, 1024})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
