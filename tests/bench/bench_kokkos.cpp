// The kokkos backend's speed next to the reference and (when built) the cpu
// backend: one run, median of 5 timed repetitions after a warm-up, printed as
// milliseconds and as ratios to the kokkos time. Plain std::chrono (no Google
// Benchmark), built when the kokkos plugin is; never run by ctest.
// Command and results: docs/backends/kokkos.md.
#include <octet/octet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

octet_context* context(const char* backend) {
  octet_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  octet_context* c = nullptr;
  return octet_context_create(&o, &c) == OCTET_STATUS_SUCCESS ? c : nullptr;
}

octet_tensor* tensor(octet_context* c, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages) {
  octet_tensor_desc d{};
  d.struct_size = sizeof d;
  d.dtype = dtype;
  d.ndim = 2;
  d.shape[0] = rows;
  d.shape[1] = cols;
  d.usages = usages;
  octet_tensor* t = nullptr;
  if (octet_tensor_create(c, &d, &t) != OCTET_STATUS_SUCCESS) std::abort();
  return t;
}

octet_tensor* filled(octet_context* c, int64_t rows, int64_t cols, uint32_t seed) {
  octet_tensor* t = tensor(c, OCTET_DTYPE_FP32, rows, cols, 0);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (float& x : v) x = dist(rng);
  octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, v.data(), v.size() * 4);
  return t;
}

octet_tensor* quantized(octet_context* c, int64_t rows, int64_t cols, uint32_t usages, uint32_t seed) {
  octet_tensor* hp = filled(c, rows, cols, seed);
  octet_tensor* q = tensor(c, OCTET_DTYPE_E4M3, rows, cols, usages);
  const float scale = 16.0f;
  octet_tensor_copy_from_host(q, OCTET_COMPONENT_SCALE, &scale, 4);
  if (octet_quantize(c, hp, q, nullptr) != OCTET_STATUS_SUCCESS) std::abort();
  octet_tensor_destroy(hp);
  return q;
}

double median_ms(const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[2];
}

void check(int32_t s) {
  if (s != OCTET_STATUS_SUCCESS) {
    std::fprintf(stderr, "failed: %s\n", octet_last_error_message());
    std::abort();
  }
}

}  // namespace

int main() {
  const char* backends[] = {"kokkos", "cpu", "reference"};
  struct Op {
    std::string name;
    std::function<double(octet_context*)> run;
  };
  const int64_t r = 2048, c = 2048, g = 256;
  std::vector<Op> ops = {
      {"quantize fp32->e4m3 2048x2048, both usages",
       [&](octet_context* ctx) {
         octet_tensor* in = filled(ctx, r, c, 1);
         octet_tensor* out = tensor(ctx, OCTET_DTYPE_E4M3, r, c, OCTET_USAGE_BOTH);
         const float scale = 16.0f;
         octet_tensor_copy_from_host(out, OCTET_COMPONENT_SCALE, &scale, 4);
         const double ms = median_ms([&] { check(octet_quantize(ctx, in, out, nullptr)); });
         octet_tensor_destroy(out);
         octet_tensor_destroy(in);
         return ms;
       }},
      {"dequantize e4m3->fp32 2048x2048",
       [&](octet_context* ctx) {
         octet_tensor* q = quantized(ctx, r, c, OCTET_USAGE_ROWWISE, 2);
         octet_tensor* out = tensor(ctx, OCTET_DTYPE_FP32, r, c, 0);
         const double ms = median_ms([&] { check(octet_dequantize(ctx, q, out)); });
         octet_tensor_destroy(out);
         octet_tensor_destroy(q);
         return ms;
       }},
      {"fp8 gemm e4m3 256x256x256 -> fp32",
       [&](octet_context* ctx) {
         octet_tensor* a = quantized(ctx, g, g, OCTET_USAGE_BOTH, 3);
         octet_tensor* b = quantized(ctx, g, g, OCTET_USAGE_BOTH, 4);
         octet_tensor* d = tensor(ctx, OCTET_DTYPE_FP32, g, g, 0);
         const double ms = median_ms([&] { check(octet_gemm(ctx, a, b, d, nullptr)); });
         octet_tensor_destroy(d);
         octet_tensor_destroy(b);
         octet_tensor_destroy(a);
         return ms;
       }},
  };
  std::printf("%-46s %12s %12s %12s %10s %10s\n", "operation", "kokkos ms", "cpu ms", "reference ms",
              "cpu/kokkos", "ref/kokkos");
  for (const Op& op : ops) {
    double ms[3] = {-1, -1, -1};
    for (int b = 0; b < 3; ++b) {
      octet_context* ctx = context(backends[b]);
      if (ctx == nullptr) continue;
      ms[b] = op.run(ctx);
      octet_context_destroy(ctx);
    }
    auto cell = [](double v) { return v < 0 ? std::string("-") : std::to_string(v).substr(0, 8); };
    auto ratio = [&](double v) { return v < 0 || ms[0] <= 0 ? std::string("-") : std::to_string(v / ms[0]).substr(0, 6); };
    std::printf("%-46s %12s %12s %12s %10s %10s\n", op.name.c_str(), cell(ms[0]).c_str(), cell(ms[1]).c_str(),
                cell(ms[2]).c_str(), ratio(ms[1]).c_str(), ratio(ms[2]).c_str());
  }
  return 0;
}
