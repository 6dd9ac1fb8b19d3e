// The cuda backend's device codecs (backends/cuda/src/codecs.cuh) are
// __host__ __device__ integer code: here they are compiled for the host and
// compared with the library's codecs (octet.h) on every 8- and 16-bit code
// and on a wide sweep of FP32 bit patterns. This checks the kernels'
// rounding, saturation and NaN rules on a machine without a GPU.
#include <octet/octet.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "codecs.cuh"

namespace {

float from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}
uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Every 16-bit high half with a few low halves (ties, just above/below a
// tie, all ones), plus a prime-stride sweep of the whole 32-bit space.
std::vector<uint32_t> fp32_patterns() {
  std::vector<uint32_t> out;
  const uint32_t lows[] = {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu, 0x0800u, 0x1000u, 0x0FFFu,
                           0x1001u, 0x2000u, 0x4000u, 0x3FFFu, 0x4001u};
  for (uint32_t high = 0; high <= 0xFFFFu; ++high)
    for (uint32_t low : lows) out.push_back((high << 16) | low);
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 7919u * 113u) out.push_back(uint32_t(b));
  return out;
}

TEST(CudaDeviceCodecsOnHost, Fp8EncodeMatchesTheLibrary) {
  for (uint32_t pattern : fp32_patterns()) {
    const float v = from_bits(pattern);
    for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (int saturate : {0, 1}) {
        ASSERT_EQ(octet_cuda::fp8_encode(v, dtype == OCTET_DTYPE_E4M3, saturate != 0),
                  octet_fp8_encode(v, dtype, saturate))
            << std::hex << "bits 0x" << pattern << " dtype " << std::dec << dtype << " saturate " << saturate;
      }
    }
  }
}

// On SM 8.9+ the kernels encode with the hardware's cvt.rn.satfinite and
// repair its result where it is not the definition's (fp8_from_satfinite).
// Here the hardware is modelled by what PTX documents for it: round to
// nearest even with finite overflow and infinities clamped to the largest
// finite magnitude, sign kept (the library's saturating encoder), and an
// unspecified code for NaN (several tried). The repaired code must be the
// library's in both modes. The device test (hardware_fp8_test.cu) checks the
// model itself against the hardware on every FP32 pattern.
TEST(CudaDeviceCodecsOnHost, SatfiniteRepairGivesTheDefinition) {
  const uint8_t nan_codes[] = {0x7Fu, 0xFFu, 0x00u, 0x7Eu, 0x7Bu, 0xFEu};
  for (uint32_t pattern : fp32_patterns()) {
    const float v = from_bits(pattern);
    const bool nan = (pattern & 0x7FFFFFFFu) > 0x7F800000u;
    for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      const bool e4m3 = dtype == OCTET_DTYPE_E4M3;
      for (uint8_t nan_code : nan_codes) {
        const uint8_t satfinite = nan ? nan_code : octet_fp8_encode(v, dtype, 1);
        for (int saturate : {0, 1}) {
          ASSERT_EQ(octet_cuda::fp8_from_satfinite(satfinite, v, e4m3, saturate != 0),
                    octet_fp8_encode(v, dtype, saturate))
              << std::hex << "bits 0x" << pattern << " model code 0x" << unsigned(satfinite) << std::dec << " dtype "
              << dtype << " saturate " << saturate;
        }
        if (!nan) break;  // the NaN code matters for NaN inputs only
      }
    }
  }
}

TEST(CudaDeviceCodecsOnHost, PairEncodeIsTwoEncodes) {
  const std::vector<uint32_t> patterns = fp32_patterns();
  for (size_t i = 0; i < patterns.size(); ++i) {
    const float low = from_bits(patterns[i]), high = from_bits(patterns[patterns.size() - 1 - i]);
    for (bool e4m3 : {true, false}) {
      for (bool saturate : {true, false}) {
        const uint16_t pair = octet_cuda::fp8_encode2(low, high, e4m3, saturate);
        ASSERT_EQ(pair & 0xFFu, octet_cuda::fp8_encode(low, e4m3, saturate)) << std::hex << patterns[i];
        ASSERT_EQ(pair >> 8, octet_cuda::fp8_encode(high, e4m3, saturate)) << std::hex << patterns[i];
      }
    }
  }
}

TEST(CudaDeviceCodecsOnHost, HalfEncodesMatchTheLibrary) {
  for (uint32_t pattern : fp32_patterns()) {
    const float v = from_bits(pattern);
    ASSERT_EQ(octet_cuda::bf16_encode(v), octet_bf16_encode(v)) << std::hex << "bits 0x" << pattern;
    ASSERT_EQ(octet_cuda::fp16_encode(v), octet_fp16_encode(v)) << std::hex << "bits 0x" << pattern;
  }
}

TEST(CudaDeviceCodecsOnHost, E8m0CeilEncodeMatchesTheLibrary) {
  for (uint32_t pattern : fp32_patterns()) {
    const float v = from_bits(pattern);
    ASSERT_EQ(octet_cuda::e8m0_encode(v, true), octet_e8m0_encode(v, OCTET_E8M0_ROUND_CEIL))
        << std::hex << "bits 0x" << pattern;
    ASSERT_EQ(octet_cuda::e8m0_encode(v, false), octet_e8m0_encode(v, OCTET_E8M0_ROUND_FLOOR))
        << std::hex << "bits 0x" << pattern;
  }
}

TEST(CudaDeviceCodecsOnHost, DecodesMatchTheLibraryOnEveryCode) {
  for (uint32_t code = 0; code < 256; ++code) {
    const auto c = static_cast<uint8_t>(code);
    EXPECT_EQ(bits(octet_cuda::fp8_decode(c, true)), bits(octet_fp8_decode(c, OCTET_DTYPE_E4M3))) << code;
    EXPECT_EQ(bits(octet_cuda::fp8_decode(c, false)), bits(octet_fp8_decode(c, OCTET_DTYPE_E5M2))) << code;
    EXPECT_EQ(bits(octet_cuda::e8m0_decode(c)), bits(octet_e8m0_decode(c))) << code;
  }
  for (uint32_t code = 0; code <= 0xFFFFu; ++code) {
    const auto c = static_cast<uint16_t>(code);
    ASSERT_EQ(bits(octet_cuda::bf16_decode(c)), bits(octet_bf16_decode(c))) << code;
    ASSERT_EQ(bits(octet_cuda::fp16_decode(c)), bits(octet_fp16_decode(c))) << code;
  }
}

}  // namespace
