// The cuda backend through the users' ABI.
//
// Whether a device exists is asked here, independently of the backend, with
// cudaGetDeviceCount. Without one, the NoDevice tests check the unavailable
// path (the backend is listed, unavailable, with a reason naming CUDA; a
// context on it is refused with OCTET_STATUS_UNAVAILABLE; the other backends
// work) and the Device tests skip. With one, the Device tests compare the
// backend with the embedded reference: element-wise results bit for bit,
// GEMMs against a double-precision expectation within numerics.md's bound,
// and the hopper-like profile bit-identical to the native one.
#include <octet/octet.hpp>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

struct DeviceProbe {
  bool present = false;
  int major = 0;
  std::string why;  // when not present
};

const DeviceProbe& probe() {
  static const DeviceProbe result = [] {
    DeviceProbe p;
    int count = 0;
    const cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      p.why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(error);
    } else if (count == 0) {
      p.why = "cudaGetDeviceCount found 0 devices";
    } else {
      cudaDeviceProp properties{};
      if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess) p.major = properties.major;
      p.present = true;
    }
    return p;
  }();
  return result;
}

bool find_cuda(octet_backend_info* info) {
  size_t count = 0;
  if (octet_backend_count(&count) != OCTET_STATUS_SUCCESS) return false;
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info candidate{};
    candidate.struct_size = sizeof candidate;
    if (octet_backend_get_info(i, &candidate) == OCTET_STATUS_SUCCESS && std::string(candidate.name) == "cuda") {
      *info = candidate;
      return true;
    }
  }
  return false;
}

struct ContextDeleter {
  void operator()(octet_context* c) const { octet_context_destroy(c); }
};
using ContextPtr = std::unique_ptr<octet_context, ContextDeleter>;
using TensorPtr = octet::Tensor;

octet_status create_context(const char* backend, int32_t profile, ContextPtr* out) {
  octet_context_options options{};
  options.struct_size = sizeof options;
  options.backend = backend;
  options.capability_profile = profile;
  octet_context* context = nullptr;
  const octet_status status = octet_context_create(&options, &context);
  out->reset(context);
  return status;
}

// ---------------------------------------------------------------------------
// No device
// ---------------------------------------------------------------------------

