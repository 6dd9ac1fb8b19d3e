// DLPack import and export (octet_dlpack.h) on the reference backend:
// round trips that share memory, the producer's deleter called exactly once
// whatever the order of release, exports that outlive their tensor, and
// every refusal with its status, message and untouched outputs. Run under
// ASan by .ci/sanitize, which makes a double deleter call, a use after free
// or a leak fail here.
#include <octet/octet_dlpack.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "test_helpers.hpp"

using namespace octet_test;
using testing::HasSubstr;

namespace {

// A producer: 64-byte aligned host memory described by a DLPack struct,
// counting its deleter's calls.
template <typename Managed>
struct Producer {
  Managed managed{};
  int64_t shape[OCTET_MAX_DIMS] = {};
  int64_t strides[OCTET_MAX_DIMS] = {};
  void* memory = nullptr;
  int* deleted = nullptr;

  static void deleter(Managed* self) {
    auto* p = static_cast<Producer*>(self->manager_ctx);
    ++*p->deleted;
    std::free(p->memory);
    delete p;
  }
};

template <typename Managed>
Managed* produce(std::vector<int64_t> shape, uint8_t code, uint8_t bits, int* deleted, size_t extra_bytes = 0) {
  auto* p = new Producer<Managed>();
  size_t elements = 1;
  for (int64_t n : shape) elements *= size_t(n > 0 ? n : 1);
  size_t bytes = (elements * bits / 8 + extra_bytes + 63) / 64 * 64;
  p->memory = std::aligned_alloc(64, bytes);
  std::memset(p->memory, 0, bytes);
  p->deleted = deleted;
  octet_dlpack_tensor& t = p->managed.dl_tensor;
  t.data = p->memory;
  t.device.device_type = OCTET_DLPACK_DEVICE_CPU;
  t.device.device_id = 0;
  t.ndim = int32_t(shape.size());
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  for (size_t i = 0; i < shape.size(); ++i) p->shape[i] = shape[i];
  t.shape = p->shape;
  t.strides = nullptr;
  t.byte_offset = 0;
  p->managed.manager_ctx = p;
  p->managed.deleter = &Producer<Managed>::deleter;
  return &p->managed;
}

using Versioned = octet_dlpack_managed_tensor_versioned;
using Legacy = octet_dlpack_managed_tensor;

Versioned* produce_fp32(std::vector<int64_t> shape, int* deleted) {
  Versioned* m = produce<Versioned>(shape, OCTET_DLPACK_CODE_FLOAT, 32, deleted);
  m->version.major = 1;
  m->version.minor = 1;
  return m;
}

octet_tensor* const kUntouched = reinterpret_cast<octet_tensor*>(uintptr_t(0x5eed));

class DLPack : public testing::Test {
 protected:
  void SetUp() override { ctx = make_context("reference", OCTET_PROFILE_NATIVE); }
  uint64_t user_bytes() {
    octet_memory_stats stats{};
    stats.struct_size = sizeof(stats);
    EXPECT_EQ(octet_context_get_memory_stats(ctx.get(), &stats), 0);
    return stats.current_bytes[OCTET_MEMORY_USER_TENSORS];
  }
  // Imports `m`, expecting a refusal with `status` and `words` in the
  // message; the output and the deleter stay untouched. Frees `m`.
  void expect_refused(Versioned* m, octet_status status, const std::string& words, const int& deleted) {
    octet_tensor* t = kUntouched;
    EXPECT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), status);
    EXPECT_THAT(octet_last_error_message(), HasSubstr(words));
    EXPECT_THAT(octet_last_error_message(), HasSubstr("octet_tensor_from_dlpack"));
    EXPECT_EQ(t, kUntouched);
    EXPECT_EQ(deleted, 0) << "a refused import must not call the deleter";
    m->deleter(m);  // still the caller's
    EXPECT_EQ(deleted, 1);
  }
  ContextPtr ctx;
};

}  // namespace

