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

#include "backend_table.hpp"
#include "test_matrix.hpp"

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

class LayerKernelArguments : public BackendTableTest {
 protected:
  static constexpr int64_t kRows = 6, kCols = 10, kLd = 13;

  void SetUp() override {
    BackendTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
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

TEST_P(LayerKernelArguments, NormForwardChecksTheFusedQuantizeBeforeWriting) {
  OCTET_REQUIRE_ENTRY(norm_forward);
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

TEST_P(LayerKernelArguments, BiasGradientChecksTheFusedQuantizeBeforeWriting) {
  OCTET_REQUIRE_ENTRY(bias_gradient);
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
TEST_P(LayerKernelArguments, FusedQuantizeWithoutCodeBuffersWritesAmaxOnly) {
  OCTET_REQUIRE_ENTRY(norm_forward);
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
TEST_P(LayerKernelArguments, NormBackwardChecksEverythingBeforeWriting) {
  OCTET_REQUIRE_ENTRY(norm_backward);
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

// ---- grad_input aliasing in norm_backward (octet_norm_backward_args) ----

class NormBackwardAliasing : public BackendTableTest {
 protected:
  void SetUp() override {
    BackendTableTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (api_->norm_backward == nullptr) GTEST_SKIP() << "this table has no norm_backward";
  }

  // x, dy (in `dy_storage` at `dy_view`), gamma and the forward's mean/rstd.
  struct Problem {
    Problem(int32_t kind, int32_t dtype, int64_t rows, int64_t cols, uint32_t seed)
        : kind(kind), x(dtype, rows, cols, cols + 3), dy(dtype, rows, cols, cols + 1),
          gamma(dtype, 1, cols, cols), mean(size_t(rows)), rstd(size_t(rows)) {
      std::mt19937 rng(seed);
      fill_finite(x, rng);
      fill_finite(dy, rng, 2.0f);
      fill_finite(gamma, rng);
    }
    int32_t kind;
    TestMatrix x, dy, gamma;
    std::vector<float> mean, rstd;
  };

  void forward(Problem& p) {
    octet_norm_forward_args f{};
    f.struct_size = sizeof f;
    f.kind = p.kind;
    f.epsilon = 1e-5f;
    f.input = p.x.view();
    f.gamma = p.gamma.view();
    f.beta = octet_matrix_view{nullptr, p.x.dtype, 0, 1, p.x.cols, p.x.cols};
    f.output = octet_matrix_view{nullptr, p.x.dtype, 0, p.x.rows, p.x.cols, p.x.cols};
    f.mean_out = p.mean.data();
    f.rstd_out = p.rstd.data();
    expect_success(api_->norm_forward(context_, &f));
  }

  octet_norm_backward_args args(Problem& p, const octet_matrix_view& dy, const octet_matrix_view& dx,
                                float* dgamma, float* dbeta) {
    octet_norm_backward_args a{};
    a.struct_size = sizeof a;
    a.kind = p.kind;
    a.input = p.x.view();
    a.grad_output = dy;
    a.gamma = p.gamma.view();
    a.mean = p.mean.data();
    a.rstd = p.rstd.data();
    a.grad_input = dx;
    a.dgamma_out = dgamma;
    a.dbeta_out = p.kind == OCTET_NORM_LAYERNORM ? dbeta : nullptr;
    return a;
  }
};

// dx written over dy (the same data, dtype and ld) gives, bit for bit, the
// dx, dgamma and dbeta of a call with separate buffers; sizes include the
// cpu plugin's threaded paths.
TEST_P(NormBackwardAliasing, InPlaceOverGradOutputEqualsSeparateBuffers) {
  OCTET_REQUIRE_ENTRY(norm_backward);
  struct Shape {
    int64_t rows, cols;
  };
  for (const Shape sh : {Shape{1, 1}, Shape{3, 7}, Shape{17, 33}, Shape{67, 300}, Shape{40, 1100}})
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
        SCOPED_TRACE(std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " kind " +
                     std::to_string(kind) + " dtype " + std::to_string(dtype));
        Problem p(kind, dtype, sh.rows, sh.cols, uint32_t(sh.rows * 131 + sh.cols));
        forward(p);
        TestMatrix dx(dtype, sh.rows, sh.cols, sh.cols + 1);
        std::vector<float> dgamma(size_t(sh.cols), -1.0f), dbeta(size_t(sh.cols), -1.0f);
        octet_norm_backward_args a = args(p, p.dy.view(), dx.view(), dgamma.data(), dbeta.data());
        expect_success(api_->norm_backward(context_, &a));

        TestMatrix inplace = p.dy;  // dy's values, overwritten by dx
        std::vector<float> dgamma2(size_t(sh.cols), -2.0f), dbeta2(size_t(sh.cols), -2.0f);
        a = args(p, inplace.view(), inplace.view(), dgamma2.data(), dbeta2.data());
        expect_success(api_->norm_backward(context_, &a));
        EXPECT_EQ(inplace.bytes, dx.bytes) << "dx in place differs";
        EXPECT_EQ(dgamma2, dgamma) << "dgamma in place differs";
        if (kind == OCTET_NORM_LAYERNORM) {
          EXPECT_EQ(dbeta2, dbeta) << "dbeta in place differs";
        }
      }
}

// Any other sharing of memory between dx and dy or x is refused, naming
// both arguments, and writes nothing; views interleaved in one buffer
// without a common element are not an overlap.
TEST_P(NormBackwardAliasing, PartialOverlapIsRejectedWithoutWriting) {
  OCTET_REQUIRE_ENTRY(norm_backward);
  const int64_t rows = 6, cols = 8;
  Problem p(OCTET_NORM_LAYERNORM, OCTET_DTYPE_FP32, rows, cols, 5);
  forward(p);
  // One buffer holds dy (rows x cols, ld cols + 1); dx is placed in it.
  for (int variant = 0; variant < 6; ++variant) {
    TestMatrix shared(OCTET_DTYPE_FP32, 2 * rows + 2, 2 * cols + 2, 2 * cols + 2);
    std::mt19937 rng(3);
    fill_finite(shared, rng);
    const MatrixBytes before = shared.bytes;
    float* base = reinterpret_cast<float*>(shared.bytes.data());
    const octet_matrix_view dy{base, OCTET_DTYPE_FP32, 0, rows, cols, cols + 1};
    octet_matrix_view dx = dy;
    octet_matrix_view x = p.x.view();
    MatrixBytes x_before = p.x.bytes;
    const char* what = "";
    const char* other = "grad_output";
    switch (variant) {
      case 0: what = "dx one row below dy"; dx.data = base + (cols + 1); break;
      case 1: what = "dx one element right of dy"; dx.data = base + 1; break;
      case 2: what = "dx over dy with another ld"; dx.ld = cols + 2; break;
      case 3: what = "dx over dy as bf16"; dx.dtype = OCTET_DTYPE_BF16; break;
      case 4: what = "dx == x"; dx = x; dx.data = p.x.bytes.data(); other = "input"; break;
      case 5:
        // Dense dx ending where x's buffer ends (in bounds), starting inside
        // x's second row.
        what = "dx inside x's rows";
        dx = octet_matrix_view{p.x.bytes.data() + p.x.bytes.size() - 4 * size_t(rows * cols), OCTET_DTYPE_FP32, 0,
                               rows, cols, cols};
        other = "input";
        break;
    }
    SCOPED_TRACE(what);
    std::vector<float> dgamma(size_t(cols), -1.0f), dbeta(size_t(cols), -1.0f);
    octet_norm_backward_args a = args(p, dy, dx, dgamma.data(), dbeta.data());
    expect_failure(api_->norm_backward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"norm_backward", "args->grad_input", other});
    EXPECT_EQ(shared.bytes, before);
    EXPECT_EQ(p.x.bytes, x_before);
    EXPECT_EQ(dgamma, std::vector<float>(size_t(cols), -1.0f));
    EXPECT_EQ(dbeta, std::vector<float>(size_t(cols), -1.0f));
  }
  // dx in the columns right of dy's in the same rows (ld 2 * cols): no
  // element in common, accepted, and equal to dx in its own buffer.
  TestMatrix both(OCTET_DTYPE_FP32, rows, 2 * cols, 2 * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) both.set_bits(r, c, p.dy.bits(r, c));
  octet_matrix_view dy = both.view(), dx = both.view();
  dy.cols = dx.cols = cols;
  dx.data = both.bytes.data() + 4 * cols;
  std::vector<float> dgamma(static_cast<size_t>(cols)), dbeta(static_cast<size_t>(cols));
  octet_norm_backward_args a = args(p, dy, dx, dgamma.data(), dbeta.data());
  expect_success(api_->norm_backward(context_, &a));
  TestMatrix alone(OCTET_DTYPE_FP32, rows, cols, cols);
  std::vector<float> dgamma2(static_cast<size_t>(cols)), dbeta2(static_cast<size_t>(cols));
  a = args(p, p.dy.view(), alone.view(), dgamma2.data(), dbeta2.data());
  expect_success(api_->norm_backward(context_, &a));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(both.bits(r, cols + c), alone.bits(r, c));
  EXPECT_EQ(dgamma, dgamma2);
}

// An activation's outputs may not share memory with its inputs (rows run in
// parallel in a threaded backend; octet_activation_args): refused, naming
// both arguments, with nothing written. Separate buffers in one allocation
// are fine.
TEST_P(LayerKernelArguments, ActivationOutputsMayNotOverlapInputs) {
  OCTET_REQUIRE_ENTRY(activation_backward);
  OCTET_REQUIRE_ENTRY(activation_forward);
  if (api_->activation_forward == nullptr || api_->activation_backward == nullptr)
    GTEST_SKIP() << "this table has no activation kernels";
  const int64_t rows = 5, cols = 8;
  for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU}) {
    const int64_t n = kind == OCTET_ACTIVATION_SWIGLU ? cols / 2 : cols;
    // One buffer: x (rows x cols) at the start, room after it.
    TestMatrix shared(OCTET_DTYPE_FP32, 3 * rows, cols, cols);
    std::mt19937 rng(11);
    fill_finite(shared, rng);
    const MatrixBytes before = shared.bytes;
    float* base = reinterpret_cast<float*>(shared.bytes.data());
    const octet_matrix_view x{base, OCTET_DTYPE_FP32, 0, rows, cols, cols};
    const octet_matrix_view dy{base + rows * cols, OCTET_DTYPE_FP32, 0, rows, n, n};
    SCOPED_TRACE(kind == OCTET_ACTIVATION_SWIGLU ? "swiglu" : "gelu");

    octet_activation_args a{};
    a.struct_size = sizeof a;
    a.kind = kind;
    a.input = x;
    a.output = octet_matrix_view{base + 1, OCTET_DTYPE_FP32, 0, rows, n, cols};  // inside x
    expect_failure(api_->activation_forward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"activation_forward", "args->output", "args->input"});
    a.output = x;  // exactly in place
    a.output.cols = n;
    expect_failure(api_->activation_forward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"activation_forward", "args->output", "args->input"});

    a.output = octet_matrix_view{};
    a.grad_output = dy;
    a.grad_input = x;  // over x
    expect_failure(api_->activation_backward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"activation_backward", "args->grad_input", "args->input"});
    a.grad_input = octet_matrix_view{base + rows * cols, OCTET_DTYPE_FP32, 0, rows, cols, cols};  // over dy
    expect_failure(api_->activation_backward(context_, &a), OCTET_STATUS_INVALID_ARGUMENT,
                   {"activation_backward", "args->grad_input", "args->grad_output"});
    EXPECT_EQ(shared.bytes, before);

    // The rest of the buffer, past dy: no overlap, accepted.
    a.grad_input = octet_matrix_view{base + 2 * rows * cols, OCTET_DTYPE_FP32, 0, rows, cols, cols};
    EXPECT_EQ(api_->activation_backward(context_, &a), OCTET_STATUS_SUCCESS);
  }
}

OCTET_BACKEND_SUITE(LayerKernelArguments);
OCTET_BACKEND_SUITE(NormBackwardAliasing);

}  // namespace
}  // namespace octet::test
