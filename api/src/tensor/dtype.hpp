// Facts about dtypes that the core's argument checks need.
#pragma once

#include <octet/octet.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace octet::core {

// Bytes per element; 0 for an unknown dtype and for E2M1 (4 bits, packed two
// per byte: docs/abi.md, "Sub-byte dtypes").
size_t dtype_size(octet_dtype dtype);
const char* dtype_name(octet_dtype dtype);
// The 8-bit formats of quantized tensors: OCP (E4M3, E5M2) and FNUZ.
inline bool is_fp8(octet_dtype d) {
  return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2 || d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ;
}
inline bool is_fnuz(octet_dtype d) { return d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ; }
inline bool is_high_precision(octet_dtype d) {
  return d == OCTET_DTYPE_FP32 || d == OCTET_DTYPE_BF16 || d == OCTET_DTYPE_FP16;
}
inline bool is_known(octet_dtype d) { return dtype_size(d) != 0 || d == OCTET_DTYPE_E2M1; }
// Bytes of `count` elements of `dtype`: count * dtype_size, or (count + 1) / 2
// for E2M1 (the packing rule of docs/abi.md).
size_t dtype_bytes(octet_dtype dtype, size_t count);
// "e4m3, e5m2": the FP8 dtypes among OCTET_DTYPE_BIT flags, "none" if none.
std::string fp8_dtype_list(uint32_t dtypes);
// "float32 (code 2, bits 32), ... and float4_e2m1fn (code 17, bits 4)":
// every DLPack dtype octet_dtype_from_dlpack takes, from the table it reads;
// plain_only: those a DLPack import takes (a plain tensor of the dtype
// exists: all but float4_e2m1fn, whose E2M1 is only a quantized tensor).
std::string dlpack_dtype_list(bool plain_only);

}  // namespace octet::core