TEST_F(DLPack, ImportSharesTheProducersMemoryAndCallsItsDeleterOnce) {
  int deleted = 0;
  Versioned* m = produce_fp32({2, 3}, &deleted);
  float* producer = static_cast<float*>(m->dl_tensor.data);
  for (int i = 0; i < 6; ++i) producer[i] = float(i) + 0.5f;
  octet_tensor* t = nullptr;
  ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << octet_last_error_message();
  octet_tensor_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(octet_tensor_get_info(t, &info), 0);
  EXPECT_EQ(info.dtype, OCTET_DTYPE_FP32);
  EXPECT_EQ(info.ndim, 2);
  EXPECT_EQ(info.shape[0], 2);
  EXPECT_EQ(info.shape[1], 3);
  EXPECT_EQ(info.owns_memory, 0);
  EXPECT_EQ(read<float>(t, OCTET_COMPONENT_DATA, 6), std::vector<float>({0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f}));
  // A write through Octet is seen by the producer, and the other way round.
  std::vector<float> values = {9, 8, 7, 6, 5, 4};
  ASSERT_EQ(octet_tensor_copy_from_host(t, OCTET_COMPONENT_DATA, values.data(), 24), 0);
  EXPECT_EQ(producer[0], 9.0f);
  EXPECT_EQ(producer[5], 4.0f);
  producer[1] = -1.0f;
  EXPECT_EQ(read<float>(t, OCTET_COMPONENT_DATA, 6)[1], -1.0f);
  // An operation reads it (amax) like any tensor.
  float amax = 0;
  ASSERT_EQ(octet_amax(ctx.get(), t, &amax), 0);
  EXPECT_EQ(amax, 9.0f);
  EXPECT_EQ(user_bytes(), 0u) << "borrowed memory is not counted";
  EXPECT_EQ(deleted, 0);
  octet_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);
}

TEST_F(DLPack, TheDeleterRunsWhenTheTensorGoesEvenAfterItsContext) {
  int deleted = 0;
  Versioned* m = produce_fp32({4}, &deleted);
  octet_tensor* t = nullptr;
  ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << octet_last_error_message();
  ctx.reset();
  EXPECT_EQ(deleted, 0);
  EXPECT_EQ(read<float>(t, OCTET_COMPONENT_DATA, 4), std::vector<float>(4, 0.0f));
  octet_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);
}

TEST_F(DLPack, LegacyImportAndANullDeleter) {
  int deleted = 0;
  Legacy* m = produce<Legacy>({3, 1, 2}, OCTET_DLPACK_CODE_BFLOAT, 16, &deleted);
  static_cast<uint16_t*>(m->dl_tensor.data)[0] = 0x3f80;  // bf16 1.0
  octet_tensor* t = nullptr;
  ASSERT_EQ(octet_tensor_from_dlpack_legacy(ctx.get(), m, &t), 0) << octet_last_error_message();
  EXPECT_EQ(read<uint16_t>(t, OCTET_COMPONENT_DATA, 6)[0], 0x3f80);
  octet_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);

  // A producer without a deleter: nothing to call.
  Versioned* v = produce_fp32({2}, &deleted);
  auto* producer = static_cast<Producer<Versioned>*>(v->manager_ctx);
  v->deleter = nullptr;
  ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), v, &t), 0) << octet_last_error_message();
  octet_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);
  std::free(producer->memory);
  delete producer;
}

TEST_F(DLPack, EveryOctetDtypeImportsFromItsCode) {
  struct Case {
    uint8_t code, bits;
    octet_dtype dtype;
  };
  for (Case c :
       {Case{OCTET_DLPACK_CODE_FLOAT, 32, OCTET_DTYPE_FP32}, Case{OCTET_DLPACK_CODE_FLOAT, 16, OCTET_DTYPE_FP16},
        Case{OCTET_DLPACK_CODE_BFLOAT, 16, OCTET_DTYPE_BF16},
        Case{OCTET_DLPACK_CODE_FLOAT8_E4M3FN, 8, OCTET_DTYPE_E4M3},
        Case{OCTET_DLPACK_CODE_FLOAT8_E5M2, 8, OCTET_DTYPE_E5M2},
        Case{OCTET_DLPACK_CODE_FLOAT8_E8M0FNU, 8, OCTET_DTYPE_E8M0},
        Case{OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ, 8, OCTET_DTYPE_E4M3FNUZ},
        Case{OCTET_DLPACK_CODE_FLOAT8_E5M2FNUZ, 8, OCTET_DTYPE_E5M2FNUZ}}) {
    int deleted = 0;
    Versioned* m = produce<Versioned>({8, 4}, c.code, c.bits, &deleted);
    m->version.major = 1;
    octet_tensor* t = nullptr;
    ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << octet_last_error_message();
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_tensor_get_info(t, &info), 0);
    EXPECT_EQ(info.dtype, c.dtype);
    EXPECT_EQ(info.rowwise_bytes, 32u * c.bits / 8);
    octet_tensor_destroy(t);
    EXPECT_EQ(deleted, 1);
  }
}

