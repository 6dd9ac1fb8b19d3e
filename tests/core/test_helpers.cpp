#include "test_helpers.hpp"

#include <cstring>
#include <string>

namespace octet_test {

ContextPtr make_context(const char* backend, int32_t profile) {
  octet_context_options options{};
  options.struct_size = sizeof(options);
  options.backend = backend;
  options.capability_profile = profile;
  octet_context* ctx = nullptr;
  EXPECT_EQ(octet_context_create(&options, &ctx), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return ContextPtr(ctx);
}

TensorPtr make_tensor(octet_context* ctx, int32_t dtype, std::vector<int64_t> shape, uint32_t usages,
                      int32_t scaling_mode) {
  return octet::Tensor::create(ctx, dtype, shape, usages, scaling_mode);
}

TensorPtr make_fp32(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& values) {
  TensorPtr t = make_tensor(ctx, OCTET_DTYPE_FP32, {rows, cols});
  EXPECT_EQ(octet_tensor_copy_from_host(t.get(), OCTET_COMPONENT_DATA, values.data(), values.size() * sizeof(float)),
            OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return t;
}

std::vector<float> random_values(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<uint32_t> float_bits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

TensorPtr quantized(octet_context* ctx, int64_t rows, int64_t cols, const std::vector<float>& values, int32_t dtype,
                    float scale, uint32_t usages) {
  TensorPtr src = make_fp32(ctx, rows, cols, values);
  TensorPtr q = make_tensor(ctx, dtype, {rows, cols}, usages);
  EXPECT_EQ(octet_tensor_copy_from_host(q.get(), OCTET_COMPONENT_SCALE, &scale, sizeof(scale)), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet_quantize(ctx, src.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return q;
}

void BackendTest::SetUp() {
  size_t count = 0;
  ASSERT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS);
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_backend_get_info(i, &info), OCTET_STATUS_SUCCESS);
    if (std::string(info.name) != backend()) continue;
    if (!info.available) GTEST_SKIP() << "backend '" << backend() << "' is unavailable: " << info.unavailable_reason;
    return;
  }
  GTEST_SKIP() << "backend '" << backend() << "' is not registered (cpu needs -DOCTET_WITH_ONEDNN=ON, cuda -DOCTET_WITH_CUDA=ON, kokkos -DOCTET_WITH_KOKKOS=ON)";
}

}  // namespace octet_test
