// octet.hpp's DLPack helpers (DLPackTensor, to_dlpack, from_dlpack): the
// memory is shared both ways, each deleter runs exactly once whichever side
// lets go first, and a refused import leaves the struct with its owner.
#include <octet/octet.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace {

// A producer of host float32 memory, as a framework would be: 64-byte
// aligned data, a deleter that counts its calls.
struct Producer {
  alignas(64) float data[2 * 3 + 16] = {};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  int deleted = 0;
  octet_dlpack_managed_tensor_versioned managed{};

  explicit Producer(uint64_t byte_offset = 0) {
    managed.version = {1, 0};
    managed.manager_ctx = this;
    managed.deleter = [](octet_dlpack_managed_tensor_versioned* self) {
      ++static_cast<Producer*>(self->manager_ctx)->deleted;
    };
    octet_dlpack_tensor& t = managed.dl_tensor;
    t.data = data;
    t.device = {OCTET_DLPACK_DEVICE_CPU, 0};
    t.ndim = 2;
    t.dtype = {OCTET_DLPACK_CODE_FLOAT, 32, 1};
    t.shape = shape;
    t.strides = strides;
    t.byte_offset = byte_offset;
  }
};

TEST(OctetHppDLPack, ExportSharesMemoryAndOutlivesTheTensor) {
  octet::Context ctx("reference");
  octet::DLPackTensor exported;
  {
    auto t = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {2, 3});
    t.upload(std::vector<float>{1, 2, 3, 4, 5, 6});
    exported = octet::to_dlpack(t);
    const octet_dlpack_tensor& d = exported.tensor();
    EXPECT_EQ(d.device.device_type, OCTET_DLPACK_DEVICE_CPU);
    EXPECT_EQ(d.dtype.code, OCTET_DLPACK_CODE_FLOAT);
    EXPECT_EQ(d.dtype.bits, 32);
    ASSERT_EQ(d.ndim, 2);
    EXPECT_EQ(d.shape[0], 2);
    EXPECT_EQ(d.shape[1], 3);
    EXPECT_EQ(exported.data<float>()[4], 5.0f);
    exported.data<float>()[0] = -7.0f;  // a write through DLPack is the tensor's
    EXPECT_EQ(t.download<float>()[0], -7.0f);
  }  // the Tensor is destroyed first: the export keeps the memory
  EXPECT_EQ(exported.data<float>()[5], 6.0f);
  exported.reset();
  EXPECT_FALSE(exported);
}

TEST(OctetHppDLPack, ExportOfAQuantizedTensorsScale) {
  octet::Context ctx("reference");
  auto x = octet::Tensor::create(ctx, OCTET_DTYPE_FP32, {1, 4});
  x.upload(std::vector<float>{1, -2, 3, 0.5f});
  auto q = octet::Tensor::create(ctx, OCTET_DTYPE_E4M3, {1, 4}, OCTET_USAGE_ROWWISE);
  q.set_scale(64.0f);
  octet::quantize(ctx, x, q);
  octet::DLPackTensor codes = octet::to_dlpack(q);
  octet::DLPackTensor scale_inv = octet::to_dlpack(q, OCTET_COMPONENT_SCALE_INV);
  EXPECT_EQ(codes.tensor().dtype.code, OCTET_DLPACK_CODE_FLOAT8_E4M3FN);
  EXPECT_EQ(*scale_inv.data<float>(), 1.0f / 64.0f);
  const std::vector<uint8_t> want = q.download<uint8_t>();
  EXPECT_EQ(std::memcmp(codes.data<uint8_t>(), want.data(), 4), 0);
  EXPECT_THROW(octet::to_dlpack(x, OCTET_COMPONENT_SCALE), octet::Error);  // a plain tensor has DATA only
}

TEST(OctetHppDLPack, ImportSharesMemoryAndCallsTheDeleterOnce) {
  octet::Context ctx("reference");
  Producer p;
  for (int i = 0; i < 6; ++i) p.data[i] = static_cast<float>(i);
  octet::DLPackTensor managed(&p.managed);
  {
    octet::Tensor t = octet::from_dlpack(ctx, std::move(managed));
    EXPECT_FALSE(managed);  // the Tensor owns it now
    EXPECT_EQ(t.download<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
    t.upload(std::vector<float>{9, 8, 7, 6, 5, 4});
    EXPECT_EQ(p.data[0], 9.0f);
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1);
}

TEST(OctetHppDLPack, ImportOutlivedByItsExport) {
  octet::Context ctx("reference");
  Producer p;
  p.data[2] = 42.0f;
  octet::DLPackTensor again;
  {
    octet::Tensor t = octet::from_dlpack(ctx, octet::DLPackTensor(&p.managed));
    again = octet::to_dlpack(t);
  }
  EXPECT_EQ(p.deleted, 0);  // the export still uses the producer's memory
  EXPECT_EQ(again.data<float>()[2], 42.0f);
  again.reset();
  EXPECT_EQ(p.deleted, 1);
}

TEST(OctetHppDLPack, RefusedImportLeavesTheStructWithItsOwner) {
  octet::Context ctx("reference");
  Producer p(2);  // the first FP32 element 2 bytes past a 64-byte boundary: not element-aligned
  {
    octet::DLPackTensor managed(&p.managed);
    try {
      (void)octet::from_dlpack(ctx, std::move(managed));
      FAIL() << "a misaligned import was accepted";
    } catch (const octet::Error& e) {
      EXPECT_EQ(e.status(), OCTET_STATUS_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("align"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(managed);  // still ours
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1);  // its destructor called the deleter

  Producer transposed;
  transposed.strides[0] = 1;
  transposed.strides[1] = 2;
  octet::DLPackTensor managed(&transposed.managed);
  EXPECT_THROW((void)octet::from_dlpack(ctx, std::move(managed)), octet::Error);
  EXPECT_TRUE(managed);
  managed.reset();
  EXPECT_EQ(transposed.deleted, 1);
  EXPECT_THROW((void)managed.tensor(), octet::Error);  // empty
}

}  // namespace