// The FNUZ codes travel as raw bytes both ways: imported from their DLPack
// codes (11, 13), exported with the same codes, read back byte for byte
// (0x80, FNUZ's one NaN, and 0x00, its one zero, included).
TEST_F(DLPack, FnuzCodesRoundTripThroughImportAndExport) {
  const std::vector<uint8_t> codes = {0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81, 0x40, 0xC8};
  struct Case {
    uint8_t code;
    octet_dtype dtype;
  };
  for (Case c : {Case{OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ, OCTET_DTYPE_E4M3FNUZ},
                 Case{OCTET_DLPACK_CODE_FLOAT8_E5M2FNUZ, OCTET_DTYPE_E5M2FNUZ}}) {
    int deleted = 0;
    Versioned* m = produce<Versioned>({2, 4}, c.code, 8, &deleted);
    m->version.major = 1;
    std::memcpy(m->dl_tensor.data, codes.data(), codes.size());
    octet_tensor* t = nullptr;
    ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << octet_last_error_message();
    EXPECT_EQ(read<uint8_t>(t, OCTET_COMPONENT_DATA, 8), codes);
    Versioned* e = nullptr;
    ASSERT_EQ(octet_tensor_to_dlpack(t, OCTET_COMPONENT_DATA, &e), 0) << octet_last_error_message();
    EXPECT_EQ(e->dl_tensor.dtype.code, c.code);
    EXPECT_EQ(e->dl_tensor.dtype.bits, 8);
    EXPECT_EQ(e->dl_tensor.dtype.lanes, 1);
    EXPECT_EQ(e->dl_tensor.data, m->dl_tensor.data) << "an export of an import shares the producer's memory";
    // Back into Octet (another context): the same dtype and bytes.
    ContextPtr other = make_context("reference", OCTET_PROFILE_HOPPER_LIKE);
    octet_tensor* again = nullptr;
    ASSERT_EQ(octet_tensor_from_dlpack(other.get(), e, &again), 0) << octet_last_error_message();
    octet_tensor_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(octet_tensor_get_info(again, &info), 0);
    EXPECT_EQ(info.dtype, c.dtype);
    EXPECT_EQ(read<uint8_t>(again, OCTET_COMPONENT_DATA, 8), codes);
    octet_tensor_destroy(t);
    EXPECT_EQ(deleted, 0) << "the export still holds the producer's memory";
    octet_tensor_destroy(again);  // calls the export's deleter, the last holder
    EXPECT_EQ(deleted, 1);
  }
  // A quantized FNUZ tensor exports its codes as float8_e4m3fnuz: 2, -4, 6,
  // -8, 1, 12 (values times the scale 2) in E4M3FNUZ (bias 8, sign 0x80).
  TensorPtr q = quantized(ctx.get(), 2, 3, {1, -2, 3, -4, 0.5f, 6}, OCTET_DTYPE_E4M3FNUZ, 2.0f, OCTET_USAGE_ROWWISE);
  Versioned* data = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(q.get(), OCTET_COMPONENT_DATA, &data), 0) << octet_last_error_message();
  EXPECT_EQ(data->dl_tensor.dtype.code, OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ);
  EXPECT_EQ(data->dl_tensor.dtype.bits, 8);
  const uint8_t* shared = static_cast<const uint8_t*>(data->dl_tensor.data) + data->dl_tensor.byte_offset;
  EXPECT_EQ(std::vector<uint8_t>(shared, shared + 6), std::vector<uint8_t>({0x48, 0xD0, 0x54, 0xD8, 0x40, 0x5C}));
  data->deleter(data);
  // The dtype functions agree with octet_dlpack.h's codes.
  uint8_t code = 0, bits = 0;
  ASSERT_EQ(octet_dtype_to_dlpack(OCTET_DTYPE_E5M2FNUZ, &code, &bits), 0);
  EXPECT_EQ(code, OCTET_DLPACK_CODE_FLOAT8_E5M2FNUZ);
  EXPECT_EQ(bits, 8);
  octet_dtype dtype = OCTET_DTYPE_INVALID;
  ASSERT_EQ(octet_dtype_from_dlpack(OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ, 8, &dtype), 0);
  EXPECT_EQ(dtype, OCTET_DTYPE_E4M3FNUZ);
}

