// The block math of the cuda backend (backends/cuda/src/block_math.cuh) is
// __host__ __device__: here it is compiled for the host and compared with
// the reference backend's table (host memory) on the same inputs: E8M0 and
// FP32 block scales on a sweep of FP32 bit patterns, element codes and
// statistics, dequantize on every code and scale, and the block GEMM's
// element order (NaN bits included). A model of the block quantize kernel
// (the same two passes per block, written with these functions) is compared
// with the reference on whole matrices. Runs on every machine.
#include <octet/octet.h>
#include <octet/octet_backend.h>

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "block_math.cuh"
#include "gemm_compare.hpp"
#include "octet_reference/reference_backend.h"

namespace {

using octet_cuda::bits_of;
using octet_cuda::float_of;

// The reference's plugin table with one context; reported errors are kept.
class Reference {
 public:
  Reference() {
    const octet_backend_api* api = nullptr;
    if (octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api) != OCTET_STATUS_SUCCESS)
      return;
    host_.struct_size = sizeof host_;
    host_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host_.report_error = [](void* data, int32_t, const char* message) {
      static_cast<std::vector<std::string>*>(data)->push_back(message != nullptr ? message : "");
    };
    host_.host_data = &errors_;
    caps_.struct_size = sizeof caps_;
    if (api->initialize(&host_, &caps_) != OCTET_STATUS_SUCCESS) return;
    if (api->context_create(nullptr, &context_) != OCTET_STATUS_SUCCESS) return;
    api_ = api;
  }
  ~Reference() {
    if (api_ != nullptr) api_->context_destroy(context_);
  }
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;

  bool ok() const { return api_ != nullptr; }
  const octet_backend_api& api() const { return *api_; }
  octet_backend_context* context() const { return context_; }
  std::string last_error() const { return errors_.empty() ? std::string() : errors_.back(); }

 private:
  const octet_backend_api* api_ = nullptr;
  octet_backend_context* context_ = nullptr;
  octet_host_services host_{};
  octet_backend_caps caps_{};
  std::vector<std::string> errors_;
};

octet_matrix_view view(void* data, int32_t dtype, int64_t rows, int64_t cols, int64_t ld = 0) {
  octet_matrix_view v{};
  v.data = data;
  v.dtype = dtype;
  v.rows = rows;
  v.cols = cols;
  v.ld = ld == 0 ? cols : ld;
  return v;
}

// Every 16-bit high half with a few low halves (ties and their neighbours),
// plus a prime-stride sweep of the 32-bit space; `step` thins the first part.
std::vector<float> fp32_sweep(uint32_t step = 1) {
  std::vector<float> out;
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x1000u, 0x4000u};
  for (uint32_t high = 0; high <= 0xFFFFu; high += step)
    for (uint32_t low : lows) out.push_back(float_of((high << 16) | low));
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 7919u * 113u) out.push_back(float_of(uint32_t(b)));
  return out;
}

