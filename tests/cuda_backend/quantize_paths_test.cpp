// Both kernel paths of quantize and amax (the vectorised one for shapes in
// multiples of 4 with aligned data, the one-element-per-thread one for the
// rest or with OCTET_CUDA_SIMPLE_KERNELS=1) against the reference's table,
// every byte: rowwise codes, transposed codes, scale_inv, amax. Skips without
// a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codecs.cuh"
#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

struct Shape {
  int64_t rows, cols, ld;
};

// Random values with specials sprinkled in (NaNs of both signs, infs, zeros,
// values that overflow E4M3 after scaling), stored as `dtype`.
std::vector<uint8_t> make_input(int32_t dtype, const Shape& s, uint32_t seed) {
  const size_t width = cuda_test::element_bytes(dtype);
  std::vector<uint8_t> bytes(size_t(s.rows * s.ld) * width, 0);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const uint32_t specials[] = {0x7FC00001u, 0xFFC00002u, 0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,
                               0x447A0000u /* 1000 */};
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t c = 0; c < s.cols; ++c) {
      float v = normal(rng);
      if (rng() % 97 == 0) std::memcpy(&v, &specials[rng() % 7], 4);
      uint32_t b;
      std::memcpy(&b, &v, 4);
      const size_t at = size_t(r * s.ld + c) * width;
      if (dtype == OCTET_DTYPE_FP32) {
        std::memcpy(&bytes[at], &b, 4);
      } else {
        // FP16: the value itself (RNE), so that FP16 inputs have signs and
        // specials too (they were 0x3C00 ^ (b >> 20): all positive and finite
        // in [0.125, 2), so no FP16 sign, NaN, infinity or FP8 overflow after
        // scaling was ever tested).
        const uint16_t h = dtype == OCTET_DTYPE_BF16 ? uint16_t(b >> 16) : octet_cuda::fp16_encode(v);
        std::memcpy(&bytes[at], &h, 2);
      }
    }
  return bytes;
}

struct Quantized {
  std::vector<uint8_t> rowwise, columnwise;
  float scale_inv = 0, amax = 0, amax_entry = 0;
};

Quantized run_reference(int32_t dtype, const Shape& s, std::vector<uint8_t>& input, int32_t out, float scale,
                        int32_t saturate) {
  Table ref = Table::reference();
  Quantized q;
  q.rowwise.resize(size_t(s.rows * s.cols));
  q.columnwise.resize(size_t(s.rows * s.cols));
  octet_quantize_args a{};
  a.struct_size = sizeof a;
  a.input = cuda_test::view(input.data(), dtype, s.rows, s.cols, s.ld);
  a.out_dtype = out;
  a.saturate = saturate;
  a.scale = &scale;
  a.rowwise_out = q.rowwise.data();
  a.columnwise_out = q.columnwise.data();
  a.scale_inv_out = &q.scale_inv;
  a.amax_out = &q.amax;
  EXPECT_EQ(ref.api().quantize(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.last_error();
  EXPECT_EQ(ref.api().amax(ref.context(), &a.input, &q.amax_entry), OCTET_STATUS_SUCCESS) << ref.last_error();
  return q;
}

Quantized run_cuda(int32_t dtype, const Shape& s, const std::vector<uint8_t>& input, int32_t out, float scale,
                   int32_t saturate) {
  Table& cuda = Table::cuda();
  DeviceBuffer in(input.data(), input.size());
  DeviceBuffer rowwise(size_t(s.rows * s.cols)), columnwise(size_t(s.rows * s.cols));
  DeviceBuffer scalars(4 * sizeof(float));
  const float host_scalars[4] = {scale, 0, 0, 0};
  scalars.upload(host_scalars, sizeof host_scalars);
  float* d = static_cast<float*>(scalars.get());
  octet_quantize_args a{};
  a.struct_size = sizeof a;
  a.input = cuda_test::view(in.get(), dtype, s.rows, s.cols, s.ld);
  a.out_dtype = out;
  a.saturate = saturate;
  a.scale = d;
  a.rowwise_out = static_cast<uint8_t*>(rowwise.get());
  a.columnwise_out = static_cast<uint8_t*>(columnwise.get());
  a.scale_inv_out = d + 1;
  a.amax_out = d + 2;
  EXPECT_EQ(cuda.api().quantize(cuda.context(), &a), OCTET_STATUS_SUCCESS) << cuda.last_error();
  EXPECT_EQ(cuda.api().amax(cuda.context(), &a.input, d + 3), OCTET_STATUS_SUCCESS) << cuda.last_error();
  Quantized q;
  q.rowwise = rowwise.download();
  q.columnwise = columnwise.download();
  const std::vector<float> back = scalars.download_as<float>();
  q.scale_inv = back[1];
  q.amax = back[2];
  q.amax_entry = back[3];
  return q;
}

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

class QuantizePaths : public testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      setenv("OCTET_CUDA_SIMPLE_KERNELS", "1", 1);
    } else {
      unsetenv("OCTET_CUDA_SIMPLE_KERNELS");
    }
  }
  void TearDown() override { unsetenv("OCTET_CUDA_SIMPLE_KERNELS"); }
};