// The refusal of an unknown DLPack dtype lists every dtype an import takes,
// each with its (code, bits): the spec list below, from octet_dlpack.h.
// float4_e2m1fn is not among them (an E2M1 tensor is only ever a quantized
// FP4 tensor, which an import cannot make), though octet_dtype_from_dlpack
// maps it, and its own refusal lists it.
TEST_F(DLPack, AnUnknownDtypeIsRefusedNamingEveryDtypeImportTakes) {
  struct Listed {
    const char* words;
    uint8_t code, bits;
  };
  const Listed accepted[] = {{"float32 (code 2, bits 32)", OCTET_DLPACK_CODE_FLOAT, 32},
                             {"float16 (code 2, bits 16)", OCTET_DLPACK_CODE_FLOAT, 16},
                             {"bfloat16 (code 4, bits 16)", OCTET_DLPACK_CODE_BFLOAT, 16},
                             {"float8_e4m3fn (code 10, bits 8)", OCTET_DLPACK_CODE_FLOAT8_E4M3FN, 8},
                             {"float8_e4m3fnuz (code 11, bits 8)", OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ, 8},
                             {"float8_e5m2 (code 12, bits 8)", OCTET_DLPACK_CODE_FLOAT8_E5M2, 8},
                             {"float8_e5m2fnuz (code 13, bits 8)", OCTET_DLPACK_CODE_FLOAT8_E5M2FNUZ, 8},
                             {"float8_e8m0fnu (code 14, bits 8)", OCTET_DLPACK_CODE_FLOAT8_E8M0FNU, 8}};
  const std::pair<uint8_t, uint8_t> unknown[] = {{0, 32}, {OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ, 16}, {15, 8}};
  for (auto [code, bits] : unknown) {
    int deleted = 0;
    Versioned* m = produce_fp32({2, 16}, &deleted);
    m->dl_tensor.dtype.code = code;
    m->dl_tensor.dtype.bits = bits;
    octet_tensor* t = kUntouched;
    EXPECT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), OCTET_STATUS_UNSUPPORTED);
    const std::string message = octet_last_error_message();
    EXPECT_THAT(message, HasSubstr("managed->dl_tensor.dtype (code " + std::to_string(code) + ", bits " +
                                   std::to_string(bits) + ") has no Octet dtype: Octet takes "));
    for (const Listed& l : accepted) EXPECT_THAT(message, HasSubstr(l.words));
    EXPECT_THAT(message, testing::Not(HasSubstr("float4_e2m1fn")));
    EXPECT_EQ(t, kUntouched);
    m->deleter(m);
    EXPECT_EQ(deleted, 1);
    octet_dtype d = OCTET_DTYPE_INVALID;
    EXPECT_EQ(octet_dtype_from_dlpack(code, bits, &d), OCTET_STATUS_UNSUPPORTED);
    EXPECT_THAT(octet_last_error_message(),
                HasSubstr("float8_e8m0fnu (code 14, bits 8) and float4_e2m1fn (code 17, bits 4)"));
  }
  // Every dtype the message names imports.
  for (const Listed& l : accepted) {
    int deleted = 0;
    Versioned* m = produce<Versioned>({2, 16}, l.code, l.bits, &deleted);
    m->version.major = 1;
    octet_tensor* t = nullptr;
    EXPECT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << l.words << ": " << octet_last_error_message();
    octet_tensor_destroy(t);
    EXPECT_EQ(deleted, 1) << l.words;
  }
  // float4_e2m1fn has an Octet dtype, but not as a plain tensor.
  int deleted = 0;
  Versioned* m = produce<Versioned>({2, 16}, OCTET_DLPACK_CODE_FLOAT4_E2M1FN, 4, &deleted);
  m->version.major = 1;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "an E2M1 tensor is a quantized FP4 tensor", deleted);
}