struct Quantized {
  std::vector<uint8_t> out;
  std::vector<uint8_t> scales;  // raw bytes of the scale grid
  float amax = 0.0f;
  octet_quantize_statistics stats{};
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The block quantize kernel's algorithm (block_kernels.cu) on the host:
// per block, pass 1 the amax over the finite elements, pass 2 block_encode and
// classify_element, all from block_math.cuh.
Quantized model_block_quantize(const octet_block_quantize_args& args) {
  const bool transposed = args.transposed != 0;
  const int64_t rows = transposed ? args.input.cols : args.input.rows;
  const int64_t cols = transposed ? args.input.rows : args.input.cols;
  const int64_t br = args.block_rows, bc = args.block_cols;
  const int64_t grid_rows = ceil_div(rows, br), grid_cols = ceil_div(cols, bc);
  const bool mx = args.scale_dtype == OCTET_DTYPE_E8M0, e4m3 = args.out_dtype == OCTET_DTYPE_E4M3;
  Quantized q;
  q.out.assign(static_cast<size_t>(rows * cols), 0);
  q.scales.assign(static_cast<size_t>(grid_rows * grid_cols) * (mx ? 1 : 4), 0);
  auto value = [&](int64_t r, int64_t c) {
    return octet_cuda::load_as_float(args.input.data, args.input.dtype,
                                     transposed ? c * args.input.ld + r : r * args.input.ld + c);
  };
  for (int64_t gr = 0; gr < grid_rows; ++gr) {
    for (int64_t gc = 0; gc < grid_cols; ++gc) {
      const int64_t r0 = gr * br, c0 = gc * bc, r1 = std::min(rows, r0 + br), c1 = std::min(cols, c0 + bc);
      float block_amax = 0.0f;
      bool has_inf = false;
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const float x = value(r, c);
          if (!octet_cuda::is_finite(x))
            has_inf = has_inf || !octet_cuda::is_nan(x);
          else if (octet_cuda::abs_value(x) > block_amax)
            block_amax = octet_cuda::abs_value(x);
        }
      }
      const float tensor_amax = has_inf ? INFINITY : block_amax;
      if (tensor_amax > q.amax) q.amax = tensor_amax;
      const size_t index = static_cast<size_t>(gr * grid_cols + gc);
      float multiplier;
      if (mx) {
        const uint8_t code = octet_cuda::mx_scale_code(block_amax, e4m3, args.e8m0_rounding == 1);
        q.scales[index] = code;
        multiplier = octet_cuda::mx_multiplier(code);
      } else {
        multiplier = octet_cuda::fp32_block_scale(block_amax, e4m3, args.amax_epsilon, args.power_of_two != 0);
        const float inv = octet_cuda::rn_div(1.0f, multiplier);
        std::memcpy(&q.scales[index * 4], &inv, 4);
      }
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) {
          const float x = value(r, c);
          float scaled;
          const uint8_t code = octet_cuda::block_encode(x, multiplier, e4m3, &scaled);
          q.out[static_cast<size_t>(r * cols + c)] = code;
          const unsigned flags = octet_cuda::classify_element(x, scaled, code, e4m3);
          q.stats.nan_count += (flags & octet_cuda::kCountNan) != 0u;
          q.stats.saturated_count += (flags & octet_cuda::kCountSaturated) != 0u;
          q.stats.flushed_count += (flags & octet_cuda::kCountFlushed) != 0u;
        }
      }
    }
  }
  q.stats.amax = q.amax;
  return q;
}

Quantized reference_block_quantize(const Reference& ref, octet_block_quantize_args args) {
  const bool transposed = args.transposed != 0;
  const int64_t rows = transposed ? args.input.cols : args.input.rows;
  const int64_t cols = transposed ? args.input.rows : args.input.cols;
  const size_t blocks = static_cast<size_t>(ceil_div(rows, args.block_rows) * ceil_div(cols, args.block_cols));
  Quantized q;
  q.out.assign(static_cast<size_t>(rows * cols), 0xAB);
  q.scales.assign(blocks * (args.scale_dtype == OCTET_DTYPE_E8M0 ? 1 : 4), 0xAB);
  args.out = q.out.data();
  args.scale_inv_out = q.scales.data();
  args.amax_out = &q.amax;
  args.stats_out = &q.stats;
  const int32_t status = ref.api().block_quantize(ref.context(), &args);
  EXPECT_EQ(status, OCTET_STATUS_SUCCESS) << ref.last_error();
  return q;
}

