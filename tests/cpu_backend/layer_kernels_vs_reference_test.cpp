// The cpu plugin's ABI 1.2 layer kernels (norm forward/backward with and
// without the fused quantize, GELU/SwiGLU forward/backward, bias gradient
// with and without the fused cast+transpose, accumulate) against the
// reference's table, bit for bit: both tables are driven side by side with
// the same inputs (FP32, BF16, FP16; ragged shapes, padded leading
// dimensions, shapes large enough for the threaded paths) and every output
// byte is compared. This executable links the reference library itself (the
// oracle) and opens the cpu plugin with dlopen.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <octet/octet_backend.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "octet_reference/reference_backend.h"

namespace {

struct Table {
  const octet_backend_api* api = nullptr;
  octet_backend_context* ctx = nullptr;
  octet_host_services host{};
  octet_backend_caps caps{};
  std::vector<std::string> errors;
};

void record(void* data, int32_t, const char* message) {
  static_cast<std::vector<std::string>*>(data)->push_back(message);
}

octet_backend_entry_fn cpu_entry() {
  void* handle = dlopen(OCTET_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    std::fprintf(stderr, "cannot open %s: %s\n", OCTET_CPU_PLUGIN_PATH, dlerror());
    std::abort();
  }
  return reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
}

void open_table(Table& t, octet_backend_entry_fn entry) {
  ASSERT_NE(entry, nullptr);
  ASSERT_EQ(entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &t.api), OCTET_STATUS_SUCCESS);
  t.host.struct_size = sizeof t.host;
  t.host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
  t.host.abi_minor = OCTET_PLUGIN_ABI_MINOR;
  t.host.report_error = record;
  t.host.host_data = &t.errors;
  t.caps.struct_size = sizeof t.caps;
  ASSERT_EQ(t.api->initialize(&t.host, &t.caps), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(t.api->context_create(nullptr, &t.ctx), OCTET_STATUS_SUCCESS);
}

size_t esize(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: return 2;
    default: return 1;
  }
}

const char* dname(int32_t d) {
  switch (d) {
    case OCTET_DTYPE_FP32: return "fp32";
    case OCTET_DTYPE_BF16: return "bf16";
    case OCTET_DTYPE_FP16: return "fp16";
    default: return "other";
  }
}

// A matrix in host memory (both backends are host backends).
struct Buf {
  std::vector<float> storage;  // 4-byte aligned bytes
  octet_matrix_view view{};
  Buf() = default;
  Buf(int32_t dtype, int64_t rows, int64_t cols, int64_t ld) {
    const size_t bytes = size_t(std::max<int64_t>(rows, 1) * ld) * esize(dtype);
    storage.assign((bytes + 3) / 4 + 1, 0.0f);
    std::memset(storage.data(), 0xA5, storage.size() * 4);  // garbage, the same on both sides
    view = octet_matrix_view{storage.data(), dtype, 0, rows, cols, ld};
  }
  Buf(const Buf& o) : storage(o.storage), view(o.view) { view.data = storage.data(); }
  Buf& operator=(const Buf& o) {
    storage = o.storage;
    view = o.view;
    view.data = storage.data();
    return *this;
  }
  std::vector<unsigned char> bytes() const {
    const auto* p = reinterpret_cast<const unsigned char*>(storage.data());
    return std::vector<unsigned char>(p, p + storage.size() * 4);
  }
};

class LayerKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    open_table(ref, octet_reference_backend_entry);
    open_table(cpu, cpu_entry());
    ASSERT_NE(cpu.api->norm_forward, nullptr);
    ASSERT_NE(cpu.api->norm_backward, nullptr);
    ASSERT_NE(cpu.api->activation_forward, nullptr);
    ASSERT_NE(cpu.api->activation_backward, nullptr);
    ASSERT_NE(cpu.api->bias_gradient, nullptr);
    ASSERT_NE(cpu.api->accumulate, nullptr);
  }
  void TearDown() override {
    for (Table* t : {&ref, &cpu}) {
      t->api->context_destroy(t->ctx);
      if (t->api->shutdown) t->api->shutdown();
      for (const std::string& e : t->errors) ADD_FAILURE() << "reported: " << e;
    }
  }

  // Random values (a mix of magnitudes, offset per row so means matter),
  // stored in `dtype` through the reference's convert.
  Buf random(int32_t dtype, int64_t rows, int64_t cols, int64_t ld, uint32_t seed, float offset = 0.5f) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Buf f32(OCTET_DTYPE_FP32, rows, cols, ld);
    auto* p = static_cast<float*>(f32.view.data);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        float v = normal(gen) * (1.0f + float(r % 5)) + offset * float(r % 3);
        if ((r * 31 + c) % 97 == 0) v *= 40.0f;
        p[r * ld + c] = v;
      }
    if (dtype == OCTET_DTYPE_FP32) return f32;
    Buf out(dtype, rows, cols, ld);
    EXPECT_EQ(ref.api->convert(ref.ctx, &f32.view, &out.view, 1), OCTET_STATUS_SUCCESS);
    return out;
  }

  Table ref, cpu;
};

struct Shape {
  int64_t rows, cols, pad;
};
const Shape kShapes[] = {{1, 1, 0}, {3, 7, 2}, {17, 33, 0}, {67, 131, 5}, {300, 777, 3}, {64, 1536, 0}};

void expect_same(const std::vector<unsigned char>& a, const std::vector<unsigned char>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t diffs = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) {
      if (diffs == 0) first = i;
      ++diffs;
    }
  EXPECT_EQ(diffs, 0u) << what << ": first differing byte " << first;
}

template <typename T>
std::vector<unsigned char> raw(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  return std::vector<unsigned char>(p, p + v.size() * sizeof(T));
}

const int32_t kDtypes[] = {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16};

// The FP8 outputs of a fused quantize, one set per backend.
struct QuantOut {
  std::vector<uint8_t> rowwise, columnwise;
  std::vector<float> scale_inv{-1.0f}, amax{-1.0f};
  float scale = 1.0f;
  octet_quantize_args args(int64_t rows, int64_t cols, int32_t dtype, bool both) {
    rowwise.assign(size_t(rows * cols), 0x5A);
    columnwise.assign(both ? size_t(rows * cols) : 0, 0x5A);
    octet_quantize_args q{};
    q.struct_size = sizeof q;
    q.out_dtype = dtype;
    q.saturate = 1;
    q.scale = &scale;
    q.rowwise_out = rowwise.data();
    q.columnwise_out = both ? columnwise.data() : nullptr;
    q.scale_inv_out = scale_inv.data();
    q.amax_out = amax.data();
    return q;
  }
  void expect_equal(const QuantOut& o, const std::string& what) const {
    expect_same(raw(rowwise), raw(o.rowwise), what + " rowwise codes");
    expect_same(raw(columnwise), raw(o.columnwise), what + " columnwise codes");
    expect_same(raw(scale_inv), raw(o.scale_inv), what + " scale_inv");
    expect_same(raw(amax), raw(o.amax), what + " amax");
  }
};