TEST_F(DLPack, CompactStridesSizeOneDimensionsAndAlignedOffsetsAreAccepted) {
  int deleted = 0;
  Versioned* m = produce_fp32({2, 1, 16}, &deleted);
  auto* p = static_cast<Producer<Versioned>*>(m->manager_ctx);
  p->strides[0] = 16;
  p->strides[1] = 12345;  // any stride for a dimension of size 1 (torch writes such)
  p->strides[2] = 1;
  m->dl_tensor.strides = p->strides;
  p->shape[0] = 1;  // one row of 16 floats, 64 bytes past the start
  m->dl_tensor.byte_offset = 64;
  static_cast<float*>(p->memory)[16] = 42.0f;
  octet_tensor* t = nullptr;
  ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << octet_last_error_message();
  EXPECT_EQ(read<float>(t, OCTET_COMPONENT_DATA, 16)[0], 42.0f);
  octet_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);
}

// The reference needs nothing of caller memory beyond the element size
// (caller_alignment 1): an offset of one FP32 element is read in place.
TEST_F(DLPack, AnElementAlignedOffsetIsReadInPlace) {
  int deleted = 0;
  Versioned* m = produce_fp32({1, 16}, &deleted);
  auto* p = static_cast<Producer<Versioned>*>(m->manager_ctx);
  p->shape[1] = 15;
  m->dl_tensor.byte_offset = 4;
  static_cast<float*>(p->memory)[1] = 7.0f;
  octet_tensor* t = nullptr;
  ASSERT_EQ(octet_tensor_from_dlpack(ctx.get(), m, &t), 0) << octet_last_error_message();
  EXPECT_EQ(read<float>(t, OCTET_COMPONENT_DATA, 15)[0], 7.0f);
  static_cast<float*>(p->memory)[1] = -2.0f;  // no copy: the producer's write is seen
  EXPECT_EQ(read<float>(t, OCTET_COMPONENT_DATA, 15)[0], -2.0f);
  octet_tensor_destroy(t);
  EXPECT_EQ(deleted, 1);
}

TEST_F(DLPack, ExportRoundTripSharesMemoryAndOutlivesTheTensor) {
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  TensorPtr t = make_fp32(ctx.get(), 2, 3, values);
  const uint64_t bytes = user_bytes();
  Versioned* e = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(t.get(), OCTET_COMPONENT_DATA, &e), 0) << octet_last_error_message();
  EXPECT_EQ(e->version.major, 1u);
  EXPECT_EQ(e->version.minor, 1u);
  EXPECT_EQ(e->flags, 0u);
  const octet_dlpack_tensor& dl = e->dl_tensor;
  EXPECT_EQ(dl.device.device_type, OCTET_DLPACK_DEVICE_CPU);
  EXPECT_EQ(dl.device.device_id, 0);
  EXPECT_EQ(dl.ndim, 2);
  EXPECT_EQ(dl.dtype.code, OCTET_DLPACK_CODE_FLOAT);
  EXPECT_EQ(dl.dtype.bits, 32);
  EXPECT_EQ(dl.dtype.lanes, 1);
  EXPECT_EQ(dl.shape[0], 2);
  EXPECT_EQ(dl.shape[1], 3);
  ASSERT_NE(dl.strides, nullptr);
  EXPECT_EQ(dl.strides[0], 3);
  EXPECT_EQ(dl.strides[1], 1);
  EXPECT_EQ(dl.byte_offset, 0u);
  float* shared = static_cast<float*>(dl.data);
  EXPECT_EQ(shared[4], 5.0f);
  shared[0] = -7.0f;  // the consumer writes; Octet sees it
  EXPECT_EQ(read<float>(t.get(), OCTET_COMPONENT_DATA, 6)[0], -7.0f);
  // The tensor goes first: the export keeps the memory (still counted).
  t = TensorPtr();
  EXPECT_EQ(user_bytes(), bytes);
  EXPECT_EQ(shared[5], 6.0f);
  shared[5] = 0.0f;
  e->deleter(e);
  EXPECT_EQ(user_bytes(), 0u);
}

