// Bad input gets a status and a message, never a crash: thousands of calls
// with arguments drawn at random from valid and invalid values (dtypes,
// shapes, usages, scaling modes, option fields and struct sizes, tensors of
// any kind paired with any other, NaN and inf scalars) on every backend.
// Each call must return a documented status; a failure must leave a message
// naming what is wrong. Under .ci/sanitize the same calls also prove that no
// path reads or writes out of bounds. The draws are seeded: a failure names
// the iteration, which reproduces; OCTET_RANDOM_ARGUMENTS_SEED=N draws others.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

constexpr int kIterations = 4000;

struct Draw {
  std::mt19937_64 rng;
  explicit Draw(uint64_t seed) : rng(seed) {}
  template <typename T>
  T pick(const std::vector<T>& v) {
    return v[size_t(rng() % v.size())];
  }
  bool coin() { return rng() % 2 == 0; }
};

const std::vector<int32_t> kDtypes = {0, 1, 2, 3, 10, 12, 14, -1, 4, 11, 99};
const std::vector<int64_t> kDims = {1, 2, 3, 5, 8, 33, 64, 130, 0, -1, -7, std::numeric_limits<int64_t>::max(),
                                    int64_t(1) << 33};
const std::vector<uint32_t> kUsages = {0, 1, 2, 3, 4, 7, 0x80000000u};
const std::vector<int32_t> kModes = {0, 1, 2, 4, 8, 3, 16, -1};
const std::vector<float> kScalars = {1.0f, 0.5f, -2.0f, 0.0f, 448.0f, 1e30f, std::numeric_limits<float>::infinity(),
                                     std::numeric_limits<float>::quiet_NaN(), 1e-40f};

bool known_status(octet_status s) { return s >= OCTET_STATUS_SUCCESS && s <= OCTET_STATUS_INTERNAL; }

// A failure must not be INTERNAL (that would be a bug in Octet) and must say why.
void expect_reported(octet_status s, const std::string& call, int iteration) {
  ASSERT_TRUE(known_status(s)) << call << " returned " << s << " (iteration " << iteration << ")";
  if (s == OCTET_STATUS_SUCCESS) return;
  EXPECT_NE(s, OCTET_STATUS_INTERNAL) << call << ": " << octet_last_error_message() << " (iteration " << iteration
                                      << ")";
  EXPECT_GT(std::strlen(octet_last_error_message()), 10u)
      << call << " failed with " << octet_status_name(s) << " but no message (iteration " << iteration << ")";
}

// A small tensor drawn at random, valid most of the time (so that the
// operations run far enough to reach their deeper checks) and invalid in
// every field otherwise; null when the draw was refused, as it must be.
TensorPtr random_tensor(octet_context* ctx, Draw& d, int iteration, int64_t rows, int64_t cols) {
  const bool wild = d.rng() % 8 == 0;
  octet_tensor_desc desc{};
  desc.struct_size = wild ? d.pick<size_t>({0, 4, sizeof(desc), sizeof(desc) + 64}) : sizeof(desc);
  desc.dtype = wild ? d.pick(kDtypes) : d.pick<int32_t>({1, 2, 3, 10, 12, 10, 12});
  desc.ndim = 2;
  const bool transposed = d.rng() % 4 == 0;
  desc.shape[0] = transposed ? cols : rows;
  desc.shape[1] = transposed ? rows : cols;
  if (d.rng() % 6 == 0) desc.shape[1] = d.pick<int64_t>({1, 3, 16});  // a mismatch
  const bool fp8 = desc.dtype == OCTET_DTYPE_E4M3 || desc.dtype == OCTET_DTYPE_E5M2;
  desc.usages = wild ? d.pick(kUsages) : (fp8 ? d.pick<uint32_t>({0, 1, 2, 3, 3}) : 0u);
  desc.scaling_mode = wild ? d.pick(kModes) : (desc.usages != 0 ? d.pick<int32_t>({1, 1, 1, 2, 4, 8}) : 0);
  octet_tensor* t = nullptr;
  const octet_status s = octet_tensor_create(ctx, &desc, &t);
  expect_reported(s, "octet_tensor_create", iteration);
  if (s != OCTET_STATUS_SUCCESS) {
    EXPECT_EQ(t, nullptr) << "a failed create wrote its output (iteration " << iteration << ")";
    return nullptr;
  }
  return TensorPtr(t);
}

class RandomArguments : public BackendTest {};