void expect_same(const Quantized& model, const Quantized& ref, const std::string& what) {
  ASSERT_EQ(model.out.size(), ref.out.size()) << what;
  for (size_t i = 0; i < ref.out.size(); ++i)
    ASSERT_EQ(int(model.out[i]), int(ref.out[i])) << what << ": code " << i;
  ASSERT_EQ(model.scales.size(), ref.scales.size()) << what;
  for (size_t i = 0; i < ref.scales.size(); ++i)
    ASSERT_EQ(int(model.scales[i]), int(ref.scales[i])) << what << ": scale byte " << i;
  EXPECT_EQ(bits_of(model.amax), bits_of(ref.amax)) << what << ": amax";
  EXPECT_EQ(model.stats.nan_count, ref.stats.nan_count) << what << ": nan_count";
  EXPECT_EQ(model.stats.saturated_count, ref.stats.saturated_count) << what << ": saturated_count";
  EXPECT_EQ(model.stats.flushed_count, ref.stats.flushed_count) << what << ": flushed_count";
  EXPECT_EQ(bits_of(model.stats.amax), bits_of(ref.stats.amax)) << what << ": stats amax";
}

octet_block_quantize_args block_args(const octet_matrix_view& input, int32_t out_dtype, int32_t br, int32_t bc,
                                     int32_t scale_dtype) {
  octet_block_quantize_args a{};
  a.struct_size = sizeof a;
  a.input = input;
  a.out_dtype = out_dtype;
  a.block_rows = br;
  a.block_cols = bc;
  a.scale_dtype = scale_dtype;
  return a;
}

// ---- E8M0 scales ----

// 1x1 blocks: each FP32 pattern is its own block, so the reference's scale
// code of block_amax = |x| (0 for a NaN or an infinity) is compared with mx_scale_code on
// the whole sweep, with the codes and statistics of the same elements.
TEST(CudaBlockMathOnHost, MxScaleCodesMatchTheReferenceOnAnFp32Sweep) {
  Reference ref;
  ASSERT_TRUE(ref.ok());
  std::vector<float> x = fp32_sweep();
  const octet_matrix_view input = view(x.data(), OCTET_DTYPE_FP32, 1, int64_t(x.size()));
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (int32_t rounding : {0, 1}) {
      octet_block_quantize_args args = block_args(input, dtype, 1, 1, OCTET_DTYPE_E8M0);
      args.e8m0_rounding = rounding;
      const Quantized expected = reference_block_quantize(ref, args);
      for (size_t i = 0; i < x.size(); ++i) {
        const float amax = octet_cuda::is_finite(x[i]) ? octet_cuda::abs_value(x[i]) : 0.0f;
        ASSERT_EQ(int(octet_cuda::mx_scale_code(amax, dtype == OCTET_DTYPE_E4M3, rounding == 1)),
                  int(expected.scales[i]))
            << std::hex << "amax bits 0x" << bits_of(amax) << std::dec << " dtype " << dtype << " rounding "
            << rounding;
      }
      expect_same(model_block_quantize(args), expected,
                  "1x1 blocks, dtype " + std::to_string(dtype) + ", rounding " + std::to_string(rounding));
    }
  }
}

// Scaling by mx_multiplier(code) gives the bits of dividing by the scale X,
// as the reference does, for every code and a sweep of x (NaN included).
TEST(CudaBlockMathOnHost, MxMultiplierEqualsDivisionByTheScale) {
  const std::vector<float> x = fp32_sweep(7);
  for (uint32_t code = 0; code < 0xFFu; ++code) {
    const float divisor = octet_e8m0_decode(static_cast<uint8_t>(code));
    const float multiplier = octet_cuda::mx_multiplier(static_cast<uint8_t>(code));
    for (float v : x) {
      ASSERT_EQ(bits_of(octet_cuda::host_mul(v, multiplier)), bits_of(v / divisor))
          << "code " << code << std::hex << " x bits 0x" << bits_of(v);
    }
  }
}

// ---- FP32 scales ----