TEST_F(DLPack, ExportReleasedBeforeTheTensorLeavesItIntact) {
  TensorPtr t = make_fp32(ctx.get(), 1, 4, {1, 2, 3, 4});
  Legacy* e = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack_legacy(t.get(), OCTET_COMPONENT_DATA, &e), 0) << octet_last_error_message();
  EXPECT_EQ(e->dl_tensor.ndim, 2);
  e->deleter(e);
  EXPECT_EQ(read<float>(t.get(), OCTET_COMPONENT_DATA, 4), std::vector<float>({1, 2, 3, 4}));
  // Two exports of one tensor, released around the tensor.
  Versioned *a = nullptr, *b = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(t.get(), OCTET_COMPONENT_DATA, &a), 0);
  ASSERT_EQ(octet_tensor_to_dlpack(t.get(), OCTET_COMPONENT_DATA, &b), 0);
  EXPECT_EQ(a->dl_tensor.data, b->dl_tensor.data);
  a->deleter(a);
  t = TensorPtr();
  EXPECT_EQ(static_cast<float*>(b->dl_tensor.data)[3], 4.0f);
  b->deleter(b);
  EXPECT_EQ(user_bytes(), 0u);
}

TEST_F(DLPack, OctetToOctetInBothOrdersOfRelease) {
  for (int tensor_first = 0; tensor_first < 2; ++tensor_first) {
    ContextPtr other = make_context("reference", OCTET_PROFILE_HOPPER_LIKE);
    TensorPtr source = make_fp32(ctx.get(), 2, 2, {1, 2, 3, 4});
    Versioned* e = nullptr;
    ASSERT_EQ(octet_tensor_to_dlpack(source.get(), OCTET_COMPONENT_DATA, &e), 0);
    octet_tensor* imported = nullptr;
    ASSERT_EQ(octet_tensor_from_dlpack(other.get(), e, &imported), 0) << octet_last_error_message();
    std::vector<float> four = {4, 4, 4, 4};
    ASSERT_EQ(octet_tensor_copy_from_host(imported, OCTET_COMPONENT_DATA, four.data(), 16), 0);
    EXPECT_EQ(read<float>(source.get(), OCTET_COMPONENT_DATA, 4), four);
    if (tensor_first) {
      source = TensorPtr();
      ctx.reset();
      EXPECT_EQ(read<float>(imported, OCTET_COMPONENT_DATA, 4), four);
      octet_tensor_destroy(imported);
      ctx = make_context("reference", OCTET_PROFILE_NATIVE);
    } else {
      octet_tensor_destroy(imported);  // calls the export's deleter
      EXPECT_EQ(read<float>(source.get(), OCTET_COMPONENT_DATA, 4), four);
    }
  }
}

TEST_F(DLPack, QuantizedTensorsExportCodesAndScalesSeparately) {
  ContextPtr hopper = make_context("reference", OCTET_PROFILE_HOPPER_LIKE);  // a transposed copy exists
  std::vector<float> values = {1, -2, 3, -4, 0.5f, 6};
  TensorPtr q = quantized(hopper.get(), 2, 3, values, OCTET_DTYPE_E4M3, 2.0f, OCTET_USAGE_BOTH);
  Versioned* data = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(q.get(), OCTET_COMPONENT_DATA, &data), 0) << octet_last_error_message();
  EXPECT_EQ(data->dl_tensor.dtype.code, OCTET_DLPACK_CODE_FLOAT8_E4M3FN);
  EXPECT_EQ(data->dl_tensor.dtype.bits, 8);
  EXPECT_EQ(std::vector<uint8_t>(static_cast<uint8_t*>(data->dl_tensor.data),
                                 static_cast<uint8_t*>(data->dl_tensor.data) + 6),
            read<uint8_t>(q.get(), OCTET_COMPONENT_DATA, 6));
  Versioned* columnwise = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(q.get(), OCTET_COMPONENT_COLUMNWISE_DATA, &columnwise), 0);
  EXPECT_EQ(columnwise->dl_tensor.shape[0], 3);
  EXPECT_EQ(columnwise->dl_tensor.shape[1], 2);
  for (int32_t c : {OCTET_COMPONENT_SCALE, OCTET_COMPONENT_SCALE_INV, OCTET_COMPONENT_AMAX}) {
    Versioned* s = nullptr;
    ASSERT_EQ(octet_tensor_to_dlpack(q.get(), c, &s), 0) << octet_last_error_message();
    EXPECT_EQ(s->dl_tensor.dtype.code, OCTET_DLPACK_CODE_FLOAT);
    EXPECT_EQ(s->dl_tensor.ndim, 1);
    EXPECT_EQ(s->dl_tensor.shape[0], 1);
    float value = 0;
    std::memcpy(&value, static_cast<char*>(s->dl_tensor.data) + s->dl_tensor.byte_offset, 4);
    EXPECT_EQ(value, read<float>(q.get(), c, 1)[0]) << "component " << c;
    s->deleter(s);
  }
  q = TensorPtr();  // the exports keep the codes
  EXPECT_EQ(static_cast<uint8_t*>(columnwise->dl_tensor.data)[0], static_cast<uint8_t*>(data->dl_tensor.data)[0]);
  data->deleter(data);
  columnwise->deleter(columnwise);

  // Block scaling: the scale grid, E8M0 codes for MXFP8.
  TensorPtr mx = make_tensor(ctx.get(), OCTET_DTYPE_E4M3, {4, 64}, OCTET_USAGE_ROWWISE, OCTET_SCALING_MXFP8_1X32);
  Versioned* grid = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(mx.get(), OCTET_COMPONENT_ROWWISE_SCALE_INV, &grid), 0)
      << octet_last_error_message();
  EXPECT_EQ(grid->dl_tensor.dtype.code, OCTET_DLPACK_CODE_FLOAT8_E8M0FNU);
  EXPECT_EQ(grid->dl_tensor.shape[0], 4);
  EXPECT_EQ(grid->dl_tensor.shape[1], 2);
  Versioned* untouched = reinterpret_cast<Versioned*>(uintptr_t(0x5eed));
  EXPECT_EQ(octet_tensor_to_dlpack(mx.get(), OCTET_COMPONENT_SCALE_INV, &untouched), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("per block"));
  EXPECT_EQ(octet_tensor_to_dlpack(mx.get(), OCTET_COMPONENT_COLUMNWISE_SCALE_INV, &untouched),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("no columnwise usage"));
  EXPECT_EQ(untouched, reinterpret_cast<Versioned*>(uintptr_t(0x5eed)));
  mx = TensorPtr();  // destroyed before the export is released
  grid->deleter(grid);
}