TEST(CudaBackendNoDevice, ListedAsUnavailableWithTheReason) {
  if (probe().present) GTEST_SKIP() << "a CUDA device is present: the device tests run instead";
  octet_backend_info info{};
  ASSERT_TRUE(find_cuda(&info)) << "the cuda backend was built but is not listed";
  EXPECT_EQ(info.available, 0);
  const std::string reason = info.unavailable_reason;
  EXPECT_NE(reason.find("no CUDA device"), std::string::npos) << reason;
  EXPECT_NE(reason.find("cudaGetDeviceCount"), std::string::npos) << reason;
  EXPECT_NE(reason.find("cudaError"), std::string::npos) << "the reason names the CUDA error: " << reason;
  EXPECT_EQ(info.memory_kind, OCTET_MEMORY_DEVICE);
  // It loaded: it is not among the failures.
  size_t failures = 0;
  ASSERT_EQ(octet_backend_failure_count(&failures), OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < failures; ++i) {
    octet_backend_failure failure{};
    failure.struct_size = sizeof failure;
    ASSERT_EQ(octet_backend_get_failure(i, &failure), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(std::string(failure.path).find("liboctet_backend_cuda"), std::string::npos) << failure.reason;
  }
}

TEST(CudaBackendNoDevice, ContextIsRefusedAsUnavailable) {
  if (probe().present) GTEST_SKIP() << "a CUDA device is present: the device tests run instead";
  ContextPtr context;
  EXPECT_EQ(create_context("cuda", OCTET_PROFILE_NATIVE, &context), OCTET_STATUS_UNAVAILABLE);
  EXPECT_EQ(context, nullptr);
  const std::string message = octet_last_error_message();
  EXPECT_NE(message.find("no CUDA device"), std::string::npos) << message;
}

TEST(CudaBackendNoDevice, OtherBackendsAreUnaffected) {
  if (probe().present) GTEST_SKIP() << "a CUDA device is present: the device tests run instead";
  ContextPtr reference;
  ASSERT_EQ(create_context("reference", OCTET_PROFILE_NATIVE, &reference), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  ContextPtr automatic;
  ASSERT_EQ(create_context(nullptr, OCTET_PROFILE_NATIVE, &automatic), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  octet_backend_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(octet_context_get_info(automatic.get(), &info), OCTET_STATUS_SUCCESS);
  EXPECT_NE(std::string(info.name), "cuda") << "auto must not pick an unavailable backend";
  // A small computation on the reference still works with the plugin loaded.
  TensorPtr t = octet::Tensor::create(reference.get(), OCTET_DTYPE_FP32, {3});
  const float values[3] = {1.0f, -5.0f, 2.0f};
  ASSERT_EQ(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, values, sizeof values), OCTET_STATUS_SUCCESS);
  float amax = 0.0f;
  ASSERT_EQ(octet_amax(reference.get(), t.get(), &amax), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(amax, 5.0f);
}

// ---------------------------------------------------------------------------
// Device
// ---------------------------------------------------------------------------

class CudaBackendDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!probe().present) GTEST_SKIP() << "no CUDA device (" << probe().why << "): device tests skipped";
    octet_backend_info info{};
    ASSERT_TRUE(find_cuda(&info));
    if (probe().major < 9) {
      EXPECT_EQ(info.available, 0) << "SM < 9.0 has no FP8: the backend must say unavailable";
      GTEST_SKIP() << "device below SM 9.0: " << info.unavailable_reason;
    }
    ASSERT_EQ(info.available, 1) << info.unavailable_reason;
    ASSERT_EQ(create_context("cuda", OCTET_PROFILE_NATIVE, &cuda_), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    ASSERT_EQ(create_context("cuda", OCTET_PROFILE_HOPPER_LIKE, &cuda_hopper_), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    ASSERT_EQ(create_context("reference", OCTET_PROFILE_NATIVE, &reference_), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(create_context("reference", OCTET_PROFILE_HOPPER_LIKE, &reference_hopper_), OCTET_STATUS_SUCCESS);
  }

  // A failure to create the tensor fails the test (octet::Error).
  static TensorPtr make(octet_context* context, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0) {
    return octet::Tensor::create(context, dtype, {rows, cols}, usages);
  }
  static void upload(octet_tensor* t, int32_t component, const std::vector<uint8_t>& bytes) {
    ASSERT_EQ(octet_tensor_copy_from_host(t, component, bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
  }
  static std::vector<uint8_t> download(const octet_tensor* t, int32_t component, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), bytes), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    return out;
  }
  static octet_tensor_info info_of(const octet_tensor* t) {
    octet_tensor_info info{};
    info.struct_size = sizeof info;
    EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS);
    return info;
  }

  ContextPtr cuda_, cuda_hopper_, reference_, reference_hopper_;
};

const int32_t kAllDtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16,
                              OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E8M0};
const int32_t kHighDtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};

uint32_t bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
float from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// FP32 values that exercise the rounding rules: ties, boundaries, NaN
// payloads (quiet and signalling), infinities, zeros, subnormals.
std::vector<float> special_floats() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 448.0f, 464.0f, 464.001f, 480.0f, -464.0f, 57344.0f, 61440.0f,
                          61439.0f, 65504.0f, 65520.0f, 1e30f, -1e30f, 7.5f * std::ldexp(1.0f, -9),
                          std::ldexp(1.0f, -9), std::ldexp(1.0f, -10), std::ldexp(1.0f, -16), std::ldexp(1.0f, -17),
                          std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(1.0f, -127), std::ldexp(1.0f, -149),
                          3.0f * std::ldexp(1.0f, -150), std::ldexp(1.0f, 127), 3.4e38f};
  for (uint32_t b : {0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x7FA00000u, 0xFF812345u,
                     0x3F808000u, 0x3F818000u, 0x00000001u, 0x807FFFFFu, 0x7F7FFFFFu})
    v.push_back(from_bits(b));
  return v;
}

