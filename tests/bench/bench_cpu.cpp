// cpu backend benchmarks. Every benchmark times its baseline inside the same
// iterations (interleaved) and reports ratio = ours / baseline in throughput:
//  - quantize FP32 -> E4M3 with amax (rowwise), and cast+transpose (both
//    usages, Hopper-like context so a transposed copy is written), vs memcpy
//    of the input bytes; bandwidth counts bytes read + written.
//  - FP8 GEMM (E4M3 x E4M3 -> FP32, scales applied, decoding included) vs
//    oneDNN dnnl_sgemm on FP32 operands of the same shape.
//  - FP8 GEMM on cpu vs the reference backend (512^3: the reference is slow).
//  - FP8 GEMM with 2 OpenMP threads vs 1.
//  - per-row scaled FP8 GEMM (numerics.md section 16) vs the per-tensor FP8
//    GEMM of the same shape, in the same iterations.
//  - FP4 GEMM (MXFP4, and NVFP4 1x16 x 16x16) vs the per-tensor FP8 GEMM of
//    the same shape, in the same iterations (2048^3 and the decode shape
//    1 x 8192 x 8192), and vs the reference's FP4 GEMM at small shapes.
//  - the core's peak multiply-add rate on VDPBF16PS (what the FP8 GEMMs run
//    on) vs FP32 FMA (what oneDNN's sgemm runs on), one thread, register
//    operands only: the ceiling of the FP8 GEMM / sgemm ratio on this CPU.
#include <benchmark/benchmark.h>
#include <dnnl.h>
#include <immintrin.h>
#include <omp.h>
#include <octet/octet.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Runs base() then ours() in every iteration (the iteration's time is
// ours'), and returns the total seconds of each: a ratio of the two is
// measured in the same iterations.
template <typename Base, typename Ours>
std::pair<double, double> time_against(benchmark::State& state, Base&& base, Ours&& ours) {
  double t_b = 0, t_o = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    base();
    auto b = Clock::now();
    ours();
    auto c = Clock::now();
    t_b += seconds(a, b);
    t_o += seconds(b, c);
    state.SetIterationTime(seconds(b, c));
  }
  return {t_b, t_o};
}

octet_context* context(const char* backend, int32_t profile) {
  octet_context_options o{};
  o.struct_size = sizeof o;
  o.backend = backend;
  o.capability_profile = profile;
  octet_context* c = nullptr;
  if (octet_context_create(&o, &c) != OCTET_STATUS_SUCCESS) std::abort();
  return c;
}
// Through octet::Tensor::create (mode 0: per-tensor); a failure aborts.
octet::Tensor tensor(octet_context* c, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages, int32_t mode = 0) {
  try {
    return octet::Tensor::create(c, dtype, {rows, cols}, usages, mode);
  } catch (const octet::Error&) {
    std::abort();
  }
}
std::vector<float> random_floats(std::size_t n, float scale) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Times `quantize` against a memcpy of the FP32 input (the baseline, run
// first in every iteration) and reports GB/s of both and their ratio:
// `q_bytes` is what one quantize reads and writes; memcpy moves
// 2 * `input` bytes.
template <typename Quantize>
void time_against_memcpy(benchmark::State& state, const std::vector<float>& input,
                         double q_bytes, Quantize&& quantize) {
  std::vector<float> src(input), dst(input.size());
  const double in_bytes = double(input.size()) * 4;
  double t_q = 0, t_m = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    std::memcpy(dst.data(), src.data(), src.size() * 4);
    benchmark::DoNotOptimize(dst.data());
    auto b = Clock::now();
    quantize();
    auto c = Clock::now();
    t_m += seconds(a, b);
    t_q += seconds(b, c);
    state.SetIterationTime(seconds(b, c));
  }
  const double n = double(state.iterations());
  state.counters["GB/s"] = q_bytes * n / t_q / 1e9;
  state.counters["memcpy_GB/s"] = 2 * in_bytes * n / t_m / 1e9;
  state.counters["ratio_vs_memcpy"] = (q_bytes / t_q) / (2 * in_bytes / t_m);
}