TEST_F(DLPack, ExportRefusals) {
  TensorPtr plain = make_fp32(ctx.get(), 1, 2, {1, 2});
  Versioned* untouched = reinterpret_cast<Versioned*>(uintptr_t(0x5eed));
  EXPECT_EQ(octet_tensor_to_dlpack(nullptr, OCTET_COMPONENT_DATA, &untouched), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("'tensor' is NULL"));
  EXPECT_EQ(octet_tensor_to_dlpack(plain.get(), OCTET_COMPONENT_DATA, nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("'managed' is NULL"));
  EXPECT_EQ(octet_tensor_to_dlpack(plain.get(), 99, &untouched), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("'component' (99) is not an octet_component"));
  EXPECT_EQ(octet_tensor_to_dlpack(plain.get(), OCTET_COMPONENT_SCALE, &untouched), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("only on a quantized tensor"));
  Legacy* legacy = reinterpret_cast<Legacy*>(uintptr_t(0x5eed));
  EXPECT_EQ(octet_tensor_to_dlpack_legacy(plain.get(), OCTET_COMPONENT_COLUMNWISE_DATA, &legacy),
            OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("octet_tensor_to_dlpack_legacy"));
  EXPECT_EQ(untouched, reinterpret_cast<Versioned*>(uintptr_t(0x5eed)));
  EXPECT_EQ(legacy, reinterpret_cast<Legacy*>(uintptr_t(0x5eed)));
}

TEST_F(DLPack, ImportRefusalsNameTheFieldAndLeaveOwnershipWithTheCaller) {
  int deleted = 0;
  octet_tensor* t = kUntouched;
  Versioned* m = produce_fp32({2, 2}, &deleted);
  EXPECT_EQ(octet_tensor_from_dlpack(nullptr, m, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("'context' is NULL"));
  EXPECT_EQ(octet_tensor_from_dlpack(ctx.get(), nullptr, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("'managed' is NULL"));
  EXPECT_EQ(octet_tensor_from_dlpack(ctx.get(), m, nullptr), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("'tensor' is NULL"));
  EXPECT_EQ(octet_tensor_from_dlpack_legacy(ctx.get(), nullptr, &t), OCTET_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(octet_last_error_message(), HasSubstr("octet_tensor_from_dlpack_legacy: argument 'managed' is NULL"));
  EXPECT_EQ(t, kUntouched);
  m->deleter(m);

  auto fresh = [&] {
    deleted = 0;
    return produce_fp32({2, 16}, &deleted);
  };
  m = fresh();
  m->version.major = 2;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "managed->version (2.1) has another major", deleted);
  m = fresh();
  m->flags = OCTET_DLPACK_FLAG_READ_ONLY;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "READ_ONLY", deleted);
  m = fresh();
  m->dl_tensor.device.device_type = OCTET_DLPACK_DEVICE_CUDA;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "device.device_type (2, kDLCUDA) is not host memory", deleted);
  m = fresh();
  m->dl_tensor.dtype.code = 0;  // kDLInt
  expect_refused(m, OCTET_STATUS_UNSUPPORTED, "managed->dl_tensor.dtype (code 0, bits 32) has no Octet dtype", deleted);
  m = fresh();
  m->dl_tensor.dtype.lanes = 4;
  expect_refused(m, OCTET_STATUS_UNSUPPORTED, "dtype.lanes (4) must be 1", deleted);
  m = fresh();
  m->dl_tensor.ndim = 0;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "ndim (0) must be in 1..8 (a 0-d scalar", deleted);
  m = fresh();
  m->dl_tensor.ndim = 9;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "ndim (9) must be in 1..8", deleted);
  m = fresh();
  m->dl_tensor.shape[1] = 0;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "shape[1] (0) must be >= 1", deleted);
  m = fresh();
  m->dl_tensor.data = nullptr;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "managed->dl_tensor.data is NULL", deleted);
  m = fresh();
  m->dl_tensor.shape = nullptr;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "managed->dl_tensor.shape is NULL", deleted);
  m = fresh();
  m->dl_tensor.byte_offset = 2;  // half an FP32 element (4 bytes would do: the reference needs no more)
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "data + byte_offset (", deleted);
  m = fresh();
  m->dl_tensor.byte_offset = 2;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, ") is not aligned to 4 bytes, as backend 'reference' requires",
                 deleted);
  // A transposed view: strides (1, 2) for shape (2, 16).
  m = fresh();
  auto* p = static_cast<Producer<Versioned>*>(m->manager_ctx);
  p->strides[0] = 1;
  p->strides[1] = 2;
  m->dl_tensor.strides = p->strides;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT,
                 "managed->dl_tensor.strides (1, 2) are not compact row-major for shape (2, 16) (that needs (16, 1)",
                 deleted);
  // A sliced view: every other row.
  m = fresh();
  p = static_cast<Producer<Versioned>*>(m->manager_ctx);
  p->strides[0] = 32;
  p->strides[1] = 1;
  m->dl_tensor.strides = p->strides;
  expect_refused(m, OCTET_STATUS_INVALID_ARGUMENT, "never copies", deleted);
}

