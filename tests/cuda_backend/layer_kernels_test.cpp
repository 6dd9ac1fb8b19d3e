// The cuda plugin's ABI 1.2 layer kernels against the reference's table, bit
// for bit (device_table.hpp): both tables get the same input bytes (the
// reference in host memory, the plugin in device memory) and every output
// byte is compared, padding included. FP32/BF16/FP16 inputs and outputs,
// ragged shapes, padded leading dimensions, rows of 8192 columns, empty
// matrices, specials (inf, NaNs of both signs and different payloads, huge
// values, constant rows); both norm kinds with and without the fused quantize
// (rowwise, columnwise, both); bad arguments, which must leave the outputs
// untouched. Skips, saying why, without a CUDA device.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet_backend.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

float float_of(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// One matrix on both sides: the reference's host bytes and a device copy.
struct Pair {
  std::vector<uint8_t> host;
  DeviceBuffer device;
  int32_t dtype;
  int64_t rows, cols, ld;
  Pair(std::vector<uint8_t> bytes, int32_t dtype_, int64_t rows_, int64_t cols_, int64_t ld_)
      : host(std::move(bytes)), device(host.data(), host.size()), dtype(dtype_), rows(rows_), cols(cols_), ld(ld_) {}
  // Garbage of a fixed pattern, the same on both sides.
  Pair(int32_t dtype_, int64_t rows_, int64_t cols_, int64_t ld_)
      : Pair(std::vector<uint8_t>(bytes_for(dtype_, rows_, ld_), 0xA5), dtype_, rows_, cols_, ld_) {}
  static size_t bytes_for(int32_t dtype, int64_t rows, int64_t ld) {
    return size_t(std::max<int64_t>(rows, 1) * std::max<int64_t>(ld, 1)) * cuda_test::element_bytes(dtype) + 8;
  }
  octet_matrix_view ref_view() { return cuda_test::view(host.data(), dtype, rows, cols, ld); }
  octet_matrix_view cuda_view() { return cuda_test::view(device.get(), dtype, rows, cols, ld); }
  float* ref_floats() { return reinterpret_cast<float*>(host.data()); }
  float* cuda_floats() { return static_cast<float*>(device.get()); }
  uint8_t* ref_bytes() { return host.data(); }
  uint8_t* cuda_bytes() { return static_cast<uint8_t*>(device.get()); }
  void expect_equal(const std::string& what) const {
    const std::vector<uint8_t> got = device.download();
    ASSERT_EQ(got.size(), host.size()) << what;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != host[i] && bad++ == 0) first = i;
    EXPECT_EQ(bad, 0u) << what << ": " << bad << " bytes differ, first at byte " << first << " (cuda 0x" << std::hex
                       << int(first < got.size() ? got[first] : 0) << ", reference 0x"
                       << int(first < host.size() ? host[first] : 0) << ")";
  }
};

// FP32 values stored in `dtype` by the reference's convert (same bytes for
// both sides).
std::vector<uint8_t> encode(Table& ref, const std::vector<float>& values, int32_t dtype, int64_t rows, int64_t cols,
                            int64_t ld) {
  std::vector<float> f32 = values;
  f32.resize(size_t(std::max<int64_t>(rows, 1) * std::max<int64_t>(ld, 1)) + 2, 0.0f);
  std::vector<uint8_t> out(Pair::bytes_for(dtype, rows, ld), 0xA5);
  if (rows * cols == 0) return out;
  const octet_matrix_view in = cuda_test::view(f32.data(), OCTET_DTYPE_FP32, rows, cols, ld);
  const octet_matrix_view o = cuda_test::view(out.data(), dtype, rows, cols, ld);
  EXPECT_EQ(ref.api().convert(ref.context(), &in, &o, 1), OCTET_STATUS_SUCCESS) << ref.last_error();
  return out;
}

