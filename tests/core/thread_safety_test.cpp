// The thread-safety rules of octet.h: global functions (versions, codecs,
// backend enumeration) from any thread at any time; a context and what was
// created on it used by one thread at a time, different contexts
// independent; a recipe shared by any number of threads; error messages per
// thread. Each workload is run alone first, then on several threads at
// once, and must give the same bits. .ci/sanitize also runs this file under
// AddressSanitizer and, on the reference, ThreadSanitizer (docs/abi.md).
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test_helpers.hpp"

namespace octet_test {
namespace {

constexpr int kThreads = 4;

// A reusable barrier (std::barrier is C++20).
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++waiting_ == count_) {
      waiting_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  const int count_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
};

struct RecipeDeleter {
  void operator()(octet_recipe* r) const { octet_recipe_destroy(r); }
};
using RecipePtr = std::unique_ptr<octet_recipe, RecipeDeleter>;

RecipePtr make_delayed() {
  octet_delayed_scaling_options o;
  EXPECT_EQ(octet_delayed_scaling_options_init(&o), OCTET_STATUS_SUCCESS);
  o.amax_history_len = 4;
  octet_recipe* r = nullptr;
  EXPECT_EQ(octet_recipe_create_delayed(&o, &r), OCTET_STATUS_SUCCESS);
  return RecipePtr(r);
}

void append_bits(std::vector<uint32_t>& out, const octet_tensor* t, size_t n) {
  for (uint32_t b : float_bits(read<float>(t, OCTET_COMPONENT_DATA, n))) out.push_back(b);
}

// On its own context: a quantize and an FP8 GEMM, then two training steps of
// a Linear under `recipe` inside autocast scopes. Every output's bits, in
// order. Failures are recorded with ADD_FAILURE (thread-safe in GoogleTest).
std::vector<uint32_t> workload(const char* backend, const octet_recipe* recipe, uint32_t seed) {
  std::vector<uint32_t> bits;
  ContextPtr ctx = make_context(backend, OCTET_PROFILE_NATIVE);
  if (!ctx) {
    ADD_FAILURE() << "no context on " << backend << ": " << octet_last_error_message();
    return bits;
  }
  const int64_t rows = 64, cols = 96, out_features = 48;
  const std::vector<float> xv = random_values(size_t(rows * cols), 2.0f, seed);
  const std::vector<float> wv = random_values(size_t(out_features * cols), 0.5f, seed + 1);
  TensorPtr a = quantized(ctx.get(), rows, cols, xv, OCTET_DTYPE_E4M3, 16.0f, OCTET_USAGE_ROWWISE);
  TensorPtr b = quantized(ctx.get(), out_features, cols, wv, OCTET_DTYPE_E4M3, 64.0f, OCTET_USAGE_ROWWISE);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, out_features});
  EXPECT_EQ(octet_gemm(ctx.get(), a.get(), b.get(), d.get(), nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  append_bits(bits, d.get(), size_t(rows * out_features));

  octet_linear_options lo;
  EXPECT_EQ(octet_linear_options_init(&lo), OCTET_STATUS_SUCCESS);
  lo.in_features = cols;
  lo.out_features = out_features;
  octet_layer* layer = nullptr;
  EXPECT_EQ(octet_layer_create_linear(ctx.get(), &lo, &layer), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  if (layer == nullptr) return bits;
  octet_tensor* weight = nullptr;
  EXPECT_EQ(octet_layer_get_parameter(layer, 0, &weight), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(octet_tensor_copy_from_host(weight, OCTET_COMPONENT_DATA, wv.data(), wv.size() * sizeof(float)),
            OCTET_STATUS_SUCCESS);
  octet_tensor* bias = nullptr;
  EXPECT_EQ(octet_layer_get_parameter(layer, 1, &bias), OCTET_STATUS_SUCCESS);
  const std::vector<float> bv(size_t(out_features), 0.125f);
  EXPECT_EQ(octet_tensor_copy_from_host(bias, OCTET_COMPONENT_DATA, bv.data(), bv.size() * sizeof(float)),
            OCTET_STATUS_SUCCESS);
  TensorPtr x = make_fp32(ctx.get(), rows, cols, xv);
  TensorPtr dy = make_fp32(ctx.get(), rows, out_features, random_values(size_t(rows * out_features), 0.1f, seed + 2));
  TensorPtr y = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, out_features});
  TensorPtr dx = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {rows, cols});
  for (int step = 0; step < 2; ++step) {
    EXPECT_EQ(octet_autocast_begin(ctx.get(), recipe), OCTET_STATUS_SUCCESS);
    octet_saved* saved = nullptr;
    EXPECT_EQ(octet_layer_forward(layer, x.get(), y.get(), 1, &saved), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    EXPECT_EQ(octet_layer_backward(layer, &saved, dy.get(), dx.get(), 0), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    EXPECT_EQ(octet_autocast_end(ctx.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    append_bits(bits, y.get(), size_t(rows * out_features));
    append_bits(bits, dx.get(), size_t(rows * cols));
  }
  octet_tensor* dw = nullptr;
  EXPECT_EQ(octet_layer_get_gradient(layer, 0, &dw), OCTET_STATUS_SUCCESS);
  append_bits(bits, dw, size_t(out_features * cols));
  octet_quantizer* q = nullptr;
  EXPECT_EQ(octet_layer_get_quantizer(layer, 0, OCTET_ROLE_INPUT, &q), OCTET_STATUS_SUCCESS);
  octet_quantizer_info info{};
  info.struct_size = sizeof(info);
  EXPECT_EQ(octet_quantizer_get_info(q, &info), OCTET_STATUS_SUCCESS);
  uint32_t scale_bits = 0;
  std::memcpy(&scale_bits, &info.scale, sizeof scale_bits);
  bits.push_back(scale_bits);
  octet_layer_destroy(layer);
  return bits;
}

class ThreadSafety : public BackendTest {};

TEST_P(ThreadSafety, IndependentContextsOnManyThreadsGiveTheSingleThreadedBits) {
  RecipePtr recipe = make_delayed();  // one recipe shared by every thread
  std::vector<std::vector<uint32_t>> expected(kThreads);
  for (int t = 0; t < kThreads; ++t) expected[size_t(t)] = workload(backend(), recipe.get(), uint32_t(100 + t));
  ASSERT_FALSE(expected[0].empty());
  std::vector<std::vector<std::vector<uint32_t>>> got(kThreads);
  Barrier start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();  // all at once
      for (int round = 0; round < 5; ++round)
        got[size_t(t)].push_back(workload(backend(), recipe.get(), uint32_t(100 + t)));
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t)
    for (size_t round = 0; round < got[size_t(t)].size(); ++round)
      EXPECT_EQ(got[size_t(t)][round], expected[size_t(t)]) << "thread " << t << " round " << round;
}

OCTET_INSTANTIATE_FOR_BACKENDS(ThreadSafety);

// Each thread's last error is its own, however the calls interleave.
TEST(ThreadSafetyGlobal, ErrorMessagesArePerThread) {
  Barrier step(kThreads);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
      for (int i = 0; i < 50; ++i) {
        octet_tensor_desc d{};
        d.struct_size = sizeof(d);
        d.dtype = OCTET_DTYPE_FP32;
        d.ndim = 1;
        d.shape[0] = -(1000 * t + i + 1);  // a message naming this thread's value
        octet_tensor* out = nullptr;
        const octet_status s = octet_tensor_create(ctx.get(), &d, &out);
        step.arrive_and_wait();  // every thread has failed before any reads
        const std::string message = octet_last_error_message();
        if (s != OCTET_STATUS_INVALID_ARGUMENT ||
            message.find(std::to_string(-(1000 * t + i + 1))) == std::string::npos)
          ++mismatches;
        step.arrive_and_wait();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// Versions, codecs and backend enumeration from many threads while others
// create and destroy contexts.
TEST(ThreadSafetyGlobal, GlobalFunctionsFromAnyThreadAtAnyTime) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (t % 2 == 0) {
          size_t count = 0;
          if (octet_backend_count(&count) != OCTET_STATUS_SUCCESS || count == 0) ++failures;
          for (size_t b = 0; b < count; ++b) {
            octet_backend_info info{};
            info.struct_size = sizeof(info);
            if (octet_backend_get_info(b, &info) != OCTET_STATUS_SUCCESS || info.name == nullptr) ++failures;
          }
          if (octet_abi_version().major != OCTET_ABI_MAJOR) ++failures;
          // From the format's definition: 1.0 is 0x38 in E4M3 (bias 7), 0x3C in E5M2 (bias 15).
          if (octet_fp8_encode(1.0f, OCTET_DTYPE_E4M3, 1) != 0x38 || octet_fp8_decode(0x3C, OCTET_DTYPE_E5M2) != 1.0f)
            ++failures;
        } else {
          ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
          if (!ctx) ++failures;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// One context used from two threads at once: docs/abi.md promises that the
// second call is refused with INVALID_ARGUMENT and a message naming both
// calls, never a wrong result. Deterministic: thread A is held inside
// octet_quantizer_quantize (in the communicator's callback) while thread B
// calls octet_gemm on the same context; A may call Octet on the context from
// inside its own call.
struct HeldCall {
  octet_context* ctx = nullptr;
  octet_tensor *a = nullptr, *b = nullptr, *d = nullptr;
  octet_status other_thread = OCTET_STATUS_SUCCESS;
  std::string other_message;
  octet_status same_thread = OCTET_STATUS_INTERNAL;
};

octet_status hold_and_probe(float*, size_t, void* user_data) {
  auto* h = static_cast<HeldCall*>(user_data);
  std::thread other([h] {
    h->other_thread = octet_gemm(h->ctx, h->a, h->b, h->d, nullptr);
    h->other_message = octet_last_error_message();
  });
  other.join();
  octet_memory_stats stats{};
  stats.struct_size = sizeof(stats);
  h->same_thread = octet_context_get_memory_stats(h->ctx, &stats);
  return OCTET_STATUS_SUCCESS;
}

TEST(ThreadSafetyShared, SecondThreadOnABusyContextIsRefusedNamingBothCalls) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  const std::vector<float> v = random_values(64, 1.0f, 7);
  TensorPtr a = quantized(ctx.get(), 8, 8, v, OCTET_DTYPE_E4M3, 1.0f, OCTET_USAGE_ROWWISE);
  TensorPtr b = quantized(ctx.get(), 8, 8, v, OCTET_DTYPE_E4M3, 1.0f, OCTET_USAGE_ROWWISE);
  TensorPtr d = make_tensor(ctx.get(), OCTET_DTYPE_FP32, {8, 8});
  HeldCall held;
  held.ctx = ctx.get();
  held.a = a.get();
  held.b = b.get();
  held.d = d.get();
  octet_communicator comm{};
  comm.struct_size = sizeof(comm);
  comm.allreduce_max = hold_and_probe;
  comm.user_data = &held;
  ASSERT_EQ(octet_context_set_communicator(ctx.get(), &comm), OCTET_STATUS_SUCCESS);

  octet_current_scaling_options co;
  ASSERT_EQ(octet_current_scaling_options_init(&co), OCTET_STATUS_SUCCESS);
  co.reduce_amax = 1;
  octet_recipe* recipe = nullptr;
  ASSERT_EQ(octet_recipe_create_current(&co, &recipe), OCTET_STATUS_SUCCESS);
  octet_quantizer* q = nullptr;
  ASSERT_EQ(octet_quantizer_create(recipe, OCTET_ROLE_INPUT, &q), OCTET_STATUS_SUCCESS);
  TensorPtr x = make_fp32(ctx.get(), 8, 8, v);
  TensorPtr xq = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {8, 8}, OCTET_USAGE_ROWWISE);
  ASSERT_EQ(octet_quantizer_quantize(ctx.get(), q, x.get(), xq.get(), nullptr, nullptr), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();

  EXPECT_EQ(held.other_thread, OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(held.other_message, ::testing::HasSubstr("octet_gemm"));
  EXPECT_THAT(held.other_message, ::testing::HasSubstr("in use by octet_quantizer_quantize"));
  EXPECT_THAT(held.other_message, ::testing::HasSubstr("one thread at a time"));
  EXPECT_EQ(held.same_thread, OCTET_STATUS_SUCCESS);
  // The refused call wrote nothing, and once A returned the context is free.
  std::thread later([&] { held.other_thread = octet_gemm(ctx.get(), a.get(), b.get(), d.get(), nullptr); });
  later.join();
  EXPECT_EQ(held.other_thread, OCTET_STATUS_SUCCESS) << octet_last_error_message();
  octet_quantizer_destroy(q);
  octet_recipe_destroy(recipe);
}

// Four threads hammer one context with GEMMs on their own tensors: each call
// either gives the single-threaded bits or is refused as above.
TEST(ThreadSafetyShared, ConcurrentCallsOnOneContextAreRefusedNeverWrong) {
  ContextPtr ctx = make_context("reference", OCTET_PROFILE_NATIVE);
  ASSERT_TRUE(ctx);
  const int64_t n = 16;
  std::vector<TensorPtr> as, bs, ds;
  std::vector<std::vector<uint32_t>> expected;
  for (int t = 0; t < kThreads; ++t) {
    const std::vector<float> va = random_values(size_t(n * n), 2.0f, 100 + uint32_t(t));
    const std::vector<float> vb = random_values(size_t(n * n), 2.0f, 200 + uint32_t(t));
    as.push_back(quantized(ctx.get(), n, n, va, OCTET_DTYPE_E4M3, 4.0f, OCTET_USAGE_ROWWISE));
    bs.push_back(quantized(ctx.get(), n, n, vb, OCTET_DTYPE_E4M3, 4.0f, OCTET_USAGE_ROWWISE));
    ds.push_back(make_tensor(ctx.get(), OCTET_DTYPE_FP32, {n, n}));
    ASSERT_EQ(octet_gemm(ctx.get(), as[t].get(), bs[t].get(), ds[t].get(), nullptr), OCTET_STATUS_SUCCESS);
    expected.push_back(float_bits(read<float>(ds[t].get(), OCTET_COMPONENT_DATA, size_t(n * n))));
  }
  std::atomic<int> wrong{0}, refused{0}, bad_refusal{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> out(size_t(n * n));
      for (int i = 0; i < 300; ++i) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::fill(out.begin(), out.end(), nan);
        octet_status s = octet_tensor_copy_from_host(ds[t].get(), OCTET_COMPONENT_DATA, out.data(),
                                                     out.size() * sizeof(float));
        if (s == OCTET_STATUS_SUCCESS) s = octet_gemm(ctx.get(), as[t].get(), bs[t].get(), ds[t].get(), nullptr);
        if (s == OCTET_STATUS_SUCCESS)
          s = octet_tensor_copy_to_host(ds[t].get(), OCTET_COMPONENT_DATA, out.data(), out.size() * sizeof(float));
        if (s == OCTET_STATUS_SUCCESS) {
          if (float_bits(out) != expected[size_t(t)]) ++wrong;
        } else {
          ++refused;
          if (s != OCTET_STATUS_INVALID_ARGUMENT ||
              std::string(octet_last_error_message()).find("on another thread") == std::string::npos)
            ++bad_refusal;
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(bad_refusal.load(), 0);
  RecordProperty("refused", refused.load());
}

}  // namespace
}  // namespace octet_test