TEST_F(DLPack, AnExportedLayerParameterOutlivesTheLayer) {
  octet_linear_options options;
  ASSERT_EQ(octet_linear_options_init(&options), 0);
  options.in_features = 4;
  options.out_features = 2;
  octet_layer* layer = nullptr;
  ASSERT_EQ(octet_layer_create_linear(ctx.get(), &options, &layer), 0) << octet_last_error_message();
  octet_tensor* weight = nullptr;
  ASSERT_EQ(octet_layer_get_parameter(layer, 0, &weight), 0);
  std::vector<float> values = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(octet_tensor_copy_from_host(weight, OCTET_COMPONENT_DATA, values.data(), 32), 0);
  Versioned* e = nullptr;
  ASSERT_EQ(octet_tensor_to_dlpack(weight, OCTET_COMPONENT_DATA, &e), 0) << octet_last_error_message();
  auto parameter_bytes = [&] {
    octet_memory_stats stats{};
    stats.struct_size = sizeof(stats);
    EXPECT_EQ(octet_context_get_memory_stats(ctx.get(), &stats), 0);
    return stats.current_bytes[OCTET_MEMORY_PARAMETERS];
  };
  const uint64_t with_layer = parameter_bytes();
  octet_layer_destroy(layer);
  EXPECT_EQ(parameter_bytes(), 32u) << "the exported weight stays counted; the bias went (" << with_layer << ")";
  EXPECT_EQ(static_cast<float*>(e->dl_tensor.data)[7], 8.0f);
  e->deleter(e);
  EXPECT_EQ(parameter_bytes(), 0u);
}
