// Every element-wise operation of the cpu backend against the reference,
// bit for bit, through the users' ABI: fixed, special, random and ragged
// inputs (1x1, 7x13, 67x131, 1481x677).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "abi_helpers.hpp"

namespace cpu_test {
namespace {

class CpuVsReference : public ::testing::Test {
 protected:
  void SetUp() override {
    cpu = context(OCTET_TEST_BACKEND);
    ref = context("reference");
    cpu_hopper = context(OCTET_TEST_BACKEND, OCTET_PROFILE_HOPPER_LIKE);
    ref_hopper = context("reference", OCTET_PROFILE_HOPPER_LIKE);
    ASSERT_TRUE(cpu && ref && cpu_hopper && ref_hopper);
  }
  Context cpu, ref, cpu_hopper, ref_hopper;

  // Per-tensor quantize of `input` (a rows x cols `from` tensor) into each
  // of `formats`, native and Hopper-like (so the fused cast + transpose
  // runs), saturating (scale 37) and not (scale 0.125): the codes of both
  // copies and the amax bit for bit against the reference.
  void expect_quantize_bit_for_bit(Shape s, int32_t from, const std::vector<uint8_t>& input,
                                   const std::vector<int32_t>& formats) {
    for (int32_t to : formats) {
      for (int hopper = 0; hopper < 2; ++hopper) {
        octet_context* c = hopper ? cpu_hopper.get() : cpu.get();
        octet_context* r = hopper ? ref_hopper.get() : ref.get();
        Tensor ci = tensor(c, from, s.rows, s.cols);
        Tensor ri = tensor(r, from, s.rows, s.cols);
        upload(ci.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
        upload(ri.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
        for (int32_t saturate : {0, 1}) {
          const float scale = saturate ? 37.0f : 0.125f;
          Tensor co = tensor(c, to, s.rows, s.cols, 3u);
          Tensor ro = tensor(r, to, s.rows, s.cols, 3u);
          upload(co.get(), OCTET_COMPONENT_SCALE, &scale, 4);
          upload(ro.get(), OCTET_COMPONENT_SCALE, &scale, 4);
          octet_quantize_options o{};
          o.struct_size = sizeof o;
          o.saturate = saturate;
          ASSERT_EQ(octet_quantize(c, ci.get(), co.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
          ASSERT_EQ(octet_quantize(r, ri.get(), ro.get(), &o), OCTET_STATUS_SUCCESS) << octet_last_error_message();
          const std::string what = std::string(octet_dtype_name(from)) + " to " + octet_dtype_name(to) + " " +
                                   shape_name(s) + " hopper " + std::to_string(hopper) + " saturate " +
                                   std::to_string(saturate);
          octet_tensor_info info{};
          info.struct_size = sizeof info;
          ASSERT_EQ(octet_tensor_get_info(co.get(), &info), OCTET_STATUS_SUCCESS);
          EXPECT_EQ(
              first_difference(download(co.get(), OCTET_COMPONENT_DATA), download(ro.get(), OCTET_COMPONENT_DATA), 1),
              -1)
              << what;
          if (info.has_columnwise_data) {
            EXPECT_EQ(first_difference(download(co.get(), OCTET_COMPONENT_COLUMNWISE_DATA),
                                       download(ro.get(), OCTET_COMPONENT_COLUMNWISE_DATA), 1),
                      -1)
                << what;
          }
          EXPECT_EQ(download(co.get(), OCTET_COMPONENT_AMAX), download(ro.get(), OCTET_COMPONENT_AMAX)) << what;
        }
      }
    }
  }
};

// What only the cpu plugin declares (another backend reusing this suite
// defines OCTET_TEST_SKIP_CPU_ONLY).
#ifndef OCTET_TEST_SKIP_CPU_ONLY
TEST(CpuBackend, IsDiscoveredBesideLiboctetAndPickedByAuto) {
  Context c = context("auto");
  ASSERT_TRUE(c);
  octet_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(octet_context_get_info(c.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_STREQ(info.name, "cpu");
  EXPECT_EQ(info.memory_kind, OCTET_MEMORY_HOST);
  EXPECT_EQ(info.native_columnwise, 1);
  EXPECT_EQ(info.fp8_gemm_layouts, static_cast<uint32_t>(OCTET_GEMM_LAYOUT_ALL));
  EXPECT_EQ(info.alignment, 64u);
  EXPECT_TRUE(info.features & OCTET_FEATURE_FUSED_CAST_TRANSPOSE);
}

// The cpu plugin's device string (octet_backend_info.device), or "" when
// no context opens.
static std::string device_string() {
  Context c = context(OCTET_TEST_BACKEND);
  if (!c) return "";
  octet_backend_info info{};
  info.struct_size = sizeof info;
  if (octet_context_get_info(c.get(), &info) != OCTET_STATUS_SUCCESS || info.device == nullptr) return "";
  return info.device;
}

// The path in use follows the CPU and OCTET_CPU_DISABLE_SIMD (the portable
// run of this suite sets it).
TEST(CpuBackend, DeviceNamesTheElementwisePathInUse) {
  const std::string device = device_string();
  ASSERT_FALSE(device.empty());
  const char* env = std::getenv("OCTET_CPU_DISABLE_SIMD");
  const bool disabled = env != nullptr && env[0] != '\0' && std::string(env) != "0";
  __builtin_cpu_init();
  const bool simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  if (disabled || !simd) {
    EXPECT_NE(device.find("portable"), std::string::npos) << device;
  } else {
    EXPECT_NE(device.find("avx2+f16c"), std::string::npos) << device;
  }
}

// OCTET_CPU_FP8_GEMM names the FP8 GEMM engine (gemm/fp8_gemm_engine.hpp, Fp8GemmEngine);
// the device string says which one runs. ctest runs the FP8 GEMM suites
// under each forced engine (tests/cpu_backend/CMakeLists.txt) with this
// test among them, so a forced engine that silently fell back would fail
// here.
TEST(CpuBackend, DeviceNamesTheForcedFp8GemmEngine) {
  const std::string device = device_string();
  ASSERT_FALSE(device.empty());
  const char* forced = std::getenv("OCTET_CPU_FP8_GEMM");
  const char* level = std::getenv("OCTET_CPU_ISA");
  const char* disabled = std::getenv("OCTET_CPU_DISABLE_SIMD");
  __builtin_cpu_init();
  const bool bf16 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512bf16");
  const bool unforced_level = (level == nullptr || std::string(level).rfind("avx512_bf16", 0) == 0) &&
                              (disabled == nullptr || disabled[0] == '\0');
  if (forced == nullptr || !bf16 || !unforced_level) {
    EXPECT_NE(device.find("GEMM"), std::string::npos) << device;
    return;
  }
  const std::string want = forced;
  if (want == "onednn_bf16") {
    EXPECT_NE(device.find("FP8 GEMM oneDNN bf16 matmul"), std::string::npos) << device;
  } else if (want == "bf16") {
    EXPECT_NE(device.find("FP8/FP4 GEMM vdpbf16ps"), std::string::npos) << device;
  } else if (want == "fp32") {
    EXPECT_NE(device.find("FP8/FP4 GEMM sgemm tiles"), std::string::npos) << device;
  } else if (want == "amx") {
    EXPECT_NE(device.find("FP8 GEMM amx tdpbf16ps"), std::string::npos) << device;
  }
}

// Whether /proc/cpuinfo's first "flags" line holds `flag` (the kernel's
// word for a CPU feature the compiler's cpuid table may not name, such as
// amx_tile; the kernel lists AMX only where the OS saves the tile state).
bool cpuinfo_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word)
      if (word == flag) return true;
    return false;
  }
  return false;
}

// The level the device string names ("isa <level>") under OCTET_CPU_ISA:
// the one asked, or the best one below it that this CPU has (a table of
// each level's extensions, checked here with the compiler's cpuid), never
// a higher one than the CPU's best.
TEST(CpuBackend, DeviceNamesTheLevelInUse) {
  const std::string device = device_string();
  ASSERT_FALSE(device.empty());
  const char* disabled = std::getenv("OCTET_CPU_DISABLE_SIMD");
  if (disabled != nullptr && disabled[0] != '\0' && std::string(disabled) != "0") {
    EXPECT_NE(device.find("isa portable"), std::string::npos) << device;
    return;
  }
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const bool vbmi = __builtin_cpu_supports("avx512vbmi"), bf16 = __builtin_cpu_supports("avx512bf16");
  const struct {
    const char* name;
    bool supported;
  } levels[] = {{"portable", true},
                {"avx2", avx2},
                {"avx512", avx512},
                {"avx512_vbmi", avx512 && vbmi},
                {"avx512_bf16", avx512 && bf16},
                {"avx512_bf16_vbmi", avx512 && bf16 && vbmi},
                {"amx", avx512 && bf16 && vbmi && cpuinfo_has("amx_tile") && cpuinfo_has("amx_bf16")}};
  const int top = static_cast<int>(std::size(levels)) - 1;
  const char* asked = std::getenv("OCTET_CPU_ISA");
  int level = top;
  if (asked != nullptr && asked[0] != '\0') {
    for (int i = 0; i <= top; ++i)
      if (std::string(asked) == levels[i].name) level = i;
  }
  while (level > 0 && !levels[level].supported) --level;
  const std::string want = std::string("isa ") + levels[level].name + ";";
  const std::string want_forced = std::string("isa ") + levels[level].name + " forced";
  EXPECT_TRUE(device.find(want) != std::string::npos || device.find(want_forced) != std::string::npos)
      << device << " (OCTET_CPU_ISA=" << (asked ? asked : "") << ")";
}
#endif

// numerics.md section 6: NaN elements are ignored, signalling ones too,
// wherever they sit (the expectation is computed here, not by the reference).
TEST(CpuBackend, AmaxIgnoresSignallingNan) {
  Context c = context(OCTET_TEST_BACKEND);
  ASSERT_TRUE(c);
  for (int64_t n : {int64_t(5), int64_t(100), int64_t(40000)}) {
    std::vector<float> x(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[std::size_t(i)] = float(i % 97) * 0.25f;
    x[std::size_t(n / 2)] = 1000.0f;
    x[std::size_t(n - 2)] = from_bits(0x7F800001u);  // signalling NaN after the maximum
    x[0] = from_bits(0xFF812345u);
    Tensor t = tensor(c.get(), OCTET_DTYPE_FP32, 1, n);
    upload(t.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
    float amax = 0.0f;
    ASSERT_EQ(octet_amax(c.get(), t.get(), &amax), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(amax, 1000.0f) << n;
  }
}

TEST_F(CpuVsReference, ConvertEveryDtypePairBitForBit) {
  uint32_t seed = 1;
  for (Shape s : ragged_shapes()) {
    for (int32_t from : all_dtypes()) {
      const std::vector<uint8_t> input =
          random_elements(from, static_cast<std::size_t>(s.rows * s.cols), seed++);
      Tensor ci = tensor(cpu.get(), from, s.rows, s.cols);
      Tensor ri = tensor(ref.get(), from, s.rows, s.cols);
      upload(ci.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
      upload(ri.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
      for (int32_t to : all_dtypes()) {
        for (int32_t saturate : {0, 1}) {
          Tensor co = tensor(cpu.get(), to, s.rows, s.cols);
          Tensor ro = tensor(ref.get(), to, s.rows, s.cols);
          ASSERT_EQ(octet_convert(cpu.get(), ci.get(), co.get(), saturate), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          ASSERT_EQ(octet_convert(ref.get(), ri.get(), ro.get(), saturate), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          const int64_t diff = first_difference(download(co.get(), OCTET_COMPONENT_DATA),
                                                download(ro.get(), OCTET_COMPONENT_DATA),
                                                octet_dtype_size(to));
          ASSERT_EQ(diff, -1) << octet_dtype_name(from) << " -> " << octet_dtype_name(to)
                              << " saturate " << saturate << " " << shape_name(s);
        }
      }
    }
  }
}

TEST_F(CpuVsReference, AmaxBitForBit) {
  uint32_t seed = 100;
  for (Shape s : ragged_shapes()) {
    for (int32_t dtype : high_precision_dtypes()) {
      for (int variant = 0; variant < 3; ++variant) {
        std::vector<uint8_t> input =
            random_elements(dtype, static_cast<std::size_t>(s.rows * s.cols), seed++);
        const std::size_t size = octet_dtype_size(dtype);
        if (variant == 1) {  // finite only: drop NaN and inf, which dominate otherwise
          for (std::size_t i = 0; i < input.size(); i += size) {
            if (size == 4) {
              uint32_t u;
              std::memcpy(&u, &input[i], 4);
              if ((u & 0x7F800000u) == 0x7F800000u) u &= 0x3FFFFFFFu;
              std::memcpy(&input[i], &u, 4);
            } else {
              input[i + 1] &= 0x3F;
            }
          }
        } else if (variant == 2) {  // all NaN: amax is 0
          for (std::size_t i = 0; i < input.size(); i += size) {
            if (size == 4) {
              const uint32_t nan = 0xFFC00001u;
              std::memcpy(&input[i], &nan, 4);
            } else {
              const uint16_t nan = dtype == OCTET_DTYPE_BF16 ? 0x7FC1 : 0x7E01;
              std::memcpy(&input[i], &nan, 2);
            }
          }
        }
        Tensor ci = tensor(cpu.get(), dtype, s.rows, s.cols);
        Tensor ri = tensor(ref.get(), dtype, s.rows, s.cols);
        upload(ci.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
        upload(ri.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
        float a = -1.0f, b = -2.0f;
        ASSERT_EQ(octet_amax(cpu.get(), ci.get(), &a), OCTET_STATUS_SUCCESS);
        ASSERT_EQ(octet_amax(ref.get(), ri.get(), &b), OCTET_STATUS_SUCCESS);
        EXPECT_EQ(bits(a), bits(b)) << octet_dtype_name(dtype) << " " << shape_name(s)
                                    << " variant " << variant << ": " << a << " vs " << b;
        if (variant == 2) {
          EXPECT_EQ(bits(a), 0u);
        }
      }
    }
  }
}

// Quantize in both profiles: native (one copy serves both usages) and
// Hopper-like, where the fused pass also writes the transposed copy.
TEST_F(CpuVsReference, QuantizeEveryUsageBitForBit) {
  uint32_t seed = 200;
  const float scales[] = {1.0f, 0.37f, 1.0e4f, 0.0009765625f, 3.0e-6f};
  for (Shape s : ragged_shapes()) {
    for (int32_t from : high_precision_dtypes()) {
      std::vector<uint8_t> input =
          random_elements(from, static_cast<std::size_t>(s.rows * s.cols), seed++);
      for (int32_t to : fp8_dtypes()) {
        for (int hopper = 0; hopper < 2; ++hopper) {
          octet_context* c = hopper ? cpu_hopper.get() : cpu.get();
          octet_context* r = hopper ? ref_hopper.get() : ref.get();
          Tensor ci = tensor(c, from, s.rows, s.cols);
          Tensor ri = tensor(r, from, s.rows, s.cols);
          upload(ci.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
          upload(ri.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
          for (uint32_t usages : {1u, 2u, 3u}) {
            for (int32_t saturate : {0, 1}) {
              const float scale = scales[(seed + usages + saturate) % 5];
              Tensor co = tensor(c, to, s.rows, s.cols, usages);
              Tensor ro = tensor(r, to, s.rows, s.cols, usages);
              upload(co.get(), OCTET_COMPONENT_SCALE, &scale, 4);
              upload(ro.get(), OCTET_COMPONENT_SCALE, &scale, 4);
              octet_quantize_options o{};
              o.struct_size = sizeof o;
              o.saturate = saturate;
              ASSERT_EQ(octet_quantize(c, ci.get(), co.get(), &o), OCTET_STATUS_SUCCESS)
                  << octet_last_error_message();
              ASSERT_EQ(octet_quantize(r, ri.get(), ro.get(), &o), OCTET_STATUS_SUCCESS)
                  << octet_last_error_message();
              const std::string what = std::string(octet_dtype_name(from)) + " -> " +
                                       octet_dtype_name(to) + " " + shape_name(s) +
                                       " usages " + std::to_string(usages) + " hopper " +
                                       std::to_string(hopper) + " saturate " +
                                       std::to_string(saturate);
              octet_tensor_info info{};
              info.struct_size = sizeof info;
              ASSERT_EQ(octet_tensor_get_info(co.get(), &info), OCTET_STATUS_SUCCESS);
              if (info.has_rowwise_data) {
                EXPECT_EQ(first_difference(download(co.get(), OCTET_COMPONENT_DATA),
                                           download(ro.get(), OCTET_COMPONENT_DATA), 1),
                          -1)
                    << what;
              }
              if (info.has_columnwise_data) {
                EXPECT_EQ(first_difference(download(co.get(), OCTET_COMPONENT_COLUMNWISE_DATA),
                                           download(ro.get(), OCTET_COMPONENT_COLUMNWISE_DATA), 1),
                          -1)
                    << what;
              }
              if (hopper && usages != 1) {
                EXPECT_TRUE(info.has_columnwise_data) << what;
              }
              for (int32_t comp : {OCTET_COMPONENT_SCALE_INV, OCTET_COMPONENT_AMAX}) {
                EXPECT_EQ(download(co.get(), comp), download(ro.get(), comp)) << what;
              }
            }
          }
        }
      }
    }
  }
}

TEST_F(CpuVsReference, DequantizeBitForBit) {
  uint32_t seed = 300;
  const float scale_invs[] = {1.0f, 0.37f, 1.0e-4f, 3.0e5f, 1.0e30f};
  for (Shape s : ragged_shapes()) {
    for (int32_t from : fp8_dtypes()) {
      const std::vector<uint8_t> codes =
          random_elements(from, static_cast<std::size_t>(s.rows * s.cols), seed++);
      for (int32_t to : high_precision_dtypes()) {
        for (float scale_inv : scale_invs) {
          Tensor ci = tensor(cpu.get(), from, s.rows, s.cols, OCTET_USAGE_ROWWISE);
          Tensor ri = tensor(ref.get(), from, s.rows, s.cols, OCTET_USAGE_ROWWISE);
          for (octet_tensor* t : {ci.get(), ri.get()}) {
            upload(t, OCTET_COMPONENT_DATA, codes.data(), codes.size());
            upload(t, OCTET_COMPONENT_SCALE_INV, &scale_inv, 4);
          }
          Tensor co = tensor(cpu.get(), to, s.rows, s.cols);
          Tensor ro = tensor(ref.get(), to, s.rows, s.cols);
          ASSERT_EQ(octet_dequantize(cpu.get(), ci.get(), co.get()), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          ASSERT_EQ(octet_dequantize(ref.get(), ri.get(), ro.get()), OCTET_STATUS_SUCCESS)
              << octet_last_error_message();
          EXPECT_EQ(first_difference(download(co.get(), OCTET_COMPONENT_DATA),
                                     download(ro.get(), OCTET_COMPONENT_DATA),
                                     octet_dtype_size(to)),
                    -1)
              << octet_dtype_name(from) << " -> " << octet_dtype_name(to) << " " << shape_name(s)
              << " scale_inv " << scale_inv;
        }
      }
    }
  }
}

// Row lengths around the vector widths (8, 16, 32, 64 lanes): the SIMD
// main loops, their masked or scalar tails, and the fused cast + transpose
// on tiles that are not whole, with dense specials (NaN of both signs,
// infinities, values past the FP8 maximum) and both saturation settings.
TEST_F(CpuVsReference, QuantizeTailsAndSpecialsBitForBit) {
  const int64_t widths[] = {1, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 257};
  uint32_t seed = 900;
  for (int64_t cols : widths) {
    const Shape s{5, cols};
    const std::vector<uint8_t> input =
        random_elements(OCTET_DTYPE_FP32, static_cast<std::size_t>(s.rows * s.cols), seed++);
    expect_quantize_bit_for_bit(s, OCTET_DTYPE_FP32, input, fp8_dtypes());
  }
}

// The fused cast + transpose (tiles of 64 rows x 2048 columns) on whole
// tiles (streaming stores where the columnwise copy's rows are 64-byte
// aligned), on partial tiles down and across, across one and two column
// tile boundaries, and with rows that leave the columnwise rows unaligned;
// FP32 and BF16 inputs.
TEST_F(CpuVsReference, CastTransposeTileEdgesBitForBit) {
  const Shape shapes[] = {{128, 300}, {192, 256},  {256, 200},  {100, 272}, {320, 17},
                          {64, 2048}, {128, 2100}, {100, 4111}, {67, 2049}};
  uint32_t seed = 1900;
  for (Shape s : shapes) {
    for (int32_t from : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16}) {
      const std::vector<uint8_t> input = random_elements(from, static_cast<std::size_t>(s.rows * s.cols), seed++);
      expect_quantize_bit_for_bit(s, from, input, {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2});
    }
  }
}

// The quantize encoder (AVX-512 at level avx512 and up; convert's narrow,
// which the exhaustive encoder sweep in table_test.cpp uses, stays AVX2)
// over a stride through all 2^32 FP32 patterns (16.7 million, every
// exponent, both signs, NaN payloads, subnormals), scale 1, both formats
// and overflow modes, bit for bit against the reference.
TEST_F(CpuVsReference, QuantizeEncoderOnAStrideOfEveryFp32Pattern) {
  std::vector<uint8_t> input;
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 257) {
    const uint32_t w = static_cast<uint32_t>(u);
    const uint8_t* b = reinterpret_cast<const uint8_t*>(&w);
    input.insert(input.end(), b, b + 4);
  }
  const int64_t n = static_cast<int64_t>(input.size() / 4);
  Tensor ci = tensor(cpu.get(), OCTET_DTYPE_FP32, 1, n);
  Tensor ri = tensor(ref.get(), OCTET_DTYPE_FP32, 1, n);
  upload(ci.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
  upload(ri.get(), OCTET_COMPONENT_DATA, input.data(), input.size());
  const float scale = 1.0f;
  for (int32_t to : fp8_dtypes()) {
    for (int32_t saturate : {0, 1}) {
      Tensor co = tensor(cpu.get(), to, 1, n, OCTET_USAGE_ROWWISE);
      Tensor ro = tensor(ref.get(), to, 1, n, OCTET_USAGE_ROWWISE);
      upload(co.get(), OCTET_COMPONENT_SCALE, &scale, 4);
      upload(ro.get(), OCTET_COMPONENT_SCALE, &scale, 4);
      octet_quantize_options o{};
      o.struct_size = sizeof o;
      o.saturate = saturate;
      ASSERT_EQ(octet_quantize(cpu.get(), ci.get(), co.get(), &o), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      ASSERT_EQ(octet_quantize(ref.get(), ri.get(), ro.get(), &o), OCTET_STATUS_SUCCESS)
          << octet_last_error_message();
      const int64_t at = first_difference(download(co.get(), OCTET_COMPONENT_DATA),
                                          download(ro.get(), OCTET_COMPONENT_DATA), 1);
      EXPECT_EQ(at, -1) << octet_dtype_name(to) << " saturate " << saturate << ": FP32 bits "
                        << (at < 0 ? 0 : static_cast<uint64_t>(at) * 257);
      EXPECT_EQ(download(co.get(), OCTET_COMPONENT_AMAX), download(ro.get(), OCTET_COMPONENT_AMAX));
    }
  }
}

// numerics.md section 13: with both operands of x * scale NaN, x's NaN wins
// (its sign sets the code), however the compiler orders a scalar product.
// NaN data: every code is x's NaN, and NaN codes dequantize to decode(q)'s
// NaN. A NaN SCALE or SCALE_INV written by the caller is refused by the core
// (docs/abi.md, "Scales written by the caller"), so it never reaches the
// backend. The sizes cover the vector body and the scalar tail (32 codes per
// AVX2 step); the expectations come from the rule, not from a backend (found
// by tests/fuzz/fuzz_backend_vs_reference.cpp).
TEST(CpuBackend, BothOperandsNanKeepTheFirstOperandsNan) {
  Context c = context(OCTET_TEST_BACKEND);
  ASSERT_TRUE(c);
  const float negative_nan = from_bits(0xFFC00005u), positive_nan = from_bits(0x7FC00007u);
  for (int64_t n : {int64_t(4), int64_t(37), int64_t(1000)}) {
    for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
      for (int with_stats = 0; with_stats < 2; ++with_stats) {
        std::vector<float> x(static_cast<std::size_t>(n), negative_nan);
        Tensor in = tensor(c.get(), OCTET_DTYPE_FP32, 1, n);
        upload(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
        Tensor q = tensor(c.get(), dtype, 1, n, OCTET_USAGE_ROWWISE);
        EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &positive_nan, 4),
                  OCTET_STATUS_INVALID_ARGUMENT);
        const float scale = 2.0f;
        upload(q.get(), OCTET_COMPONENT_SCALE, &scale, 4);
        octet_quantize_options o{};
        o.struct_size = sizeof o;
        o.saturate = 1;
        octet_quantize_stats stats{};
        stats.struct_size = sizeof stats;
        ASSERT_EQ(with_stats ? octet_quantize_with_stats(c.get(), in.get(), q.get(), &o, &stats)
                             : octet_quantize(c.get(), in.get(), q.get(), &o),
                  OCTET_STATUS_SUCCESS)
            << octet_last_error_message();
        const std::vector<uint8_t> codes = download(q.get(), OCTET_COMPONENT_DATA);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(codes[std::size_t(i)], 0xFF) << "n " << n << " element " << i << " stats " << with_stats;

        // Dequantize: the codes' negative NaN times a positive scale_inv.
        EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE_INV, &positive_nan, 4),
                  OCTET_STATUS_INVALID_ARGUMENT);
        Tensor out = tensor(c.get(), OCTET_DTYPE_FP32, 1, n);
        ASSERT_EQ(octet_dequantize(c.get(), q.get(), out.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
        std::vector<float> y(static_cast<std::size_t>(n));
        const std::vector<uint8_t> bytes = download(out.get(), OCTET_COMPONENT_DATA);
        std::memcpy(y.data(), bytes.data(), bytes.size());
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(bits(y[std::size_t(i)]) >> 31, 1u) << "dequantize, n " << n << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace cpu_test
