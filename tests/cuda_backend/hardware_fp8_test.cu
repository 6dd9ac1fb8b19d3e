// The device's FP32 -> FP8 encoders (codecs.cuh) on the device itself, over
// every one of the 2^32 FP32 bit patterns, for E4M3 and E5M2, saturating and
// not:
//  - fp8_encode (the hardware conversion plus fp8_from_satfinite's repairs on
//    SM 8.9+) and both lanes of fp8_encode2 must equal fp8_encode_exact, the
//    integer definition that the host tests compare with the library;
//  - the raw hardware conversion (cvt.rn.satfinite) must be what
//    fp8_from_satfinite assumes of it: round to nearest even with the finite
//    clamp, for every non-NaN input. This second check says why when the
//    first fails.
// Without a device (or one this binary has no code for) the tests skip and
// say why.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "codecs.cuh"

namespace {

struct Mismatches {
  unsigned long long count;
  uint32_t first;  // smallest pattern that differs; 0xFFFFFFFF when none
};

__global__ void compare_encoders(bool e4m3, bool saturate, Mismatches* encode, Mismatches* encode2_low,
                                 Mismatches* encode2_high) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t p = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; p <= 0xFFFFFFFFull; p += stride) {
    const uint32_t pattern = uint32_t(p);
    const float v = octet_cuda::float_of(pattern);
    // The other lane: another pattern, so that every pair of classes meets.
    const uint32_t partner = pattern * 2654435761u + 0x9E3779B9u;
    const float w = octet_cuda::float_of(partner);
    const uint8_t expected = octet_cuda::fp8_encode_exact(v, e4m3, saturate);
    if (octet_cuda::fp8_encode(v, e4m3, saturate) != expected) {
      atomicAdd(&encode->count, 1ull);
      atomicMin(&encode->first, pattern);
    }
    const uint16_t pair = octet_cuda::fp8_encode2(v, w, e4m3, saturate);
    if (uint8_t(pair & 0xFFu) != expected) {
      atomicAdd(&encode2_low->count, 1ull);
      atomicMin(&encode2_low->first, pattern);
    }
    if (uint8_t(pair >> 8) != octet_cuda::fp8_encode_exact(w, e4m3, saturate)) {
      atomicAdd(&encode2_high->count, 1ull);
      atomicMin(&encode2_high->first, partner);
    }
  }
}

__global__ void check_satfinite_assumption(bool e4m3, Mismatches* out, int* compiled_in) {
#if defined(OCTET_CUDA_HARDWARE_FP8)
  if (blockIdx.x == 0 && threadIdx.x == 0) *compiled_in = 1;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t p = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; p <= 0xFFFFFFFFull; p += stride) {
    const uint32_t pattern = uint32_t(p);
    if ((pattern & 0x7FFFFFFFu) > 0x7F800000u) continue;  // NaN: any code (fp8_from_satfinite repairs it)
    const float v = octet_cuda::float_of(pattern);
    const uint8_t hardware = uint8_t(octet_cuda::fp8x2_satfinite(v, 0.0f, e4m3) & 0xFFu);
    if (hardware != octet_cuda::fp8_encode_exact(v, e4m3, true)) {
      atomicAdd(&out->count, 1ull);
      atomicMin(&out->first, pattern);
    }
  }
#else
  (void)e4m3;
  (void)out;
  if (blockIdx.x == 0 && threadIdx.x == 0) *compiled_in = 0;
#endif
}

std::string why_no_device() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return std::string("no CUDA device: cudaGetDeviceCount failed with ") + cudaGetErrorName(e) + ": " +
           cudaGetErrorString(e);
  if (count == 0) return "no CUDA device";
  return "";
}

