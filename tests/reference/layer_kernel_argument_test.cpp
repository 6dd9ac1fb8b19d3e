// The plugin ABI 1.2 layer kernels check every argument, the fused
// quantize's (args->quantize) included, before they write anything: a
// rejected call reports one message naming the argument and leaves every
// output buffer as it found it. Built into the reference's suites and,
// through the shim of tests/cpu_backend, run against the cpu plugin's table.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend_harness.hpp"

namespace octet::test {
namespace {

constexpr unsigned char kSentinel = 0xC3;  // no output of these kernels is all 0xC3

// A host buffer pre-filled with the sentinel byte.
struct Sentinel {
  explicit Sentinel(std::size_t bytes) : data(bytes, kSentinel) {}
  bool untouched() const { return data == std::vector<unsigned char>(data.size(), kSentinel); }
  float* floats() { return reinterpret_cast<float*>(data.data()); }
  uint8_t* codes() { return data.data(); }
  std::vector<unsigned char> data;
};

// One way to break the fused quantize and a fragment its message must hold.
struct BadQuantize {
  const char* what;
  const char* fragment;
  void (*apply)(octet_quantize_args&);
};

const BadQuantize kBadQuantizes[] = {
    {"struct_size too small", "quantize->struct_size",
     [](octet_quantize_args& q) { q.struct_size = sizeof(q) - 8; }},
    {"struct_size zero", "quantize->struct_size", [](octet_quantize_args& q) { q.struct_size = 0; }},
    {"out_dtype fp32", "quantize->out_dtype", [](octet_quantize_args& q) { q.out_dtype = OCTET_DTYPE_FP32; }},
    {"out_dtype e8m0", "quantize->out_dtype", [](octet_quantize_args& q) { q.out_dtype = OCTET_DTYPE_E8M0; }},
    {"out_dtype unknown", "quantize->out_dtype", [](octet_quantize_args& q) { q.out_dtype = 42; }},
    {"scale NULL", "quantize->scale", [](octet_quantize_args& q) { q.scale = nullptr; }},
};

class LayerKernelArguments : public ReferenceBackendTest {
 protected:
  static constexpr int64_t kRows = 6, kCols = 10, kLd = 13;

  void SetUp() override {
    ReferenceBackendTest::SetUp();
    if (api_->norm_forward == nullptr || api_->bias_gradient == nullptr ||
        api_->norm_backward == nullptr) {
      GTEST_SKIP() << "this table has no plugin ABI 1.2 layer kernels";
    }
    std::mt19937 rng(7);
    fill_finite(x_, rng);
    fill_finite(gamma_, rng);
    fill_finite(beta_, rng);
  }

  // The outputs of a fused quantize, all sentinel.
  struct FusedOutputs {
    Sentinel rowwise{std::size_t(kRows * kCols)}, columnwise{std::size_t(kRows * kCols)};
    Sentinel scale_inv{4}, amax{4};
    bool untouched() const {
      return rowwise.untouched() && columnwise.untouched() && scale_inv.untouched() && amax.untouched();
    }
  };

  octet_quantize_args fused(FusedOutputs& out) {
    octet_quantize_args q{};
    q.struct_size = sizeof q;
    q.out_dtype = OCTET_DTYPE_E4M3;
    q.saturate = 1;
    q.scale = &scale_;
    q.rowwise_out = out.rowwise.codes();
    q.columnwise_out = out.columnwise.codes();
    q.scale_inv_out = out.scale_inv.floats();
    q.amax_out = out.amax.floats();
    return q;
  }

