// The layer math of the cuda backend (backends/cuda/src/layer_math.cuh) is
// __host__ __device__: here it is compiled for the host and compared bit for
// bit with the reference backend's ABI 1.2 kernels (its table, host memory)
// on the same inputs (tanhf/expf are octet_math.h's on both sides; their
// accuracy is tested in tests/reference/octet_math_test.cpp):
// - GELU/SwiGLU forward and backward on the same sweeps and on every pair
//   (triple) of special values, NaN payloads and signs included;
// - a host model of each kernel, written with the same functions in the
//   kernels' order (row sums left to right, column sums rows in order, the
//   fused quantize's codes, scale_inv and amax), on whole matrices with
//   specials, against the reference's outputs, every byte.
// Runs on every machine; the device side of the same math is checked by
// layer_kernels_test.cpp where a GPU answers.
#include <octet/octet.h>
#include <octet/octet_backend.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "layer_math.cuh"
#include "octet_reference/reference_backend.h"

namespace {

namespace lm = octet_cuda::lmath;
using octet_cuda::bits_of;
using octet_cuda::float_of;

// The reference's plugin table with one context; reported errors are kept.
class Reference {
 public:
  Reference() {
    if (octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api_) != OCTET_STATUS_SUCCESS)
      return;
    host_.struct_size = sizeof host_;
    host_.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host_.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host_.report_error = [](void* data, int32_t, const char* message) {
      static_cast<std::vector<std::string>*>(data)->push_back(message);
    };
    host_.host_data = &errors_;
    caps_.struct_size = sizeof caps_;
    if (api_->initialize(&host_, &caps_) != OCTET_STATUS_SUCCESS) return;
    api_->context_create(nullptr, &context_);
  }
  ~Reference() {
    if (context_ != nullptr) api_->context_destroy(context_);
  }
  Reference(const Reference&) = delete;
  Reference& operator=(const Reference&) = delete;
  const octet_backend_api& api() const { return *api_; }
  octet_backend_context* context() const { return context_; }
  std::string errors() const {
    std::string all;
    for (const std::string& e : errors_) all += e + "\n";
    return all;
  }

 private:
  const octet_backend_api* api_ = nullptr;
  octet_backend_context* context_ = nullptr;
  octet_host_services host_{};
  octet_backend_caps caps_{};
  std::vector<std::string> errors_;
};

std::string hex(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

// Every BF16 value (as FP32) and a stride sweep of the FP32 bit patterns.
std::vector<float> sweep_inputs(uint64_t stride) {
  std::vector<float> out;
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) out.push_back(float_of(h << 16));
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += stride) out.push_back(float_of(uint32_t(b)));
  return out;
}

// Values where something happens: signed zeros, subnormals, the edges of the
// libm branches, overflow of x^3, inf, NaNs of both signs with different
// payloads, a signalling NaN.
std::vector<float> specials() {
  std::vector<uint32_t> bits = {
      0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x00800000u, 0x3F800000u, 0xBF800000u, 0x3F000000u,
      0xBF000000u, 0x40490FDBu, 0xC0490FDBu, 0x41B00000u, 0xC1B00000u, 0x42B17218u, 0xC2B17218u, 0x42CFF1B4u,
      0xC2CFF1B4u, 0x4E6E6B28u, 0xCE6E6B28u, 0x5F000000u, 0xDF000000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u,
      0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7FC12345u, 0xFFD00001u, 0x7F800001u, 0x24000000u, 0x3EB17218u};
  std::vector<float> out;
  for (uint32_t b : bits) out.push_back(float_of(b));
  return out;
}

// ---- NaN rules ---------------------------------------------------------------

// The NaN result of numerics.md's rule for operands a, b (b = a for sqrt):
// the first NaN operand quieted, else the default NaN 0xFFC00000.
uint32_t rule_nan(float a, float b) {
  const auto nan = [](uint32_t x) { return (x & 0x7FFFFFFFu) > 0x7F800000u; };
  if (nan(bits_of(a))) return bits_of(a) | 0x00400000u;
  if (nan(bits_of(b))) return bits_of(b) | 0x00400000u;
  return 0xFFC00000u;
}