TEST(CudaBlockMathOnHost, Fp32BlockScalesMatchTheReference) {
  Reference ref;
  ASSERT_TRUE(ref.ok());
  std::vector<float> x = fp32_sweep(4);
  const octet_matrix_view input = view(x.data(), OCTET_DTYPE_FP32, 1, int64_t(x.size()));
  const float epsilons[] = {0.0f, 1e-12f, float_of(1u), 1.0f, -1.0f, FLT_MAX, INFINITY, NAN};
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (float epsilon : epsilons) {
      for (int32_t pow2 : {0, 1}) {
        octet_block_quantize_args args = block_args(input, dtype, 1, 1, OCTET_DTYPE_FP32);
        args.amax_epsilon = epsilon;
        args.power_of_two = pow2;
        const Quantized expected = reference_block_quantize(ref, args);
        for (size_t i = 0; i < x.size(); ++i) {
          const float amax = octet_cuda::is_finite(x[i]) ? octet_cuda::abs_value(x[i]) : 0.0f;
          const float scale = octet_cuda::fp32_block_scale(amax, dtype == OCTET_DTYPE_E4M3, epsilon, pow2 != 0);
          float got;
          std::memcpy(&got, &expected.scales[i * 4], 4);
          ASSERT_EQ(bits_of(1.0f / scale), bits_of(got))
              << std::hex << "amax bits 0x" << bits_of(amax) << std::dec << " epsilon " << epsilon << " pow2 "
              << pow2 << " dtype " << dtype;
        }
        expect_same(model_block_quantize(args), expected,
                    "fp32 1x1 blocks, epsilon " + std::to_string(epsilon) + ", pow2 " + std::to_string(pow2));
      }
    }
  }
}

// ---- whole matrices: the kernel's algorithm against the reference ----

// Values over a wide exponent range, with specials at the given rate.
std::vector<float> mixed_values(size_t n, uint32_t seed, double special_rate) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mantissa(-2.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, float_of(1u), float_of(0x80000005u),
                            1e-30f, 448.0f, 464.0f, 57344.0f, 61440.0f, FLT_MAX, float_of(0x7F800001u)};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (u(rng) < special_rate) {
      v[i] = specials[rng() % (sizeof specials / sizeof specials[0])];
    } else {
      v[i] = std::ldexp(mantissa(rng), exponent(rng));
    }
  }
  return v;
}

// Stores FP32 values as dtype (FP32 bits as they are).
std::vector<uint8_t> as_dtype(const std::vector<float>& v, int32_t dtype) {
  std::vector<uint8_t> out(v.size() * (dtype == OCTET_DTYPE_FP32 ? 4 : 2));
  for (size_t i = 0; i < v.size(); ++i) octet_cuda::store_from_float(out.data(), dtype, int64_t(i), v[i], true);
  return out;
}