// Normal values of row-dependent scale and offset; with specials, some rows
// hold inf, NaNs (two different ones in one row), huge values or zeros.
std::vector<float> values(int64_t rows, int64_t cols, int64_t ld, uint32_t seed, bool specials) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(size_t(std::max<int64_t>(rows, 1) * std::max<int64_t>(ld, 1)), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float x = normal(gen) * float(1 << (r % 7)) + 0.25f * float(r % 3);
      if ((r * 31 + c) % 97 == 0) x *= 1000.0f;
      if (specials) {
        if (r % 11 == 3 && c == cols / 2) x = INFINITY;
        if (r % 11 == 4 && c == cols / 3) x = -INFINITY;
        if (r % 11 == 5 && c == 0) x = float_of(0xFFC12345u);
        if (r % 11 == 6 && c == cols - 1) x = float_of(0x7FA00001u);
        if (r % 11 == 7) x = 0.0f;
        if (r % 11 == 8 && c % 5 == 1) x = 3.0e38f;
        if (r % 11 == 9 && c == cols / 2) x = float_of(0x7FC00007u);
        if (r % 11 == 9 && c == cols / 3) x = float_of(0xFFC00009u);
      }
      v[size_t(r * ld + c)] = x;
    }
  return v;
}

Pair matrix(Table& ref, int32_t dtype, int64_t rows, int64_t cols, int64_t ld, uint32_t seed, bool specials) {
  return Pair(encode(ref, values(rows, cols, ld, seed, specials), dtype, rows, cols, ld), dtype, rows, cols, ld);
}

Pair floats(int64_t n, float fill) {
  std::vector<float> v(size_t(std::max<int64_t>(n, 1)), fill);
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return Pair(std::move(bytes), OCTET_DTYPE_FP32, 1, n, n);
}

struct Shape {
  int64_t rows, cols, pad;
};
const Shape kShapes[] = {{1, 1, 0},   {7, 1, 3},    {3, 7, 2},    {33, 65, 1}, {1481, 677, 3},
                         {64, 8192, 0}, {130, 136, 8}, {0, 9, 0}, {4, 0, 0}};
const int32_t kDtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};

std::string shape_name(const Shape& s) {
  return std::to_string(s.rows) + "x" + std::to_string(s.cols) + " (ld +" + std::to_string(s.pad) + ")";
}

// The fused quantize's outputs on both sides.
struct Quantized {
  Pair rowwise, columnwise, scale, scale_inv, amax;
  Quantized(int64_t rows, int64_t cols, float scale_value)
      : rowwise(OCTET_DTYPE_E4M3, 1, rows * cols, rows * cols),
        columnwise(OCTET_DTYPE_E4M3, 1, rows * cols, rows * cols),
        scale(floats(1, scale_value)),
        scale_inv(floats(1, -1.0f)),
        amax(floats(1, -1.0f)) {}
  octet_quantize_args args(bool cuda_side, int32_t dtype, bool rowwise_usage, bool columnwise_usage) {
    octet_quantize_args q{};
    q.struct_size = sizeof q;
    q.out_dtype = dtype;
    q.saturate = 1;
    q.scale = cuda_side ? scale.cuda_floats() : scale.ref_floats();
    q.rowwise_out = rowwise_usage ? (cuda_side ? rowwise.cuda_bytes() : rowwise.ref_bytes()) : nullptr;
    q.columnwise_out = columnwise_usage ? (cuda_side ? columnwise.cuda_bytes() : columnwise.ref_bytes()) : nullptr;
    q.scale_inv_out = cuda_side ? scale_inv.cuda_floats() : scale_inv.ref_floats();
    q.amax_out = cuda_side ? amax.cuda_floats() : amax.ref_floats();
    return q;
  }
  void expect_equal(const std::string& what) const {
    rowwise.expect_equal(what + ": rowwise codes");
    columnwise.expect_equal(what + ": columnwise codes");
    scale_inv.expect_equal(what + ": scale_inv");
    amax.expect_equal(what + ": amax");
  }
};

void sync(const Table& cuda) { ASSERT_EQ(cuda.synchronize(), OCTET_STATUS_SUCCESS) << cuda.last_error(); }