// The host's IEEE result when it is not NaN, else the rule's NaN.
uint32_t expected_bits(float ieee, float a, float b) {
  return (bits_of(ieee) & 0x7FFFFFFFu) > 0x7F800000u ? rule_nan(a, b) : bits_of(ieee);
}

// The operations against this machine's IEEE arithmetic, with the rule's NaN
// wherever that result is NaN (on any host: x86, AArch64), every pair of
// specials.
TEST(CudaLayerMathOnHost, OperationsGiveTheRuleNaNResults) {
  // volatile: the compiler must not fold or reorder the host operations.
  for (float a : specials())
    for (float b : specials()) {
      volatile float va = a, vb = b;
      const std::string what = hex(bits_of(a)) + ", " + hex(bits_of(b));
      EXPECT_EQ(hex(bits_of(octet_cuda::host_add(a, b))), hex(expected_bits(va + vb, a, b))) << "add " << what;
      EXPECT_EQ(hex(bits_of(octet_cuda::host_sub(a, b))), hex(expected_bits(va - vb, a, b))) << "sub " << what;
      EXPECT_EQ(hex(bits_of(octet_cuda::host_mul(a, b))), hex(expected_bits(va * vb, a, b))) << "mul " << what;
      EXPECT_EQ(hex(bits_of(octet_cuda::host_div(a, b))), hex(expected_bits(va / vb, a, b))) << "div " << what;
    }
  for (float a : specials()) {
    volatile float va = a;
    EXPECT_EQ(hex(bits_of(octet_cuda::host_sqrt(a))), hex(expected_bits(std::sqrt(static_cast<float>(va)), a, a)))
        << hex(bits_of(a));
  }
}

// ---- activations against the reference's kernels --------------------------------

octet_matrix_view row_view(void* data, int32_t dtype, int64_t cols) {
  return octet_matrix_view{data, dtype, 0, 1, cols, cols};
}

void expect_equal_floats(const std::vector<float>& got, const std::vector<float>& want, const std::string& what,
                         const std::vector<float>& inputs) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (bits_of(got[i]) != bits_of(want[i]) && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << what << ": first difference at " << first << " (input "
                     << (first < inputs.size() ? hex(bits_of(inputs[first])) : std::string("-")) << "): ours "
                     << hex(bits_of(got[first])) << ", reference " << hex(bits_of(want[first]));
}

struct ActivationCase {
  std::vector<float> x, dy;
};

// GELU on the sweep (dy from a mix that includes specials); SwiGLU with a on
// the sweep and b, dy permuted from it.
ActivationCase activation_inputs(bool swiglu, int64_t* n) {
  std::vector<float> base = sweep_inputs(4099);
  const std::vector<float> s = specials();
  base.insert(base.end(), s.begin(), s.end());
  *n = static_cast<int64_t>(base.size());
  ActivationCase c;
  c.dy.resize(base.size());
  for (size_t i = 0; i < base.size(); ++i) c.dy[i] = i % 7 == 0 ? s[i % s.size()] : base[(i * 7919u) % base.size()];
  if (!swiglu) {
    c.x = base;
    return c;
  }
  c.x = base;
  c.x.resize(2 * base.size());
  for (size_t i = 0; i < base.size(); ++i) c.x[base.size() + i] = base[(i * 104729u + 17u) % base.size()];
  return c;
}