// Device memory for a few Mismatches, set to "none".
class Counters {
 public:
  explicit Counters(int n) : n_(n) {
    if (cudaMalloc(&device_, sizeof(Mismatches) * n_) != cudaSuccess) device_ = nullptr;
    reset();
  }
  ~Counters() { cudaFree(device_); }
  Counters(const Counters&) = delete;
  Counters& operator=(const Counters&) = delete;
  bool ok() const { return device_ != nullptr; }
  Mismatches* at(int i) { return device_ + i; }
  void reset() {
    if (device_ == nullptr) return;
    for (int i = 0; i < n_; ++i) {
      const Mismatches none{0ull, 0xFFFFFFFFu};
      cudaMemcpy(device_ + i, &none, sizeof none, cudaMemcpyHostToDevice);
    }
  }
  Mismatches read(int i) const {
    Mismatches m{};
    cudaMemcpy(&m, device_ + i, sizeof m, cudaMemcpyDeviceToHost);
    return m;
  }

 private:
  int n_;
  Mismatches* device_ = nullptr;
};

// Grid for the 2^32 sweep: a few waves of 256-thread blocks, each looping.
constexpr unsigned kBlocks = 4096, kThreads = 256;

#define OCTET_REQUIRE_DEVICE()                                           \
  do {                                                                   \
    const std::string why = why_no_device();                             \
    if (!why.empty()) GTEST_SKIP() << why << ": device tests skipped";   \
  } while (0)

TEST(CudaHardwareFp8, EncodersEqualTheDefinitionOnEveryFp32Pattern) {
  OCTET_REQUIRE_DEVICE();
  Counters c(3);
  ASSERT_TRUE(c.ok());
  for (bool e4m3 : {true, false}) {
    for (bool saturate : {true, false}) {
      c.reset();
      compare_encoders<<<kBlocks, kThreads>>>(e4m3, saturate, c.at(0), c.at(1), c.at(2));
      const cudaError_t launched = cudaGetLastError();
      if (launched == cudaErrorNoKernelImageForDevice)
        GTEST_SKIP() << "this binary has no code for the device: " << cudaGetErrorString(launched);
      ASSERT_EQ(launched, cudaSuccess) << cudaGetErrorString(launched);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const char* names[3] = {"fp8_encode", "fp8_encode2 (low lane)", "fp8_encode2 (high lane)"};
      for (int i = 0; i < 3; ++i) {
        const Mismatches m = c.read(i);
        EXPECT_EQ(m.count, 0ull) << names[i] << (e4m3 ? " E4M3" : " E5M2")
                                 << (saturate ? " saturating" : " not saturating") << ": " << m.count
                                 << " patterns differ from fp8_encode_exact, the first 0x" << std::hex << m.first;
      }
    }
  }
}

TEST(CudaHardwareFp8, SatfiniteConversionIsRoundToNearestEvenWithTheFiniteClamp) {
  OCTET_REQUIRE_DEVICE();
  Counters c(1);
  ASSERT_TRUE(c.ok());
  int* compiled_in = nullptr;
  ASSERT_EQ(cudaMalloc(&compiled_in, sizeof(int)), cudaSuccess);
  for (bool e4m3 : {true, false}) {
    c.reset();
    check_satfinite_assumption<<<kBlocks, kThreads>>>(e4m3, c.at(0), compiled_in);
    const cudaError_t launched = cudaGetLastError();
    if (launched == cudaErrorNoKernelImageForDevice) {
      cudaFree(compiled_in);
      GTEST_SKIP() << "this binary has no code for the device: " << cudaGetErrorString(launched);
    }
    ASSERT_EQ(launched, cudaSuccess) << cudaGetErrorString(launched);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    int hardware = 0;
    cudaMemcpy(&hardware, compiled_in, sizeof hardware, cudaMemcpyDeviceToHost);
    if (hardware == 0) {
      cudaFree(compiled_in);
      GTEST_SKIP() << "the device code has no hardware FP8 conversion (below SM 8.9, or OCTET_CUDA_SOFTWARE_FP8)";
    }
    const Mismatches m = c.read(0);
    EXPECT_EQ(m.count, 0ull) << (e4m3 ? "E4M3" : "E5M2") << ": cvt.rn.satfinite differs from the saturating "
                             << "definition on " << m.count << " non-NaN patterns, the first 0x" << std::hex
                             << m.first;
  }
  cudaFree(compiled_in);
}

}  // namespace
