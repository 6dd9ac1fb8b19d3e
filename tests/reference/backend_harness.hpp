// Drives the reference through its plugin table, the way the core does:
// negotiate, initialize with host services that record every reported
// error, create a context. Also small helpers to build test matrices.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "element_oracle.hpp"
#include "octet_reference/reference_backend.h"

namespace octet::test {

struct ReportedError {
  int32_t status;
  std::string message;
};

inline const std::vector<int32_t>& all_dtypes() {
  static const std::vector<int32_t> dtypes = {OCTET_DTYPE_FP32,     OCTET_DTYPE_BF16, OCTET_DTYPE_FP16,
                                              OCTET_DTYPE_E4M3,     OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ,
                                              OCTET_DTYPE_E5M2FNUZ, OCTET_DTYPE_E8M0};
  return dtypes;
}

class ReferenceBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api_),
              OCTET_STATUS_SUCCESS);
    host_.struct_size = sizeof host_;
    host_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host_.report_error = &ReferenceBackendTest::record_error;
    host_.host_data = &errors_;
    caps_.struct_size = sizeof caps_;
    ASSERT_EQ(api_->initialize(&host_, &caps_), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(api_->context_create(nullptr, &context_), OCTET_STATUS_SUCCESS);
    ASSERT_NE(context_, nullptr);
  }

  void TearDown() override {
    api_->context_destroy(context_);
    if (api_->shutdown != nullptr) api_->shutdown();
  }

  // all_dtypes() that the backend under test declares: the suites also run
  // against the cpu plugin, which stores no FNUZ dtype.
  std::vector<int32_t> declared_dtypes() const {
    std::vector<int32_t> out;
    for (int32_t dtype : all_dtypes())
      if ((caps_.dtypes & OCTET_DTYPE_BIT(dtype)) != 0) out.push_back(dtype);
    return out;
  }

  static void record_error(void* host_data, int32_t status, const char* message) {
    static_cast<std::vector<ReportedError>*>(host_data)->push_back({status, message});
  }

  // The call failed with `status` and reported one error whose message
  // contains every one of `fragments`.
  void expect_failure(int32_t returned, int32_t status,
                      std::initializer_list<const char*> fragments) {
    EXPECT_EQ(returned, status);
    ASSERT_EQ(errors_.size(), 1u) << "exactly one reported error expected";
    EXPECT_EQ(errors_[0].status, status);
    for (const char* fragment : fragments) {
      EXPECT_NE(errors_[0].message.find(fragment), std::string::npos)
          << "message \"" << errors_[0].message << "\" should mention \"" << fragment << "\"";
    }
    errors_.clear();
  }

  void expect_success(int32_t returned) {
    EXPECT_EQ(returned, OCTET_STATUS_SUCCESS);
    for (const ReportedError& e : errors_) ADD_FAILURE() << "unexpected error: " << e.message;
    errors_.clear();
  }

  const octet_backend_api* api_ = nullptr;
  octet_host_services host_{};
  octet_backend_caps caps_{};
  octet_backend_context* context_ = nullptr;
  std::vector<ReportedError> errors_;
};

// A row-major matrix of `dtype` with leading dimension ld, its padding
// filled with a sentinel byte so writes outside rows x cols are caught.
struct TestMatrix {
  TestMatrix(int32_t dtype, int64_t rows, int64_t cols, int64_t ld)
      : dtype(dtype), rows(rows), cols(cols), ld(ld),
        bytes(static_cast<std::size_t>(std::max<int64_t>(rows * ld, 1)) * oracle_dtype_size(dtype),
              kPadding) {}

  static constexpr unsigned char kPadding = 0xA5;

  octet_matrix_view view() {
    return octet_matrix_view{bytes.data(), dtype, 0, rows, cols, ld};
  }
  std::size_t index(int64_t r, int64_t c) const {
    return static_cast<std::size_t>(r * ld + c);
  }
  float load(int64_t r, int64_t c) const { return oracle_load(bytes.data(), dtype, index(r, c)); }
  uint32_t bits(int64_t r, int64_t c) const { return raw_bits(bytes.data(), dtype, index(r, c)); }
  void set_bits(int64_t r, int64_t c, uint32_t value) {
    const std::size_t size = oracle_dtype_size(dtype);
    std::memcpy(bytes.data() + index(r, c) * size, &value, size);
  }
  // Padding bytes (columns cols..ld-1) still hold the sentinel.
  bool padding_untouched() const {
    const std::size_t size = oracle_dtype_size(dtype);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = cols; c < ld; ++c) {
        for (std::size_t b = 0; b < size; ++b) {
          if (bytes[index(r, c) * size + b] != kPadding) return false;
        }
      }
    }
    return true;
  }

  int32_t dtype;
  int64_t rows, cols, ld;
  std::vector<unsigned char> bytes;
};

// Fills a matrix with finite values of its dtype in [-range, range]: FP8
// codes drawn at random, high-precision values rounded to the dtype.
inline void fill_finite(TestMatrix& m, std::mt19937& rng, float range = 4.0f) {
  std::uniform_real_distribution<float> uniform(-range, range);
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) {
      if (const Fp8Spec* fp8 = fp8_spec_of(m.dtype)) {
        const Fp8Spec& spec = *fp8;
        uint8_t code;
        do {
          code = static_cast<uint8_t>(rng());
        } while (fp8_kind(code, spec) != Fp8Kind::Finite ||
                 std::fabs(oracle_fp8_decode(code, spec)) > range);
        m.set_bits(r, c, code);
      } else if (m.dtype == OCTET_DTYPE_E8M0) {
        m.set_bits(r, c, 100u + rng() % 50u);
      } else {
        m.set_bits(r, c, oracle_store_bits(m.dtype, uniform(rng), true));
      }
    }
  }
}

// Two elements of `dtype` hold the same value (any two NaNs are the same).
inline bool same_element(int32_t dtype, uint32_t actual, uint32_t expected) {
  const float a = oracle_load(&actual, dtype, 0);
  const float e = oracle_load(&expected, dtype, 0);
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  return actual == expected;
}


}  // namespace octet::test
