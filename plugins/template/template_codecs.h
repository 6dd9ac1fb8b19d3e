/* Exact scalar codecs of the template backend (numerics.md sections 1-2),
 * in plain C99 (callable from C++) so that they depend on nothing but
 * <stdint.h>. A real backend would run the same rules in its device kernels. */
#ifndef OCTET_TEMPLATE_CODECS_H
#define OCTET_TEMPLATE_CODECS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dtype is OCTET_DTYPE_E4M3 or OCTET_DTYPE_E5M2 (checked by the caller).
 * Round to nearest even once, exponent unbounded above, then overflow per
 * saturate: +-max normal, or NaN (E4M3) / inf (E5M2). NaN keeps its sign. */
uint8_t template_fp8_encode(float value, int32_t dtype, int saturate);
float template_fp8_decode(uint8_t code, int32_t dtype);

/* IEEE-754 binary16 and bfloat16: round to nearest even, NaN stays a quiet
 * NaN with its sign, overflow gives inf. */
uint16_t template_bf16_encode(float value);
float template_bf16_decode(uint16_t code);
uint16_t template_fp16_encode(float value);
float template_fp16_decode(uint16_t code);

#ifdef __cplusplus
}
#endif

#endif