// 12 independent accumulator chains (enough to cover either instruction's
// latency), `rounds` x 12 instructions, operands in registers. (GCC 12's
// AVX-512 headers start some intrinsics from _mm512_undefined_*().)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The 12 accumulators are named variables, so that they stay in registers
// (an array indexed in the loop went to the stack, and store forwarding set
// the pace).
#define OCTET_BENCH_CHAINS(STEP)                                                                                       \
  __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f), a2 = _mm512_set1_ps(2.0f), a3 = _mm512_set1_ps(3.0f),   \
         a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f), a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f),   \
         a8 = _mm512_set1_ps(8.0f), a9 = _mm512_set1_ps(9.0f), a10 = _mm512_set1_ps(10.0f),                            \
         a11 = _mm512_set1_ps(11.0f);                                                                                  \
  for (long r = 0; r < rounds; ++r) {                                                                                  \
    a0 = STEP(a0);                                                                                                     \
    a1 = STEP(a1);                                                                                                     \
    a2 = STEP(a2);                                                                                                     \
    a3 = STEP(a3);                                                                                                     \
    a4 = STEP(a4);                                                                                                     \
    a5 = STEP(a5);                                                                                                     \
    a6 = STEP(a6);                                                                                                     \
    a7 = STEP(a7);                                                                                                     \
    a8 = STEP(a8);                                                                                                     \
    a9 = STEP(a9);                                                                                                     \
    a10 = STEP(a10);                                                                                                   \
    a11 = STEP(a11);                                                                                                   \
    asm volatile(""                                                                                                    \
                 : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), \
                   "+v"(a10), "+v"(a11));                                                                              \
  }                                                                                                                    \
  return _mm512_reduce_add_ps(                                                                                         \
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),                         \
                                  _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))),                        \
                    _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))))

__attribute__((target("avx512f,avx512bf16"))) float dpbf16_chains(long rounds) {
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3F803F80), y = (__m512bh)_mm512_set1_epi32(0x3F803F80);
#define OCTET_BENCH_DPBF16(a) _mm512_dpbf16_ps(a, x, y)
  OCTET_BENCH_CHAINS(OCTET_BENCH_DPBF16);
#undef OCTET_BENCH_DPBF16
}
__attribute__((target("avx512f,fma"))) float fma_chains(long rounds) {
  const __m512 x = _mm512_set1_ps(0.5f), y = _mm512_set1_ps(0.25f);
#define OCTET_BENCH_FMA(a) _mm512_fmadd_ps(a, x, y)
  OCTET_BENCH_CHAINS(OCTET_BENCH_FMA);
#undef OCTET_BENCH_FMA
}
#undef OCTET_BENCH_CHAINS
#pragma GCC diagnostic pop

// One VDPBF16PS does 32 multiply-adds, one 512-bit FMA 16: mac_ratio is
// the rate of multiply-adds on VDPBF16PS over that on FMA, in the same
// iterations. Where a core issues one VDPBF16PS but two FMAs a cycle, it is
// 1.0: an FP8 GEMM widened to BF16 cannot beat a good sgemm there.
void BM_PeakDpbf16VsFma(benchmark::State& state) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16")) {
    state.SkipWithError("this CPU has no AVX512_BF16");
    return;
  }
  constexpr long kRounds = 1 << 20;
  double t_fma = 0, t_dp = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    benchmark::DoNotOptimize(fma_chains(kRounds));
    auto b = Clock::now();
    benchmark::DoNotOptimize(dpbf16_chains(kRounds));
    auto c = Clock::now();
    t_fma += seconds(a, b);
    t_dp += seconds(b, c);
    state.SetIterationTime(seconds(b, c));
  }
  const double instructions = 12.0 * kRounds * double(state.iterations());
  state.counters["dpbf16_per_ns"] = instructions / t_dp / 1e9;
  state.counters["fma_per_ns"] = instructions / t_fma / 1e9;
  state.counters["mac_ratio"] = (32.0 * instructions / t_dp) / (16.0 * instructions / t_fma);
}
BENCHMARK(BM_PeakDpbf16VsFma)->UseManualTime()->Unit(benchmark::kMillisecond);

