// The opencl plugin (plugins/opencl) through octet.h: the core's
// device-memory paths (allocation, copies to and from the device, components
// at offsets, wrapped device pointers, a caller's queue, work queued without
// waiting) on PoCL's CPU device. Expected values come from the embedded
// reference, an independent implementation, or are computed here.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <octet/octet_backend.h>
#include <octet/octet_dlpack.h>
#include <octet/octet.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using ::testing::HasSubstr;

struct ContextDeleter {
  void operator()(octet_context* c) const { octet_context_destroy(c); }
};
using Context = std::unique_ptr<octet_context, ContextDeleter>;
using Tensor = octet::Tensor;  // adopt() for a handle a C call created

Context make_context(const char* backend, void* stream = nullptr) {
  octet_context_options options{};
  octet_context_options_init(&options);
  options.backend = backend;
  options.stream = stream;
  octet_context* raw = nullptr;
  EXPECT_EQ(octet_context_create(&options, &raw), OCTET_STATUS_SUCCESS)
      << backend << ": " << octet_last_error_message();
  return Context(raw);
}

// By hand for octet_tensor_wrap on a context handle and for the refusals of
// octet_tensor_create; make_tensor goes through octet::Tensor::create.
octet_tensor_desc desc_of(int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0) {
  octet_tensor_desc desc{};
  desc.struct_size = sizeof desc;
  desc.dtype = dtype;
  desc.ndim = 2;
  desc.shape[0] = rows;
  desc.shape[1] = cols;
  desc.usages = usages;
  desc.scaling_mode = OCTET_SCALING_PER_TENSOR;
  return desc;
}

// A per-tensor (or plain) tensor; a failure to create it fails the test
// (octet::Error).
Tensor make_tensor(octet_context* ctx, int32_t dtype, int64_t rows, int64_t cols, uint32_t usages = 0) {
  return octet::Tensor::create(ctx, dtype, {rows, cols}, usages, OCTET_SCALING_PER_TENSOR);
}

std::vector<uint8_t> read(const octet_tensor* t, int32_t component, size_t bytes) {
  std::vector<uint8_t> out(bytes, 0xA5);
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, out.data(), bytes), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return out;
}

float read_float(const octet_tensor* t, int32_t component) {
  float value = -1.0f;
  EXPECT_EQ(octet_tensor_copy_to_host(t, component, &value, sizeof value), OCTET_STATUS_SUCCESS)
      << octet_last_error_message();
  return value;
}