TEST(CudaLayerMathOnHost, ActivationsMatchTheReferenceOnSweeps) {
  Reference ref;
  ASSERT_NE(ref.context(), nullptr) << ref.errors();
  for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU}) {
    const bool swiglu = kind == OCTET_ACTIVATION_SWIGLU;
    int64_t n = 0;
    ActivationCase in = activation_inputs(swiglu, &n);
    std::vector<float> y(static_cast<size_t>(n)), dx(in.x.size());
    octet_activation_args a{};
    a.struct_size = sizeof a;
    a.kind = kind;
    a.input = row_view(in.x.data(), OCTET_DTYPE_FP32, int64_t(in.x.size()));
    a.output = row_view(y.data(), OCTET_DTYPE_FP32, n);
    ASSERT_EQ(ref.api().activation_forward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
    a.output = octet_matrix_view{};
    a.grad_output = row_view(in.dy.data(), OCTET_DTYPE_FP32, n);
    a.grad_input = row_view(dx.data(), OCTET_DTYPE_FP32, int64_t(in.x.size()));
    ASSERT_EQ(ref.api().activation_backward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
    std::vector<float> our_y(static_cast<size_t>(n)), our_dx(in.x.size());
    for (int64_t i = 0; i < n; ++i) {
      const float x = in.x[size_t(i)];
      if (!swiglu) {
        our_y[size_t(i)] = lm::gelu(x);
        our_dx[size_t(i)] = lm::gelu_backward(in.dy[size_t(i)], x);
      } else {
        const float b = in.x[size_t(n + i)];
        our_y[size_t(i)] = lm::swiglu(x, b);
        const lm::SwigluGrad g = lm::swiglu_backward(in.dy[size_t(i)], x, b);
        our_dx[size_t(i)] = g.da;
        our_dx[size_t(n + i)] = g.db;
      }
    }
    const std::string name = swiglu ? "swiglu" : "gelu";
    expect_equal_floats(our_y, y, name + " forward", in.x);
    expect_equal_floats(our_dx, dx, name + " backward", in.x);
  }
}

// Every pair (GELU: x, dy) and triple (SwiGLU: a, b, dy) of specials: the
// NaN results of operations meeting two different NaNs are the reference's.
TEST(CudaLayerMathOnHost, ActivationsMatchTheReferenceOnSpecialCombinations) {
  Reference ref;
  ASSERT_NE(ref.context(), nullptr) << ref.errors();
  const std::vector<float> s = specials();
  const size_t k = s.size();
  {  // GELU: x = s[i], dy = s[j]
    std::vector<float> x(k * k), dy(k * k), y(k * k), dx(k * k);
    for (size_t i = 0; i < k; ++i)
      for (size_t j = 0; j < k; ++j) {
        x[i * k + j] = s[i];
        dy[i * k + j] = s[j];
      }
    octet_activation_args a{};
    a.struct_size = sizeof a;
    a.kind = OCTET_ACTIVATION_GELU;
    a.input = row_view(x.data(), OCTET_DTYPE_FP32, int64_t(k * k));
    a.output = row_view(y.data(), OCTET_DTYPE_FP32, int64_t(k * k));
    ASSERT_EQ(ref.api().activation_forward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
    a.grad_output = row_view(dy.data(), OCTET_DTYPE_FP32, int64_t(k * k));
    a.grad_input = row_view(dx.data(), OCTET_DTYPE_FP32, int64_t(k * k));
    ASSERT_EQ(ref.api().activation_backward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
    for (size_t i = 0; i < k * k; ++i) {
      EXPECT_EQ(hex(bits_of(lm::gelu(x[i]))), hex(bits_of(y[i]))) << "gelu(" << hex(bits_of(x[i])) << ")";
      EXPECT_EQ(hex(bits_of(lm::gelu_backward(dy[i], x[i]))), hex(bits_of(dx[i])))
          << "gelu backward dy " << hex(bits_of(dy[i])) << " x " << hex(bits_of(x[i]));
    }
  }
  {  // SwiGLU: a = s[i], b = s[j], dy = s[l]
    const size_t n = k * k * k;
    std::vector<float> x(2 * n), dy(n), y(n), dx(2 * n);
    for (size_t i = 0; i < k; ++i)
      for (size_t j = 0; j < k; ++j)
        for (size_t l = 0; l < k; ++l) {
          const size_t e = (i * k + j) * k + l;
          x[e] = s[i];
          x[n + e] = s[j];
          dy[e] = s[l];
        }
    octet_activation_args a{};
    a.struct_size = sizeof a;
    a.kind = OCTET_ACTIVATION_SWIGLU;
    a.input = row_view(x.data(), OCTET_DTYPE_FP32, int64_t(2 * n));
    a.output = row_view(y.data(), OCTET_DTYPE_FP32, int64_t(n));
    ASSERT_EQ(ref.api().activation_forward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
    a.grad_output = row_view(dy.data(), OCTET_DTYPE_FP32, int64_t(n));
    a.grad_input = row_view(dx.data(), OCTET_DTYPE_FP32, int64_t(2 * n));
    ASSERT_EQ(ref.api().activation_backward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
    size_t bad = 0;
    for (size_t e = 0; e < n && bad < 10; ++e) {
      const std::string what = "a " + hex(bits_of(x[e])) + " b " + hex(bits_of(x[n + e])) + " dy " + hex(bits_of(dy[e]));
      const lm::SwigluGrad g = lm::swiglu_backward(dy[e], x[e], x[n + e]);
      const bool same = bits_of(lm::swiglu(x[e], x[n + e])) == bits_of(y[e]) && bits_of(g.da) == bits_of(dx[e]) &&
                        bits_of(g.db) == bits_of(dx[n + e]);
      if (!same) ++bad;
      EXPECT_EQ(hex(bits_of(lm::swiglu(x[e], x[n + e]))), hex(bits_of(y[e]))) << "swiglu " << what;
      EXPECT_EQ(hex(bits_of(g.da)), hex(bits_of(dx[e]))) << "swiglu da " << what;
      EXPECT_EQ(hex(bits_of(g.db)), hex(bits_of(dx[n + e]))) << "swiglu db " << what;
    }
  }
}

// ---- host models of the kernels against the reference ---------------------------

// A matrix in host memory of `dtype`, filled from FP32 values (rounded).
struct HostMatrix {
  std::vector<uint8_t> bytes;
  octet_matrix_view view{};
  HostMatrix(int32_t dtype, int64_t rows, int64_t cols, int64_t ld) {
    const size_t esize = dtype == OCTET_DTYPE_FP32 ? 4 : 2;
    bytes.assign(size_t(std::max<int64_t>(rows, 1) * ld) * esize + 16, 0xA5);
    view = octet_matrix_view{bytes.data(), dtype, 0, rows, cols, ld};
  }
  float at(int64_t r, int64_t c) const { return octet_cuda::load_as_float(view.data, view.dtype, r * view.ld + c); }
  void set(int64_t r, int64_t c, float v) { octet_cuda::store_from_float(view.data, view.dtype, r * view.ld + c, v, true); }
};

// Row r: normal values of row-dependent scale and offset; some rows carry
// specials (inf, NaN of either sign, huge values, all zeros).
HostMatrix test_matrix(int32_t dtype, int64_t rows, int64_t cols, int64_t ld, uint32_t seed, bool with_specials) {
  HostMatrix m(dtype, rows, cols, ld);
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = normal(gen) * float(1 << (r % 7)) + 0.25f * float(r % 3);
      if ((r * 31 + c) % 97 == 0) v *= 1000.0f;
      if (with_specials) {
        if (r % 11 == 3 && c == cols / 2) v = INFINITY;
        if (r % 11 == 4 && c == cols / 3) v = -INFINITY;
        if (r % 11 == 5 && c == 0) v = float_of(0xFFC12345u);  // negative NaN
        if (r % 11 == 6 && c == cols - 1) v = float_of(0x7FA00001u);  // signalling NaN
        if (r % 11 == 7) v = 0.0f;
        if (r % 11 == 8 && c % 5 == 1) v = 3.0e38f;
        if (r % 11 == 9 && c == cols / 2) v = float_of(0x7FC00007u);
        if (r % 11 == 9 && c == cols / 3) v = float_of(0xFFC00009u);  // two NaNs in a row
      }
      m.set(r, c, v);
    }
  return m;
}

struct Shape {
  int64_t rows, cols, pad;
};
const Shape kShapes[] = {{1, 1, 0}, {7, 1, 3}, {3, 7, 2}, {33, 65, 1}, {45, 677, 5}, {5, 8192, 0}, {0, 9, 0}, {4, 0, 0}};

void expect_bytes(const void* got, const void* want, size_t bytes, const std::string& what) {
  const auto* a = static_cast<const uint8_t*>(got);
  const auto* b = static_cast<const uint8_t*>(want);
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < bytes; ++i)
    if (a[i] != b[i] && bad++ == 0) first = i;
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " bytes differ, first at byte " << first;
}

// The fused quantize's outputs.
struct Codes {
  std::vector<uint8_t> rowwise, columnwise;
  float scale_inv = -1.0f, amax = -1.0f, scale = 1.0f;
  octet_quantize_args args(int64_t rows, int64_t cols, int32_t dtype, bool rowwise_usage, bool columnwise_usage) {
    rowwise.assign(size_t(rows * cols), 0x5A);
    columnwise.assign(size_t(rows * cols), 0x5A);
    octet_quantize_args q{};
    q.struct_size = sizeof q;
    q.out_dtype = dtype;
    q.saturate = 1;
    q.scale = &scale;
    q.rowwise_out = rowwise_usage ? rowwise.data() : nullptr;
    q.columnwise_out = columnwise_usage ? columnwise.data() : nullptr;
    q.scale_inv_out = &scale_inv;
    q.amax_out = &amax;
    return q;
  }
};

// The norm forward kernel's computation on the host: statistics per row
// left to right, then y, its rounding and its codes.
void model_norm_forward(const octet_norm_forward_args& a, std::vector<float>& mean, std::vector<float>& rstd,
                        HostMatrix* y, Codes* codes, const octet_quantize_args* q) {
  const octet_matrix_view& x = a.input;
  const bool layernorm = a.kind == OCTET_NORM_LAYERNORM;
  const bool has_beta = layernorm && a.beta.data != nullptr;
  auto at = [](const octet_matrix_view& v, int64_t r, int64_t c) {
    return octet_cuda::load_as_float(v.data, v.dtype, r * v.ld + c);
  };
  float amax = 0.0f;
  for (int64_t r = 0; r < x.rows; ++r) {
    float sum = 0.0f, m = 0.0f, s;
    for (int64_t c = 0; c < x.cols; ++c) sum = layernorm ? lm::sum_step(sum, at(x, r, c)) : lm::square_step(sum, at(x, r, c));
    if (layernorm) {
      m = lm::mean_of(sum, x.cols);
      float var = 0.0f;
      for (int64_t c = 0; c < x.cols; ++c) var = lm::variance_step(var, at(x, r, c), m);
      s = lm::rstd_of(var, x.cols, a.epsilon);
    } else {
      s = lm::rstd_of(sum, x.cols, a.epsilon);
    }
    mean[size_t(r)] = m;
    rstd[size_t(r)] = s;
    for (int64_t c = 0; c < x.cols; ++c) {
      const float v = lm::norm_output(at(x, r, c), m, s, at(a.gamma, 0, c), layernorm, has_beta,
                                      has_beta ? at(a.beta, 0, c) : 0.0f);
      if (y != nullptr) y->set(r, c, v);
      if (q != nullptr) {
        const float rounded = lm::rounded_to(v, a.output.dtype);
        amax = std::fmax(amax, lm::amax_candidate(rounded));
        const uint8_t code = lm::quantize_code(rounded, *q->scale, q->out_dtype == OCTET_DTYPE_E4M3, q->saturate != 0);
        if (q->rowwise_out != nullptr) codes->rowwise[size_t(r * x.cols + c)] = code;
        if (q->columnwise_out != nullptr) codes->columnwise[size_t(c * x.rows + r)] = code;
      }
    }
  }
  if (q != nullptr) {
    codes->scale_inv = octet_cuda::host_div(1.0f, *q->scale);
    codes->amax = amax;
  }
}

TEST(CudaLayerMathOnHost, NormForwardModelMatchesTheReference) {
  Reference ref;
  ASSERT_NE(ref.context(), nullptr) << ref.errors();
  const int32_t dtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t in_dtype : dtypes)
        for (int32_t out_dtype : dtypes)
          for (int variant = 0; variant < 4; ++variant) {
            // 0: plain, with beta; 1: no beta, output not stored, fused E4M3 both
            // usages; 2: stored output, fused E5M2 rowwise, scale 1e6 (saturates);
            // 3: fused columnwise only, epsilon 0 (0/0 and x/0 on constant rows).
            const std::string what = "norm_forward " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) +
                                     " kind " + std::to_string(kind) + " in " + std::to_string(in_dtype) + " out " +
                                     std::to_string(out_dtype) + " variant " + std::to_string(variant);
            SCOPED_TRACE(what);
            const HostMatrix x = test_matrix(in_dtype, sh.rows, sh.cols, sh.cols + sh.pad, 11, true);
            const HostMatrix gamma = test_matrix(in_dtype, 1, sh.cols, sh.cols, 12, false);
            const HostMatrix beta = test_matrix(out_dtype, 1, sh.cols, sh.cols, 13, false);
            HostMatrix y_ref(out_dtype, sh.rows, sh.cols, sh.cols + 1), y_ours(out_dtype, sh.rows, sh.cols, sh.cols + 1);
            std::vector<float> mean_ref(size_t(sh.rows) + 1, -7.0f), rstd_ref(size_t(sh.rows) + 1, -7.0f);
            std::vector<float> mean_ours(size_t(sh.rows) + 1, -7.0f), rstd_ours(size_t(sh.rows) + 1, -7.0f);
            Codes codes_ref, codes_ours;
            codes_ref.scale = codes_ours.scale = variant == 2 ? 1.0e6f : 3.0f;
            const int32_t q_dtype = variant == 2 ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3;
            const bool q_row = variant == 1 || variant == 2, q_col = variant == 1 || variant == 3;
            octet_quantize_args q_ref = codes_ref.args(sh.rows, sh.cols, q_dtype, q_row, q_col);
            octet_quantize_args q_ours = codes_ours.args(sh.rows, sh.cols, q_dtype, q_row, q_col);
            octet_norm_forward_args a{};
            a.struct_size = sizeof a;
            a.kind = kind;
            a.epsilon = variant == 3 ? 0.0f : 1e-5f;
            a.input = x.view;
            a.gamma = gamma.view;
            a.beta = variant == 1 ? octet_matrix_view{nullptr, out_dtype, 0, 1, sh.cols, sh.cols} : beta.view;
            a.output = y_ref.view;
            if (variant == 1) a.output.data = nullptr;
            a.mean_out = mean_ref.data();
            a.rstd_out = rstd_ref.data();
            a.quantize = variant == 0 ? nullptr : &q_ref;
            ASSERT_EQ(ref.api().norm_forward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
            model_norm_forward(a, mean_ours, rstd_ours, variant == 1 ? nullptr : &y_ours, &codes_ours,
                               variant == 0 ? nullptr : &q_ours);
            expect_bytes(mean_ours.data(), mean_ref.data(), mean_ref.size() * 4, "mean");
            expect_bytes(rstd_ours.data(), rstd_ref.data(), rstd_ref.size() * 4, "rstd");
            expect_bytes(y_ours.bytes.data(), y_ref.bytes.data(), y_ref.bytes.size(), "y");
            expect_bytes(codes_ours.rowwise.data(), codes_ref.rowwise.data(), codes_ref.rowwise.size(), "rowwise codes");
            expect_bytes(codes_ours.columnwise.data(), codes_ref.columnwise.data(), codes_ref.columnwise.size(),
                         "columnwise codes");
            EXPECT_EQ(hex(bits_of(codes_ours.scale_inv)), hex(bits_of(codes_ref.scale_inv))) << "scale_inv";
            EXPECT_EQ(hex(bits_of(codes_ours.amax)), hex(bits_of(codes_ref.amax))) << "amax";
          }
}

TEST(CudaLayerMathOnHost, NormBackwardModelMatchesTheReference) {
  Reference ref;
  ASSERT_NE(ref.context(), nullptr) << ref.errors();
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16})
        for (bool specials_in_dy : {false, true}) {
          SCOPED_TRACE("norm_backward " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " kind " +
                       std::to_string(kind) + " dtype " + std::to_string(dtype) + (specials_in_dy ? " specials" : ""));
          const bool layernorm = kind == OCTET_NORM_LAYERNORM;
          const HostMatrix x = test_matrix(dtype, sh.rows, sh.cols, sh.cols + sh.pad, 21, true);
          const HostMatrix dy = test_matrix(dtype, sh.rows, sh.cols, sh.cols, 22, specials_in_dy);
          const HostMatrix gamma = test_matrix(dtype, 1, sh.cols, sh.cols, 23, false);
          std::vector<float> mean(size_t(sh.rows) + 1), rstd(size_t(sh.rows) + 1);
          {
            octet_norm_forward_args f{};
            f.struct_size = sizeof f;
            f.kind = kind;
            f.epsilon = 1e-5f;
            f.input = x.view;
            f.gamma = gamma.view;
            f.beta = octet_matrix_view{nullptr, dtype, 0, 1, sh.cols, sh.cols};
            f.output = octet_matrix_view{nullptr, dtype, 0, sh.rows, sh.cols, sh.cols};
            f.mean_out = mean.data();
            f.rstd_out = rstd.data();
            ASSERT_EQ(ref.api().norm_forward(ref.context(), &f), OCTET_STATUS_SUCCESS) << ref.errors();
          }
          HostMatrix dx_ref(dtype, sh.rows, sh.cols, sh.cols + 2), dx_ours(dtype, sh.rows, sh.cols, sh.cols + 2);
          std::vector<float> dgamma_ref(size_t(sh.cols) + 1, -3.0f), dbeta_ref(size_t(sh.cols) + 1, -3.0f);
          octet_norm_backward_args a{};
          a.struct_size = sizeof a;
          a.kind = kind;
          a.input = x.view;
          a.grad_output = dy.view;
          a.gamma = gamma.view;
          a.mean = mean.data();
          a.rstd = rstd.data();
          a.grad_input = dx_ref.view;
          a.dgamma_out = dgamma_ref.data();
          a.dbeta_out = dbeta_ref.data();
          ASSERT_EQ(ref.api().norm_backward(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
          // The kernels: columns (rows in order), then rows (left to right).
          std::vector<float> dgamma(size_t(sh.cols) + 1, -3.0f), dbeta(size_t(sh.cols) + 1, -3.0f);
          for (int64_t c = 0; c < sh.cols; ++c) {
            float dg = 0.0f, db = 0.0f;
            for (int64_t r = 0; r < sh.rows; ++r) {
              const float m = layernorm ? mean[size_t(r)] : 0.0f;
              dg = lm::dgamma_step(dg, x.at(r, c), dy.at(r, c), m, rstd[size_t(r)], layernorm);
              db = lm::sum_step(db, dy.at(r, c));
            }
            dgamma[size_t(c)] = dg;
            dbeta[size_t(c)] = db;
          }
          for (int64_t r = 0; r < sh.rows; ++r) {
            const float m = layernorm ? mean[size_t(r)] : 0.0f, s = rstd[size_t(r)];
            lm::BackwardSums sums{0.0f, 0.0f};
            for (int64_t c = 0; c < sh.cols; ++c) lm::backward_row_step(sums, x.at(r, c), dy.at(r, c), gamma.at(0, c), m, s, layernorm);
            const float mean_g = lm::mean_of(sums.sum_g, sh.cols), mean_gx = lm::mean_of(sums.sum_gx, sh.cols);
            for (int64_t c = 0; c < sh.cols; ++c) {
              dx_ours.set(r, c, lm::norm_input_grad(x.at(r, c), dy.at(r, c), gamma.at(0, c), m, s, mean_g, mean_gx, layernorm));
            }
          }
          expect_bytes(dx_ours.bytes.data(), dx_ref.bytes.data(), dx_ref.bytes.size(), "dx");
          expect_bytes(dgamma.data(), dgamma_ref.data(), dgamma.size() * 4, "dgamma");
          expect_bytes(dbeta.data(), dbeta_ref.data(), dbeta.size() * 4, "dbeta");
        }
}

TEST(CudaLayerMathOnHost, BiasGradientAndAccumulateModelsMatchTheReference) {
  Reference ref;
  ASSERT_NE(ref.context(), nullptr) << ref.errors();
  for (const Shape& sh : kShapes)
    for (int32_t dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
      SCOPED_TRACE("bias_gradient/accumulate " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + " dtype " +
                   std::to_string(dtype));
      const HostMatrix dy = test_matrix(dtype, sh.rows, sh.cols, sh.cols + sh.pad, 41, true);
      std::vector<float> sums_ref(size_t(sh.cols) + 1, -5.0f);
      Codes codes_ref, codes_ours;
      codes_ref.scale = codes_ours.scale = 1000.0f;
      octet_quantize_args q = codes_ref.args(sh.rows, sh.cols, OCTET_DTYPE_E5M2, true, true);
      codes_ours.args(sh.rows, sh.cols, OCTET_DTYPE_E5M2, true, true);
      octet_bias_gradient_args a{};
      a.struct_size = sizeof a;
      a.grad_output = dy.view;
      a.sums_out = sums_ref.data();
      a.quantize = &q;
      ASSERT_EQ(ref.api().bias_gradient(ref.context(), &a), OCTET_STATUS_SUCCESS) << ref.errors();
      std::vector<float> sums(size_t(sh.cols) + 1, -5.0f);
      float amax = 0.0f;
      for (int64_t c = 0; c < sh.cols; ++c) {
        float sum = 0.0f;
        for (int64_t r = 0; r < sh.rows; ++r) {
          const float v = dy.at(r, c);
          sum = lm::sum_step(sum, v);
          amax = std::fmax(amax, lm::amax_candidate(v));
          const uint8_t code = lm::quantize_code(v, codes_ours.scale, false, true);
          codes_ours.rowwise[size_t(r * sh.cols + c)] = code;
          codes_ours.columnwise[size_t(c * sh.rows + r)] = code;
        }
        sums[size_t(c)] = sum;
      }
      expect_bytes(sums.data(), sums_ref.data(), sums.size() * 4, "sums");
      expect_bytes(codes_ours.rowwise.data(), codes_ref.rowwise.data(), codes_ref.rowwise.size(), "rowwise codes");
      expect_bytes(codes_ours.columnwise.data(), codes_ref.columnwise.data(), codes_ref.columnwise.size(),
                   "columnwise codes");
      EXPECT_EQ(hex(bits_of(octet_cuda::host_div(1.0f, codes_ours.scale))), hex(bits_of(codes_ref.scale_inv))) << "scale_inv";
      EXPECT_EQ(hex(bits_of(amax)), hex(bits_of(codes_ref.amax))) << "amax";

      // accumulate: y = x + y with NaNs on both sides.
      const HostMatrix y0 = test_matrix(OCTET_DTYPE_FP32, sh.rows, sh.cols, sh.cols + 1, 42, true);
      HostMatrix y_ref = y0, y_ours = y0;
      y_ref.view.data = y_ref.bytes.data();
      y_ours.view.data = y_ours.bytes.data();
      ASSERT_EQ(ref.api().accumulate(ref.context(), &dy.view, &y_ref.view, 1), OCTET_STATUS_SUCCESS) << ref.errors();
      for (int64_t r = 0; r < sh.rows; ++r)
        for (int64_t c = 0; c < sh.cols; ++c) y_ours.set(r, c, octet_cuda::host_add(dy.at(r, c), y_ours.at(r, c)));
      expect_bytes(y_ours.bytes.data(), y_ref.bytes.data(), y_ref.bytes.size(), "accumulate");
    }
}

}  // namespace