TEST_F(LayerKernels, NormForwardBitForBit) {
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t in_dtype : kDtypes)
        for (int32_t out_dtype : kDtypes)
          for (int variant = 0; variant < 4; ++variant) {
            // variant: 0 plain; 1 no beta / output not stored + fused E4M3 both
            // usages; 2 stored output + fused E5M2 rowwise; 3 tiny epsilon.
            // With an FP16 output the fused quantize is E4M3FNUZ / E5M2FNUZ,
            // where the plugin under test declares them.
            const bool fnuz = out_dtype == OCTET_DTYPE_FP16 &&
                              (cpu.caps.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ)) != 0 &&
                              (cpu.caps.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ)) != 0;
            const std::string what = "norm_forward " + std::to_string(sh.rows) + "x" +
                                     std::to_string(sh.cols) + " kind " + std::to_string(kind) +
                                     " " + dname(in_dtype) + "->" + dname(out_dtype) + " variant " +
                                     std::to_string(variant);
            SCOPED_TRACE(what);
            const Buf x = random(in_dtype, sh.rows, sh.cols, sh.cols + sh.pad, 11);
            const Buf gamma = random(in_dtype, 1, sh.cols, sh.cols, 12, 0.0f);
            const Buf beta = random(out_dtype, 1, sh.cols, sh.cols, 13, 0.0f);
            Buf out[2];
            std::vector<float> mean[2], rstd[2];
            QuantOut q[2];
            for (int side = 0; side < 2; ++side) {
              Table& t = side == 0 ? ref : cpu;
              out[side] = Buf(out_dtype, sh.rows, sh.cols, sh.cols + 1);
              mean[side].assign(size_t(sh.rows), -7.0f);
              rstd[side].assign(size_t(sh.rows), -7.0f);
              octet_norm_forward_args a{};
              a.struct_size = sizeof a;
              a.kind = kind;
              a.epsilon = variant == 3 ? 1e-12f : 1e-5f;
              a.input = x.view;
              a.gamma = gamma.view;
              a.beta = variant == 1 ? octet_matrix_view{nullptr, out_dtype, 0, 1, sh.cols, sh.cols}
                                    : beta.view;
              a.output = out[side].view;
              if (variant == 1) a.output.data = nullptr;
              a.mean_out = mean[side].data();
              a.rstd_out = rstd[side].data();
              octet_quantize_args qa{};
              if (variant == 1)
                qa = q[side].args(sh.rows, sh.cols, fnuz ? OCTET_DTYPE_E4M3FNUZ : OCTET_DTYPE_E4M3, true);
              if (variant == 2)
                qa = q[side].args(sh.rows, sh.cols, fnuz ? OCTET_DTYPE_E5M2FNUZ : OCTET_DTYPE_E5M2, false);
              if (variant == 1 || variant == 2) {
                q[side].scale = variant == 1 ? 3.0f : 0.25f;
                a.quantize = &qa;
              }
              ASSERT_EQ(t.api->norm_forward(t.ctx, &a), OCTET_STATUS_SUCCESS);
            }
            expect_same(out[0].bytes(), out[1].bytes(), "y");
            expect_same(raw(mean[0]), raw(mean[1]), "mean");
            expect_same(raw(rstd[0]), raw(rstd[1]), "rstd");
            q[0].expect_equal(q[1], "fused quantize");
          }
}

TEST_F(LayerKernels, NormBackwardBitForBit) {
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_NORM_LAYERNORM, OCTET_NORM_RMSNORM})
      for (int32_t dtype : kDtypes)
        for (bool with_dbeta : {true, false}) {
          SCOPED_TRACE("norm_backward " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) +
                       " kind " + std::to_string(kind) + " " + dname(dtype) +
                       (with_dbeta ? " dbeta" : ""));
          const Buf x = random(dtype, sh.rows, sh.cols, sh.cols + sh.pad, 21);
          const Buf dy = random(dtype, sh.rows, sh.cols, sh.cols, 22, 0.1f);
          const Buf gamma = random(dtype, 1, sh.cols, sh.cols, 23, 0.0f);
          // mean and rstd from the reference's forward.
          std::vector<float> mean(size_t(sh.rows)), rstd(size_t(sh.rows));
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
            ASSERT_EQ(ref.api->norm_forward(ref.ctx, &f), OCTET_STATUS_SUCCESS);
          }
          Buf dx[2];
          std::vector<float> dgamma[2], dbeta[2];
          for (int side = 0; side < 2; ++side) {
            Table& t = side == 0 ? ref : cpu;
            dx[side] = Buf(dtype, sh.rows, sh.cols, sh.cols + 2);
            dgamma[side].assign(size_t(sh.cols), -3.0f);
            dbeta[side].assign(size_t(sh.cols), -3.0f);
            octet_norm_backward_args a{};
            a.struct_size = sizeof a;
            a.kind = kind;
            a.input = x.view;
            a.grad_output = dy.view;
            a.gamma = gamma.view;
            a.mean = mean.data();
            a.rstd = rstd.data();
            a.grad_input = dx[side].view;
            a.dgamma_out = dgamma[side].data();
            a.dbeta_out = with_dbeta ? dbeta[side].data() : nullptr;
            ASSERT_EQ(t.api->norm_backward(t.ctx, &a), OCTET_STATUS_SUCCESS);
          }
          expect_same(dx[0].bytes(), dx[1].bytes(), "dx");
          expect_same(raw(dgamma[0]), raw(dgamma[1]), "dgamma");
          expect_same(raw(dbeta[0]), raw(dbeta[1]), "dbeta");
        }
}