// FP32 -> E4M3 quantize over 64 MiB of input; range(0) = 1: rowwise only,
// 3: both usages on a Hopper-like context (fused cast + transpose).
void BM_Quantize(benchmark::State& state) {
  const int64_t rows = 4096, cols = 4096;  // 16 Mi floats = 64 MiB
  const uint32_t usages = static_cast<uint32_t>(state.range(0));
  octet_context* ctx =
      context("cpu", usages == 3 ? OCTET_PROFILE_HOPPER_LIKE : OCTET_PROFILE_NATIVE);
  octet::Tensor in = tensor(ctx, OCTET_DTYPE_FP32, rows, cols, 0);
  octet::Tensor out = tensor(ctx, OCTET_DTYPE_E4M3, rows, cols, usages);
  const std::vector<float> x = random_floats(std::size_t(rows * cols), 50.0f);
  octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
  const float scale = 2.0f;
  octet_tensor_copy_from_host(out.get(), OCTET_COMPONENT_SCALE, &scale, 4);
  const double in_bytes = double(rows * cols) * 4;
  const double q_bytes = in_bytes + double(rows * cols) * (usages == 3 ? 2 : 1);
  time_against_memcpy(state, x, q_bytes, [&] {
    if (octet_quantize(ctx, in.get(), out.get(), nullptr) != OCTET_STATUS_SUCCESS) std::abort();
  });
  out = octet::Tensor();  // the tensors before the context
  in = octet::Tensor();
  octet_context_destroy(ctx);
}
BENCHMARK(BM_Quantize)->Arg(1)->Arg(3)->UseManualTime()->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

octet::Tensor scaled_tensor(octet_context* ctx, int64_t rows, int64_t cols, int32_t mode,
                            uint32_t usages = OCTET_USAGE_ROWWISE) {
  return tensor(ctx, OCTET_DTYPE_E4M3, rows, cols, usages, mode);
}