TEST(CudaLayerKernels, NormForwardBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t in_dtype : kDtypes)
        for (int32_t out_dtype : kDtypes)
          for (int variant = 0; variant < 4; ++variant) {
            // 0: plain with beta; 1: no beta, y not stored, fused E4M3 both usages;
            // 2: y stored, fused E5M2 rowwise, scale 1e6 (saturates);
            // 3: fused columnwise only, epsilon 0 (0/0 on the zero rows).
            const std::string what = "norm_forward " + shape_name(sh) + " kind " + std::to_string(kind) + " in dtype " +
                                     std::to_string(in_dtype) + " out dtype " + std::to_string(out_dtype) +
                                     " variant " + std::to_string(variant);
            SCOPED_TRACE(what);
            Pair x = matrix(ref, in_dtype, sh.rows, sh.cols, sh.cols + sh.pad, 11, true);
            Pair gamma = matrix(ref, in_dtype, 1, sh.cols, sh.cols, 12, false);
            Pair beta = matrix(ref, out_dtype, 1, sh.cols, sh.cols, 13, false);
            Pair y(out_dtype, sh.rows, sh.cols, sh.cols + 1);
            Pair mean = floats(sh.rows, -7.0f), rstd = floats(sh.rows, -7.0f);
            Quantized q(sh.rows, sh.cols, variant == 2 ? 1.0e6f : 3.0f);
            for (bool cuda_side : {false, true}) {
              const int32_t q_dtype = variant == 2 ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;
              octet_quantize_args qa = q.args(cuda_side, q_dtype, variant == 1 || variant == 2, variant == 1 || variant == 3);
              octet_norm_forward_args a{};
              a.struct_size = sizeof a;
              a.kind = kind;
              a.epsilon = variant == 3 ? 0.0f : 1e-5f;
              a.input = cuda_side ? x.cuda_view() : x.ref_view();
              a.gamma = cuda_side ? gamma.cuda_view() : gamma.ref_view();
              a.beta = cuda_side ? beta.cuda_view() : beta.ref_view();
              if (variant == 1) a.beta.data = nullptr;
              a.output = cuda_side ? y.cuda_view() : y.ref_view();
              if (variant == 1) a.output.data = nullptr;
              a.mean_out = cuda_side ? mean.cuda_floats() : mean.ref_floats();
              a.rstd_out = cuda_side ? rstd.cuda_floats() : rstd.ref_floats();
              a.quantize = variant == 0 ? nullptr : &qa;
              Table& t = cuda_side ? cuda : ref;
              ASSERT_EQ(t.api().norm_forward(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
            }
            sync(cuda);
            y.expect_equal("y");
            mean.expect_equal("mean");
            rstd.expect_equal("rstd");
            q.expect_equal("fused quantize");
          }
}

TEST(CudaLayerKernels, NormBackwardBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t dtype : kDtypes)
        for (bool with_dbeta : {true, false}) {
          SCOPED_TRACE("norm_backward " + shape_name(sh) + " kind " + std::to_string(kind) + " dtype " +
                       std::to_string(dtype) + (with_dbeta ? " dbeta" : ""));
          Pair x = matrix(ref, dtype, sh.rows, sh.cols, sh.cols + sh.pad, 21, true);
          Pair dy = matrix(ref, dtype, sh.rows, sh.cols, sh.cols, 22, with_dbeta);
          Pair gamma = matrix(ref, dtype, 1, sh.cols, sh.cols, 23, false);
          // mean and rstd from the reference's forward, on both sides.
          std::vector<float> mean(size_t(sh.rows) + 1), rstd(size_t(sh.rows) + 1);
          {
            octet_norm_forward_args f{};
            f.struct_size = sizeof f;
            f.kind = kind;
            f.epsilon = 1e-5f;
            f.input = x.ref_view();
            f.gamma = gamma.ref_view();
            f.beta = cuda_test::view(nullptr, dtype, 1, sh.cols);
            f.output = cuda_test::view(nullptr, dtype, sh.rows, sh.cols);
            f.mean_out = mean.data();
            f.rstd_out = rstd.data();
            ASSERT_EQ(ref.api().norm_forward(ref.context(), &f), OCTET_STATUS_SUCCESS) << ref.last_error();
          }
          DeviceBuffer mean_d(mean.data(), mean.size() * 4), rstd_d(rstd.data(), rstd.size() * 4);
          Pair dx(dtype, sh.rows, sh.cols, sh.cols + 2);
          Pair dgamma = floats(sh.cols, -3.0f), dbeta = floats(sh.cols, -3.0f);
          for (bool cuda_side : {false, true}) {
            octet_norm_backward_args a{};
            a.struct_size = sizeof a;
            a.kind = kind;
            a.input = cuda_side ? x.cuda_view() : x.ref_view();
            a.grad_output = cuda_side ? dy.cuda_view() : dy.ref_view();
            a.gamma = cuda_side ? gamma.cuda_view() : gamma.ref_view();
            a.mean = cuda_side ? static_cast<const float*>(mean_d.get()) : mean.data();
            a.rstd = cuda_side ? static_cast<const float*>(rstd_d.get()) : rstd.data();
            a.grad_input = cuda_side ? dx.cuda_view() : dx.ref_view();
            a.dgamma_out = cuda_side ? dgamma.cuda_floats() : dgamma.ref_floats();
            a.dbeta_out = with_dbeta ? (cuda_side ? dbeta.cuda_floats() : dbeta.ref_floats()) : nullptr;
            Table& t = cuda_side ? cuda : ref;
            ASSERT_EQ(t.api().norm_backward(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
          }
          sync(cuda);
          dx.expect_equal("dx");
          dgamma.expect_equal("dgamma");
          dbeta.expect_equal("dbeta");
        }
}

// The aliasing rule of octet_norm_backward_args: dx may be dy itself (both
// sides run in place here; the reference's in-place result equals its
// separate-buffer result, tests/reference), any other overlap is refused.
TEST(CudaLayerKernels, NormBackwardInPlaceOverDyAndTheOverlapRule) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  const Shape shapes[] = {{64, 8192, 0}, {37, 130, 0}, {1, 7, 0}};
  for (const Shape& sh : shapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t dtype : kDtypes) {
        SCOPED_TRACE("in place " + shape_name(sh) + " kind " + std::to_string(kind) + " dtype " +
                     std::to_string(dtype));
        Pair x = matrix(ref, dtype, sh.rows, sh.cols, sh.cols, 31, true);
        Pair dy = matrix(ref, dtype, sh.rows, sh.cols, sh.cols, 32, false);
        Pair gamma = matrix(ref, dtype, 1, sh.cols, sh.cols, 33, false);
        std::vector<float> mean(size_t(sh.rows), 0.1f), rstd(size_t(sh.rows), 2.0f);
        DeviceBuffer mean_d(mean.data(), mean.size() * 4), rstd_d(rstd.data(), rstd.size() * 4);
        Pair dgamma = floats(sh.cols, -3.0f), dbeta = floats(sh.cols, -3.0f);
        for (bool cuda_side : {false, true}) {
          octet_norm_backward_args a{};
          a.struct_size = sizeof a;
          a.kind = kind;
          a.input = cuda_side ? x.cuda_view() : x.ref_view();
          a.grad_output = cuda_side ? dy.cuda_view() : dy.ref_view();
          a.gamma = cuda_side ? gamma.cuda_view() : gamma.ref_view();
          a.mean = cuda_side ? static_cast<const float*>(mean_d.get()) : mean.data();
          a.rstd = cuda_side ? static_cast<const float*>(rstd_d.get()) : rstd.data();
          a.grad_input = a.grad_output;  // in place
          a.dgamma_out = cuda_side ? dgamma.cuda_floats() : dgamma.ref_floats();
          a.dbeta_out = cuda_side ? dbeta.cuda_floats() : dbeta.ref_floats();
          Table& t = cuda_side ? cuda : ref;
          ASSERT_EQ(t.api().norm_backward(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
        }
        sync(cuda);
        dy.expect_equal("dx written over dy");
        dgamma.expect_equal("dgamma");
        dbeta.expect_equal("dbeta");

        if (sh.rows < 2) continue;
        octet_norm_backward_args a{};
        a.struct_size = sizeof a;
        a.kind = kind;
        a.input = x.cuda_view();
        a.grad_output = dy.cuda_view();
        a.gamma = gamma.cuda_view();
        a.mean = static_cast<const float*>(mean_d.get());
        a.rstd = static_cast<const float*>(rstd_d.get());
        a.dgamma_out = dgamma.cuda_floats();
        a.dbeta_out = dbeta.cuda_floats();
        // One row off dy: overlaps without being dy.
        a.grad_input = cuda_test::view(dy.cuda_bytes() + sh.cols * cuda_test::element_bytes(dtype), dtype,
                                       sh.rows - 1, sh.cols, sh.cols);
        a.input.rows = a.grad_output.rows = sh.rows - 1;
        cuda.clear_errors();
        EXPECT_EQ(cuda.api().norm_backward(cuda.context(), &a), OCTET_STATUS_INVALID_ARGUMENT);
        EXPECT_NE(cuda.last_error().find("partially overlaps args->grad_output"), std::string::npos)
            << cuda.last_error();
        a.grad_input = a.input;  // dx over x
        cuda.clear_errors();
        EXPECT_EQ(cuda.api().norm_backward(cuda.context(), &a), OCTET_STATUS_INVALID_ARGUMENT);
        EXPECT_NE(cuda.last_error().find("shares memory with args->input"), std::string::npos) << cuda.last_error();
      }
}

// An activation's outputs may not share memory with its inputs.
TEST(CudaLayerKernels, ActivationOutputsMayNotOverlapInputs) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  const int64_t rows = 5, cols = 8;
  DeviceBuffer shared(size_t(3 * rows * cols) * sizeof(float));
  float* base = static_cast<float*>(shared.get());
  for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU}) {
    const int64_t n = kind == OCTET_ACTIVATION_SWIGLU ? cols / 2 : cols;
    octet_activation_args a{};
    a.struct_size = sizeof a;
    a.kind = kind;
    a.input = cuda_test::view(base, OCTET_DTYPE_FP32, rows, cols);
    a.output = cuda_test::view(base, OCTET_DTYPE_FP32, rows, n, cols);
    cuda.clear_errors();
    EXPECT_EQ(cuda.api().activation_forward(cuda.context(), &a), OCTET_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(cuda.last_error().find("args->output shares memory with args->input"), std::string::npos)
        << cuda.last_error();
    a.output = octet_matrix_view{};
    a.grad_output = cuda_test::view(base + rows * cols, OCTET_DTYPE_FP32, rows, n);
    a.grad_input = cuda_test::view(base + rows * cols, OCTET_DTYPE_FP32, rows, cols);
    cuda.clear_errors();
    EXPECT_EQ(cuda.api().activation_backward(cuda.context(), &a), OCTET_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(cuda.last_error().find("args->grad_input shares memory with args->grad_output"), std::string::npos)
        << cuda.last_error();
    a.grad_input = cuda_test::view(base + 2 * rows * cols, OCTET_DTYPE_FP32, rows, cols);
    EXPECT_EQ(cuda.api().activation_backward(cuda.context(), &a), OCTET_STATUS_SUCCESS) << cuda.last_error();
  }
}

void run_activation(Table& ref, Table& cuda, int32_t kind, Pair& x, Pair& dy, Pair& y, Pair& dx) {
  for (bool cuda_side : {false, true}) {
    octet_activation_args a{};
    a.struct_size = sizeof a;
    a.kind = kind;
    a.input = cuda_side ? x.cuda_view() : x.ref_view();
    a.output = cuda_side ? y.cuda_view() : y.ref_view();
    Table& t = cuda_side ? cuda : ref;
    ASSERT_EQ(t.api().activation_forward(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
    a.output = octet_matrix_view{};
    a.grad_output = cuda_side ? dy.cuda_view() : dy.ref_view();
    a.grad_input = cuda_side ? dx.cuda_view() : dx.ref_view();
    ASSERT_EQ(t.api().activation_backward(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
  }
  sync(cuda);
  y.expect_equal("y");
  dx.expect_equal("dx");
}

TEST(CudaLayerKernels, ActivationsBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU})
      for (int32_t in_dtype : kDtypes)
        for (int32_t out_dtype : kDtypes) {
          SCOPED_TRACE("activation " + shape_name(sh) + " kind " + std::to_string(kind) + " in " +
                       std::to_string(in_dtype) + " out " + std::to_string(out_dtype));
          const int64_t n = sh.cols, in_cols = kind == OCTET_ACTIVATION_SWIGLU ? 2 * n : n;
          Pair x = matrix(ref, in_dtype, sh.rows, in_cols, in_cols + sh.pad, 31, true);
          Pair dy = matrix(ref, out_dtype, sh.rows, n, n, 32, true);
          Pair y(out_dtype, sh.rows, n, n + 3), dx(out_dtype, sh.rows, in_cols, in_cols);
          run_activation(ref, cuda, kind, x, dy, y, dx);
        }
}

// Every BF16 value as the input (FP32, 256 x 256; SwiGLU's b and every dy
// permuted from them): octet_math tanhf/expf and the NaN rules on the device.
TEST(CudaLayerKernels, ActivationsOnEveryBf16Value) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  const int64_t rows = 256, n = 256;
  std::vector<float> all(size_t(rows * n));
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) all[h] = float_of(h << 16);
  for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU}) {
    SCOPED_TRACE("kind " + std::to_string(kind));
    const bool swiglu = kind == OCTET_ACTIVATION_SWIGLU;
    const int64_t in_cols = swiglu ? 2 * n : n;
    std::vector<float> in(size_t(rows * in_cols)), grad(size_t(rows * n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < n; ++c) {
        const size_t i = size_t(r * n + c);
        in[size_t(r * in_cols + c)] = all[i];
        if (swiglu) in[size_t(r * in_cols + n + c)] = all[(i * 7919u + 3u) % all.size()];
        grad[i] = all[(i * 104729u + 11u) % all.size()];
      }
    Pair x(encode(ref, in, OCTET_DTYPE_FP32, rows, in_cols, in_cols), OCTET_DTYPE_FP32, rows, in_cols, in_cols);
    Pair dy(encode(ref, grad, OCTET_DTYPE_FP32, rows, n, n), OCTET_DTYPE_FP32, rows, n, n);
    Pair y(OCTET_DTYPE_FP32, rows, n, n), dx(OCTET_DTYPE_FP32, rows, in_cols, in_cols);
    run_activation(ref, cuda, kind, x, dy, y, dx);
  }
}

TEST(CudaLayerKernels, BiasGradientBitForBitWithAndWithoutFusedQuantize) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (const Shape& sh : kShapes)
    for (int32_t dtype : kDtypes)
      for (int variant = 0; variant < 4; ++variant) {
        // 0: sums only; 1: E5M2 both usages, scale 1000 (saturates some);
        // 2: E4M3 rowwise; 3: E4M3 columnwise.
        SCOPED_TRACE("bias_gradient " + shape_name(sh) + " dtype " + std::to_string(dtype) + " variant " +
                     std::to_string(variant));
        Pair dy = matrix(ref, dtype, sh.rows, sh.cols, sh.cols + sh.pad, 41, true);
        Pair sums = floats(sh.cols, -5.0f);
        Quantized q(sh.rows, sh.cols, variant == 1 ? 1000.0f : 2.0f);
        for (bool cuda_side : {false, true}) {
          octet_quantize_args qa =
              q.args(cuda_side, variant == 1 ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3, variant == 1 || variant == 2,
                     variant == 1 || variant == 3);
          octet_bias_gradient_args a{};
          a.struct_size = sizeof a;
          a.grad_output = cuda_side ? dy.cuda_view() : dy.ref_view();
          a.sums_out = cuda_side ? sums.cuda_floats() : sums.ref_floats();
          a.quantize = variant == 0 ? nullptr : &qa;
          Table& t = cuda_side ? cuda : ref;
          ASSERT_EQ(t.api().bias_gradient(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
        }
        sync(cuda);
        sums.expect_equal("sums");
        q.expect_equal("fused quantize");
      }
}

TEST(CudaLayerKernels, AccumulateBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (const Shape& sh : kShapes)
    for (int32_t xd : kDtypes)
      for (int32_t yd : kDtypes)
        for (int32_t acc : {0, 1}) {
          SCOPED_TRACE("accumulate " + shape_name(sh) + " x " + std::to_string(xd) + " y " + std::to_string(yd) +
                       " acc " + std::to_string(acc));
          Pair x = matrix(ref, xd, sh.rows, sh.cols, sh.cols + sh.pad, 51, true);
          Pair y = matrix(ref, yd, sh.rows, sh.cols, sh.cols + 1, 52, true);
          for (bool cuda_side : {false, true}) {
            const octet_matrix_view xv = cuda_side ? x.cuda_view() : x.ref_view();
            const octet_matrix_view yv = cuda_side ? y.cuda_view() : y.ref_view();
            Table& t = cuda_side ? cuda : ref;
            ASSERT_EQ(t.api().accumulate(t.context(), &xv, &yv, acc), OCTET_STATUS_SUCCESS) << t.last_error();
          }
          sync(cuda);
          y.expect_equal("y");
        }
}

// A rejected call reports INVALID_ARGUMENT naming the argument and writes
// nothing: not even the parts computed before the failing check's field.
TEST(CudaLayerKernels, BadArgumentsAreReportedAndWriteNothing) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  auto expect_rejected = [&](int32_t status, const char* needle) {
    EXPECT_EQ(status, OCTET_STATUS_INVALID_ARGUMENT);
    const std::string message = cuda.last_error();
    EXPECT_NE(message.find(needle), std::string::npos) << message;
    cuda.clear_errors();
  };
  Pair x = matrix(ref, OCTET_DTYPE_FP32, 5, 9, 9, 61, false);
  Pair gamma = matrix(ref, OCTET_DTYPE_FP32, 1, 9, 9, 62, false);
  Pair y(OCTET_DTYPE_FP32, 5, 9, 9);
  Pair mean = floats(5, -7.0f), rstd = floats(5, -7.0f);
  Quantized q(5, 9, 2.0f);
  octet_quantize_args qa = q.args(true, OCTET_DTYPE_BF16, true, true);  // not an FP8 dtype
  octet_norm_forward_args f{};
  f.struct_size = sizeof f;
  f.kind = OCTET_NORM_LAYERNORM;
  f.epsilon = 1e-5f;
  f.input = x.cuda_view();
  f.gamma = gamma.cuda_view();
  f.beta = cuda_test::view(nullptr, OCTET_DTYPE_FP32, 1, 9);
  f.output = y.cuda_view();
  f.mean_out = mean.cuda_floats();
  f.rstd_out = rstd.cuda_floats();
  f.quantize = &qa;
  expect_rejected(cuda.api().norm_forward(cuda.context(), &f), "args->quantize->out_dtype");
  sync(cuda);
  y.expect_equal("y after a rejected fused quantize");  // untouched: the garbage on both sides
  mean.expect_equal("mean after a rejected fused quantize");
  q.expect_equal("codes after a rejected fused quantize");

  f.quantize = nullptr;
  f.kind = 7;
  expect_rejected(cuda.api().norm_forward(cuda.context(), &f), "args->kind");
  f.kind = OCTET_NORM_RMSNORM;
  f.gamma.cols = 8;
  expect_rejected(cuda.api().norm_forward(cuda.context(), &f), "args->gamma");
  f.gamma.cols = 9;
  f.output.dtype = OCTET_DTYPE_E4M3;
  expect_rejected(cuda.api().norm_forward(cuda.context(), &f), "args->output.dtype");
  f.output.dtype = OCTET_DTYPE_FP32;
  f.struct_size = sizeof f - 1;
  expect_rejected(cuda.api().norm_forward(cuda.context(), &f), "struct_size");

  octet_norm_backward_args b{};
  b.struct_size = sizeof b;
  b.kind = OCTET_NORM_LAYERNORM;
  b.input = x.cuda_view();
  b.grad_output = x.cuda_view();
  b.gamma = gamma.cuda_view();
  b.rstd = rstd.cuda_floats();
  b.grad_input = y.cuda_view();
  b.dgamma_out = mean.cuda_floats();
  expect_rejected(cuda.api().norm_backward(cuda.context(), &b), "args->mean");
  b.mean = mean.cuda_floats();
  b.grad_input.rows = 4;
  expect_rejected(cuda.api().norm_backward(cuda.context(), &b), "args->grad_input");

  octet_activation_args s{};
  s.struct_size = sizeof s;
  s.kind = OCTET_ACTIVATION_SWIGLU;
  s.input = x.cuda_view();  // 9 columns: odd
  s.output = y.cuda_view();
  expect_rejected(cuda.api().activation_forward(cuda.context(), &s), "even");
  s.kind = OCTET_ACTIVATION_GELU;
  s.output.cols = 8;
  expect_rejected(cuda.api().activation_forward(cuda.context(), &s), "args->output");
  s.grad_output = x.cuda_view();
  s.grad_input = y.cuda_view();
  s.grad_input.dtype = OCTET_DTYPE_E5M2;
  expect_rejected(cuda.api().activation_backward(cuda.context(), &s), "args->grad_input");

  octet_bias_gradient_args g{};
  g.struct_size = sizeof g;
  g.grad_output = x.cuda_view();
  expect_rejected(cuda.api().bias_gradient(cuda.context(), &g), "args->sums_out");
  g.sums_out = mean.cuda_floats();
  octet_quantize_args no_scale = q.args(true, OCTET_DTYPE_E4M3, true, false);
  no_scale.scale = nullptr;
  g.quantize = &no_scale;
  expect_rejected(cuda.api().bias_gradient(cuda.context(), &g), "args->quantize->scale");
  EXPECT_NE(cuda.api().bias_gradient(cuda.context(), nullptr), OCTET_STATUS_SUCCESS);
  cuda.clear_errors();

  octet_matrix_view ys = y.cuda_view();
  ys.cols = 3;
  const octet_matrix_view xv = x.cuda_view();
  expect_rejected(cuda.api().accumulate(cuda.context(), &xv, &ys, 1), "same rows and cols");
  sync(cuda);
  y.expect_equal("y after rejected calls");
  mean.expect_equal("mean after rejected calls");
}

// The six entries are in the plugin's table whether or not a device answers
// (asked from the entry point directly: runs on every machine).
TEST(CudaLayerKernels, EntriesArePresent) {
  void* handle = dlopen(OCTET_CUDA_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  const auto entry = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  ASSERT_NE(entry, nullptr);
  const octet_backend_api* api = nullptr;
  ASSERT_EQ(entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api), OCTET_STATUS_SUCCESS);
  ASSERT_GE(api->struct_size, offsetof(octet_backend_api, accumulate) + sizeof api->accumulate);
  EXPECT_NE(api->norm_forward, nullptr);
  EXPECT_NE(api->norm_backward, nullptr);
  EXPECT_NE(api->activation_forward, nullptr);
  EXPECT_NE(api->activation_backward, nullptr);
  EXPECT_NE(api->bias_gradient, nullptr);
  EXPECT_NE(api->accumulate, nullptr);
  // Checks come first: no context is needed to be told what is wrong.
  EXPECT_EQ(api->norm_forward(nullptr, nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  dlclose(handle);
}

}  // namespace