TEST(CudaBlockMathOnHost, BlockQuantizeModelMatchesTheReferenceOnMatrices) {
  Reference ref;
  ASSERT_TRUE(ref.ok());
  struct Shape {
    int64_t rows, cols, ld;
  };
  const Shape shapes[] = {{33, 95, 95}, {130, 260, 300}, {1, 200, 200}, {67, 1, 3}, {5, 7, 7}};
  struct Block {
    int32_t br, bc, scale_dtype;
  };
  const Block blocks[] = {{1, 32, OCTET_DTYPE_E8M0}, {32, 1, OCTET_DTYPE_E8M0}, {1, 128, OCTET_DTYPE_FP32},
                          {128, 128, OCTET_DTYPE_FP32}, {3, 5, OCTET_DTYPE_E8M0}, {3, 5, OCTET_DTYPE_FP32}};
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    for (double rate : {0.0, 0.02}) {
      const std::vector<float> values = mixed_values(size_t(s.rows * s.ld), seed++, rate);
      for (int32_t in_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
        std::vector<uint8_t> stored = as_dtype(values, in_dtype);
        const octet_matrix_view input = view(stored.data(), in_dtype, s.rows, s.cols, s.ld);
        for (const Block& b : blocks) {
          for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
            for (int32_t transposed : {0, 1}) {
              for (int32_t variant : {0, 1}) {
                octet_block_quantize_args args = block_args(input, dtype, b.br, b.bc, b.scale_dtype);
                args.transposed = transposed;
                args.e8m0_rounding = variant;
                args.power_of_two = variant;
                args.amax_epsilon = variant == 0 ? 0.0f : 1e-6f;
                const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " ld " +
                                         std::to_string(s.ld) + " in " + std::to_string(in_dtype) + " block " +
                                         std::to_string(b.br) + "x" + std::to_string(b.bc) + " scale " +
                                         std::to_string(b.scale_dtype) + " out " + std::to_string(dtype) +
                                         " transposed " + std::to_string(transposed) + " variant " +
                                         std::to_string(variant) + " specials " + std::to_string(rate);
                expect_same(model_block_quantize(args), reference_block_quantize(ref, args), what);
                if (HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

// ---- statistics of per-tensor quantize ----

TEST(CudaBlockMathOnHost, QuantizeStatisticsMatchTheReference) {
  Reference ref;
  ASSERT_TRUE(ref.ok());
  std::vector<float> x = fp32_sweep(3);
  const int64_t n = int64_t(x.size());
  const float scales[] = {1.0f, 0.5f, std::ldexp(1.0f, -20), std::ldexp(1.0f, 20), 448.0f / 3.0f, 0.0f, -1.0f,
                          INFINITY, NAN, -NAN, float_of(0x7F800001u), 1e-40f};
  std::vector<uint8_t> codes(x.size());
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    const bool e4m3 = dtype == OCTET_DTYPE_E4M3;
    for (int32_t saturate : {0, 1}) {
      for (float scale : scales) {
        octet_quantize_args args{};
        args.struct_size = sizeof args;
        args.input = view(x.data(), OCTET_DTYPE_FP32, 1, n);
        args.out_dtype = dtype;
        args.saturate = saturate;
        args.scale = &scale;
        args.rowwise_out = codes.data();
        octet_quantize_statistics expected{};
        ASSERT_EQ(ref.api().quantize_with_statistics(ref.context(), &args, &expected), OCTET_STATUS_SUCCESS)
            << ref.last_error();
        octet_quantize_statistics got{};
        for (int64_t i = 0; i < n; ++i) {
          const float scaled = octet_cuda::host_mul(x[size_t(i)], scale);
          const uint8_t code = octet_cuda::fp8_encode(scaled, e4m3, saturate != 0);
          // The device's per-tensor codes are those of quantize (elementwise.cu);
          // this checks the x * scale the statistics count with.
          ASSERT_EQ(int(code), int(codes[size_t(i)]))
              << std::hex << "x bits 0x" << bits_of(x[size_t(i)]) << " scale bits 0x" << bits_of(scale);
          const unsigned flags = octet_cuda::classify_element(x[size_t(i)], scaled, code, e4m3);
          got.nan_count += (flags & octet_cuda::kCountNan) != 0u;
          got.saturated_count += (flags & octet_cuda::kCountSaturated) != 0u;
          got.flushed_count += (flags & octet_cuda::kCountFlushed) != 0u;
          if (!octet_cuda::is_nan(x[size_t(i)]) && octet_cuda::abs_value(x[size_t(i)]) > got.amax)
            got.amax = octet_cuda::abs_value(x[size_t(i)]);
        }
        const std::string what = "dtype " + std::to_string(dtype) + " saturate " + std::to_string(saturate) +
                                 " scale " + std::to_string(scale);
        EXPECT_EQ(got.nan_count, expected.nan_count) << what;
        EXPECT_EQ(got.saturated_count, expected.saturated_count) << what;
        EXPECT_EQ(got.flushed_count, expected.flushed_count) << what;
        EXPECT_EQ(bits_of(got.amax), bits_of(expected.amax)) << what;
        EXPECT_EQ(expected.reserved, 0u);
      }
    }
  }
}

// ---- block dequantize: every code with every E8M0 scale, and FP32 scales ----

TEST(CudaBlockMathOnHost, BlockDequantizeMatchesTheReferenceOnEveryCodeAndScale) {
  Reference ref;
  ASSERT_TRUE(ref.ok());
  // Row r holds every code; its 1x1 blocks all have scale r (E8M0), or the
  // r-th FP32 scale of the list.
  std::vector<uint8_t> codes(256 * 256);
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(i % 256);
  std::vector<uint8_t> e8m0_scales(256 * 256);
  for (size_t i = 0; i < e8m0_scales.size(); ++i) e8m0_scales[i] = static_cast<uint8_t>(i / 256);
  const float fp32_list[] = {1.0f, 0.5f, 3.0f, 1e-3f, 0.0f, -0.0f, -2.0f, INFINITY, -INFINITY, NAN, -NAN,
                             float_of(0x7F800001u), float_of(0xFFA00001u), float_of(1u), FLT_MAX, 1e30f};
  const int64_t fp32_rows = sizeof fp32_list / sizeof fp32_list[0];
  std::vector<float> fp32_scales(size_t(fp32_rows) * 256);
  for (size_t i = 0; i < fp32_scales.size(); ++i) fp32_scales[i] = fp32_list[i / 256];
  for (int32_t scale_dtype : {OCTET_DTYPE_E8M0, OCTET_DTYPE_FP32}) {
    const int64_t rows = scale_dtype == OCTET_DTYPE_E8M0 ? 256 : fp32_rows;
    const void* grid = scale_dtype == OCTET_DTYPE_E8M0 ? static_cast<const void*>(e8m0_scales.data())
                                                       : static_cast<const void*>(fp32_scales.data());
    for (int32_t in_dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (int32_t out_dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
        const size_t width = out_dtype == OCTET_DTYPE_FP32 ? 4 : 2;
        std::vector<uint8_t> expected(size_t(rows) * 256 * width, 0xAB);
        octet_block_dequantize_args args{};
        args.struct_size = sizeof args;
        args.input = view(codes.data(), in_dtype, rows, 256);
        args.scale_inv = grid;
        args.scale_dtype = scale_dtype;
        args.block_rows = 1;
        args.block_cols = 1;
        args.output = view(expected.data(), out_dtype, rows, 256);
        ASSERT_EQ(ref.api().block_dequantize(ref.context(), &args), OCTET_STATUS_SUCCESS) << ref.last_error();
        std::vector<uint8_t> got(expected.size(), 0xCD);
        for (int64_t i = 0; i < rows * 256; ++i) {
          const float scale_inv = octet_cuda::block_scale_inv(grid, scale_dtype == OCTET_DTYPE_E8M0, i);
          octet_cuda::store_from_float(
              got.data(), out_dtype, i,
              octet_cuda::block_dequantize_value(codes[size_t(i)], in_dtype == OCTET_DTYPE_E4M3, scale_inv), true);
        }
        for (size_t b = 0; b < got.size(); ++b) {
          const size_t i = b / width;
          ASSERT_EQ(int(got[b]), int(expected[b]))
              << "code " << (i % 256) << " scale row " << (i / 256) << " in " << in_dtype << " out " << out_dtype
              << " scale dtype " << scale_dtype;
        }
      }
    }
  }
}

// ---- block GEMM ----

// The kernel's fast path uses fmaf(a, b, partial): the same bits as
// partial + a * b because every product of two FP8 values is exact in FP32.
TEST(CudaBlockMathOnHost, Fp8ProductsAreExactInFp32) {
  for (int32_t da : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (int32_t db : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (uint32_t ca = 0; ca < 256; ++ca) {
        for (uint32_t cb = 0; cb < 256; ++cb) {
          const float a = octet_fp8_decode(uint8_t(ca), da), b = octet_fp8_decode(uint8_t(cb), db);
          if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) continue;
          ASSERT_EQ(double(a) * double(b), double(a * b)) << ca << " x " << cb;
        }
      }
    }
  }
}

struct GemmCase {
  int64_t m, n, k;
  int32_t a_br, b_br, bk;
  int32_t scale_dtype;
  int32_t d_dtype;
  float alpha, beta;
  bool bias, gelu;
  double special_rate;
};

// Random FP8 codes, NaN/inf/zero codes at special_rate.
std::vector<uint8_t> random_codes(size_t n, int32_t dtype, std::mt19937& rng, double special_rate) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const uint8_t e4m3_specials[] = {0x7F, 0xFF, 0x00, 0x80, 0x7E, 0xFE, 0x01};
  const uint8_t e5m2_specials[] = {0x7C, 0xFC, 0x7D, 0xFF, 0x00, 0x80, 0x7B};
  std::vector<uint8_t> v(n);
  for (auto& c : v) {
    if (u(rng) < special_rate) {
      c = dtype == OCTET_DTYPE_E4M3 ? e4m3_specials[rng() % 7] : e5m2_specials[rng() % 7];
    } else {
      do c = static_cast<uint8_t>(rng()); while (std::isnan(octet_fp8_decode(c, dtype)) ||
                                                 std::isinf(octet_fp8_decode(c, dtype)));
    }
  }
  return v;
}

TEST(CudaBlockMathOnHost, BlockGemmElementMatchesTheReference) {
  Reference ref;
  ASSERT_TRUE(ref.ok());
  const GemmCase cases[] = {
      {37, 29, 100, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_FP32, 1.0f, 0.0f, false, false, 0.0},
      {37, 29, 100, 1, 128, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_BF16, 0.75f, 0.5f, true, false, 0.01},
      {20, 17, 300, 1, 128, 128, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 1.0f, 1.0f, true, true, 0.0},
      {20, 17, 300, 128, 128, 128, OCTET_DTYPE_FP32, OCTET_DTYPE_FP16, -2.0f, 0.25f, false, true, 0.02},
      {9, 11, 7, 2, 3, 3, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, 0.0f, 1.0f, true, false, 0.05},
      {9, 11, 0, 1, 1, 32, OCTET_DTYPE_E8M0, OCTET_DTYPE_FP32, 1.0f, 2.0f, true, true, 0.0},
  };
  std::mt19937 rng(7);
  for (const GemmCase& c : cases) {
    for (int32_t da : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      const int32_t db = da == OCTET_DTYPE_E4M3 ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;
      const int64_t lda = c.k + 3, ldb = c.k;
      std::vector<uint8_t> a = random_codes(size_t(c.m * lda), da, rng, c.special_rate);
      std::vector<uint8_t> b = random_codes(size_t(c.n * ldb), db, rng, c.special_rate);
      const int64_t kb = ceil_div(c.k, c.bk);
      // At least one scale each: with k = 0 the grids are empty but must not be NULL.
      const size_t sa_n = size_t(std::max<int64_t>(ceil_div(c.m, c.a_br) * kb, 1));
      const size_t sb_n = size_t(std::max<int64_t>(ceil_div(c.n, c.b_br) * kb, 1));
      std::vector<uint8_t> sa8(sa_n), sb8(sb_n);
      std::vector<float> sa32(sa_n), sb32(sb_n);
      for (auto& s : sa8) s = static_cast<uint8_t>(110 + rng() % 30);
      for (auto& s : sb8) s = static_cast<uint8_t>(110 + rng() % 30);
      const float fp32_specials[] = {NAN, -NAN, INFINITY, 0.0f};
      for (auto& s : sa32) s = std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, int(rng() % 20) - 10);
      for (auto& s : sb32) s = std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, int(rng() % 20) - 10);
      if (c.special_rate > 0.0 && !sa32.empty()) sa32[0] = fp32_specials[rng() % 4];
      if (c.special_rate > 0.0 && sb32.size() > 1) sb32[1] = fp32_specials[rng() % 4];
      // D (read for beta) with a NaN and an inf when specials are on.
      std::vector<float> d_values = mixed_values(size_t(c.m * (c.n + 1)), uint32_t(rng()), c.special_rate);
      const int64_t ldd = c.n + 1;
      std::vector<uint8_t> d_before = as_dtype(d_values, c.d_dtype);
      std::vector<uint8_t> d_ref = d_before;
      std::vector<float> bias_values = mixed_values(size_t(c.n), uint32_t(rng()), c.special_rate);

      octet_block_gemm_args args{};
      args.struct_size = sizeof args;
      args.m = c.m;
      args.n = c.n;
      args.k = c.k;
      args.a = view(a.data(), da, c.m, c.k, lda);
      args.b = view(b.data(), db, c.n, c.k, ldb);
      const bool e8m0 = c.scale_dtype == OCTET_DTYPE_E8M0;
      args.a_scale_inv = e8m0 ? static_cast<const void*>(sa8.data()) : static_cast<const void*>(sa32.data());
      args.b_scale_inv = e8m0 ? static_cast<const void*>(sb8.data()) : static_cast<const void*>(sb32.data());
      args.scale_dtype = c.scale_dtype;
      args.a_block_rows = c.a_br;
      args.a_block_cols = c.bk;
      args.b_block_rows = c.b_br;
      args.b_block_cols = c.bk;
      args.alpha = c.alpha;
      args.beta = c.beta;
      args.d = view(d_ref.data(), c.d_dtype, c.m, c.n, ldd);
      if (c.bias) args.bias = view(bias_values.data(), OCTET_DTYPE_FP32, 1, c.n);
      args.epilogue = c.gelu ? OCTET_EPILOGUE_GELU : OCTET_EPILOGUE_NONE;
      ASSERT_EQ(ref.api().block_gemm(ref.context(), &args), OCTET_STATUS_SUCCESS) << ref.last_error();

      std::vector<uint8_t> d_model = d_before;
      args.d.data = d_model.data();
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          const float acc = octet_cuda::block_gemm_accumulate(args, i, j);
          // The kernel's fast path (fmaf per product, fold per k-block) where
          // the result is not NaN.
          float fast = 0.0f;
          for (int64_t q = 0; q < kb; ++q) {
            float partial = 0.0f;
            for (int64_t kk = q * c.bk; kk < std::min<int64_t>(c.k, (q + 1) * c.bk); ++kk) {
              partial = std::fmaf(octet_cuda::load_as_float(a.data(), da, i * lda + kk),
                                  octet_cuda::load_as_float(b.data(), db, j * ldb + kk), partial);
            }
            const float s = octet_cuda::block_scale_inv(args.a_scale_inv, e8m0, (i / c.a_br) * kb + q) *
                            octet_cuda::block_scale_inv(args.b_scale_inv, e8m0, (j / c.b_br) * kb + q);
            fast = fast + partial * s;
          }
          if (!std::isnan(acc)) ASSERT_EQ(bits_of(fast), bits_of(acc)) << "fast path at " << i << "," << j;
          else ASSERT_TRUE(std::isnan(fast)) << "fast path at " << i << "," << j;
          octet_cuda::store_from_float(d_model.data(), c.d_dtype, i * ldd + j,
                                       octet_cuda::block_gemm_epilogue(acc, args, i, j), true);
        }
      }
      // A NaN matches any NaN (gemm_compare.hpp); everything else bit for bit.
      const int64_t e = octet_cuda_test::first_gemm_difference(d_model, d_ref, c.d_dtype);
      ASSERT_EQ(e, -1) << "D[" << e / ldd << "," << e % ldd << "] m " << c.m << " n " << c.n << " k " << c.k
                       << " a " << da << " scale dtype " << c.scale_dtype << " d dtype " << c.d_dtype;
    }
  }
}

}  // namespace
