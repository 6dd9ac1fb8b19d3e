// The kokkos backend's speed next to the reference and (when built) the cpu
// backend: one run, median of 5 timed repetitions after a warm-up, printed as
// milliseconds and as ratios to the kokkos time. Plain std::chrono (no Google
// Benchmark), built when the kokkos plugin is; never run by ctest.
// Command and results: docs/backends/kokkos.md.
#include <octet/octet.hpp>

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

octet::Tensor tensor(octet_context* c, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages) {
  try {
    return octet::Tensor::create(c, dtype, {rows, cols}, usages);
  } catch (const octet::Error&) {
    std::abort();
  }
}

octet::Tensor filled(octet_context* c, int64_t rows, int64_t cols, uint32_t seed) {
  octet::Tensor t = tensor(c, OCTET_DTYPE_FP32, rows, cols, 0);
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (float& x : v) x = dist(rng);
  octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, v.data(), v.size() * 4);
  return t;
}

octet::Tensor quantized(octet_context* c, int64_t rows, int64_t cols, uint32_t usages, uint32_t seed) {
  octet::Tensor hp = filled(c, rows, cols, seed);
  octet::Tensor q = tensor(c, OCTET_DTYPE_E4M3, rows, cols, usages);
  const float scale = 16.0f;
  octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &scale, 4);
  if (octet_quantize(c, hp.get(), q.get(), nullptr) != OCTET_STATUS_SUCCESS) std::abort();
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
         const octet::Tensor in = filled(ctx, r, c, 1);
         const octet::Tensor out = tensor(ctx, OCTET_DTYPE_E4M3, r, c, OCTET_USAGE_BOTH);
         const float scale = 16.0f;
         octet_tensor_copy_from_host(out.get(), OCTET_COMPONENT_SCALE, &scale, 4);
         return median_ms([&] { check(octet_quantize(ctx, in.get(), out.get(), nullptr)); });
       }},
      {"dequantize e4m3->fp32 2048x2048",
       [&](octet_context* ctx) {
         const octet::Tensor q = quantized(ctx, r, c, OCTET_USAGE_ROWWISE, 2);
         const octet::Tensor out = tensor(ctx, OCTET_DTYPE_FP32, r, c, 0);
         return median_ms([&] { check(octet_dequantize(ctx, q.get(), out.get())); });
       }},
      {"fp8 gemm e4m3 256x256x256 -> fp32",
       [&](octet_context* ctx) {
         const octet::Tensor a = quantized(ctx, g, g, OCTET_USAGE_BOTH, 3);
         const octet::Tensor b = quantized(ctx, g, g, OCTET_USAGE_BOTH, 4);
         const octet::Tensor d = tensor(ctx, OCTET_DTYPE_FP32, g, g, 0);
         return median_ms([&] { check(octet_gemm(ctx, a.get(), b.get(), d.get(), nullptr)); });
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