struct Fp8Gemm {
  // mode (of A, and of B unless mode_b is given): OCTET_SCALING_PER_TENSOR
  // (scale 100), or a per-row or block mode (each row's or block's scale
  // from its amax).
  Fp8Gemm(const char* backend, int64_t m, int64_t n, int64_t k, int32_t mode = OCTET_SCALING_PER_TENSOR,
          int32_t mode_b = 0)
      : m(m), n(n), k(k) {
    ctx = context(backend, OCTET_PROFILE_NATIVE);
    a = scaled_tensor(ctx, m, k, mode);
    b = scaled_tensor(ctx, n, k, mode_b != 0 ? mode_b : mode);
    d = tensor(ctx, OCTET_DTYPE_FP32, m, n, 0);
    for (auto [t, rows, t_mode] : {std::tuple{a.get(), m, mode}, std::tuple{b.get(), n, mode_b != 0 ? mode_b : mode}}) {
      const octet::Tensor hp = tensor(ctx, OCTET_DTYPE_FP32, rows, k, 0);
      const std::vector<float> x = random_floats(std::size_t(rows * k), 1.0f);
      octet_tensor_copy_from_host(hp.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
      const float scale = 100.0f;  // scale_inv = 0.01 applied by the GEMM
      if (t_mode == OCTET_SCALING_PER_TENSOR) octet_tensor_copy_from_host(t, OCTET_COMPONENT_SCALE, &scale, 4);
      if (octet_quantize(ctx, hp.get(), t, nullptr) != OCTET_STATUS_SUCCESS) std::abort();
    }
  }
  ~Fp8Gemm() {
    for (octet::Tensor* t : {&a, &b, &d}) *t = octet::Tensor();  // the tensors before the context
    octet_context_destroy(ctx);
  }
  void run() {
    if (octet_gemm(ctx, a.get(), b.get(), d.get(), nullptr) != OCTET_STATUS_SUCCESS) std::abort();
  }
  int64_t m, n, k;
  octet_context* ctx;
  octet::Tensor a, b, d;
};

struct Sgemm {
  Sgemm(int64_t m, int64_t n, int64_t k)
      : m(m), n(n), k(k), a(random_floats(std::size_t(m * k), 1.0f)),
        b(random_floats(std::size_t(n * k), 1.0f)), c(std::size_t(m * n)) {}
  void run() {
    if (dnnl_sgemm('N', 'T', m, n, k, 1.0f, a.data(), k, b.data(), k, 0.0f, c.data(), n) !=
        dnnl_success)
      std::abort();
  }
  int64_t m, n, k;
  std::vector<float> a, b, c;
};

// FP8 GEMM on cpu vs dnnl_sgemm on FP32 operands, same shape.
void BM_Fp8GemmVsSgemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Fp8Gemm ours("cpu", m, n, k);
  Sgemm base(m, n, k);
  ours.run();
  base.run();  // warm up (workspace, oneDNN kernels)
  const auto [t_b, t_o] = time_against(
      state, [&] { base.run(); }, [&] { ours.run(); });
  const double flops = 2.0 * double(m) * double(n) * double(k) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / t_o / 1e9;
  state.counters["sgemm_GFLOP/s"] = flops / t_b / 1e9;
  state.counters["ratio_vs_sgemm"] = t_b / t_o;
}
BENCHMARK(BM_Fp8GemmVsSgemm)->Args({2048, 2048, 2048})->Args({4096, 4096, 1024})
    ->Args({1, 8192, 8192})->Args({16, 8192, 8192})->Args({32, 8192, 8192})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Decode-shaped FP8 GEMM (m activation rows x 8192 x 8192 E4M3 weights):
// the weights' bytes read per second against a memcpy of the same 64 MiB
// (read + written) timed in the same iterations.
void BM_Fp8GemmDecode(benchmark::State& state) {
  const int64_t m = state.range(0), n = 8192, k = 8192;
  Fp8Gemm ours("cpu", m, n, k);
  std::vector<float> src(std::size_t(n * k / 4), 1.0f), dst(src.size());
  ours.run();  // warm up (workspace)
  double t_o = 0, t_m = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    std::memcpy(dst.data(), src.data(), src.size() * 4);
    benchmark::DoNotOptimize(dst.data());
    auto b = Clock::now();
    ours.run();
    auto c = Clock::now();
    t_m += seconds(a, b);
    t_o += seconds(b, c);
    state.SetIterationTime(seconds(b, c));
  }
  const double it = double(state.iterations()), weight_bytes = double(n * k);
  state.counters["GFLOP/s"] = 2.0 * double(m) * double(n) * double(k) * it / t_o / 1e9;
  state.counters["weights_GB/s"] = weight_bytes * it / t_o / 1e9;
  state.counters["memcpy_GB/s"] = 2 * weight_bytes * it / t_m / 1e9;
  state.counters["ratio_vs_memcpy"] = (weight_bytes / t_o) / (2 * weight_bytes / t_m);
}
BENCHMARK(BM_Fp8GemmDecode)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(12)
    ->Arg(16)
    ->Arg(24)
    ->Arg(32)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

// FP8 GEMM on cpu vs the reference backend, 512^3.
void BM_Fp8GemmVsReference(benchmark::State& state) {
  const int64_t s = state.range(0);
  Fp8Gemm ours("cpu", s, s, s), ref("reference", s, s, s);
  ours.run();
  const auto [t_r, t_o] = time_against(
      state, [&] { ref.run(); }, [&] { ours.run(); });
  const double flops = 2.0 * double(s) * double(s) * double(s) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / t_o / 1e9;
  state.counters["reference_GFLOP/s"] = flops / t_r / 1e9;
  state.counters["speedup_vs_reference"] = t_r / t_o;
}
BENCHMARK(BM_Fp8GemmVsReference)->Arg(512)->UseManualTime()->Unit(benchmark::kMillisecond);