TEST_P(QuantizePaths, EveryByteMatchesTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  // Multiples of 4 (vectorised unless forced simple), padded ld, partial
  // tiles both ways, and ragged shapes (always the simple path).
  const Shape shapes[] = {{128, 256, 256}, {96, 132, 136}, {1028, 516, 516}, {4, 4, 4},
                          {36, 4100, 4100}, {33, 95, 95}, {1, 7, 7}, {1481, 677, 680}};
  // Both overflow modes: without saturation the kernels' hardware FP8
  // conversion is repaired for values at the top of the range (codecs.cuh);
  // the inputs hold 1000, which overflows E4M3 at scale 3.5, and infinities.
  uint32_t seed = 1;
  for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    for (int32_t out : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (const Shape& s : shapes) {
        const int32_t saturate = int32_t(seed % 2);
        const std::string what = "dtype " + std::to_string(dtype) + " out " + std::to_string(out) + " " +
                                 std::to_string(s.rows) + "x" + std::to_string(s.cols) + " ld " +
                                 std::to_string(s.ld) + " saturate " + std::to_string(saturate) +
                                 (GetParam() ? " simple" : " default");
        std::vector<uint8_t> input = make_input(dtype, s, seed++);
        const float scale = 3.5f;
        const Quantized want = run_reference(dtype, s, input, out, scale, saturate);
        const Quantized got = run_cuda(dtype, s, input, out, scale, saturate);
        EXPECT_EQ(got.rowwise, want.rowwise) << what;
        EXPECT_EQ(got.columnwise, want.columnwise) << what;
        EXPECT_EQ(bits(got.scale_inv), bits(want.scale_inv)) << what;
        EXPECT_EQ(bits(got.amax), bits(want.amax)) << what;
        EXPECT_EQ(bits(got.amax_entry), bits(want.amax_entry)) << what;
      }
    }
  }
}

// The vectorised amax reads 16-byte chunks, two per thread per iteration of
// a grid of at most 2048 x 256 threads; the shapes above never loop. Here
// inputs of 2.5 and 3.2 grid strides (the unrolled pair, then one chunk,
// then a ragged tail of elements) with the largest magnitude in turn in the
// first chunk, in the pair's second chunk, in the single chunk after the
// loop and in the tail; NaNs (ignored) everywhere; and an infinity (counted).
TEST_P(QuantizePaths, AmaxOfLargeInputsMatchesTheReference) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  const int64_t stride_chunks = 2048 * 256;
  for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    const int64_t per_chunk = dtype == OCTET_DTYPE_FP32 ? 4 : 8;
    for (const int64_t count : {5 * stride_chunks * per_chunk / 2 + 3, 16 * stride_chunks * per_chunk / 5 + 7}) {
      const int64_t chunks = count / per_chunk;
      const int64_t places[] = {1, (stride_chunks + 5) * per_chunk + 2, (chunks - 1) * per_chunk, count - 1, -1};
      const size_t width = cuda_test::element_bytes(dtype);
      // Bits of 60000 (finite in FP16 too) and of +inf in the dtype.
      const uint32_t big = dtype == OCTET_DTYPE_FP32 ? 0x476A6000u : dtype == OCTET_DTYPE_BF16 ? 0x476Au : 0x7B53u;
      const uint32_t inf = dtype == OCTET_DTYPE_FP32 ? 0x7F800000u : dtype == OCTET_DTYPE_BF16 ? 0x7F80u : 0x7C00u;
      const uint32_t sign = dtype == OCTET_DTYPE_FP32 ? 0x80000000u : 0x8000u;
      std::vector<uint8_t> base = make_input(dtype, Shape{1, count, count}, uint32_t(count));
      for (int64_t i = 0; i < count; ++i) {  // no infinities but the one placed
        uint32_t b = 0;
        std::memcpy(&b, &base[size_t(i) * width], width);
        if ((b & ~sign) == inf) std::memset(&base[size_t(i) * width], 0, width);
      }
      for (const int64_t place : places) {
        std::vector<uint8_t> input = base;
        if (place >= 0) {
          std::memcpy(&input[size_t(place) * width], &big, width);
        } else {
          std::memcpy(&input[size_t(count / 2) * width], &inf, width);
        }
        const std::string what = "dtype " + std::to_string(dtype) + " count " + std::to_string(count) +
                                 " largest at " + std::to_string(place) + (GetParam() ? " simple" : " default");
        octet_matrix_view host_view = cuda_test::view(input.data(), dtype, 1, count, count);
        float want = 0;
        ASSERT_EQ(ref.api().amax(ref.context(), &host_view, &want), OCTET_STATUS_SUCCESS) << ref.last_error();
        DeviceBuffer in(input.data(), input.size()), out(sizeof(float));
        const octet_matrix_view device_view = cuda_test::view(in.get(), dtype, 1, count, count);
        ASSERT_EQ(cuda.api().amax(cuda.context(), &device_view, static_cast<float*>(out.get())),
                  OCTET_STATUS_SUCCESS)
            << cuda.last_error();
        EXPECT_EQ(bits(out.download_as<float>()[0]), bits(want)) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CudaKernels, QuantizePaths, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "SimpleKernels" : "DefaultKernels");
                         });

}  // namespace