TEST_P(RandomArguments, EveryCallReturnsAStatusWithAMessage) {
  ContextPtr ctx = make_context(backend(), OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx) << octet_last_error_message();
  // OCTET_RANDOM_ARGUMENTS_SEED explores other draws.
  const char* seed_text = std::getenv("OCTET_RANDOM_ARGUMENTS_SEED");
  Draw d(seed_text != nullptr ? std::strtoull(seed_text, nullptr, 10) : 20261122u);
  int created = 0, refused = 0, succeeded = 0, failed = 0;
  for (int it = 0; it < kIterations; ++it) {
    // Tensor descriptions: anything (large shapes included; they must be
    // refused or, if they fit, allocated lazily and freed).
    if (it % 3 == 0) {
      octet_tensor_desc desc{};
      desc.struct_size = sizeof(desc);
      desc.dtype = d.pick(kDtypes);
      desc.ndim = d.pick<int32_t>({1, 2, 3, 0, -1, 9});
      for (int32_t i = 0; i < 8; ++i) desc.shape[i] = d.pick(kDims);
      // A valid description of more than 2^26 elements (that does not
      // overflow) could legitimately allocate gigabytes: make it a refusal.
      // Overflowing ones stay: they must be refused.
      if (desc.ndim >= 1 && desc.ndim <= 8) {
        long double product = 1;
        bool negative = false;
        for (int32_t i = 0; i < desc.ndim; ++i) {
          negative = negative || desc.shape[i] < 0;
          product *= (long double)desc.shape[i];
        }
        if (!negative && product > (long double)(int64_t(1) << 26) && product < 9.0e18L) desc.shape[0] = -1;
      }
      desc.usages = d.pick(kUsages);
      desc.scaling_mode = d.pick(kModes);
      octet_tensor* t = nullptr;
      const octet_status s = octet_tensor_create(ctx.get(), &desc, &t);
      expect_reported(s, "octet_tensor_create", it);
      ++(s == OCTET_STATUS_SUCCESS ? created : refused);
      octet_tensor_destroy(t);
      continue;
    }
    // Operations on small tensors of random kinds, paired at random.
    const int64_t rows = d.pick<int64_t>({1, 5, 32, 33, 64, 130}), cols = d.pick<int64_t>({1, 2, 32, 40, 128});
    TensorPtr a = random_tensor(ctx.get(), d, it, rows, cols);
    TensorPtr b = random_tensor(ctx.get(), d, it, rows, cols);
    TensorPtr c = random_tensor(ctx.get(), d, it, rows, cols);
    if (!a || !b || !c) continue;
    // Scalars of quantized tensors: random values, NaN and inf included.
    const float scale = d.pick(kScalars);
    octet_tensor_copy_from_host(c.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale);
    octet_status s = OCTET_STATUS_SUCCESS;
    std::string call;
    switch (d.rng() % 6) {
      case 0:
        call = "octet_convert";
        s = octet_convert(ctx.get(), a.get(), c.get(), d.pick<int32_t>({0, 1, 2}));
        break;
      case 1: {
        call = "octet_quantize";
        octet_quantize_options o{};
        o.struct_size = d.pick<size_t>({sizeof(o), sizeof(o), 0, 2, sizeof(o) + 32});
        o.usages = d.pick(kUsages);
        o.saturate = d.pick<int32_t>({0, 1, 2, -1});
        s = octet_quantize(ctx.get(), a.get(), c.get(), d.coin() ? &o : nullptr);
        break;
      }
      case 2:
        call = "octet_dequantize";
        s = octet_dequantize(ctx.get(), a.get(), c.get());
        break;
      case 3: {
        call = "octet_amax";
        float amax = 0.0f;
        s = octet_amax(ctx.get(), a.get(), d.coin() ? &amax : nullptr);
        break;
      }
      default: {
        call = "octet_gemm";
        octet_gemm_options o;
        octet_gemm_options_init(&o);
        o.trans_a = d.pick<int32_t>({0, 1, 2});
        o.trans_b = d.pick<int32_t>({0, 1, -1});
        o.alpha = d.pick(kScalars);
        o.beta = d.pick<float>({0.0f, 0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN()});
        o.epilogue = d.pick<int32_t>({0, 0, 1, 7});
        o.fast_accumulation = d.pick<int32_t>({0, 1, 3});
        o.saturate_output = d.pick<int32_t>({0, 1, 5});
        TensorPtr bias = d.coin() ? random_tensor(ctx.get(), d, it, 1, rows) : nullptr;
        o.bias = bias.get();
        s = octet_gemm(ctx.get(), a.get(), b.get(), c.get(), &o);
        break;
      }
    }
    expect_reported(s, call, it);
    ++(s == OCTET_STATUS_SUCCESS ? succeeded : failed);
    if (HasFatalFailure()) return;
  }
  // The draws reach both sides of the checks.
  const std::string counts = "created " + std::to_string(created) + ", refused " + std::to_string(refused) +
                             ", operations succeeded " + std::to_string(succeeded) + ", failed " +
                             std::to_string(failed);
  EXPECT_GT(created, 10) << counts;
  EXPECT_GT(refused, 500) << counts;
  EXPECT_GT(succeeded, 100) << counts;
  EXPECT_GT(failed, 100) << counts;
}

OCTET_INSTANTIATE_FOR_BACKENDS(RandomArguments);

}  // namespace
}  // namespace octet_test