void write(octet_tensor* t, int32_t component, const void* src, size_t bytes) {
  ASSERT_EQ(octet_tensor_copy_from_host(t, component, src, bytes), OCTET_STATUS_SUCCESS) << octet_last_error_message();
}

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Every BF16 pattern widened to FP32 (every FP32 class: zeros, subnormals,
// normals, infinities, NaNs, both signs) then random FP32 patterns.
std::vector<float> every_class(size_t random_count) {
  std::vector<float> v;
  for (uint32_t code = 0; code < 65536; ++code) v.push_back(from_bits(code << 16));
  std::mt19937 rng(17);
  for (size_t i = 0; i < random_count; ++i) v.push_back(from_bits(uint32_t(rng())));
  return v;
}

// Quantizes x (FP32, rows x cols) into E4M3/E5M2 with both usages and the
// given scale on ctx; returns the output tensor.
Tensor quantize_on(octet_context* ctx, const std::vector<float>& x, int64_t rows, int64_t cols, int32_t dtype,
                   float scale, int32_t saturate) {
  Tensor in = make_tensor(ctx, OCTET_DTYPE_FP32, rows, cols);
  write(in.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
  Tensor out = make_tensor(ctx, dtype, rows, cols, OCTET_USAGE_ROWWISE | OCTET_USAGE_COLUMNWISE);
  write(out.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale);
  octet_quantize_options options{};
  octet_quantize_options_init(&options);
  options.saturate = saturate;
  EXPECT_EQ(octet_quantize(ctx, in.get(), out.get(), &options), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  return out;
}

// The codes of a quantized tensor's usages: rowwise, then columnwise
// ([cols, rows]; the reference reads columns natively, so transpose its
// rowwise codes).
std::vector<uint8_t> columnwise_codes(const octet_tensor* t, int64_t rows, int64_t cols) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  EXPECT_EQ(octet_tensor_get_info(t, &info), OCTET_STATUS_SUCCESS);
  const size_t n = size_t(rows * cols);
  if (info.has_columnwise_data) return read(t, OCTET_COMPONENT_COLUMNWISE_DATA, n);
  const std::vector<uint8_t> rowwise = read(t, OCTET_COMPONENT_DATA, n);
  std::vector<uint8_t> out(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[size_t(c * rows + r)] = rowwise[size_t(r * cols + c)];
  return out;
}

// The plugin's own table (the core has loaded and initialized it: the same
// library, so the same device and address table).
const octet_backend_api* plugin_api() {
  void* handle = dlopen(OCTET_TEST_OPENCL_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  auto entry = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  const octet_backend_api* api = nullptr;
  if (entry == nullptr || entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api) != OCTET_STATUS_SUCCESS)
    return nullptr;
  dlclose(handle);  // the core keeps it loaded
  return api;
}

class OpenclBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = make_context("opencl");
    ASSERT_NE(ctx_, nullptr) << "the opencl backend (OCTET_BACKEND_PATH) did not load";
    ref_ = make_context("reference");
  }
  Context ctx_;
  Context ref_;
};

TEST_F(OpenclBackend, DeclaresDeviceMemoryAndWhatItRuns) {
  size_t count = 0;
  ASSERT_EQ(octet_backend_count(&count), OCTET_STATUS_SUCCESS);
  bool found = false;
  for (size_t i = 0; i < count; ++i) {
    octet_backend_info info{};
    info.struct_size = sizeof info;
    ASSERT_EQ(octet_backend_get_info(i, &info), OCTET_STATUS_SUCCESS);
    if (std::string(info.name) != "opencl") continue;
    found = true;
    EXPECT_EQ(info.memory_kind, OCTET_MEMORY_DEVICE);
    EXPECT_EQ(info.available, 1) << info.unavailable_reason;
    EXPECT_EQ(info.scaling_modes, uint32_t(OCTET_SCALING_PER_TENSOR));
    EXPECT_EQ(info.fp8_gemm_layouts, uint32_t(OCTET_GEMM_LAYOUT_ALL));
    const uint32_t has = OCTET_FEATURE_CONVERT | OCTET_FEATURE_AMAX | OCTET_FEATURE_QUANTIZE |
                         OCTET_FEATURE_FUSED_CAST_TRANSPOSE | OCTET_FEATURE_TRANSPOSE | OCTET_FEATURE_DEQUANTIZE |
                         OCTET_FEATURE_GEMM_FP8 | OCTET_FEATURE_GEMM_HIGH_PRECISION | OCTET_FEATURE_BIAS_GRADIENT |
                         OCTET_FEATURE_ACCUMULATE;
    EXPECT_EQ(info.features, has);
  }
  EXPECT_TRUE(found);
}

// A device address is no host memory: the host cannot read through it
// (the core must go through copy_to_host), and its bytes round-trip.
TEST_F(OpenclBackend, DeviceAddressesAreNotHostMemory) {
  const octet_backend_api* api = plugin_api();
  ASSERT_NE(api, nullptr);
  octet_backend_context* bctx = nullptr;
  ASSERT_EQ(api->context_create(nullptr, &bctx), OCTET_STATUS_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(api->mem_alloc(bctx, 4096, &p), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  std::vector<uint8_t> bytes(4096), back(4096, 0);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + 3);
  ASSERT_EQ(api->copy_from_host(bctx, p, bytes.data(), bytes.size()), OCTET_STATUS_SUCCESS);
  // A copy at an offset lands at that offset of the same buffer.
  const uint8_t marker[3] = {0xDE, 0xAD, 0x01};
  ASSERT_EQ(api->copy_from_host(bctx, static_cast<char*>(p) + 1000, marker, 3), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(api->copy_to_host(bctx, back.data(), p, back.size()), OCTET_STATUS_SUCCESS);
  std::memcpy(bytes.data() + 1000, marker, 3);
  EXPECT_EQ(back, bytes);
  // A copy past the end of the buffer is refused, not clipped.
  EXPECT_EQ(api->copy_to_host(bctx, back.data(), static_cast<char*>(p) + 4000, 200), OCTET_STATUS_INVALID_ARGUMENT);
  // The child re-runs this test alone ("threadsafe"): the OpenCL runtime has threads.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  volatile const uint8_t* host_view = static_cast<const uint8_t*>(p);
  EXPECT_DEATH((void)host_view[0], "") << "a device address must fault when the host reads it";
  api->mem_free(bctx, p);
  api->context_destroy(bctx);
}

// Bytes written to each component (the scalars live at offsets of one
// device buffer) come back unchanged; quantize writes SCALE_INV and AMAX
// there, as computed here.
TEST_F(OpenclBackend, ComponentsAtOffsetsOfDeviceBuffers) {
  const int64_t rows = 5, cols = 7;
  std::vector<float> x(size_t(rows * cols));
  float amax = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = float(int(i % 9) - 4) * 0.375f;
    amax = std::fmax(amax, std::fabs(x[i]));
  }
  Tensor q = quantize_on(ctx_.get(), x, rows, cols, OCTET_DTYPE_E4M3, 4.0f, 1);
  EXPECT_EQ(read_float(q.get(), OCTET_COMPONENT_SCALE), 4.0f);
  EXPECT_EQ(read_float(q.get(), OCTET_COMPONENT_SCALE_INV), 0.25f);
  EXPECT_EQ(read_float(q.get(), OCTET_COMPONENT_AMAX), amax);
  // Every x * 4 is 1.5 times an integer from -4 to 4: exact in E4M3.
  const std::vector<uint8_t> codes = read(q.get(), OCTET_COMPONENT_DATA, x.size());
  Tensor back = make_tensor(ctx_.get(), OCTET_DTYPE_FP32, rows, cols);
  ASSERT_EQ(octet_dequantize(ctx_.get(), q.get(), back.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  std::vector<float> y(x.size());
  ASSERT_EQ(octet_tensor_copy_to_host(back.get(), OCTET_COMPONENT_DATA, y.data(), y.size() * 4), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(y, x);
  // A component written alone leaves its neighbours as they were.
  const float amax_written = 123.0f;
  write(q.get(), OCTET_COMPONENT_AMAX, &amax_written, sizeof amax_written);
  EXPECT_EQ(read_float(q.get(), OCTET_COMPONENT_SCALE_INV), 0.25f);
  EXPECT_EQ(read_float(q.get(), OCTET_COMPONENT_AMAX), 123.0f);
  EXPECT_EQ(read(q.get(), OCTET_COMPONENT_DATA, x.size()), codes);
  // DLPack has no name for this memory: exporting it is refused.
  octet_dlpack_managed_tensor_versioned* managed = nullptr;
  EXPECT_EQ(octet_tensor_to_dlpack(q.get(), OCTET_COMPONENT_DATA, &managed), OCTET_STATUS_UNSUPPORTED);
  EXPECT_EQ(managed, nullptr);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("cannot describe in DLPack"));
}

// Every FP32 class, quantized into both formats, both overflow modes, both
// usages: the codes, SCALE_INV and AMAX are the reference's bit for bit (so
// the device keeps subnormals and rounds like the host).
TEST_F(OpenclBackend, QuantizeIsBitExactOnEveryClass) {
  const std::vector<float> x = every_class(65536);
  const int64_t rows = 512, cols = int64_t(x.size()) / 512;
  for (int32_t dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (int32_t saturate : {0, 1}) {
      for (float scale : {1.0f, 3.0f, 1.0f / 1024.0f}) {
        SCOPED_TRACE(std::to_string(dtype) + " saturate " + std::to_string(saturate) + " scale " +
                     std::to_string(scale));
        Tensor mine = quantize_on(ctx_.get(), x, rows, cols, dtype, scale, saturate);
        Tensor theirs = quantize_on(ref_.get(), x, rows, cols, dtype, scale, saturate);
        EXPECT_EQ(read(mine.get(), OCTET_COMPONENT_DATA, x.size()), read(theirs.get(), OCTET_COMPONENT_DATA, x.size()));
        EXPECT_EQ(columnwise_codes(mine.get(), rows, cols), columnwise_codes(theirs.get(), rows, cols));
        EXPECT_EQ(read(mine.get(), OCTET_COMPONENT_SCALE_INV, 4), read(theirs.get(), OCTET_COMPONENT_SCALE_INV, 4));
        EXPECT_EQ(read(mine.get(), OCTET_COMPONENT_AMAX, 4), read(theirs.get(), OCTET_COMPONENT_AMAX, 4));
      }
    }
  }
}

// A device pointer from the backend wrapped as a tensor: the core passes it
// on without touching it; host memory wrapped on this backend is refused by
// the plugin, naming the argument and the rule.
TEST_F(OpenclBackend, WrapsDevicePointersAndRefusesHostMemory) {
  const octet_backend_api* api = plugin_api();
  ASSERT_NE(api, nullptr);
  octet_backend_context* bctx = nullptr;
  ASSERT_EQ(api->context_create(nullptr, &bctx), OCTET_STATUS_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(api->mem_alloc(bctx, 16 * 16 * 4, &p), OCTET_STATUS_SUCCESS);
  {
    const octet_tensor_desc desc = desc_of(OCTET_DTYPE_FP32, 16, 16);
    octet_tensor* raw = nullptr;
    ASSERT_EQ(octet_tensor_wrap(ctx_.get(), &desc, p, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    Tensor wrapped = Tensor::adopt(raw);
    std::vector<float> x(256);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i) - 200.5f;
    write(wrapped.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
    std::vector<float> direct(256, 0.0f);
    ASSERT_EQ(api->copy_to_host(bctx, direct.data(), p, direct.size() * 4), OCTET_STATUS_SUCCESS);
    EXPECT_EQ(direct, x);
    float amax = 0.0f;
    ASSERT_EQ(octet_amax(ctx_.get(), wrapped.get(), &amax), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    EXPECT_EQ(amax, 200.5f);
  }
  api->mem_free(bctx, p);
  api->context_destroy(bctx);

  alignas(256) static float host[64];
  const octet_tensor_desc desc = desc_of(OCTET_DTYPE_FP32, 8, 8);
  octet_tensor* raw = nullptr;
  ASSERT_EQ(octet_tensor_wrap(ctx_.get(), &desc, host, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
  Tensor wrapped = Tensor::adopt(raw);
  float amax = -1.0f;
  EXPECT_EQ(octet_amax(ctx_.get(), wrapped.get(), &amax), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("input"));
  EXPECT_THAT(octet_last_error_message(), HasSubstr("must lie inside one buffer from this backend's mem_alloc"));
  EXPECT_EQ(amax, -1.0f);
}

// Work queued without waiting: a chain of operations, each reading what the
// one before wrote on the device, then one read; the same chain on the
// reference gives the same bytes.
TEST_F(OpenclBackend, QueuedWorkRunsInOrder) {
  const int64_t rows = 33, cols = 47;
  std::vector<float> x(size_t(rows * cols));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 30.0f);
  for (float& v : x) v = normal(rng);
  auto chain = [&](octet_context* ctx) {
    Tensor a = make_tensor(ctx, OCTET_DTYPE_FP32, rows, cols);
    write(a.get(), OCTET_COMPONENT_DATA, x.data(), x.size() * 4);
    Tensor q = make_tensor(ctx, OCTET_DTYPE_E5M2, rows, cols, OCTET_USAGE_ROWWISE | OCTET_USAGE_COLUMNWISE);
    Tensor b = make_tensor(ctx, OCTET_DTYPE_BF16, rows, cols);
    for (int step = 0; step < 8; ++step) {
      const float scale = float(1 << step) * 0.75f;
      write(q.get(), OCTET_COMPONENT_SCALE, &scale, sizeof scale);
      EXPECT_EQ(octet_quantize(ctx, a.get(), q.get(), nullptr), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      EXPECT_EQ(octet_dequantize(ctx, q.get(), b.get()), OCTET_STATUS_SUCCESS) << octet_last_error_message();
      EXPECT_EQ(octet_convert(ctx, b.get(), a.get(), 1), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    }
    EXPECT_EQ(octet_context_synchronize(ctx), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    return read(a.get(), OCTET_COMPONENT_DATA, x.size() * 4);
  };
  EXPECT_EQ(chain(ctx_.get()), chain(ref_.get()));
}

// An FP8 GEMM with every layout and a bias: D is within numerics.md
// section 8's bound of the exact value, computed here in double.
TEST_F(OpenclBackend, Fp8GemmEveryLayoutWithinTheBound) {
  const int64_t m = 19, n = 21, k = 37;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-8.0f, 8.0f);
  for (int layout = 0; layout < 4; ++layout) {
    const bool ta = layout & 1, tb = layout & 2;
    SCOPED_TRACE("trans_a " + std::to_string(ta) + " trans_b " + std::to_string(tb));
    std::vector<float> a(size_t(m * k)), b(size_t(n * k)), bias(static_cast<size_t>(n));
    for (float& v : a) v = uniform(rng);
    for (float& v : b) v = uniform(rng);
    for (float& v : bias) v = uniform(rng);
    const int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? k : n, bc = tb ? n : k;
    Tensor qa = quantize_on(ctx_.get(), a, ar, ac, OCTET_DTYPE_E4M3, 2.0f, 1);
    Tensor qb = quantize_on(ctx_.get(), b, br, bc, OCTET_DTYPE_E5M2, 0.5f, 1);
    Tensor tbias = make_tensor(ctx_.get(), OCTET_DTYPE_FP32, 1, n);
    write(tbias.get(), OCTET_COMPONENT_DATA, bias.data(), bias.size() * 4);
    Tensor d = make_tensor(ctx_.get(), OCTET_DTYPE_FP32, m, n);
    octet_gemm_options options{};
    octet_gemm_options_init(&options);
    options.trans_a = ta;
    options.trans_b = tb;
    options.bias = tbias.get();
    ASSERT_EQ(octet_gemm(ctx_.get(), qa.get(), qb.get(), d.get(), &options), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    std::vector<float> got(size_t(m * n));
    ASSERT_EQ(octet_tensor_copy_to_host(d.get(), OCTET_COMPONENT_DATA, got.data(), got.size() * 4),
              OCTET_STATUS_SUCCESS);
    // The operands' values: their codes decoded by the reference, times scale_inv.
    Tensor da = make_tensor(ref_.get(), OCTET_DTYPE_FP32, ar, ac),
           db = make_tensor(ref_.get(), OCTET_DTYPE_FP32, br, bc);
    Tensor ra = make_tensor(ref_.get(), OCTET_DTYPE_E4M3, ar, ac, OCTET_USAGE_ROWWISE);
    Tensor rb = make_tensor(ref_.get(), OCTET_DTYPE_E5M2, br, bc, OCTET_USAGE_ROWWISE);
    const std::vector<uint8_t> ca = read(qa.get(), OCTET_COMPONENT_DATA, a.size());
    const std::vector<uint8_t> cb = read(qb.get(), OCTET_COMPONENT_DATA, b.size());
    write(ra.get(), OCTET_COMPONENT_DATA, ca.data(), ca.size());
    write(rb.get(), OCTET_COMPONENT_DATA, cb.data(), cb.size());
    const float sa = 0.5f, sb = 2.0f;
    write(ra.get(), OCTET_COMPONENT_SCALE_INV, &sa, 4);
    write(rb.get(), OCTET_COMPONENT_SCALE_INV, &sb, 4);
    ASSERT_EQ(octet_dequantize(ref_.get(), ra.get(), da.get()), OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_dequantize(ref_.get(), rb.get(), db.get()), OCTET_STATUS_SUCCESS);
    std::vector<float> va(a.size()), vb(b.size());
    ASSERT_EQ(octet_tensor_copy_to_host(da.get(), OCTET_COMPONENT_DATA, va.data(), va.size() * 4),
              OCTET_STATUS_SUCCESS);
    ASSERT_EQ(octet_tensor_copy_to_host(db.get(), OCTET_COMPONENT_DATA, vb.data(), vb.size() * 4),
              OCTET_STATUS_SUCCESS);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double exact = 0.0, magnitude = 0.0;
        for (int64_t p = 0; p < k; ++p) {
          const double x = va[size_t(ta ? p * m + i : i * k + p)];
          const double y = vb[size_t(tb ? p * n + j : j * k + p)];
          exact += x * y;
          magnitude += std::fabs(x * y);
        }
        const double want = exact + bias[size_t(j)];
        const double bound = double(k) * std::ldexp(1.0, -23) * magnitude + std::ldexp(std::fabs(want), -23) * 2;
        EXPECT_LE(std::fabs(double(got[size_t(i * n + j)]) - want), bound) << "D[" << i << ", " << j << "]";
      }
    }
  }
}

// What the plugin does not have is refused with the rule, before anything
// is written.
TEST_F(OpenclBackend, UndeclaredFeaturesAnswerUnsupported) {
  octet_tensor_desc desc = desc_of(OCTET_DTYPE_E4M3, 32, 32, OCTET_USAGE_ROWWISE);
  desc.scaling_mode = OCTET_SCALING_MXFP8_1X32;
  octet_tensor* raw = nullptr;
  EXPECT_EQ(octet_tensor_create(ctx_.get(), &desc, &raw), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("MXFP8 1x32"));

  Tensor a = make_tensor(ctx_.get(), OCTET_DTYPE_FP32, 4, 8), b = make_tensor(ctx_.get(), OCTET_DTYPE_FP32, 4, 8);
  Tensor d = make_tensor(ctx_.get(), OCTET_DTYPE_FP32, 4, 4);
  const std::vector<float> ones(32, 1.0f), sentinel(16, -7.0f);
  write(a.get(), OCTET_COMPONENT_DATA, ones.data(), 128);
  write(b.get(), OCTET_COMPONENT_DATA, ones.data(), 128);
  write(d.get(), OCTET_COMPONENT_DATA, sentinel.data(), 64);
  octet_gemm_options options{};
  octet_gemm_options_init(&options);
  options.epilogue = OCTET_EPILOGUE_GELU;
  EXPECT_EQ(octet_gemm(ctx_.get(), a.get(), b.get(), d.get(), &options), OCTET_STATUS_UNSUPPORTED);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("epilogue"));
  std::vector<float> after(16);
  ASSERT_EQ(octet_tensor_copy_to_host(d.get(), OCTET_COMPONENT_DATA, after.data(), 64), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(after, sentinel);
}

// ---- A caller's queue (octet_context_options.stream) ----------------------

struct OpenclQueue {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  explicit OpenclQueue(cl_command_queue_properties properties = 0) {
    cl_platform_id platform = nullptr;
    cl_device_id device = nullptr;
    cl_int error = clGetPlatformIDs(1, &platform, nullptr);
    if (error == CL_SUCCESS) error = clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
    if (error != CL_SUCCESS) return;
    context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &error);
    if (error != CL_SUCCESS) return;
    queue = clCreateCommandQueue(context, device, properties, &error);
    if (error != CL_SUCCESS) queue = nullptr;
  }
  ~OpenclQueue() {
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
};

// The context runs on the caller's queue (of the caller's own OpenCL
// context): results are the reference's, and the caller's queue, once
// finished, has run them.
TEST_F(OpenclBackend, RunsOnTheCallersQueue) {
  OpenclQueue mine;
  ASSERT_NE(mine.queue, nullptr);
  Context on_queue = make_context("opencl", mine.queue);
  ASSERT_NE(on_queue, nullptr);
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::ldexp(float(i % 17) - 8.0f, int(i % 41) - 20);
  Tensor q = quantize_on(on_queue.get(), x, 12, 25, OCTET_DTYPE_E4M3, 8.0f, 1);
  Tensor r = quantize_on(ref_.get(), x, 12, 25, OCTET_DTYPE_E4M3, 8.0f, 1);
  EXPECT_EQ(clFinish(mine.queue), CL_SUCCESS);
  EXPECT_EQ(read(q.get(), OCTET_COMPONENT_DATA, x.size()), read(r.get(), OCTET_COMPONENT_DATA, x.size()));
  EXPECT_EQ(columnwise_codes(q.get(), 12, 25), columnwise_codes(r.get(), 12, 25));

  // An FP32 GEMM with no bias and no scales: the plugin binds its
  // placeholder buffer for them, one of the caller's OpenCL context (PoCL
  // accepts a buffer of another context here; stricter drivers do not).
  // Small integers: exact.
  {
    const int64_t m = 3, n = 4, k = 5;
    std::vector<float> a(size_t(m * k)), b(size_t(n * k)), want(size_t(m * n), 0.0f), got(size_t(m * n), -1.0f);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(int(i % 7) - 3);
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(int(i % 5) - 2);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        for (int64_t p = 0; p < k; ++p) want[size_t(i * n + j)] += a[size_t(i * k + p)] * b[size_t(j * k + p)];
    Tensor ta = make_tensor(on_queue.get(), OCTET_DTYPE_FP32, m, k),
           tb = make_tensor(on_queue.get(), OCTET_DTYPE_FP32, n, k);
    Tensor td = make_tensor(on_queue.get(), OCTET_DTYPE_FP32, m, n);
    write(ta.get(), OCTET_COMPONENT_DATA, a.data(), a.size() * 4);
    write(tb.get(), OCTET_COMPONENT_DATA, b.data(), b.size() * 4);
    ASSERT_EQ(octet_gemm(on_queue.get(), ta.get(), tb.get(), td.get(), nullptr), OCTET_STATUS_SUCCESS)
        << octet_last_error_message();
    ASSERT_EQ(octet_tensor_copy_to_host(td.get(), OCTET_COMPONENT_DATA, got.data(), got.size() * 4),
              OCTET_STATUS_SUCCESS);
    EXPECT_EQ(got, want);
  }

  // Memory allocated on the caller's queue belongs to the caller's OpenCL
  // context: wrapped on a context of the backend's own queue, the plugin
  // refuses it and says why.
  const octet_backend_api* api = plugin_api();
  ASSERT_NE(api, nullptr);
  octet_backend_context* bctx = nullptr;
  ASSERT_EQ(api->context_create(mine.queue, &bctx), OCTET_STATUS_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(api->mem_alloc(bctx, x.size() * 4, &p), OCTET_STATUS_SUCCESS);
  ASSERT_EQ(api->copy_from_host(bctx, p, x.data(), x.size() * 4), OCTET_STATUS_SUCCESS);
  {
    const octet_tensor_desc desc = desc_of(OCTET_DTYPE_FP32, 12, 25);
    octet_tensor* raw = nullptr;
    ASSERT_EQ(octet_tensor_wrap(ctx_.get(), &desc, p, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    Tensor foreign = Tensor::adopt(raw);
    float amax = -1.0f;
    EXPECT_EQ(octet_amax(ctx_.get(), foreign.get(), &amax), OCTET_STATUS_INVALID_ARGUMENT);
    EXPECT_THAT(octet_last_error_message(), HasSubstr("input is memory of another OpenCL context"));
    EXPECT_EQ(amax, -1.0f);
    // On a context of the caller's queue the same memory is usable.
    ASSERT_EQ(octet_tensor_wrap(on_queue.get(), &desc, p, &raw), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    Tensor native = Tensor::adopt(raw);
    ASSERT_EQ(octet_amax(on_queue.get(), native.get(), &amax), OCTET_STATUS_SUCCESS) << octet_last_error_message();
    float expected = 0.0f;
    for (float v : x) expected = std::fmax(expected, std::fabs(v));
    EXPECT_EQ(amax, expected);
  }
  api->mem_free(bctx, p);
  api->context_destroy(bctx);
}

TEST_F(OpenclBackend, RefusesAnOutOfOrderQueue) {
  OpenclQueue out_of_order(CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
  if (out_of_order.queue == nullptr) GTEST_SKIP() << "the device has no out-of-order queues";
  octet_context_options options{};
  octet_context_options_init(&options);
  options.backend = "opencl";
  options.stream = out_of_order.queue;
  octet_context* raw = nullptr;
  EXPECT_NE(octet_context_create(&options, &raw), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(raw, nullptr);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("stream must be an in-order queue"));
}

}  // namespace