// activation_forward (x -> y), then activation_backward (x, dy -> dx) on
// one table.
void run_activation(Table& t, int32_t kind, const Buf& x, const Buf& dy, Buf& y, Buf& dx) {
  octet_activation_args a{};
  a.struct_size = sizeof a;
  a.kind = kind;
  a.input = x.view;
  a.output = y.view;
  ASSERT_EQ(t.api->activation_forward(t.ctx, &a), OCTET_STATUS_SUCCESS);
  a.output = octet_matrix_view{};
  a.grad_output = dy.view;
  a.grad_input = dx.view;
  ASSERT_EQ(t.api->activation_backward(t.ctx, &a), OCTET_STATUS_SUCCESS);
}

TEST_F(LayerKernels, ActivationsBitForBit) {
  for (const Shape& sh : kShapes)
    for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU})
      for (int32_t in_dtype : kDtypes)
        for (int32_t out_dtype : kDtypes) {
          SCOPED_TRACE("activation " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) +
                       " kind " + std::to_string(kind) + " " + dname(in_dtype) + "->" +
                       dname(out_dtype));
          const bool swiglu = kind == OCTET_ACTIVATION_SWIGLU;
          const int64_t n = sh.cols, in_cols = swiglu ? 2 * n : n;
          const Buf x = random(in_dtype, sh.rows, in_cols, in_cols + sh.pad, 31, 0.0f);
          const Buf dy = random(out_dtype, sh.rows, n, n, 32, 0.0f);
          Buf y[2], dx[2];
          for (int side = 0; side < 2; ++side) {
            Table& t = side == 0 ? ref : cpu;
            y[side] = Buf(out_dtype, sh.rows, n, n + 3);
            dx[side] = Buf(out_dtype, sh.rows, in_cols, in_cols);
            run_activation(t, kind, x, dy, y[side], dx[side]);
          }
          expect_same(y[0].bytes(), y[1].bytes(), "y");
          expect_same(dx[0].bytes(), dx[1].bytes(), "dx");
        }
}

// FP32 bit patterns for the activations' edge cases: a stride through the
// whole FP32 line (every exponent, both signs, subnormals, infinities and
// NaNs with many payloads), the branch points of tanhf and expf (GELU's
// tanh argument is about 0.8 x, SwiGLU's exponent is -a), and ranges around
// them, shuffled with `seed` so that NaNs land beside finite values and at
// every position of a vector.
std::vector<uint32_t> activation_patterns(uint32_t seed) {
  std::vector<uint32_t> v;
  for (uint64_t i = 0; i < (uint64_t(1) << 32); i += 65521) v.push_back(uint32_t(i * 2654435761u + seed));
  const float points[] = {0.0f,   1.5258789e-5f, 2.4414062e-4f, 3.0e-4f, 0.5f,         1.0f,   3.0f,
                          9.5f,   11.9f,         12.0f,         88.0f,   88.72f,       88.73f, 100.0f,
                          103.9f, 104.0f,        105.0f,        1.0e20f, 3.4028235e38f};
  for (float p : points)
    for (float sgn : {1.0f, -1.0f}) {
      uint32_t b;
      const float x = sgn * p;
      std::memcpy(&b, &x, 4);
      for (int d = -40; d <= 40; ++d) v.push_back(b + uint32_t(d));
    }
  for (uint32_t special : {0x00000001u, 0x80000001u, 0x007FFFFFu, 0x00800000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
                           0xFFC00000u, 0x7F800001u, 0xFF800001u, 0x7FA5A5A5u, 0xFFC0BEEFu})
    v.push_back(special);
  std::mt19937 gen(seed);
  std::shuffle(v.begin(), v.end(), gen);
  return v;
}