// FP8 GEMM on cpu vs the reference at the target shapes (2048^3 and
// 4096x4096x1024): the reference takes seconds there, so it is timed once
// per repetition (before the cpu iterations, same process), and the cpu
// GEMM over the benchmark's iterations.
void BM_Fp8GemmVsReferenceOneShot(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Fp8Gemm ours("cpu", m, n, k), ref("reference", m, n, k);
  ours.run();
  auto r0 = Clock::now();
  ref.run();
  const double t_r = seconds(r0, Clock::now());
  double t_o = 0;
  for (auto _ : state) {
    auto a = Clock::now();
    ours.run();
    auto b = Clock::now();
    t_o += seconds(a, b);
    state.SetIterationTime(seconds(a, b));
  }
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const double per_call = t_o / double(state.iterations());
  state.counters["GFLOP/s"] = flops / per_call / 1e9;
  state.counters["reference_GFLOP/s"] = flops / t_r / 1e9;
  state.counters["speedup_vs_reference"] = t_r / per_call;
}
BENCHMARK(BM_Fp8GemmVsReferenceOneShot)->Args({2048, 2048, 2048})->Args({4096, 4096, 1024})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

// FP8 GEMM 2048^3 with 2 OpenMP threads vs 1.
void BM_Fp8GemmThreads(benchmark::State& state) {
  const int64_t s = state.range(0);
  Fp8Gemm ours("cpu", s, s, s);
  const int saved = omp_get_max_threads();
  ours.run();
  double t1 = 0, t2 = 0;
  for (auto _ : state) {
    omp_set_num_threads(1);
    auto a = Clock::now();
    ours.run();
    auto b = Clock::now();
    omp_set_num_threads(2);
    ours.run();
    auto c = Clock::now();
    t1 += seconds(a, b);
    t2 += seconds(b, c);
    state.SetIterationTime(seconds(b, c));
  }
  omp_set_num_threads(saved);
  const double flops = 2.0 * double(s) * double(s) * double(s) * double(state.iterations());
  state.counters["GFLOP/s_2threads"] = flops / t2 / 1e9;
  state.counters["GFLOP/s_1thread"] = flops / t1 / 1e9;
  state.counters["speedup_2_vs_1"] = t1 / t2;
}
BENCHMARK(BM_Fp8GemmThreads)->Arg(2048)->UseManualTime()->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// Per-row scaled FP8 GEMM (one scale per row of A and of B, applied in the
// epilogue) vs the per-tensor FP8 GEMM of the same shape, interleaved.
void BM_PerRowFp8GemmVsPerTensor(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  Fp8Gemm ours("cpu", m, n, k, OCTET_SCALING_PER_ROW);
  Fp8Gemm base("cpu", m, n, k, OCTET_SCALING_PER_TENSOR);
  ours.run();
  base.run();
  const auto [t_b, t_o] = time_against(
      state, [&] { base.run(); }, [&] { ours.run(); });
  const double flops = 2.0 * double(m) * double(n) * double(k) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / t_o / 1e9;
  state.counters["per_tensor_GFLOP/s"] = flops / t_b / 1e9;
  state.counters["ratio_vs_per_tensor"] = t_b / t_o;
}
BENCHMARK(BM_PerRowFp8GemmVsPerTensor)
    ->Args({2048, 2048, 2048})
    ->Args({4096, 4096, 1024})
    ->Args({16, 8192, 8192})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// Block-scaled quantize of 64 MiB of FP32 input (both usages: the rowwise
