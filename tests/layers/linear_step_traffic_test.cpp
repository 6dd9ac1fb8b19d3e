// What one FP8 training step of a Linear asks of a backend, call by call.
//
// The step is the one tests/bench/gpu/bench_cuda.py times (OctetLinear,
// _bench_linear_shape): no bias, BF16 parameters, input and gradients, the
// weight lent with skip_weight_allocation + octet_layer_set_weight, HYBRID
// format (E4M3 x and W, E5M2 dy); current scaling as the layer's own recipe,
// delayed scaling through an autocast scope around forward and backward.
// It runs on the "tracing" plugin (tracing_backend.cpp: the reference's
// kernels behind the cuda backend's capabilities, every entry recorded), on
// the hopper-like profile (TN-only FP8 GEMMs, transposed copies) and the
// blackwell-like one (columns read natively), and compares the third step
// (after two warm-up steps) with the schedule written out below by hand.
//
// The minimal schedule these are measured against is Transformer Engine's:
// one pass per tensor writing every FP8 copy it needs (fused
// cast+transpose, amax in the same pass), current scaling adding one amax
// pass per tensor, three FP8 GEMMs writing BF16 directly, scales on the
// device, nothing copied to the host. Octet's steps below are exactly that
// plus small scalar kernels. (On the hopper-like profile a training forward
// writes W's transposed codes in its fused pass and keeps only them for
// dgrad, as TE does; docs/layers.md.)
//
// A regression that adds a pass over a large tensor, an FP32 intermediate,
// a copy to the host or a synchronisation changes the lists and the byte
// totals and fails here.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "layer_test_helpers.hpp"
#include "tracing_backend.h"

