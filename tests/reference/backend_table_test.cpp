// The reference negotiates and answers like a plugin (octet_backend.h).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "reference_table.hpp"

namespace octet::test {
namespace {

TEST(ReferenceEntry, RefusesAnotherHostMajor) {
  for (uint32_t major : {0u, 2u, 7u}) {
    const octet_backend_api* api = nullptr;
    EXPECT_EQ(octet_reference_backend_entry(major, 0, &api), OCTET_STATUS_ABI_MISMATCH);
    EXPECT_EQ(api, nullptr);
  }
}

TEST(ReferenceEntry, AnswersAnyMinorOfTheSameMajorWithAbi15) {
  for (uint32_t minor : {0u, 6u}) {
    const octet_backend_api* api = nullptr;
    ASSERT_EQ(octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, minor, &api),
              OCTET_STATUS_SUCCESS);
    ASSERT_NE(api, nullptr);
    EXPECT_EQ(api->struct_size, sizeof(octet_backend_api));
    EXPECT_EQ(api->abi_major, 1u);
    EXPECT_EQ(api->abi_minor, 5u);
    EXPECT_STREQ(api->name, "reference");
    EXPECT_NE(api->version, nullptr);
    // Required entries, and the optional ones a host backend leaves to the core.
    EXPECT_NE(api->initialize, nullptr);
    EXPECT_NE(api->context_create, nullptr);
    EXPECT_NE(api->context_destroy, nullptr);
    EXPECT_EQ(api->synchronize, nullptr);
    EXPECT_EQ(api->mem_alloc, nullptr);
    EXPECT_EQ(api->mem_free, nullptr);
    EXPECT_EQ(api->copy_from_host, nullptr);
    EXPECT_EQ(api->copy_to_host, nullptr);
    for (const void* kernel :
         {(const void*)api->convert, (const void*)api->amax, (const void*)api->quantize, (const void*)api->transpose,
          (const void*)api->dequantize, (const void*)api->gemm, (const void*)api->quantize_with_statistics,
          (const void*)api->block_quantize, (const void*)api->block_dequantize, (const void*)api->block_gemm,
          (const void*)api->fp4_quantize, (const void*)api->fp4_dequantize, (const void*)api->fp4_gemm}) {
      EXPECT_NE(kernel, nullptr);
    }
  }
}

TEST(ReferenceEntry, RejectsNullOutput) {
  EXPECT_EQ(octet_reference_backend_entry(OCTET_PLUGIN_ABI_MAJOR, 0, nullptr),
            OCTET_STATUS_INVALID_ARGUMENT);
}

using ReferenceCaps = ReferenceBackendTest;

TEST_F(ReferenceCaps, DeclaresEveryCapability) {
  EXPECT_EQ(caps_.struct_size, sizeof(octet_backend_caps));
  EXPECT_STREQ(caps_.device, "host CPU (exact reference)");
  EXPECT_EQ(caps_.memory_kind, OCTET_MEMORY_HOST);
  uint32_t dtypes = 0;
  for (int32_t dtype : all_dtypes()) dtypes |= OCTET_DTYPE_BIT(dtype);
  EXPECT_EQ(caps_.dtypes, dtypes | OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1));
  EXPECT_EQ(caps_.scaling_modes,
            static_cast<uint32_t>(OCTET_SCALING_PER_TENSOR | OCTET_SCALING_MXFP8_1X32 | OCTET_SCALING_BLOCK_1X128 |
                                  OCTET_SCALING_BLOCK_128X128 | OCTET_SCALING_PER_ROW | OCTET_SCALING_PER_COLUMN |
                                  OCTET_SCALING_MXFP4_1X32 | OCTET_SCALING_NVFP4_1X16 | OCTET_SCALING_NVFP4_16X16));
  EXPECT_EQ(caps_.native_columnwise, 1);
  EXPECT_EQ(caps_.fp8_gemm_layouts, static_cast<uint32_t>(OCTET_GEMM_LAYOUT_ALL));
  EXPECT_EQ(caps_.alignment, 64u);
  EXPECT_EQ(caps_.fused_cast_transpose, 1);
}

TEST_F(ReferenceCaps, WritesNoMoreThanAnOlderHostsStruct) {
  // A host whose caps struct ends before `alignment` gets only what fits.
  struct {
    octet_backend_caps caps;
  } buffer;
  std::memset(&buffer, 0xCC, sizeof buffer);
  const std::size_t older_size = offsetof(octet_backend_caps, alignment);
  buffer.caps.struct_size = older_size;
  ASSERT_EQ(api_->initialize(&host_, &buffer.caps), OCTET_STATUS_SUCCESS);
  EXPECT_EQ(buffer.caps.struct_size, older_size);
  EXPECT_EQ(buffer.caps.fp8_gemm_layouts, static_cast<uint32_t>(OCTET_GEMM_LAYOUT_ALL));
  const auto* tail = reinterpret_cast<const unsigned char*>(&buffer.caps) + older_size;
  for (std::size_t i = 0; i < sizeof(octet_backend_caps) - older_size; ++i) {
    EXPECT_EQ(tail[i], 0xCC) << "byte " << older_size + i << " written";
  }
}

TEST_F(ReferenceCaps, InitializeReportsNullCaps) {
  expect_failure(api_->initialize(&host_, nullptr), OCTET_STATUS_INVALID_ARGUMENT, {"caps"});
}

TEST_F(ReferenceCaps, ContextsAreIndependentAndDestroyAcceptsNull) {
  octet_backend_context* other = nullptr;
  ASSERT_EQ(api_->context_create(nullptr, &other), OCTET_STATUS_SUCCESS);
  EXPECT_NE(other, context_);
  api_->context_destroy(other);
  api_->context_destroy(nullptr);
  expect_failure(api_->context_create(nullptr, nullptr), OCTET_STATUS_INVALID_ARGUMENT,
                 {"context"});
}

}  // namespace
}  // namespace octet::test
