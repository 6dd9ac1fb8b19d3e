// FP8 GEMM (E4M3 x E4M3 -> FP32, scales applied) timed in thread CPU time,
// for A/B comparisons of cpu plugins on a shared, loaded machine: run with
// OMP_NUM_THREADS=1 so that all the work is on the calling thread, whose
// CPU time does not count the time other processes hold the core. Prints
// the minimum and median over the repetitions and a checksum of D (the same
// for two plugins up to the order of the sums). Command: docs/benchmarks.md.
//
//   octet_bench_gemm_cpu_time M N K REPS [SCALING_MODE]
//
// SCALING_MODE is an OCTET_SCALING_* value (default per-tensor, scale 100;
// a block mode takes each block's scale from its amax).
#include <octet/octet.hpp>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

namespace {

void check(octet_status s, const char* what) {
  if (s != OCTET_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: %s\n", what, octet_last_error_message());
    std::exit(1);
  }
}

octet::Tensor tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, int32_t mode) {
  const uint32_t usages = dtype == OCTET_DTYPE_FP32 ? 0u : uint32_t{OCTET_USAGE_ROWWISE};
  try {
    return octet::Tensor::create(ctx, dtype, {rows, cols}, usages,
                                 dtype == OCTET_DTYPE_FP32 ? int32_t{OCTET_SCALING_PER_TENSOR} : mode);
  } catch (const octet::Error& e) {
    check(e.status(), "octet_tensor_create");
  }
  return octet::Tensor();
}

double thread_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s M N K REPS [SCALING_MODE]\n", argv[0]);
    return 2;
  }
  const int64_t m = std::atoll(argv[1]), n = std::atoll(argv[2]), k = std::atoll(argv[3]);
  const int reps = std::atoi(argv[4]);
  const int32_t mode = argc > 5 ? std::atoi(argv[5]) : int32_t{OCTET_SCALING_PER_TENSOR};
  if (m <= 0 || n <= 0 || k <= 0 || reps <= 0) {
    std::fprintf(stderr, "M, N, K and REPS must be positive\n");
    return 2;
  }
  octet_context_options o{};
  o.struct_size = sizeof o;
  o.backend = "cpu";
  o.capability_profile = OCTET_PROFILE_NATIVE;
  octet_context* ctx = nullptr;
  check(octet_context_create(&o, &ctx), "octet_context_create");
  octet::Tensor a_tensor = tensor(ctx, OCTET_DTYPE_E4M3, m, k, mode);
  octet::Tensor b_tensor = tensor(ctx, OCTET_DTYPE_E4M3, n, k, mode);
  octet::Tensor d_tensor = tensor(ctx, OCTET_DTYPE_FP32, m, n, 0);
  octet_tensor *a = a_tensor.get(), *b = b_tensor.get(), *d = d_tensor.get();
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (auto [t, rows] : {std::pair{a, m}, std::pair{b, n}}) {
    std::vector<float> x(static_cast<std::size_t>(rows * k));
    for (float& v : x) v = dist(rng);
    octet::Tensor hp = tensor(ctx, OCTET_DTYPE_FP32, rows, k, 0);
    check(octet_tensor_copy_from_host(hp.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4), "copy_from_host");
    const float scale = 64.0f;
    if (mode == OCTET_SCALING_PER_TENSOR) {
      check(octet_tensor_copy_from_host(t, OCTET_COMPONENT_SCALE, &scale, 4), "copy_from_host (scale)");
    }
    check(octet_quantize(ctx, hp.get(), t, nullptr), "octet_quantize");
  }
  check(octet_gemm(ctx, a, b, d, nullptr), "octet_gemm");  // warm up
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const double t0 = thread_seconds();
    check(octet_gemm(ctx, a, b, d, nullptr), "octet_gemm");
    times.push_back(thread_seconds() - t0);
  }
  std::sort(times.begin(), times.end());
  std::vector<float> out(static_cast<std::size_t>(m * n));
  check(octet_tensor_copy_to_host(d, OCTET_COMPONENT_DATA, out.data(), out.size() * 4), "copy_to_host");
  double sum = 0.0;
  for (float v : out) sum += double(v);
  std::printf("gemm %lldx%lldx%lld min_cpu_ms=%.2f median_cpu_ms=%.2f GFLOP/s_cpu=%.1f checksum=%.6g\n",
              static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), times[0] * 1e3,
              times[times.size() / 2] * 1e3, 2.0 * double(m) * double(n) * double(k) / times[0] / 1e9, sum);
  d_tensor = octet::Tensor();  // the tensors before the context
  b_tensor = octet::Tensor();
  a_tensor = octet::Tensor();
  octet_context_destroy(ctx);
  return 0;
}
