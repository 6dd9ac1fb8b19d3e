#include "tensor/dtype.hpp"

#include <octet/octet_backend.h>

#include <vector>

#include "runtime/error.hpp"

namespace octet::core {

size_t dtype_size(octet_dtype dtype) { return octet_dtype_element_bytes(dtype); }

size_t dtype_bytes(octet_dtype dtype, size_t count) {
  return dtype == OCTET_DTYPE_E2M1 ? count / 2 + count % 2 : count * dtype_size(dtype);
}

std::string fp8_dtype_list(uint32_t dtypes) {
  std::string out;
  for (octet_dtype d : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E5M2FNUZ})
    if (dtypes & OCTET_DTYPE_BIT(d)) out += (out.empty() ? "" : ", ") + std::string(dtype_name(d));
  return out.empty() ? "none" : out;
}

const char* dtype_name(octet_dtype dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      return "fp32";
    case OCTET_DTYPE_BF16:
      return "bf16";
    case OCTET_DTYPE_FP16:
      return "fp16";
    case OCTET_DTYPE_E4M3:
      return "e4m3";
    case OCTET_DTYPE_E5M2:
      return "e5m2";
    case OCTET_DTYPE_E4M3FNUZ:
      return "e4m3fnuz";
    case OCTET_DTYPE_E5M2FNUZ:
      return "e5m2fnuz";
    case OCTET_DTYPE_E8M0:
      return "e8m0";
    case OCTET_DTYPE_E2M1:
      return "e2m1";
    default:
      return "invalid";
  }
}

namespace {
// DLPack's DLDataTypeCode values (dlpack.h), the interchange contract.
constexpr uint8_t kDLFloat = 2;
constexpr uint8_t kDLBfloat = 4;
constexpr uint8_t kDLFloat8_e4m3fn = 10;
constexpr uint8_t kDLFloat8_e4m3fnuz = 11;
constexpr uint8_t kDLFloat8_e5m2 = 12;
constexpr uint8_t kDLFloat8_e5m2fnuz = 13;
constexpr uint8_t kDLFloat8_e8m0fnu = 14;
constexpr uint8_t kDLFloat4_e2m1fn = 17;

// Every octet_dtype with its DLPack (code, bits) and DLPack's name for it:
// the one table that export, import and the import's refusal message read.
// `plain`: a plain tensor of the dtype exists, so a DLPack import (which
// wraps memory as a plain tensor) can make one; E2M1 is only ever a
// quantized FP4 tensor (octet_tensor_wrap refuses a plain one).
struct DlpackDtype {
  octet_dtype dtype;
  uint8_t code;
  uint8_t bits;
  const char* name;
  bool plain;
};
constexpr DlpackDtype kDlpackDtypes[] = {
    {OCTET_DTYPE_FP32, kDLFloat, 32, "float32", true},
    {OCTET_DTYPE_FP16, kDLFloat, 16, "float16", true},
    {OCTET_DTYPE_BF16, kDLBfloat, 16, "bfloat16", true},
    {OCTET_DTYPE_E4M3, kDLFloat8_e4m3fn, 8, "float8_e4m3fn", true},
    {OCTET_DTYPE_E5M2, kDLFloat8_e5m2, 8, "float8_e5m2", true},
    {OCTET_DTYPE_E4M3FNUZ, kDLFloat8_e4m3fnuz, 8, "float8_e4m3fnuz", true},
    {OCTET_DTYPE_E5M2FNUZ, kDLFloat8_e5m2fnuz, 8, "float8_e5m2fnuz", true},
    {OCTET_DTYPE_E8M0, kDLFloat8_e8m0fnu, 8, "float8_e8m0fnu", true},
    {OCTET_DTYPE_E2M1, kDLFloat4_e2m1fn, 4, "float4_e2m1fn", false},
};
}  // namespace

std::string dlpack_dtype_list(bool plain_only) {
  std::vector<const DlpackDtype*> listed;
  for (const DlpackDtype& d : kDlpackDtypes)
    if (d.plain || !plain_only) listed.push_back(&d);
  std::string out;
  for (size_t i = 0; i < listed.size(); ++i) {
    const DlpackDtype& d = *listed[i];
    out += i == 0 ? "" : i + 1 == listed.size() ? " and " : ", ";
    out += std::string(d.name) + " (code " + std::to_string(d.code) + ", bits " + std::to_string(d.bits) + ")";
  }
  return out;
}

}  // namespace octet::core

extern "C" {

OCTET_API size_t octet_dtype_size(octet_dtype dtype) { return octet::core::dtype_size(dtype); }
OCTET_API const char* octet_dtype_name(octet_dtype dtype) { return octet::core::dtype_name(dtype); }

OCTET_API octet_status octet_dtype_to_dlpack(octet_dtype dtype, uint8_t* code, uint8_t* bits) {
  using namespace octet::core;
  return guarded("octet_dtype_to_dlpack", [&] {
    require(code != nullptr, "argument 'code' is NULL");
    require(bits != nullptr, "argument 'bits' is NULL");
    for (const DlpackDtype& d : kDlpackDtypes)
      if (d.dtype == dtype) {
        *code = d.code;
        *bits = d.bits;
        return;
      }
    fail(OCTET_STATUS_INVALID_ARGUMENT, "argument 'dtype' (", dtype, ") is not an octet_dtype");
  });
}

OCTET_API octet_status octet_dtype_from_dlpack(uint8_t code, uint8_t bits, octet_dtype* dtype) {
  using namespace octet::core;
  return guarded("octet_dtype_from_dlpack", [&] {
    require(dtype != nullptr, "argument 'dtype' is NULL");
    for (const DlpackDtype& d : kDlpackDtypes)
      if (d.code == code && d.bits == bits) {
        *dtype = d.dtype;
        return;
      }
    fail(OCTET_STATUS_UNSUPPORTED, "DLPack dtype (code ", int(code), ", bits ", int(bits),
         ") has no Octet dtype: Octet takes ", dlpack_dtype_list(false));
  });
}

}  // extern "C"
