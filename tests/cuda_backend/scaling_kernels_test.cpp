// The cuda plugin's plugin ABI 1.3 scaling kernels (scale_from_amax,
// delayed_scaling_update, amax_record) against the reference's table, bit
// for bit (device_table.hpp): the same state bytes go to both, every output
// float is compared. Specials (NaN, inf, 0, subnormals, FLT_MAX), every
// option (MAX / MOST_RECENT, interval on/off, margins up to 127, power of
// two, both FP8 maxima), histories up to 1 << 20 (the recipe's limit), and
// bad arguments, which must be reported and leave the state untouched.
// Skips, saying why, without a CUDA device.
#include <gtest/gtest.h>

#include <octet/octet_backend.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "device_table.hpp"

namespace {

using cuda_test::DeviceBuffer;
using cuda_test::Table;

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

const std::vector<float>& specials() {
  static const std::vector<float> values = {0.0f,   1.0f,    448.0f,  57344.0f, 0.5f,    3.0f,     1e-3f,
                                            1e-30f, 1e-38f,  1e-40f,  1e-45f,   FLT_MIN, FLT_MAX,  3e38f,
                                            kInf,   kNaN,    123.456f, 2.9e-39f, 7.0f,   65504.0f};
  return values;
}

void expect_same_floats(const std::vector<float>& want, const std::vector<float>& got, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(bits_of(want[i]), bits_of(got[i])) << what << ": float " << i << " reference " << want[i] << " cuda "
                                                 << got[i];
}

TEST(CudaScalingKernels, ScaleFromAmaxBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (float fp8_max : {448.0f, 57344.0f})
    for (float epsilon : {0.0f, 1e-12f, 0.25f, 1000.0f})
      for (int p2 : {0, 1})
        for (float amax : specials()) {
          // [amax, scale, scale_inv]
          std::vector<float> host = {amax, -7.0f, -7.0f};
          DeviceBuffer device(host.data(), host.size() * sizeof(float));
          for (int side = 0; side < 2; ++side) {
            Table& t = side ? cuda : ref;
            float* base = side ? static_cast<float*>(device.get()) : host.data();
            octet_scale_from_amax_args a{};
            a.struct_size = sizeof a;
            a.amax = base;
            a.fp8_max = fp8_max;
            a.epsilon = epsilon;
            a.power_of_two = p2;
            a.scale_out = base + 1;
            a.scale_inv_out = base + 2;
            ASSERT_EQ(t.api().scale_from_amax(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
          }
          expect_same_floats(host, device.download_as<float>(),
                             "amax " + std::to_string(amax) + " eps " + std::to_string(epsilon) + " p2 " +
                                 std::to_string(p2));
        }
}

TEST(CudaScalingKernels, AmaxRecordBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  for (float slot : specials())
    for (float amax : specials()) {
      std::vector<float> host = {amax, slot};
      DeviceBuffer device(host.data(), host.size() * sizeof(float));
      ASSERT_EQ(ref.api().amax_record(ref.context(), &host[0], &host[1]), OCTET_STATUS_SUCCESS) << ref.last_error();
      float* d = static_cast<float*>(device.get());
      ASSERT_EQ(cuda.api().amax_record(cuda.context(), d, d + 1), OCTET_STATUS_SUCCESS) << cuda.last_error();
      expect_same_floats(host, device.download_as<float>(), "slot " + std::to_string(slot) + " amax " +
                                                                std::to_string(amax));
    }
}

TEST(CudaScalingKernels, DelayedUpdateBitForBit) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  Table ref = Table::reference();
  std::mt19937 rng(99);
  std::uniform_int_distribution<size_t> pick(0, specials().size() - 1);
  std::uniform_real_distribution<float> log_value(-120.0f, 120.0f);
  for (uint32_t n : {1u, 2u, 7u, 256u, 1000u, 1u << 20})
    for (int algo : {OCTET_HISTORY_AMAX_MOST_RECENT, OCTET_HISTORY_AMAX_MAX})
      for (int recompute : {0, 1})
        for (int margin : {0, 2, 60, 127})
          for (int p2 : {0, 1})
            for (float fp8_max : {448.0f, 57344.0f})
              for (int trial = 0; trial < (n > 1000 ? 1 : 4); ++trial) {
                std::vector<float> host(2 + n);
                host[0] = trial == 0 ? 1.0f : std::exp2(log_value(rng));
                host[1] = 1.0f / host[0];
                for (uint32_t i = 0; i < n; ++i)
                  host[2 + i] = (trial % 2) ? specials()[pick(rng)] : std::exp2(log_value(rng));
                const uint32_t current = uint32_t(rng() % n);
                DeviceBuffer device(host.data(), host.size() * sizeof(float));
                for (int side = 0; side < 2; ++side) {
                  Table& t = side ? cuda : ref;
                  octet_delayed_scaling_update_args a{};
                  a.struct_size = sizeof a;
                  a.state = side ? static_cast<float*>(device.get()) : host.data();
                  a.history_len = n;
                  a.current = current;
                  a.amax_compute_algo = algo;
                  a.recompute = recompute;
                  a.margin = margin;
                  a.power_of_two = p2;
                  a.fp8_max = fp8_max;
                  ASSERT_EQ(t.api().delayed_scaling_update(t.context(), &a), OCTET_STATUS_SUCCESS) << t.last_error();
                }
                expect_same_floats(host, device.download_as<float>(),
                                   "n " + std::to_string(n) + " algo " + std::to_string(algo) + " recompute " +
                                       std::to_string(recompute) + " margin " + std::to_string(margin) + " p2 " +
                                       std::to_string(p2) + " trial " + std::to_string(trial));
              }
}

TEST(CudaScalingKernels, BadArgumentsReportAndWriteNothing) {
  OCTET_REQUIRE_CUDA_TABLE();
  Table& cuda = Table::cuda();
  const std::vector<float> before = {1.0f, 1.0f, 5.0f, 6.0f};
  DeviceBuffer device(before.data(), before.size() * sizeof(float));
  float* d = static_cast<float*>(device.get());
  octet_delayed_scaling_update_args u{};
  u.struct_size = sizeof u;
  u.state = d;
  u.history_len = 2;
  u.amax_compute_algo = OCTET_HISTORY_AMAX_MAX;
  u.recompute = 1;
  u.fp8_max = 448.0f;
  auto expect_rejected = [&](octet_delayed_scaling_update_args a, const char* word) {
    cuda.clear_errors();
    EXPECT_EQ(cuda.api().delayed_scaling_update(cuda.context(), &a), OCTET_STATUS_INVALID_ARGUMENT) << word;
    EXPECT_NE(cuda.last_error().find(word), std::string::npos) << cuda.last_error();
  };
  octet_delayed_scaling_update_args b = u;
  b.struct_size = 8;
  expect_rejected(b, "args->struct_size");
  b = u;
  b.current = 2;
  expect_rejected(b, "args->current");
  b = u;
  b.amax_compute_algo = 2;  // no such octet_history_amax (the recipe's callback value)
  expect_rejected(b, "args->amax_compute_algo");
  b = u;
  b.margin = 128;
  expect_rejected(b, "args->margin");
  b = u;
  b.fp8_max = kInf;
  expect_rejected(b, "args->fp8_max");
  b = u;
  b.state = nullptr;
  expect_rejected(b, "args->state");
  float* amax = d + 2;
  octet_scale_from_amax_args s{};
  s.struct_size = sizeof s;
  s.amax = amax;
  s.fp8_max = 448.0f;
  s.scale_out = d;
  s.epsilon = -1.0f;
  cuda.clear_errors();
  EXPECT_EQ(cuda.api().scale_from_amax(cuda.context(), &s), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cuda.last_error().find("args->epsilon"), std::string::npos) << cuda.last_error();
  cuda.clear_errors();
  EXPECT_EQ(cuda.api().amax_record(cuda.context(), nullptr, d), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(cuda.last_error().find("amax"), std::string::npos) << cuda.last_error();
  ASSERT_EQ(cuda.synchronize(), OCTET_STATUS_SUCCESS) << cuda.last_error();
  expect_same_floats(before, device.download_as<float>(), "state after rejected calls");
}

}  // namespace