// and the columnwise copies, each with its scale grid) vs memcpy.
// range(0): OCTET_SCALING_MXFP8_1X32, OCTET_SCALING_BLOCK_1X128,
// OCTET_SCALING_BLOCK_128X128, OCTET_SCALING_PER_ROW or
// OCTET_SCALING_PER_COLUMN.
void BM_BlockQuantize(benchmark::State& state) {
  const int64_t rows = 4096, cols = 4096;
  const int32_t mode = static_cast<int32_t>(state.range(0));
  octet_context* ctx = context("cpu", OCTET_PROFILE_NATIVE);
  octet::Tensor in = tensor(ctx, OCTET_DTYPE_FP32, rows, cols, 0);
  octet::Tensor out = scaled_tensor(ctx, rows, cols, mode, OCTET_USAGE_BOTH);
  const std::vector<float> x = random_floats(std::size_t(rows * cols), 50.0f);
  octet_tensor_copy_from_host(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
  const double in_bytes = double(rows * cols) * 4;
  // Each usage reads the input once and writes its codes.
  const double q_bytes = 2 * in_bytes + 2 * double(rows * cols);
  time_against_memcpy(state, x, q_bytes, [&] {
    if (octet_quantize(ctx, in.get(), out.get(), nullptr) != OCTET_STATUS_SUCCESS) std::abort();
  });
  out = octet::Tensor();  // the tensors before the context
  in = octet::Tensor();
  octet_context_destroy(ctx);
}
BENCHMARK(BM_BlockQuantize)
    ->Arg(OCTET_SCALING_MXFP8_1X32)
    ->Arg(OCTET_SCALING_BLOCK_1X128)
    ->Arg(OCTET_SCALING_BLOCK_128X128)
    ->Arg(OCTET_SCALING_PER_ROW)
    ->Arg(OCTET_SCALING_PER_COLUMN)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// Block-scaled FP8 GEMM, 2048^3 (E4M3 x E4M3 -> FP32): range(0) =
// OCTET_SCALING_MXFP8_1X32 (both operands 1x32) or
// OCTET_SCALING_BLOCK_1X128 (A 1x128, B 128x128), against the per-tensor
// FP8 GEMM of the same shape timed in the same iterations.
void BM_BlockGemmVsPerTensor(benchmark::State& state) {
  const int64_t m = 2048, n = 2048, k = 2048;
  const int32_t mode_a = static_cast<int32_t>(state.range(0));
  const int32_t mode_b = mode_a == OCTET_SCALING_BLOCK_1X128 ? OCTET_SCALING_BLOCK_128X128 : mode_a;
  Fp8Gemm block("cpu", m, n, k, mode_a, mode_b), per_tensor("cpu", m, n, k);
  block.run();
  per_tensor.run();  // warm up
  const auto [t_pt, t_blk] = time_against(
      state, [&] { per_tensor.run(); }, [&] { block.run(); });
  const double flops = 2.0 * double(m) * double(n) * double(k) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / t_blk / 1e9;
  state.counters["per_tensor_GFLOP/s"] = flops / t_pt / 1e9;
  state.counters["ratio_vs_per_tensor"] = t_pt / t_blk;
}
BENCHMARK(BM_BlockGemmVsPerTensor)
    ->Arg(OCTET_SCALING_MXFP8_1X32)
    ->Arg(OCTET_SCALING_BLOCK_1X128)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// An FP4 GEMM through octet.h: A [m,k] and B [n,k] quantized from random
// FP32 values (E2M1 codes, mode_a and mode_b: MXFP4_1X32, or NVFP4 1x16 and
// 16x16), D FP32.
struct Fp4Gemm {
  Fp4Gemm(const char* backend, int64_t m, int64_t n, int64_t k, int32_t mode_a, int32_t mode_b) {
    ctx = context(backend, OCTET_PROFILE_NATIVE);
    a = fp4_tensor(m, k, mode_a);
    b = fp4_tensor(n, k, mode_b);
    d = tensor(ctx, OCTET_DTYPE_FP32, m, n, 0);
  }
  octet::Tensor fp4_tensor(int64_t rows, int64_t cols, int32_t mode) {
    octet::Tensor t = tensor(ctx, OCTET_DTYPE_E2M1, rows, cols, OCTET_USAGE_ROWWISE, mode);
    const octet::Tensor hp = tensor(ctx, OCTET_DTYPE_FP32, rows, cols, 0);
    const std::vector<float> x = random_floats(std::size_t(rows * cols), 1.0f);
    octet_tensor_copy_from_host(hp.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
    if (octet_quantize(ctx, hp.get(), t.get(), nullptr) != OCTET_STATUS_SUCCESS) std::abort();
    return t;
  }
  ~Fp4Gemm() {
    for (octet::Tensor* t : {&a, &b, &d}) *t = octet::Tensor();  // the tensors before the context
    octet_context_destroy(ctx);
  }
  void run() {
    if (octet_gemm(ctx, a.get(), b.get(), d.get(), nullptr) != OCTET_STATUS_SUCCESS) std::abort();
  }
  octet_context* ctx;
  octet::Tensor a, b, d;
};

int32_t fp4_mode_b(int32_t mode_a) { return mode_a == OCTET_SCALING_NVFP4_1X16 ? OCTET_SCALING_NVFP4_16X16 : mode_a; }

// FP4 GEMM on cpu (range(3): OCTET_SCALING_MXFP4_1X32, or NVFP4_1X16 for
// A with NVFP4_16X16 weights) vs the per-tensor FP8 GEMM of the same shape
// [range(0), range(1), range(2)], timed in the same iterations.
void BM_Fp4GemmVsPerTensorFp8(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int32_t mode = static_cast<int32_t>(state.range(3));
  Fp4Gemm fp4("cpu", m, n, k, mode, fp4_mode_b(mode));
  Fp8Gemm fp8("cpu", m, n, k);
  fp4.run();
  fp8.run();  // warm up
  const auto [t_fp8, t_fp4] = time_against(
      state, [&] { fp8.run(); }, [&] { fp4.run(); });
  const double flops = 2.0 * double(m) * double(n) * double(k) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / t_fp4 / 1e9;
  state.counters["fp8_GFLOP/s"] = flops / t_fp8 / 1e9;
  state.counters["ratio_vs_fp8"] = t_fp8 / t_fp4;
}
BENCHMARK(BM_Fp4GemmVsPerTensorFp8)
    ->Args({2048, 2048, 2048, OCTET_SCALING_MXFP4_1X32})
    ->Args({2048, 2048, 2048, OCTET_SCALING_NVFP4_1X16})
    ->Args({1, 8192, 8192, OCTET_SCALING_MXFP4_1X32})
    ->Args({1, 8192, 8192, OCTET_SCALING_NVFP4_1X16})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// FP4 GEMM on cpu vs the reference's FP4 GEMM (plain loops), same operands'
// shape, interleaved: 256^3 and the decode shape 1 x 2048 x 2048 (the
// reference is too slow for the target shapes in the same iterations).
void BM_Fp4GemmVsReference(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int32_t mode = static_cast<int32_t>(state.range(3));
  Fp4Gemm ours("cpu", m, n, k, mode, fp4_mode_b(mode));
  Fp4Gemm ref("reference", m, n, k, mode, fp4_mode_b(mode));
  ours.run();
  const auto [t_r, t_o] = time_against(
      state, [&] { ref.run(); }, [&] { ours.run(); });
  const double flops = 2.0 * double(m) * double(n) * double(k) * double(state.iterations());
  state.counters["GFLOP/s"] = flops / t_o / 1e9;
  state.counters["reference_GFLOP/s"] = flops / t_r / 1e9;
  state.counters["ratio_vs_reference"] = t_r / t_o;
}
BENCHMARK(BM_Fp4GemmVsReference)
    ->Args({256, 256, 256, OCTET_SCALING_MXFP4_1X32})
    ->Args({256, 256, 256, OCTET_SCALING_NVFP4_1X16})
    ->Args({1, 2048, 2048, OCTET_SCALING_NVFP4_1X16})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
