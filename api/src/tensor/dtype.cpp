#include "tensor/dtype.hpp"

#include "runtime/error.hpp"

namespace octet::core {

size_t dtype_size(octet_dtype dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32: return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16: return 2;
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E4M3FNUZ:
    case OCTET_DTYPE_E5M2FNUZ:
    case OCTET_DTYPE_E8M0: return 1;
    default:
      return 0;  // E2M1 included: half a byte
  }
}

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
    case OCTET_DTYPE_FP32: return "fp32";
    case OCTET_DTYPE_BF16: return "bf16";
    case OCTET_DTYPE_FP16: return "fp16";
    case OCTET_DTYPE_E4M3: return "e4m3";
    case OCTET_DTYPE_E5M2: return "e5m2";
    case OCTET_DTYPE_E4M3FNUZ:
      return "e4m3fnuz";
    case OCTET_DTYPE_E5M2FNUZ:
      return "e5m2fnuz";
    case OCTET_DTYPE_E8M0: return "e8m0";
    case OCTET_DTYPE_E2M1:
      return "e2m1";
    default: return "invalid";
  }
}

}  // namespace octet::core

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
}  // namespace

extern "C" {

OCTET_API size_t octet_dtype_size(octet_dtype dtype) { return octet::core::dtype_size(dtype); }
OCTET_API const char* octet_dtype_name(octet_dtype dtype) { return octet::core::dtype_name(dtype); }

OCTET_API octet_status octet_dtype_to_dlpack(octet_dtype dtype, uint8_t* code, uint8_t* bits) {
  using namespace octet::core;
  return guarded("octet_dtype_to_dlpack", [&] {
    require(code != nullptr, "argument 'code' is NULL");
    require(bits != nullptr, "argument 'bits' is NULL");
    uint8_t c = 0, b = 0;
    switch (dtype) {
      case OCTET_DTYPE_FP32: c = kDLFloat; b = 32; break;
      case OCTET_DTYPE_FP16: c = kDLFloat; b = 16; break;
      case OCTET_DTYPE_BF16: c = kDLBfloat; b = 16; break;
      case OCTET_DTYPE_E4M3: c = kDLFloat8_e4m3fn; b = 8; break;
      case OCTET_DTYPE_E5M2: c = kDLFloat8_e5m2; b = 8; break;
      case OCTET_DTYPE_E8M0: c = kDLFloat8_e8m0fnu; b = 8; break;
      case OCTET_DTYPE_E4M3FNUZ:
        c = kDLFloat8_e4m3fnuz;
        b = 8;
        break;
      case OCTET_DTYPE_E5M2FNUZ:
        c = kDLFloat8_e5m2fnuz;
        b = 8;
        break;
      case OCTET_DTYPE_E2M1:
        c = kDLFloat4_e2m1fn;
        b = 4;
        break;
      default: fail(OCTET_STATUS_INVALID_ARGUMENT, "argument 'dtype' (", dtype, ") is not an octet_dtype");
    }
    *code = c;
    *bits = b;
  });
}

OCTET_API octet_status octet_dtype_from_dlpack(uint8_t code, uint8_t bits, octet_dtype* dtype) {
  using namespace octet::core;
  return guarded("octet_dtype_from_dlpack", [&] {
    require(dtype != nullptr, "argument 'dtype' is NULL");
    octet_dtype d = OCTET_DTYPE_INVALID;
    if (code == kDLFloat && bits == 32) d = OCTET_DTYPE_FP32;
    else if (code == kDLFloat && bits == 16) d = OCTET_DTYPE_FP16;
    else if (code == kDLBfloat && bits == 16) d = OCTET_DTYPE_BF16;
    else if (code == kDLFloat8_e4m3fn && bits == 8) d = OCTET_DTYPE_E4M3;
    else if (code == kDLFloat8_e5m2 && bits == 8) d = OCTET_DTYPE_E5M2;
    else if (code == kDLFloat8_e8m0fnu && bits == 8) d = OCTET_DTYPE_E8M0;
    else if (code == kDLFloat8_e4m3fnuz && bits == 8)
      d = OCTET_DTYPE_E4M3FNUZ;
    else if (code == kDLFloat8_e5m2fnuz && bits == 8)
      d = OCTET_DTYPE_E5M2FNUZ;
    else if (code == kDLFloat4_e2m1fn && bits == 4)
      d = OCTET_DTYPE_E2M1;
    else
      fail(OCTET_STATUS_UNSUPPORTED, "DLPack dtype (code ", int(code), ", bits ", int(bits),
           ") has no Octet dtype");
    *dtype = d;
  });
}

}  // extern "C"