// Every output bit of GELU and SwiGLU, forward and backward, equals the
// reference's on the patterns above (FP32 in and out): finite values in
// every branch of tanhf and expf, overflow, infinities, and NaNs, alone
// or two different ones in the same element (x and dy, a and b), where the
// NaN rule of numerics.md section 13 picks the result. Rows of 67 columns,
// so every row has a partial vector at its end.
TEST_F(LayerKernels, ActivationsBitForBitOnEveryKindOfValue) {
  const std::vector<uint32_t> xs = activation_patterns(1), gs = activation_patterns(2);
  for (int32_t kind : {OCTET_ACTIVATION_GELU, OCTET_ACTIVATION_SWIGLU}) {
    SCOPED_TRACE(kind == OCTET_ACTIVATION_GELU ? "gelu" : "swiglu");
    const bool swiglu = kind == OCTET_ACTIVATION_SWIGLU;
    const int64_t n = 67, in_cols = swiglu ? 2 * n : n, rows = int64_t(xs.size()) / in_cols;
    Buf x(OCTET_DTYPE_FP32, rows, in_cols, in_cols), dy(OCTET_DTYPE_FP32, rows, n, n);
    std::memcpy(x.storage.data(), xs.data(), size_t(rows * in_cols) * 4);
    std::memcpy(dy.storage.data(), gs.data(), size_t(rows * n) * 4);
    Buf y[2], dx[2];
    for (int side = 0; side < 2; ++side) {
      Table& t = side == 0 ? ref : cpu;
      y[side] = Buf(OCTET_DTYPE_FP32, rows, n, n);
      dx[side] = Buf(OCTET_DTYPE_FP32, rows, in_cols, in_cols);
      run_activation(t, kind, x, dy, y[side], dx[side]);
    }
    for (const auto& [out, what] : {std::pair<const Buf*, const char*>{y, "y"}, {dx, "dx"}}) {
      const auto* r = reinterpret_cast<const uint32_t*>(out[0].storage.data());
      const auto* c = reinterpret_cast<const uint32_t*>(out[1].storage.data());
      const int64_t count = out[0].view.rows * out[0].view.cols;
      int64_t diffs = 0;
      for (int64_t i = 0; i < count; ++i)
        if (r[i] != c[i] && ++diffs <= 5) {
          const int64_t row = i / out[0].view.cols, col = i % out[0].view.cols;
          ADD_FAILURE() << what << "[" << row << ", " << col << "]: reference 0x" << std::hex << r[i] << ", cpu 0x"
                        << c[i] << ", x 0x" << xs[size_t(row * in_cols + col % n)] << std::dec;
        }
      EXPECT_EQ(diffs, 0) << what << " elements differ, of " << count;
    }
  }
}

TEST_F(LayerKernels, BiasGradientBitForBitWithAndWithoutFusedQuantize) {
  for (const Shape& sh : kShapes)
    for (int32_t dtype : kDtypes)
      for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE("bias_gradient " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) +
                     " " + dname(dtype) + " variant " + std::to_string(variant));
        const Buf dy = random(dtype, sh.rows, sh.cols, sh.cols + sh.pad, 41, 0.3f);
        std::vector<float> sums[2];
        QuantOut q[2];
        for (int side = 0; side < 2; ++side) {
          Table& t = side == 0 ? ref : cpu;
          sums[side].assign(size_t(sh.cols), -5.0f);
          octet_bias_gradient_args a{};
          a.struct_size = sizeof a;
          a.grad_output = dy.view;
          a.sums_out = sums[side].data();
          octet_quantize_args qa{};
          if (variant > 0) {
            qa = q[side].args(sh.rows, sh.cols, variant == 1 ? OCTET_DTYPE_E5M2 : OCTET_DTYPE_E4M3,
                              variant == 1);
            q[side].scale = variant == 1 ? 1000.0f : 2.0f;  // 1000: saturates some
            a.quantize = &qa;
          }
          ASSERT_EQ(t.api->bias_gradient(t.ctx, &a), OCTET_STATUS_SUCCESS);
        }
        expect_same(raw(sums[0]), raw(sums[1]), "sums");
        q[0].expect_equal(q[1], "fused quantize");
      }
}