  TestMatrix x_{OCTET_DTYPE_FP32, kRows, kCols, kLd};
  TestMatrix gamma_{OCTET_DTYPE_FP32, 1, kCols, kCols};
  TestMatrix beta_{OCTET_DTYPE_FP32, 1, kCols, kCols};
  float scale_ = 2.0f;
};

TEST_F(LayerKernelArguments, NormForwardChecksTheFusedQuantizeBeforeWriting) {
  for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
    for (bool stored : {true, false})
      for (const BadQuantize& bad : kBadQuantizes) {
        SCOPED_TRACE(std::string(kind == OCTET_NORM_LAYERNORM ? "layernorm " : "rmsnorm ") +
                     (stored ? "stored y, " : "y not stored, ") + bad.what);
        Sentinel y(std::size_t(kRows * kLd) * 2), mean(kRows * 4), rstd(kRows * 4);
        FusedOutputs q_out;
        octet_quantize_args q = fused(q_out);
        bad.apply(q);
        octet_norm_forward_args a{};
        a.struct_size = sizeof a;
        a.kind = kind;
        a.epsilon = 1e-5f;
        a.input = x_.view();
        a.gamma = gamma_.view();
        a.beta = beta_.view();
        a.output = octet_matrix_view{stored ? y.data.data() : nullptr, OCTET_DTYPE_BF16, 0, kRows, kCols, kLd};
        a.mean_out = mean.floats();
        a.rstd_out = rstd.floats();
        a.quantize = &q;
        expect_failure(api_->norm_forward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                       {"norm_forward", bad.fragment});
        EXPECT_TRUE(y.untouched()) << "y written by a rejected call";
        EXPECT_TRUE(mean.untouched()) << "mean_out written by a rejected call";
        EXPECT_TRUE(rstd.untouched()) << "rstd_out written by a rejected call";
        EXPECT_TRUE(q_out.untouched()) << "fused quantize outputs written by a rejected call";
      }
}

TEST_F(LayerKernelArguments, BiasGradientChecksTheFusedQuantizeBeforeWriting) {
  for (const BadQuantize& bad : kBadQuantizes) {
    SCOPED_TRACE(bad.what);
    Sentinel sums(kCols * 4);
    FusedOutputs q_out;
    octet_quantize_args q = fused(q_out);
    bad.apply(q);
    octet_bias_gradient_args a{};
    a.struct_size = sizeof a;
    a.grad_output = x_.view();
    a.sums_out = sums.floats();
    a.quantize = &q;
    expect_failure(api_->bias_gradient(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"bias_gradient", bad.fragment});
    EXPECT_TRUE(sums.untouched()) << "sums_out written by a rejected call";
    EXPECT_TRUE(q_out.untouched()) << "fused quantize outputs written by a rejected call";
  }
}

// Neither code buffer is not an error: the fused quantize does what
// quantize() does with those arguments (octet_backend.h), which is an
// amax-and-scale_inv-only pass. The same pass with codes gives the same amax.
TEST_F(LayerKernelArguments, FusedQuantizeWithoutCodeBuffersWritesAmaxOnly) {
  Sentinel y(std::size_t(kRows * kLd) * 4);
  FusedOutputs with_codes, without_codes;
  for (FusedOutputs* out : {&with_codes, &without_codes}) {
    octet_quantize_args q = fused(*out);
    if (out == &without_codes) q.rowwise_out = q.columnwise_out = nullptr;
    octet_norm_forward_args a{};
    a.struct_size = sizeof a;
    a.kind = OCTET_NORM_LAYERNORM;
    a.epsilon = 1e-5f;
    a.input = x_.view();
    a.gamma = gamma_.view();
    a.output = octet_matrix_view{y.data.data(), OCTET_DTYPE_FP32, 0, kRows, kCols, kLd};
    a.quantize = &q;
    expect_success(api_->norm_forward(context_, &a));
  }
  EXPECT_TRUE(without_codes.rowwise.untouched());
  EXPECT_TRUE(without_codes.columnwise.untouched());
  EXPECT_FALSE(with_codes.rowwise.untouched());
  EXPECT_EQ(without_codes.amax.data, with_codes.amax.data);
  EXPECT_EQ(without_codes.scale_inv.data, with_codes.scale_inv.data);
  EXPECT_FALSE(without_codes.amax.untouched());
}

// Checks later in the argument list than the first output still come before
// any write: a bad dgamma_out (NULL) leaves dx, and a bad gamma leaves dx and
// dgamma/dbeta, untouched.
TEST_F(LayerKernelArguments, NormBackwardChecksEverythingBeforeWriting) {
  TestMatrix dy(OCTET_DTYPE_FP32, kRows, kCols, kCols);
  std::mt19937 rng(9);
  fill_finite(dy, rng);
  std::vector<float> mean(kRows, 0.25f), rstd(kRows, 1.5f);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    Sentinel dx(std::size_t(kRows * kCols) * 4), dgamma(kCols * 4), dbeta(kCols * 4);
    octet_norm_backward_args a{};
    a.struct_size = sizeof a;
    a.kind = OCTET_NORM_LAYERNORM;
    a.input = x_.view();
    a.grad_output = dy.view();
    a.gamma = gamma_.view();
    a.mean = mean.data();
    a.rstd = rstd.data();
    a.grad_input = octet_matrix_view{dx.data.data(), OCTET_DTYPE_FP32, 0, kRows, kCols, kCols};
    a.dgamma_out = dgamma.floats();
    a.dbeta_out = dbeta.floats();
    const char* fragment = "";
    if (variant == 0) {
      a.dgamma_out = nullptr;
      fragment = "dgamma_out";
    } else if (variant == 1) {
      a.gamma.cols = kCols - 1;
      fragment = "gamma";
    } else {
      a.mean = nullptr;
      fragment = "mean";
    }
    expect_failure(api_->norm_backward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"norm_backward", fragment});
    EXPECT_TRUE(dx.untouched());
    EXPECT_TRUE(dgamma.untouched());
    EXPECT_TRUE(dbeta.untouched());
  }
}

}  // namespace
}  // namespace octet::test