// Raw bytes of rows x cols elements of `dtype`: special values first, then
// random bit patterns (every code for 1-byte formats) and random magnitudes.
std::vector<uint8_t> random_bytes(int32_t dtype, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  const size_t size = octet_dtype_size(dtype);
  std::vector<uint8_t> out(count * size);
  if (dtype == OCTET_DTYPE_FP32) {
    const std::vector<float> specials = special_floats();
    std::uniform_real_distribution<float> uniform(-600.0f, 600.0f);
    for (size_t i = 0; i < count; ++i) {
      float v;
      if (i < specials.size()) v = specials[i];
      else if (i % 3 == 0) v = from_bits(rng());
      else v = uniform(rng) * std::ldexp(1.0f, int(rng() % 40) - 20);
      std::memcpy(out.data() + i * 4, &v, 4);
    }
  } else {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(size == 1 && i < 256 ? i : rng());
  }
  return out;
}

TEST_F(CudaBackendDevice, CapabilitiesFollowTheArchitecture) {
  octet_backend_info info{};
  ASSERT_TRUE(find_cuda(&info));
  EXPECT_EQ(info.memory_kind, OCTET_MEMORY_DEVICE);
  EXPECT_NE(std::string(info.device).find("(SM "), std::string::npos) << info.device;
  // Every FP8 layout on SM 10.x/11.x; TN only on SM 9.x and 12.x (cuBLASLt's
  // FP8 rule for Hopper and Blackwell GeForce), as arch.hpp says.
  const bool all_layouts = probe().major == 10 || probe().major == 11;
  EXPECT_EQ(info.native_columnwise, all_layouts ? 1 : 0);
  EXPECT_EQ(info.fp8_gemm_layouts, all_layouts ? uint32_t(OCTET_GEMM_LAYOUT_ALL) : uint32_t(OCTET_GEMM_LAYOUT_TN));
  for (int32_t dtype : kAllDtypes) EXPECT_NE(info.dtypes & OCTET_DTYPE_BIT(dtype), 0u) << dtype;
  EXPECT_NE(info.features & OCTET_FEATURE_FUSED_CAST_TRANSPOSE, 0u);
  EXPECT_NE(info.features & OCTET_FEATURE_GEMM_FP8, 0u);
}

TEST_F(CudaBackendDevice, ConvertIsBitExactForEveryDtypePair) {
  const int64_t shapes[][2] = {{1, 1}, {16, 32}, {37, 53}, {129, 7}};
  uint32_t seed = 1;
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0], cols = shape[1];
    for (int32_t from : kAllDtypes) {
      const std::vector<uint8_t> input = random_bytes(from, size_t(rows * cols), seed++);
      for (int32_t to : kAllDtypes) {
        for (int32_t saturate : {0, 1}) {
          SCOPED_TRACE(testing::Message() << octet_dtype_name(from) << " -> " << octet_dtype_name(to) << " saturate "
                                          << saturate << " shape " << rows << "x" << cols);
          std::vector<uint8_t> results[2];
          octet_status statuses[2];
          octet_context* contexts[2] = {cuda_.get(), reference_.get()};
          for (int side = 0; side < 2; ++side) {
            TensorPtr in = make(contexts[side], from, rows, cols);
            TensorPtr out = make(contexts[side], to, rows, cols);
            upload(in.get(), OCTET_COMPONENT_DATA, input);
            statuses[side] = octet_convert(contexts[side], in.get(), out.get(), saturate);
            if (statuses[side] == OCTET_STATUS_SUCCESS)
              results[side] = download(out.get(), OCTET_COMPONENT_DATA, size_t(rows * cols) * octet_dtype_size(to));
          }
          ASSERT_EQ(statuses[0], statuses[1]) << octet_last_error_message();
          ASSERT_EQ(results[0], results[1]);
        }
      }
    }
  }
}