namespace layers_test {
namespace {

// Tokens x in_features -> out_features; all different, so a swapped
// dimension shows.
constexpr int64_t M = 64, K = 128, N = 96;
constexpr uint64_t kMK = uint64_t(M * K), kNK = uint64_t(N * K), kMN = uint64_t(M * N);
constexpr uint32_t kHistory = 16;  // bench_cuda.py's delayed recipe
// A quantized tensor's scale, scale_inv and amax: 12 B, which the core
// asks of mem_alloc rounded up to the backend's alignment (256, as cuda's).
constexpr uint64_t kScalars = 256;

enum class Kind { Current, DelayedAutocast };

struct Trace {
  octet_test_trace_clear_fn clear = nullptr;
  octet_test_trace_count_fn count = nullptr;
  octet_test_trace_events_fn events = nullptr;
};

Trace tracing_plugin() {
  Trace t;
  void* handle = dlopen(OCTET_TRACING_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return t;
  t.clear = reinterpret_cast<octet_test_trace_clear_fn>(dlsym(handle, "octet_test_trace_clear"));
  t.count = reinterpret_cast<octet_test_trace_count_fn>(dlsym(handle, "octet_test_trace_count"));
  t.events = reinterpret_cast<octet_test_trace_events_fn>(dlsym(handle, "octet_test_trace_events"));
  dlclose(handle);  // still loaded by the library's registry
  return t;
}

// Loads the plugin by path (no discovery runs here) once.
bool tracing_loaded() {
  octet_context* ctx = make_context("tracing", OCTET_PROFILE_NATIVE);
  if (ctx == nullptr) {
    octet_backend_load(OCTET_TRACING_PLUGIN_PATH);
    ctx = make_context("tracing", OCTET_PROFILE_NATIVE);
  }
  if (ctx == nullptr) return false;
  octet_context_destroy(ctx);
  return tracing_plugin().events != nullptr;
}

std::string S(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// One step as the backend saw it.
struct Step {
  std::vector<std::string> calls;       // every entry but mem_alloc/mem_free, in order
  std::vector<uint64_t> allocations;    // sizes asked of mem_alloc, in order
  size_t frees = 0;
  uint64_t read = 0, written = 0, flops = 0;
};

Step summarize(const Trace& t) {
  Step s;
  const size_t n = t.count();
  const octet_test_trace_event* e = t.events();
  for (size_t i = 0; i < n; ++i) {
    const std::string entry = e[i].entry;
    if (entry == "mem_alloc") {
      s.allocations.push_back(e[i].alloc_bytes);
      continue;
    }
    if (entry == "mem_free") {
      ++s.frees;
      continue;
    }
    s.calls.push_back(e[i].detail[0] ? entry + " " + e[i].detail : entry);
    s.read += e[i].bytes_read;
    s.written += e[i].bytes_written;
    s.flops += e[i].flops;
  }
  return s;
}

struct Options {
  int32_t profile = OCTET_PROFILE_HOPPER_LIKE;
  Kind kind = Kind::Current;
  int32_t minimize_memory = 0;
  int32_t weight_cache = 0;  // with octet_layer_new_step before each step
  int micro_batches = 1;     // forward + backward pairs per step
};

// Three steps as bench_cuda.py runs them; the record of the last one.
Step run_steps(const Options& opt) {
  Step result;
  const Trace trace = tracing_plugin();
  EXPECT_NE(trace.events, nullptr);
  if (trace.events == nullptr) return result;
  octet_context* ctx = make_context("tracing", opt.profile);
  EXPECT_NE(ctx, nullptr) << octet_last_error_message();
  if (ctx == nullptr) return result;

  octet_recipe* recipe = nullptr;
  if (opt.kind == Kind::Current) {
    octet_current_scaling_options o;
    EXPECT_OK(octet_current_scaling_options_init(&o));
    o.format = OCTET_FORMAT_HYBRID;
    EXPECT_OK(octet_recipe_create_current(&o, &recipe));
  } else {
    octet_delayed_scaling_options o;
    EXPECT_OK(octet_delayed_scaling_options_init(&o));
    o.format = OCTET_FORMAT_HYBRID;
    o.amax_history_len = kHistory;
    EXPECT_OK(octet_recipe_create_delayed(&o, &recipe));
  }
  const bool autocast = opt.kind == Kind::DelayedAutocast;

  octet_linear_options lo;
  EXPECT_OK(octet_linear_options_init(&lo));
  lo.in_features = K;
  lo.out_features = N;
  lo.bias = 0;
  lo.params_dtype = OCTET_DTYPE_BF16;
  lo.weight_storage = OCTET_WEIGHTS_HIGH_PRECISION;
  lo.recipe = autocast ? nullptr : recipe;
  lo.skip_weight_allocation = 1;
  lo.minimize_memory = opt.minimize_memory;
  lo.weight_cache = opt.weight_cache;
  octet_layer* layer = nullptr;
  EXPECT_OK(octet_layer_create_linear(ctx, &lo, &layer));

  octet::Tensor w = make_tensor(ctx, OCTET_DTYPE_BF16, N, K);
  octet::Tensor x = make_tensor(ctx, OCTET_DTYPE_BF16, M, K);
  octet::Tensor dy = make_tensor(ctx, OCTET_DTYPE_BF16, M, N);
  octet::Tensor y = make_tensor(ctx, OCTET_DTYPE_BF16, M, N);
  octet::Tensor dx = make_tensor(ctx, OCTET_DTYPE_BF16, M, K);
  upload(w.get(), random_vec(size_t(kNK), 1, 0.02));
  upload(x.get(), random_vec(size_t(kMK), 2));
  upload(dy.get(), random_vec(size_t(kMN), 3, 0.01));
  size_t index = 0;
  EXPECT_OK(octet_layer_find_parameter(layer, "weight", &index));
  EXPECT_OK(octet_layer_set_weight(layer, index, w.get()));

  for (int step = 0; step < 3; ++step) {
    trace.clear();
    if (opt.weight_cache) {
      EXPECT_OK(octet_layer_new_step(layer));
    }
    if (autocast) {
      EXPECT_OK(octet_autocast_begin(ctx, recipe));
    }
    for (int micro_batch = 0; micro_batch < opt.micro_batches; ++micro_batch) {
      octet_saved* saved = nullptr;
      EXPECT_OK(octet_layer_forward(layer, x.get(), y.get(), 1, &saved));
      EXPECT_OK(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0));
      octet_saved_destroy(saved);  // NULL once consumed
    }
    if (autocast) {
      EXPECT_OK(octet_autocast_end(ctx));
    }
    result = summarize(trace);
  }

  for (octet::Tensor* t : {&w, &x, &dy, &y, &dx}) *t = octet::Tensor();  // before the layer
  octet_layer_destroy(layer);
  octet_recipe_destroy(recipe);
  octet_context_destroy(ctx);
  return result;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += "  " + l + "\n";
  return s;
}

// A step's bytes at the benchmark's shape (printed for the record, not
// asserted), from the per-element counts of the formulas below: in all,
// and outside the GEMMs (the memory-bound passes; the GEMMs' own operand
// traffic, 4 MK + 4 NK + 4 MN in every schedule, hides under their compute).
void print_at_bench_shape(const char* what, uint64_t read_mk, uint64_t read_nk, uint64_t read_mn,
                          uint64_t write_mk, uint64_t write_nk, uint64_t write_mn) {
  const double mk = 16384.0 * 8192, nk = 8192.0 * 8192, mn = 16384.0 * 8192;
  const double all = double(read_mk + write_mk) * mk + double(read_nk + write_nk) * nk + double(read_mn + write_mn) * mn;
  const double gemm = 4 * mk + 4 * nk + 4 * mn;
  std::printf("%-44s %.3f GB read+written, %.3f GB outside the GEMMs (%.0f us at 3.35 TB/s)\n", what, all / 1e9,
              (all - gemm) / 1e9, (all - gemm) / 3.35e12 * 1e6);
}

// ---- the schedules, by hand -------------------------------------------------

// The backward GEMMs: hopper-like reads transposed copies with TN GEMMs;
// blackwell-like reads the rowwise copies along columns (NN dgrad, NT wgrad).
std::vector<std::string> backward_gemms(bool hopper) {
  if (hopper) {
    return {S("gemm TN e5m2[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, N, K, N, M, K),   // dgrad dx = dy W
            S("gemm TN e5m2[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", N, M, K, M, N, K)};  // wgrad dW = dy^T x
  }
  return {S("gemm NN e5m2[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, N, N, K, M, K),
          S("gemm NT e5m2[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, N, M, K, N, K)};
}

// Current scaling. Per tensor: the scalars of the new FP8 tensor
// initialised (12 B from the host, not a copy to it), an amax pass, the
// scale on the device, one fused pass writing every copy the profile needs
// (hopper-like: rowwise and transposed, W's transposed codes being dgrad's
// operand; blackwell-like: rowwise only), the tensor's [scale, scale_inv,
// amax] copied into the quantizer's device state.
std::vector<std::string> current_schedule(bool hopper) {
  const char* copies = hopper ? "rowwise+transposed" : "rowwise";
  std::vector<std::string> calls = {
      // forward
      "copy_from_host 12 B",
      S("amax bf16[%dx%d]", M, K),
      "scale_from_amax",
      S("quantize bf16[%dx%d] -> e4m3 %s", M, K, copies),
      "convert fp32[1x3] -> fp32[1x3]",
      "copy_from_host 12 B",
      S("amax bf16[%dx%d]", N, K),
      "scale_from_amax",
      S("quantize bf16[%dx%d] -> e4m3 %s", N, K, copies),
      "convert fp32[1x3] -> fp32[1x3]",
      S("gemm TN e4m3[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, K, N, K, M, N),  // fprop y = x W^T
      // backward
      "copy_from_host 12 B",
      S("amax bf16[%dx%d]", M, N),
      "scale_from_amax",
      S("quantize bf16[%dx%d] -> e5m2 %s", M, N, copies),
      "convert fp32[1x3] -> fp32[1x3]",
  };
  for (const std::string& g : backward_gemms(hopper)) calls.push_back(g);
  return calls;
}

// Delayed scaling: no amax pass; the quantizer's [scale, scale_inv] copied
// into the tensor before the pass, its amax recorded in the history after;
// at the end of the autocast scope one update per quantizer (x, W, dy).
std::vector<std::string> delayed_schedule(bool hopper) {
  const char* copies = hopper ? "rowwise+transposed" : "rowwise";
  std::vector<std::string> calls = {
      "copy_from_host 12 B",
      "convert fp32[1x2] -> fp32[1x2]",
      S("quantize bf16[%dx%d] -> e4m3 %s", M, K, copies),
      "amax_record",
      "copy_from_host 12 B",
      "convert fp32[1x2] -> fp32[1x2]",
      S("quantize bf16[%dx%d] -> e4m3 %s", N, K, copies),
      "amax_record",
      S("gemm TN e4m3[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, K, N, K, M, N),
      "copy_from_host 12 B",
      "convert fp32[1x2] -> fp32[1x2]",
      S("quantize bf16[%dx%d] -> e5m2 %s", M, N, copies),
      "amax_record",
  };
  for (const std::string& g : backward_gemms(hopper)) calls.push_back(g);
  for (int q = 0; q < 3; ++q) calls.push_back(S("delayed_scaling_update history %u", kHistory));
  return calls;
}

// ---- byte totals, by hand ---------------------------------------------------
// Large tensors, bytes per element: BF16 2, FP8 1. The minimal schedule:
//   x:  quantize reads 2MK, writes MK per FP8 copy; fprop reads MK (rowwise),
//       wgrad MK (columnwise)
//   W:  quantize reads 2NK, writes NK per copy; fprop and dgrad read NK each
//   dy: quantize reads 2MN, writes MN per copy; dgrad and wgrad read MN each
//   GEMM outputs: y 2MN, dx 2MK, dW 2NK (BF16, written once, never read)
// hopper-like: two copies of x, W and dy from one fused pass each;
// blackwell: one copy each. Current scaling adds one amax pass (reads 2MK, 2NK, 2MN).
// Scalars: delayed copies 2 floats per quantize (8 B read, 8 B written),
// current 3 (12 B, 12 B).
struct Bytes {
  uint64_t read, written;
};

Bytes hopper_bytes(Kind kind) {
  const uint64_t read = (2 * kMK + kMK + kMK) + (2 * kNK + kNK + kNK) + (2 * kMN + kMN + kMN);
  const uint64_t written = (2 * kMK + 2 * kMK) + (2 * kNK + 2 * kNK) + (2 * kMN + 2 * kMN);
  if (kind == Kind::Current) return {read + 2 * kMK + 2 * kNK + 2 * kMN + 3 * 12, written + 3 * 12};
  return {read + 3 * 8, written + 3 * 8};
}

Bytes blackwell_bytes(Kind kind) {
  const uint64_t read = (2 * kMK + kMK + kMK) + (2 * kNK + kNK + kNK) + (2 * kMN + kMN + kMN);
  const uint64_t written = (kMK + 2 * kMK) + (kNK + 2 * kNK) + (kMN + 2 * kMN);
  if (kind == Kind::Current) return {read + 2 * kMK + 2 * kNK + 2 * kMN + 3 * 12, written + 3 * 12};
  return {read + 3 * 8, written + 3 * 8};
}

constexpr uint64_t kFlops = 3 * 2 * uint64_t(M) * uint64_t(N) * uint64_t(K);

void expect_step(const Step& got, const std::vector<std::string>& calls, Bytes bytes,
                 const std::vector<uint64_t>& allocations, const std::string& where) {
  EXPECT_EQ(got.calls, calls) << where << "\ngot:\n" << joined(got.calls) << "expected:\n" << joined(calls);
  EXPECT_EQ(got.read, bytes.read) << where;
  EXPECT_EQ(got.written, bytes.written) << where;
  EXPECT_EQ(got.flops, kFlops) << where;
  EXPECT_EQ(got.allocations, allocations) << where;
  EXPECT_EQ(got.frees, allocations.size()) << where << ": every buffer of the step is freed in the step";
  for (const std::string& c : got.calls) {
    EXPECT_EQ(c.rfind("copy_to_host", 0), std::string::npos) << where << ": " << c;
    EXPECT_EQ(c.rfind("synchronize", 0), std::string::npos) << where << ": " << c;
  }
}

class LinearStepTraffic : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!tracing_loaded()) GTEST_FAIL() << "the tracing plugin did not load: " << octet_last_error_message();
  }
};

// Allocations: per FP8 tensor its copies, then its scalars; no workspace.
TEST_F(LinearStepTraffic, HopperLikeCurrentScaling) {
  const Step s = run_steps({OCTET_PROFILE_HOPPER_LIKE, Kind::Current});
  expect_step(s, current_schedule(true), hopper_bytes(Kind::Current),
              {kMK, kMK, kScalars, kNK, kNK, kScalars, kMN, kMN, kScalars}, "hopper-like, current");
}

TEST_F(LinearStepTraffic, HopperLikeDelayedScalingWithAutocast) {
  const Step s = run_steps({OCTET_PROFILE_HOPPER_LIKE, Kind::DelayedAutocast});
  expect_step(s, delayed_schedule(true), hopper_bytes(Kind::DelayedAutocast),
              {kMK, kMK, kScalars, kNK, kNK, kScalars, kMN, kMN, kScalars}, "hopper-like, delayed");
}

TEST_F(LinearStepTraffic, BlackwellLikeCurrentScaling) {
  const Step s = run_steps({OCTET_PROFILE_BLACKWELL_LIKE, Kind::Current});
  expect_step(s, current_schedule(false), blackwell_bytes(Kind::Current), {kMK, kScalars, kNK, kScalars, kMN, kScalars},
              "blackwell-like, current");
}

TEST_F(LinearStepTraffic, BlackwellLikeDelayedScalingWithAutocast) {
  const Step s = run_steps({OCTET_PROFILE_BLACKWELL_LIKE, Kind::DelayedAutocast});
  expect_step(s, delayed_schedule(false), blackwell_bytes(Kind::DelayedAutocast), {kMK, kScalars, kNK, kScalars, kMN, kScalars},
              "blackwell-like, delayed");
}

// minimize_memory: the FP8 weight is not kept between forward and backward;
// forward keeps its scale (one float, copied on the device), backward
// quantizes W again with it. The minimal backward quantizes W straight into
// the usage dgrad reads: on the hopper-like profile the transposed copy,
// written by the fused pass (no rowwise copy, no transpose, no workspace);
// on the blackwell-like profile the rowwise copy, read along columns.
std::vector<std::string> minimize_memory_delayed(bool hopper) {
  std::vector<std::string> calls = {
      "copy_from_host 12 B",
      "convert fp32[1x2] -> fp32[1x2]",
      S("quantize bf16[%dx%d] -> e4m3 %s", M, K, hopper ? "rowwise+transposed" : "rowwise"),
      "amax_record",
      "copy_from_host 12 B",
      "convert fp32[1x2] -> fp32[1x2]",
      S("quantize bf16[%dx%d] -> e4m3 rowwise", N, K),
      "amax_record",
      S("gemm TN e4m3[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, K, N, K, M, N),
      "convert fp32[1x1] -> fp32[1x1]",  // W's scale kept for backward
      "copy_from_host 12 B",
      "convert fp32[1x2] -> fp32[1x2]",
      S("quantize bf16[%dx%d] -> e5m2 %s", M, N, hopper ? "rowwise+transposed" : "rowwise"),
      "amax_record",
      "copy_from_host 12 B",
      "convert fp32[1x1] -> fp32[1x1]",  // the kept scale into the new copy's SCALE
  };
  calls.push_back(S("quantize bf16[%dx%d] -> e4m3 %s", N, K, hopper ? "transposed" : "rowwise"));
  for (const std::string& g : backward_gemms(hopper)) calls.push_back(g);
  for (int i = 0; i < 3; ++i) calls.push_back(S("delayed_scaling_update history %u", kHistory));
  return calls;
}

// W quantized twice (2 x (read 2NK, write NK)), nothing transposed; the
// scalar copies: 3 pairs, and 2 single floats.
TEST_F(LinearStepTraffic, HopperLikeMinimizeMemoryQuantizesTheWeightStraightIntoItsTransposedCopy) {
  Options o;
  o.profile = OCTET_PROFILE_HOPPER_LIKE;
  o.kind = Kind::DelayedAutocast;
  o.minimize_memory = 1;
  const Step s = run_steps(o);
  const uint64_t read = (2 * kMK + kMK + kMK) + (2 * kNK + 2 * kNK + kNK + kNK) + (2 * kMN + kMN + kMN) + 3 * 8 + 2 * 4;
  const uint64_t written = (2 * kMK + 2 * kMK) + (kNK + kNK + 2 * kNK) + (2 * kMN + 2 * kMN) + 3 * 8 + 2 * 4;
  // forward: x (two copies, scalars), W (rowwise, scalars), W's kept scale;
  // backward: dy (two copies, scalars), W again (transposed copy, scalars).
  expect_step(s, minimize_memory_delayed(true), {read, written},
              {kMK, kMK, kScalars, kNK, kScalars, kScalars, kMN, kMN, kScalars, kNK, kScalars},
              "hopper-like, delayed, minimize_memory");
}

TEST_F(LinearStepTraffic, BlackwellLikeMinimizeMemory) {
  Options o;
  o.profile = OCTET_PROFILE_BLACKWELL_LIKE;
  o.kind = Kind::DelayedAutocast;
  o.minimize_memory = 1;
  const Step s = run_steps(o);
  const uint64_t read = (2 * kMK + kMK + kMK) + (2 * kNK + 2 * kNK + kNK + kNK) + (2 * kMN + kMN + kMN) + 3 * 8 + 2 * 4;
  const uint64_t written = (kMK + 2 * kMK) + (kNK + kNK + 2 * kNK) + (kMN + 2 * kMN) + 3 * 8 + 2 * 4;
  expect_step(s, minimize_memory_delayed(false), {read, written},
              {kMK, kScalars, kNK, kScalars, kScalars, kMN, kScalars, kNK, kScalars},
              "blackwell-like, delayed, minimize_memory");
}

// weight_cache with two micro-batches per step: W is quantized once per step
// for both usages (hopper-like: its transposed codes from the same fused
// pass), and neither micro-batch's dgrad transposes it; blackwell-like keeps
// one copy, read along columns.
std::vector<std::string> weight_cache_two_micro_batches(bool hopper) {
  const char* both = hopper ? "rowwise+transposed" : "rowwise";
  std::vector<std::string> calls;
  for (int micro_batch = 0; micro_batch < 2; ++micro_batch) {
    for (const std::string& c : {std::string("copy_from_host 12 B"), std::string("convert fp32[1x2] -> fp32[1x2]"),
                                 S("quantize bf16[%dx%d] -> e4m3 %s", M, K, both), std::string("amax_record")})
      calls.push_back(c);
    if (micro_batch == 0) {
      for (const std::string& c : {std::string("copy_from_host 12 B"), std::string("convert fp32[1x2] -> fp32[1x2]"),
                                   S("quantize bf16[%dx%d] -> e4m3 %s", N, K, both), std::string("amax_record")})
        calls.push_back(c);
    }
    calls.push_back(S("gemm TN e4m3[%dx%d] x e4m3[%dx%d] -> bf16[%dx%d]", M, K, N, K, M, N));
    for (const std::string& c : {std::string("copy_from_host 12 B"), std::string("convert fp32[1x2] -> fp32[1x2]"),
                                 S("quantize bf16[%dx%d] -> e5m2 %s", M, N, both), std::string("amax_record")})
      calls.push_back(c);
    for (const std::string& g : backward_gemms(hopper)) calls.push_back(g);
  }
  for (int q = 0; q < 3; ++q) calls.push_back(S("delayed_scaling_update history %u", kHistory));
  return calls;
}

TEST_F(LinearStepTraffic, WeightCacheQuantizesTheWeightOncePerStepAndNeverTransposesIt) {
  for (const int32_t profile : {OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    Options o;
    o.profile = profile;
    o.kind = Kind::DelayedAutocast;
    o.weight_cache = 1;
    o.micro_batches = 2;
    const Step s = run_steps(o);
    const std::vector<std::string> want = weight_cache_two_micro_batches(profile == OCTET_PROFILE_HOPPER_LIKE);
    EXPECT_EQ(s.calls, want) << "profile " << profile << "\ngot:\n" << joined(s.calls) << "expected:\n" << joined(want);
  }
}

// The same totals at the benchmark's shape (element counts per product from
// the formulas above), for the record.
TEST_F(LinearStepTraffic, PrintsTheTotalsAtTheBenchmarkShape) {
  // current, hopper-like: read 6 MK + 6 NK + 6 MN, written 4 MK + 4 NK + 4 MN
  // (before W's transposed codes came from forward's fused pass: 7 NK read,
  // and the delayed step 5 NK)
  print_at_bench_shape("hopper-like current", 6, 6, 6, 4, 4, 4);
  print_at_bench_shape("hopper-like delayed (= TE's)", 4, 4, 4, 4, 4, 4);
  print_at_bench_shape("blackwell-like current", 6, 6, 6, 3, 3, 3);
  print_at_bench_shape("blackwell-like delayed", 4, 4, 4, 3, 3, 3);
  // Before the backward quantized W straight into its transposed copy it
  // read 7 NK and wrote 5 NK here (a rowwise copy, then a transpose).
  print_at_bench_shape("hopper-like delayed, minimize_memory", 4, 6, 4, 4, 4, 4);
  SUCCEED();
}

// A backend's mem_alloc that fails: the status comes back with the bytes
// asked in the message (OUT_OF_MEMORY passed on; a NULL pointer with
// SUCCESS, a broken plugin, is BACKEND_ERROR), nothing is counted, and the
// caller's handle is left as it was.
TEST_F(LinearStepTraffic, FailedDeviceAllocationNamesTheBytesAsked) {
  void* handle = dlopen(OCTET_TRACING_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(handle, nullptr);
  auto fail_allocations =
      reinterpret_cast<octet_test_trace_fail_allocations_fn>(dlsym(handle, "octet_test_trace_fail_allocations"));
  dlclose(handle);
  ASSERT_NE(fail_allocations, nullptr);
  octet_context* ctx = make_context("tracing", OCTET_PROFILE_NATIVE);
  ASSERT_NE(ctx, nullptr);
  for (int null_success : {0, 1}) {
    fail_allocations(4096, null_success);
    octet_tensor_desc d{};
    d.struct_size = sizeof(d);
    d.dtype = OCTET_DTYPE_FP32;
    d.ndim = 2;
    d.shape[0] = 64;
    d.shape[1] = 32;  // 8192 bytes
    octet_tensor* sentinel = reinterpret_cast<octet_tensor*>(uintptr_t(0x1234));
    octet_tensor* t = sentinel;
    const octet_status status = octet_tensor_create(ctx, &d, &t);
    fail_allocations(0, 0);
    const std::string message = octet_last_error_message();
    EXPECT_EQ(status, null_success ? OCTET_STATUS_BACKEND_ERROR : OCTET_STATUS_OUT_OF_MEMORY) << message;
    EXPECT_NE(message.find("8192 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("mem_alloc"), std::string::npos) << message;
    EXPECT_EQ(t, sentinel);
    octet_memory_stats s{};
    s.struct_size = sizeof(s);
    ASSERT_EQ(octet_context_get_memory_stats(ctx, &s), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(s.current_total, 0u);
  }
  octet_context_destroy(ctx);
}

}  // namespace
}  // namespace layers_test