TEST_F(LayerKernels, AccumulateBitForBit) {
  for (const Shape& sh : kShapes)
    for (int32_t xd : kDtypes)
      for (int32_t yd : kDtypes)
        for (int32_t acc : {0, 1}) {
          SCOPED_TRACE("accumulate " + std::to_string(sh.rows) + "x" + std::to_string(sh.cols) +
                       " " + dname(xd) + "->" + dname(yd) + " acc " + std::to_string(acc));
          const Buf x = random(xd, sh.rows, sh.cols, sh.cols + sh.pad, 51);
          const Buf y0 = random(yd, sh.rows, sh.cols, sh.cols + 1, 52);
          Buf y[2] = {y0, y0};
          for (int side = 0; side < 2; ++side) {
            Table& t = side == 0 ? ref : cpu;
            ASSERT_EQ(t.api->accumulate(t.ctx, &x.view, &y[side].view, acc), OCTET_STATUS_SUCCESS);
          }
          expect_same(y[0].bytes(), y[1].bytes(), "y");
        }
}

// A sanity check that the comparison can fail: the kernels change their
// output, and differently shaped problems give different bits.
TEST_F(LayerKernels, OutputsAreWritten) {
  const Buf x = random(OCTET_DTYPE_FP32, 5, 9, 9, 61);
  Buf y(OCTET_DTYPE_FP32, 5, 9, 9);
  const auto before = y.bytes();
  octet_activation_args a{};
  a.struct_size = sizeof a;
  a.kind = OCTET_ACTIVATION_GELU;
  a.input = x.view;
  a.output = y.view;
  ASSERT_EQ(cpu.api->activation_forward(cpu.ctx, &a), OCTET_STATUS_SUCCESS);
  EXPECT_NE(before, y.bytes());
  const float v = static_cast<const float*>(y.view.data)[0];
  const float in = static_cast<const float*>(x.view.data)[0];
  EXPECT_NEAR(v, 0.5 * in * (1 + std::tanh(0.7978845608 * (in + 0.044715 * in * in * in))), 1e-5);
}

// Bad arguments are reported, naming the argument, never crash.
TEST_F(LayerKernels, BadArgumentsAreReported) {
  octet_norm_forward_args a{};
  a.struct_size = sizeof a;
  a.kind = 5;
  EXPECT_EQ(cpu.api->norm_forward(cpu.ctx, &a), OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(cpu.errors.size(), 1u);
  EXPECT_NE(cpu.errors[0].find("kind"), std::string::npos) << cpu.errors[0];
  cpu.errors.clear();
  EXPECT_NE(cpu.api->bias_gradient(cpu.ctx, nullptr), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(cpu.errors.size(), 1u);
  cpu.errors.clear();
  const Buf x = random(OCTET_DTYPE_FP32, 4, 5, 5, 71);
  octet_activation_args s{};
  s.struct_size = sizeof s;
  s.kind = OCTET_ACTIVATION_SWIGLU;
  s.input = x.view;
  Buf y(OCTET_DTYPE_FP32, 4, 2, 2);
  s.output = y.view;
  EXPECT_EQ(cpu.api->activation_forward(cpu.ctx, &s), OCTET_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(cpu.errors.size(), 1u);
  EXPECT_NE(cpu.errors[0].find("even"), std::string::npos) << cpu.errors[0];
  cpu.errors.clear();
}

}  // namespace