TEST_F(CudaBackendDevice, AmaxIgnoresNanAndCountsInfinity) {
  uint32_t seed = 100;
  for (int32_t dtype : kHighDtypes) {
    for (int64_t rows : {1, 33, 300}) {
      const int64_t cols = 77;
      std::vector<uint8_t> input = random_bytes(dtype, size_t(rows * cols), seed++);
      float amax[2] = {-1.0f, -1.0f};
      octet_context* contexts[2] = {cuda_.get(), reference_.get()};
      for (int side = 0; side < 2; ++side) {
        TensorPtr in = make(contexts[side], dtype, rows, cols);
        upload(in.get(), OCTET_COMPONENT_DATA, input);
        ASSERT_EQ(octet_amax(contexts[side], in.get(), &amax[side]), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      }
      EXPECT_EQ(bits(amax[0]), bits(amax[1])) << octet_dtype_name(dtype) << " " << rows << "x" << cols;
    }
  }
  // All NaN gives 0 (FP32 quiet NaNs), computed independently.
  TensorPtr nan = make(cuda_.get(), OCTET_DTYPE_FP32, 5, 5);
  std::vector<uint8_t> nan_bytes(25 * 4);
  for (size_t i = 0; i < 25; ++i) std::memcpy(&nan_bytes[i * 4], "\x00\x00\xC0\x7F", 4);
  upload(nan.get(), OCTET_COMPONENT_DATA, nan_bytes);
  float amax = -1.0f;
  ASSERT_EQ(octet_amax(cuda_.get(), nan.get(), &amax), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(bits(amax), 0u);
}

TEST_F(CudaBackendDevice, FusedQuantizeAndDequantizeAreBitExact) {
  struct Pair {
    octet_context* cuda;
    octet_context* reference;
  } pairs[] = {{cuda_.get(), reference_.get()}, {cuda_hopper_.get(), reference_hopper_.get()}};
  uint32_t seed = 200;
  for (const Pair& pair : pairs) {
    for (int32_t in_dtype : kHighDtypes) {
      for (int32_t fp8 : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
        for (int32_t saturate : {0, 1}) {
          for (float scale : {1.0f, 3.7f, 1000.0f}) {
            const int64_t rows = 45, cols = 67;
            SCOPED_TRACE(testing::Message() << octet_dtype_name(in_dtype) << " -> " << octet_dtype_name(fp8)
                                            << " saturate " << saturate << " scale " << scale);
            const std::vector<uint8_t> input = random_bytes(in_dtype, size_t(rows * cols), seed++);
            std::vector<uint8_t> scale_bytes(4);
            std::memcpy(scale_bytes.data(), &scale, 4);
            std::vector<std::vector<uint8_t>> results[2];
            octet_context* contexts[2] = {pair.cuda, pair.reference};
            for (int side = 0; side < 2; ++side) {
              TensorPtr in = make(contexts[side], in_dtype, rows, cols);
              TensorPtr q = make(contexts[side], fp8, rows, cols, OCTET_USAGE_BOTH);
              TensorPtr back = make(contexts[side], OCTET_DTYPE_FP32, rows, cols);
              upload(in.get(), OCTET_COMPONENT_DATA, input);
              upload(q.get(), OCTET_COMPONENT_SCALE, scale_bytes);
              octet_quantize_options options{};
              options.struct_size = sizeof options;
              options.saturate = saturate;
              ASSERT_EQ(octet_quantize(contexts[side], in.get(), q.get(), &options), OCTET_STATUS_SUCCESS)
                  << octet_last_error_message();
              const octet_tensor_info info = info_of(q.get());
              if (info.has_rowwise_data)
                results[side].push_back(download(q.get(), OCTET_COMPONENT_DATA, info.rowwise_bytes));
              if (info.has_columnwise_data)
                results[side].push_back(download(q.get(), OCTET_COMPONENT_COLUMNWISE_DATA, info.columnwise_bytes));
              results[side].push_back(download(q.get(), OCTET_COMPONENT_SCALE_INV, 4));
              results[side].push_back(download(q.get(), OCTET_COMPONENT_AMAX, 4));
              if (info.has_rowwise_data) {
                ASSERT_EQ(octet_dequantize(contexts[side], q.get(), back.get()), OCTET_STATUS_SUCCESS)
                    << octet_last_error_message();
                results[side].push_back(download(back.get(), OCTET_COMPONENT_DATA, size_t(rows * cols) * 4));
              }
            }
            ASSERT_EQ(results[0].size(), results[1].size());
            for (size_t i = 0; i < results[0].size(); ++i) EXPECT_EQ(results[0][i], results[1][i]) << "component " << i;
          }
        }
      }
    }
  }
}

// Host values of an operand as stored (rows x cols), widened exactly.
std::vector<double> widen(int32_t dtype, const std::vector<uint8_t>& bytes) {
  const size_t size = octet_dtype_size(dtype);
  std::vector<double> out(bytes.size() / size);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = bytes.data() + i * size;
    uint16_t half;
    float f;
    switch (dtype) {
      case OCTET_DTYPE_FP32: std::memcpy(&f, p, 4); out[i] = f; break;
      case OCTET_DTYPE_BF16: std::memcpy(&half, p, 2); out[i] = octet_bf16_decode(half); break;
      case OCTET_DTYPE_FP16: std::memcpy(&half, p, 2); out[i] = octet_fp16_decode(half); break;
      default: out[i] = octet_fp8_decode(*p, dtype); break;
    }
  }
  return out;
}

// Finite operand bytes: values in [-2, 2] for high precision, every finite
// code of a small range for FP8.
std::vector<uint8_t> operand_bytes(int32_t dtype, size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<uint8_t> out(count * octet_dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) {
    const float v = uniform(rng);
    switch (dtype) {
      case OCTET_DTYPE_FP32: std::memcpy(&out[i * 4], &v, 4); break;
      case OCTET_DTYPE_BF16: { const uint16_t c = octet_bf16_encode(v); std::memcpy(&out[i * 2], &c, 2); break; }
      case OCTET_DTYPE_FP16: { const uint16_t c = octet_fp16_encode(v); std::memcpy(&out[i * 2], &c, 2); break; }
      default: out[i] = octet_fp8_encode(v * 16.0f, dtype, 1); break;
    }
  }
  return out;
}

double relative_unit(int32_t dtype) {
  return dtype == OCTET_DTYPE_FP32 ? std::ldexp(1.0, -23) : dtype == OCTET_DTYPE_BF16 ? std::ldexp(1.0, -7)
                                                                                       : std::ldexp(1.0, -10);
}

struct GemmCase {
  int32_t a_dtype, b_dtype, d_dtype;
  int64_t m, n, k;
  int32_t trans_a, trans_b;
  float alpha, beta;
  bool bias, gelu;
  float a_scale, b_scale;  // FP8: SCALE of quantized operands (their SCALE_INV is 1/scale)
};

TEST_F(CudaBackendDevice, GemmsAreWithinTheBoundAndProfilesAgree) {
  const bool hopper = probe().major == 9;
  std::vector<GemmCase> cases;
  const int64_t shapes[][3] = {{64, 48, 96}, {128, 256, 512}, {37, 29, 53}, {1, 16, 32}};
  for (const auto& s : shapes) {
    for (int ta : {0, 1})
      for (int tb : {0, 1}) {
        cases.push_back({OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, s[0], s[1], s[2], ta, tb, 1.0f, 0.0f,
                         false, false, 2.0f, 0.5f});
        cases.push_back({OCTET_DTYPE_BF16, OCTET_DTYPE_BF16, OCTET_DTYPE_BF16, s[0], s[1], s[2], ta, tb, 0.75f, 0.5f,
                         true, false, 1.0f, 1.0f});
      }
    cases.push_back({OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_BF16, s[0], s[1], s[2], 0, 0, 0.5f, 0.25f, true,
                     false, 4.0f, 1.0f});
    cases.push_back({OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP16, s[0], s[1], s[2], 0, 0, 1.0f, 0.0f, true,
                     true, 1.0f, 8.0f});
    cases.push_back({OCTET_DTYPE_E5M2, OCTET_DTYPE_E5M2, OCTET_DTYPE_FP32, s[0], s[1], s[2], 0, 0, 1.0f, 0.0f, false,
                     false, 1.0f, 1.0f});
    cases.push_back({OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, OCTET_DTYPE_FP32, s[0], s[1], s[2], 0, 1, 1.0f, 1.0f, true,
                     true, 1.0f, 1.0f});
    cases.push_back({OCTET_DTYPE_FP16, OCTET_DTYPE_FP16, OCTET_DTYPE_FP16, s[0], s[1], s[2], 1, 0, 1.0f, 0.0f, false,
                     false, 1.0f, 1.0f});
    cases.push_back({OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP32, s[0], s[1], s[2], 0, 0, 1.0f, 0.0f, false,
                     false, 1.0f, 1.0f});
  }
  uint32_t seed = 300;
  for (const GemmCase& c : cases) {
    SCOPED_TRACE(testing::Message() << octet_dtype_name(c.a_dtype) << " x " << octet_dtype_name(c.b_dtype) << " -> "
                                    << octet_dtype_name(c.d_dtype) << " " << c.m << "x" << c.n << "x" << c.k
                                    << " trans " << c.trans_a << c.trans_b << " alpha " << c.alpha << " beta "
                                    << c.beta << " bias " << c.bias << " gelu " << c.gelu);
    const bool fp8 = c.a_dtype == OCTET_DTYPE_E4M3 || c.a_dtype == OCTET_DTYPE_E5M2;
    const int64_t a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
    const int64_t b_rows = c.trans_b ? c.k : c.n, b_cols = c.trans_b ? c.n : c.k;
    const std::vector<uint8_t> a_bytes = operand_bytes(c.a_dtype, size_t(a_rows * a_cols), seed++);
    const std::vector<uint8_t> b_bytes = operand_bytes(c.b_dtype, size_t(b_rows * b_cols), seed++);
    const std::vector<uint8_t> d_old = operand_bytes(c.d_dtype, size_t(c.m * c.n), seed++);
    const std::vector<uint8_t> bias_bytes = operand_bytes(OCTET_DTYPE_FP32, size_t(c.n), seed++);
    const float sa = fp8 ? 1.0f / c.a_scale : 1.0f, sb = fp8 ? 1.0f / c.b_scale : 1.0f;

    // D on one context; FP8 operands are quantized tensors with both usages
    // whose codes are uploaded as they are, with SCALE_INV = 1/scale.
    auto run = [&](octet_context* context, std::vector<uint8_t>* d_out) -> octet_status {
      const uint32_t usages = fp8 ? uint32_t(OCTET_USAGE_BOTH) : 0u;
      TensorPtr a = make(context, c.a_dtype, a_rows, a_cols, usages);
      TensorPtr b = make(context, c.b_dtype, b_rows, b_cols, usages);
      TensorPtr d = make(context, c.d_dtype, c.m, c.n);
      TensorPtr bias = make(context, OCTET_DTYPE_FP32, 1, c.n);
      upload(d.get(), OCTET_COMPONENT_DATA, d_old);
      upload(bias.get(), OCTET_COMPONENT_DATA, bias_bytes);
      auto fill = [&](octet_tensor* t, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols, float s_inv) {
        const octet_tensor_info info = info_of(t);
        if (!fp8 || info.has_rowwise_data) upload(t, OCTET_COMPONENT_DATA, bytes);
        if (fp8 && info.has_columnwise_data) {
          std::vector<uint8_t> transposed(bytes.size());
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t col = 0; col < cols; ++col) transposed[size_t(col * rows + r)] = bytes[size_t(r * cols + col)];
          upload(t, OCTET_COMPONENT_COLUMNWISE_DATA, transposed);
        }
        if (fp8) {
          std::vector<uint8_t> s(4);
          std::memcpy(s.data(), &s_inv, 4);
          upload(t, OCTET_COMPONENT_SCALE_INV, s);
        }
      };
      fill(a.get(), a_bytes, a_rows, a_cols, sa);
      fill(b.get(), b_bytes, b_rows, b_cols, sb);
      octet_gemm_options options{};
      options.struct_size = sizeof options;
      options.trans_a = c.trans_a;
      options.trans_b = c.trans_b;
      options.alpha = c.alpha;
      options.beta = c.beta;
      options.bias = c.bias ? bias.get() : nullptr;
      options.epilogue = c.gelu ? OCTET_EPILOGUE_GELU : OCTET_EPILOGUE_NONE;
      const octet_status status = octet_gemm(context, a.get(), b.get(), d.get(), &options);
      if (status == OCTET_STATUS_SUCCESS)
        *d_out = download(d.get(), OCTET_COMPONENT_DATA, size_t(c.m * c.n) * octet_dtype_size(c.d_dtype));
      return status;
    };

    std::vector<uint8_t> native, hopper_like;
    ASSERT_EQ(run(cuda_.get(), &native), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    ASSERT_EQ(run(cuda_hopper_.get(), &hopper_like), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    if (hopper) EXPECT_EQ(native, hopper_like) << "the hopper-like profile must give the native bits";
    else EXPECT_EQ(native, hopper_like) << "native columnwise and transposed copies must give the same bits";

    // Independent expectation in double, and the bound of numerics.md 8.
    const std::vector<double> a = widen(c.a_dtype, a_bytes), b = widen(c.b_dtype, b_bytes);
    const std::vector<double> dd = widen(c.d_dtype, d_old), bias = widen(OCTET_DTYPE_FP32, bias_bytes);
    const std::vector<double> got = widen(c.d_dtype, native);
    const double factor = double(c.alpha) * double(sa) * double(sb);
    double worst = 0.0;
    for (int64_t m = 0; m < c.m; ++m) {
      for (int64_t n = 0; n < c.n; ++n) {
        double sum = 0.0, magnitude = 0.0;
        for (int64_t k = 0; k < c.k; ++k) {
          const double p = a[size_t(c.trans_a ? k * a_cols + m : m * a_cols + k)] *
                           b[size_t(c.trans_b ? k * b_cols + n : n * b_cols + k)];
          sum += p;
          magnitude += std::fabs(p);
        }
        double v = factor * sum;
        double bound = double(c.k) * std::ldexp(1.0, -23) * magnitude * std::fabs(factor) +
                       std::ldexp(1.0, -22) * std::fabs(v);
        if (c.beta != 0.0f) {
          v += double(c.beta) * dd[size_t(m * c.n + n)];
          bound += std::ldexp(1.0, -22) * std::fabs(double(c.beta) * dd[size_t(m * c.n + n)]);
        }
        if (c.bias) {
          v += bias[size_t(n)];
          bound += std::ldexp(1.0, -22) * std::fabs(bias[size_t(n)]);
        }
        if (c.gelu) {
          v = 0.5 * v * (1.0 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
          bound = bound * 1.2 + 1e-6 * std::fabs(v) + 1e-7;  // GELU's slope is below 1.13; tanhf's own error
        }
        const double x = got[size_t(m * c.n + n)];
        bound += relative_unit(c.d_dtype) * std::fmax(std::fabs(v), std::fabs(x)) + 1e-30 +
                 (c.d_dtype == OCTET_DTYPE_FP16 ? std::ldexp(1.0, -24) : 0.0);
        const double error = std::fabs(x - v);
        ASSERT_LE(error, bound) << "D[" << m << "," << n << "] = " << x << ", expected " << v;
        worst = std::fmax(worst, error / bound);
      }
    }
    RecordProperty("worst_ratio", std::to_string(worst));
  }
}

}  // namespace
