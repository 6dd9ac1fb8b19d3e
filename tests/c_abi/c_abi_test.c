/*
 * The users' ABI exercised from plain C99, as a C program sees it: versions,
 * statuses, codecs (checked against values derived here from the format
 * definitions), backends, contexts, tensors, quantize, GEMM, DLPack, and
 * bad arguments. Built with -std=c99 -pedantic -Werror; links liboctet only.
 */
#include <octet/octet.h>
#include <octet/octet_backend.h>
#include <octet/octet_dlpack.h>
#include <octet/octet_math.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
              #cond);                                                 \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

/* A failed call must give the expected status and explain itself. */
#define CHECK_FAILS(call, status)                                          \
  do {                                                                     \
    octet_status s_ = (call);                                              \
    const char* m_ = octet_last_error_message();                           \
    if (s_ != (status) || m_ == NULL || m_[0] == '\0') {                   \
      fprintf(stderr, "%s:%d: %s gave %s, message '%s' (expected %s)\n",   \
              __FILE__, __LINE__, #call, octet_status_name(s_),            \
              m_ ? m_ : "(null)", octet_status_name(status));              \
      ++failures;                                                          \
    }                                                                      \
  } while (0)

#define CHECK_OK(call)                                                    \
  do {                                                                    \
    octet_status s_ = (call);                                             \
    if (s_ != OCTET_STATUS_SUCCESS) {                                     \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__,   \
              #call, octet_status_name(s_), octet_last_error_message());  \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

/* ---- FP8 from the format definition (numerics.md section 1) ----------- */

/* Value of an FP8 code: exponent bits e, mantissa bits m, bias. */
static double fp8_value(unsigned code, int exp_bits, int man_bits, int bias,
                        int is_e4m3) {
  unsigned sign = code >> 7;
  unsigned e = (code >> man_bits) & ((1u << exp_bits) - 1u);
  unsigned m = code & ((1u << man_bits) - 1u);
  double v;
  if (is_e4m3 && e == 15u && m == 7u) return NAN;
  if (!is_e4m3 && e == 31u) return m == 0u ? (sign ? -INFINITY : INFINITY) : NAN;
  if (e == 0u)
    v = ldexp((double)m, 1 - bias - man_bits);
  else
    v = ldexp(1.0 + ldexp((double)m, -man_bits), (int)e - bias);
  return sign ? -v : v;
}
static double e4m3_value(unsigned code) { return fp8_value(code, 4, 3, 7, 1); }
static double e5m2_value(unsigned code) { return fp8_value(code, 5, 2, 15, 0); }

/* Saturating RNE by search: the nearest finite code, ties to the code with
 * an even mantissa (even last bit), clamped to max normal. */
static unsigned nearest_code(double x, double (*value)(unsigned), double max) {
  unsigned best = 0, c;
  double best_d = INFINITY;
  unsigned sign = x < 0 ? 0x80u : 0u;
  double ax = fabs(x);
  if (ax > max) ax = max;
  for (c = 0; c < 0x80u; ++c) {
    double v = value(c), d;
    if (isnan(v) || isinf(v) || v > max) continue;
    d = fabs(v - ax);
    if (d < best_d || (d == best_d && (c & 1u) == 0u)) {
      best = c;
      best_d = d;
    }
  }
  return best | sign;
}

static void test_versions_and_statuses(void) {
  octet_version lib = octet_library_version();
  octet_version abi = octet_abi_version();
  CHECK(lib.major == OCTET_VERSION_MAJOR && lib.minor == OCTET_VERSION_MINOR);
  CHECK(abi.major == OCTET_ABI_MAJOR && abi.minor == OCTET_ABI_MINOR && abi.patch == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_SUCCESS), "OCTET_STATUS_SUCCESS") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_INVALID_ARGUMENT),
               "OCTET_STATUS_INVALID_ARGUMENT") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_UNSUPPORTED), "OCTET_STATUS_UNSUPPORTED") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_OUT_OF_MEMORY), "OCTET_STATUS_OUT_OF_MEMORY") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_NOT_FOUND), "OCTET_STATUS_NOT_FOUND") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_BACKEND_ERROR), "OCTET_STATUS_BACKEND_ERROR") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_ABI_MISMATCH), "OCTET_STATUS_ABI_MISMATCH") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_UNAVAILABLE), "OCTET_STATUS_UNAVAILABLE") == 0);
  CHECK(strcmp(octet_status_name(OCTET_STATUS_INTERNAL), "OCTET_STATUS_INTERNAL") == 0);
  CHECK(octet_status_name(12345) != NULL);
  /* The plugin ABI is part of the same release. */
  CHECK(OCTET_PLUGIN_ABI_MAJOR >= 1);
  CHECK(strcmp(OCTET_BACKEND_ENTRY_SYMBOL, "octet_backend_entry") == 0);
}

static void test_dtypes(void) {
  uint8_t code = 0, bits = 0;
  octet_dtype d = OCTET_DTYPE_INVALID;
  CHECK(octet_dtype_size(OCTET_DTYPE_FP32) == 4 && octet_dtype_size(OCTET_DTYPE_BF16) == 2 &&
        octet_dtype_size(OCTET_DTYPE_FP16) == 2 && octet_dtype_size(OCTET_DTYPE_E4M3) == 1 &&
        octet_dtype_size(OCTET_DTYPE_E5M2) == 1 && octet_dtype_size(OCTET_DTYPE_E8M0) == 1);
  CHECK(octet_dtype_size(77) == 0);
  CHECK(strcmp(octet_dtype_name(OCTET_DTYPE_E4M3), "e4m3") == 0);
  CHECK(strcmp(octet_dtype_name(77), "invalid") == 0);
  /* DLPack: kDLFloat = 2, kDLBfloat = 4, kDLFloat8_e4m3fn = 10, e5m2 = 12, e8m0fnu = 14 */
  CHECK_OK(octet_dtype_to_dlpack(OCTET_DTYPE_FP32, &code, &bits));
  CHECK(code == 2 && bits == 32);
  CHECK_OK(octet_dtype_to_dlpack(OCTET_DTYPE_BF16, &code, &bits));
  CHECK(code == 4 && bits == 16);
  CHECK_OK(octet_dtype_to_dlpack(OCTET_DTYPE_E5M2, &code, &bits));
  CHECK(code == 12 && bits == 8);
  CHECK_OK(octet_dtype_from_dlpack(10, 8, &d));
  CHECK(d == OCTET_DTYPE_E4M3);
  CHECK_OK(octet_dtype_from_dlpack(2, 16, &d));
  CHECK(d == OCTET_DTYPE_FP16);
  d = OCTET_DTYPE_FP32;
  CHECK_FAILS(octet_dtype_from_dlpack(0, 32, &d), OCTET_STATUS_UNSUPPORTED);
  CHECK(d == OCTET_DTYPE_FP32); /* outputs untouched on failure */
  CHECK_FAILS(octet_dtype_to_dlpack(OCTET_DTYPE_FP32, NULL, &bits), OCTET_STATUS_INVALID_ARGUMENT);
}

static void test_codecs(void) {
  unsigned c;
  uint32_t state = 12345u;
  int i;
  /* Every code decodes to the value of the format definition. */
  for (c = 0; c < 256u; ++c) {
    double e4 = e4m3_value(c), e5 = e5m2_value(c);
    float g4 = octet_fp8_decode((uint8_t)c, OCTET_DTYPE_E4M3);
    float g5 = octet_fp8_decode((uint8_t)c, OCTET_DTYPE_E5M2);
    CHECK(isnan(e4) ? isnan(g4) : (double)g4 == e4);
    CHECK(isnan(e5) ? isnan(g5) : (double)g5 == e5);
  }
  /* Spot values of numerics.md sections 1 and 2. */
  CHECK(octet_fp8_encode(448.0f, OCTET_DTYPE_E4M3, 1) == 0x7E);
  CHECK(octet_fp8_encode(ldexpf(1.0f, -9), OCTET_DTYPE_E4M3, 1) == 0x01);
  CHECK(octet_fp8_encode(-ldexpf(1.0f, -9), OCTET_DTYPE_E4M3, 1) == 0x81);
  CHECK(octet_fp8_encode(ldexpf(7.5f, -9), OCTET_DTYPE_E4M3, 1) == 0x08);
  CHECK(octet_fp8_encode(464.0f, OCTET_DTYPE_E4M3, 0) == 0x7E);
  CHECK(octet_fp8_encode(465.0f, OCTET_DTYPE_E4M3, 0) == 0x7F);
  CHECK(octet_fp8_encode(-INFINITY, OCTET_DTYPE_E4M3, 0) == 0xFF);
  CHECK(octet_fp8_encode(INFINITY, OCTET_DTYPE_E4M3, 1) == 0x7E);
  CHECK(octet_fp8_encode(NAN, OCTET_DTYPE_E4M3, 1) == 0x7F);
  CHECK(octet_fp8_encode(57344.0f, OCTET_DTYPE_E5M2, 0) == 0x7B);
  CHECK(octet_fp8_encode(61440.0f, OCTET_DTYPE_E5M2, 0) == 0x7C);
  CHECK(octet_fp8_encode(-61440.0f, OCTET_DTYPE_E5M2, 1) == 0xFB);
  CHECK(octet_fp8_encode(ldexpf(1.0f, -16), OCTET_DTYPE_E5M2, 1) == 0x01);
  CHECK(octet_fp8_encode(ldexpf(1.0f, -10), OCTET_DTYPE_E4M3, 1) == 0x00); /* tie to even: 0 */
  CHECK(octet_fp8_encode(-ldexpf(1.0f, -12), OCTET_DTYPE_E4M3, 1) == 0x80); /* keeps sign */
  /* Saturating encode agrees with a search over all codes. */
  for (i = 0; i < 4000; ++i) {
    float x;
    state = state * 1664525u + 1013904223u;
    x = ldexpf((float)(state >> 8) / 16777216.0f + 0.5f, (int)(state % 40u) - 22);
    if (state & 0x80u) x = -x;
    CHECK(octet_fp8_encode(x, OCTET_DTYPE_E4M3, 1) == nearest_code(x, e4m3_value, 448.0));
    CHECK(octet_fp8_encode(x, OCTET_DTYPE_E5M2, 1) == nearest_code(x, e5m2_value, 57344.0));
  }
  /* An invalid dtype gives 0xFF and a message. */
  CHECK(octet_fp8_encode(1.0f, OCTET_DTYPE_FP32, 1) == 0xFF);
  CHECK(octet_last_error_message()[0] != '\0');
  CHECK(isnan(octet_fp8_decode(0x38, 99)));
  /* BF16 / FP16 / E8M0 spot values from their definitions. */
  CHECK(octet_bf16_encode(1.0f) == 0x3F80 && octet_fp16_encode(1.0f) == 0x3C00);
  CHECK(octet_fp16_encode(65520.0f) == 0x7C00);                 /* overflow -> inf */
  CHECK(octet_bf16_encode(1.0f + ldexpf(1.0f, -8)) == 0x3F80);  /* tie to even */
  CHECK(octet_fp16_decode(0x0001) == ldexpf(1.0f, -24));
  CHECK(octet_bf16_decode(0xC040) == -3.0f);
  CHECK(octet_e8m0_encode(1.0f, OCTET_E8M0_ROUND_CEIL) == 127);
  CHECK(octet_e8m0_encode(0.75f, OCTET_E8M0_ROUND_CEIL) == 127);
  CHECK(octet_e8m0_encode(0.75f, OCTET_E8M0_ROUND_FLOOR) == 126);
  CHECK(octet_e8m0_encode(0.0f, OCTET_E8M0_ROUND_CEIL) == 0xFF);
  CHECK(octet_e8m0_decode(130) == 8.0f);
  {
    float in[3] = {1.0f, -448.0f, 0.0f}, back[3];
    uint8_t out[3];
    CHECK_OK(octet_fp8_encode_array(in, out, 3, OCTET_DTYPE_E4M3, 1));
    CHECK(out[0] == 0x38 && out[1] == 0xFE && out[2] == 0x00);
    CHECK_OK(octet_fp8_decode_array(out, back, 3, OCTET_DTYPE_E4M3));
    CHECK(back[0] == 1.0f && back[1] == -448.0f && back[2] == 0.0f);
    CHECK_FAILS(octet_fp8_encode_array(NULL, out, 3, OCTET_DTYPE_E4M3, 1),
                OCTET_STATUS_INVALID_ARGUMENT);
  }
}

static void test_backends(void) {
  size_t count = 0, failures_count = 0;
  octet_backend_info info;
  CHECK_OK(octet_backend_count(&count));
  CHECK(count >= 1);
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_OK(octet_backend_get_info(0, &info));
  CHECK(info.name && strcmp(info.name, "reference") == 0);
  CHECK(info.path && strcmp(info.path, "(embedded)") == 0);
  CHECK(info.available == 1 && info.memory_kind == OCTET_MEMORY_HOST);
  CHECK(info.abi_major == OCTET_PLUGIN_ABI_MAJOR);
  CHECK((info.dtypes & OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3)) != 0);
  CHECK(info.alignment >= 1 && (info.alignment & (info.alignment - 1)) == 0);
  CHECK_FAILS(octet_backend_get_info(count, &info), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK_FAILS(octet_backend_count(NULL), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK_OK(octet_backend_failure_count(&failures_count));
  CHECK_FAILS(octet_backend_load("/nonexistent/liboctet_backend_none.so"),
              OCTET_STATUS_NOT_FOUND);
}

static octet_tensor* make_tensor(octet_context* ctx, octet_dtype dtype, int64_t rows,
                                 int64_t cols, uint32_t usages) {
  octet_tensor_desc desc;
  octet_tensor* t = NULL;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.dtype = dtype;
  desc.ndim = 2;
  desc.shape[0] = rows;
  desc.shape[1] = cols;
  desc.usages = usages;
  CHECK_OK(octet_tensor_create(ctx, &desc, &t));
  return t;
}

static void test_tensors_quantize_gemm(octet_context* ctx) {
  /* A: 2x4, B: 3x4 (the canonical [N,K] layout), small integers. */
  const float a[8] = {1, -2, 3, 0.5f, -1, 4, 2, -3};
  const float b[12] = {2, 1, 0, -1, 0.25f, -2, 1, 3, 1, 1, 1, 1};
  float d[6], back[8], scale = 2.0f, scale_inv = 0, amax = 0;
  uint8_t codes[8];
  octet_tensor *ta, *tb, *qa, *qb, *td;
  octet_tensor_info tinfo;
  int i, j, k;

  ta = make_tensor(ctx, OCTET_DTYPE_FP32, 2, 4, 0);
  tb = make_tensor(ctx, OCTET_DTYPE_FP32, 3, 4, 0);
  td = make_tensor(ctx, OCTET_DTYPE_FP32, 2, 3, 0);
  if (!ta || !tb || !td) return;
  CHECK_OK(octet_tensor_copy_from_host(ta, OCTET_COMPONENT_DATA, a, sizeof a));
  CHECK_OK(octet_tensor_copy_from_host(tb, OCTET_COMPONENT_DATA, b, sizeof b));
  CHECK_OK(octet_tensor_copy_to_host(ta, OCTET_COMPONENT_DATA, back, sizeof back));
  CHECK(memcmp(a, back, sizeof a) == 0);
  memset(&tinfo, 0, sizeof tinfo);
  tinfo.struct_size = sizeof tinfo;
  CHECK_OK(octet_tensor_get_info(ta, &tinfo));
  CHECK(tinfo.dtype == OCTET_DTYPE_FP32 && tinfo.ndim == 2 && tinfo.shape[1] == 4);
  CHECK(tinfo.owns_memory == 1 && tinfo.rowwise_bytes == sizeof a);

  /* High-precision GEMM against the naive sum (exact for these values). */
  CHECK_OK(octet_gemm(ctx, ta, tb, td, NULL));
  CHECK_OK(octet_tensor_copy_to_host(td, OCTET_COMPONENT_DATA, d, sizeof d));
  for (i = 0; i < 2; ++i)
    for (j = 0; j < 3; ++j) {
      float s = 0;
      for (k = 0; k < 4; ++k) s += a[i * 4 + k] * b[j * 4 + k];
      CHECK(d[i * 3 + j] == s);
    }

  /* Quantize A with scale 2: codes = nearest E4M3 of 2*a, scale_inv 0.5. */
  qa = make_tensor(ctx, OCTET_DTYPE_E4M3, 2, 4, OCTET_USAGE_BOTH);
  qb = make_tensor(ctx, OCTET_DTYPE_E4M3, 3, 4, OCTET_USAGE_ROWWISE);
  if (!qa || !qb) return;
  CHECK_OK(octet_tensor_copy_from_host(qa, OCTET_COMPONENT_SCALE, &scale, sizeof scale));
  CHECK_OK(octet_quantize(ctx, ta, qa, NULL));
  CHECK_OK(octet_quantize(ctx, tb, qb, NULL)); /* SCALE starts at 1 */
  CHECK_OK(octet_tensor_copy_to_host(qa, OCTET_COMPONENT_SCALE_INV, &scale_inv, sizeof scale_inv));
  CHECK_OK(octet_tensor_copy_to_host(qa, OCTET_COMPONENT_AMAX, &amax, sizeof amax));
  CHECK(scale_inv == 0.5f && amax == 4.0f);
  CHECK_OK(octet_tensor_copy_to_host(qa, OCTET_COMPONENT_DATA, codes, sizeof codes));
  for (i = 0; i < 8; ++i) CHECK(codes[i] == nearest_code(2.0 * a[i], e4m3_value, 448.0));

  /* FP8 GEMM: A's scale_inv 0.5 undoes its scale 2, and every code is exact,
   * so the result equals the FP32 one. */
  CHECK_OK(octet_gemm(ctx, qa, qb, td, NULL));
  CHECK_OK(octet_tensor_copy_to_host(td, OCTET_COMPONENT_DATA, d, sizeof d));
  for (i = 0; i < 2; ++i)
    for (j = 0; j < 3; ++j) {
      float s = 0;
      for (k = 0; k < 4; ++k) s += a[i * 4 + k] * b[j * 4 + k];
      CHECK(d[i * 3 + j] == s);
    }

  /* Bad arguments: the right status, a message, outputs untouched. */
  CHECK_FAILS(octet_quantize(ctx, ta, td, NULL), OCTET_STATUS_INVALID_ARGUMENT); /* FP32 out */
  CHECK_FAILS(octet_convert(ctx, ta, td, 1), OCTET_STATUS_INVALID_ARGUMENT);     /* shapes */
  CHECK_FAILS(octet_gemm(ctx, ta, ta, td, NULL), OCTET_STATUS_INVALID_ARGUMENT); /* N mismatch */
  CHECK_FAILS(octet_gemm(ctx, qa, tb, td, NULL), OCTET_STATUS_INVALID_ARGUMENT); /* FP8 x FP32 */
  CHECK_FAILS(octet_gemm(ctx, NULL, tb, td, NULL), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK_FAILS(octet_tensor_copy_to_host(ta, OCTET_COMPONENT_DATA, back, sizeof back - 4),
              OCTET_STATUS_INVALID_ARGUMENT);
  CHECK_FAILS(octet_tensor_copy_to_host(ta, OCTET_COMPONENT_SCALE, back, 4),
              OCTET_STATUS_INVALID_ARGUMENT); /* a plain tensor has no scale */
  amax = -1.0f;
  CHECK_FAILS(octet_amax(ctx, qa, &amax), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK(amax == -1.0f);
  CHECK_FAILS(octet_amax(ctx, ta, NULL), OCTET_STATUS_INVALID_ARGUMENT);

  octet_tensor_destroy(qa);
  octet_tensor_destroy(qb);
  octet_tensor_destroy(ta);
  octet_tensor_destroy(tb);
  octet_tensor_destroy(td);
}

static void test_wrap(octet_context* ctx, uint64_t alignment) {
  octet_tensor_desc desc;
  octet_tensor* t = NULL;
  octet_tensor* const sentinel = (octet_tensor*)&desc;
  octet_tensor* out = sentinel;
  unsigned char* raw = (unsigned char*)malloc(64 + 2 * alignment);
  unsigned char* aligned;
  float values[16], got[16];
  int i;
  if (!raw) return;
  aligned = raw + (alignment - (uintptr_t)raw % alignment) % alignment;
  for (i = 0; i < 16; ++i) values[i] = (float)i - 7.5f;
  memcpy(aligned, values, sizeof values);
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.dtype = OCTET_DTYPE_FP32;
  desc.ndim = 1;
  desc.shape[0] = 16;
  CHECK_OK(octet_tensor_wrap(ctx, &desc, aligned, &t));
  if (t) {
    octet_tensor_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(octet_tensor_get_info(t, &info));
    CHECK(info.owns_memory == 0);
    CHECK_OK(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, got, sizeof got));
    CHECK(memcmp(got, values, sizeof got) == 0);
    octet_tensor_destroy(t);
  }
  if (alignment > 1) {
    CHECK_FAILS(octet_tensor_wrap(ctx, &desc, aligned + 1, &out), OCTET_STATUS_INVALID_ARGUMENT);
    CHECK(out == sentinel);
  }
  CHECK_FAILS(octet_tensor_wrap(ctx, &desc, NULL, &out), OCTET_STATUS_INVALID_ARGUMENT);
  desc.usages = OCTET_USAGE_ROWWISE;
  desc.dtype = OCTET_DTYPE_E4M3;
  CHECK_FAILS(octet_tensor_wrap(ctx, &desc, aligned, &out), OCTET_STATUS_INVALID_ARGUMENT);
  desc.dtype = OCTET_DTYPE_INVALID;
  desc.usages = 0;
  CHECK_FAILS(octet_tensor_create(ctx, &desc, &out), OCTET_STATUS_INVALID_ARGUMENT);
  desc.dtype = OCTET_DTYPE_FP32;
  desc.ndim = 0;
  CHECK_FAILS(octet_tensor_create(ctx, &desc, &out), OCTET_STATUS_INVALID_ARGUMENT);
  desc.ndim = 1;
  desc.shape[0] = -3;
  CHECK_FAILS(octet_tensor_create(ctx, &desc, &out), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK_FAILS(octet_tensor_create(ctx, NULL, &out), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK(out == sentinel);
  free(raw);
}

/* Appended fields must start past the older struct's size, never inside its
 * tail padding (an older caller or plugin leaves padding unset). The older
 * layouts are restated here from the headers of those ABI versions. */
typedef struct {
  size_t struct_size;
  int32_t trans_a, trans_b;
  float alpha, beta;
  const octet_tensor* bias;
  int32_t epilogue;
} gemm_options_abi13;
typedef struct {
  size_t struct_size;
  const char* device;
  int32_t memory_kind;
  uint32_t dtypes, scaling_modes;
  int32_t native_columnwise;
  uint32_t fp8_gemm_layouts;
  uint64_t alignment;
  int32_t fused_cast_transpose;
} backend_caps_abi12;
typedef struct {
  size_t struct_size;
  int64_t m, n, k;
  octet_matrix_view a, b;
  int32_t trans_a, trans_b;
  const float* a_scale_inv;
  const float* b_scale_inv;
  float alpha, beta;
  octet_matrix_view d, bias;
  int32_t epilogue;
} gemm_args_abi12;

typedef struct {
  size_t struct_size;
  int32_t format;
  float amax_epsilon;
  int32_t power_of_two_scales;
} current_scaling_options_abi14;

typedef struct {
  size_t struct_size;
  octet_status (*allreduce_max)(float* values, size_t count, void* user_data);
  void* user_data;
} communicator_abi16;

static void check_appended_fields_start_past_old_sizes(void) {
  CHECK(offsetof(octet_communicator, rank) >= sizeof(communicator_abi16));
  CHECK(offsetof(octet_communicator, user_data) == offsetof(communicator_abi16, user_data));
  CHECK(offsetof(octet_current_scaling_options, reduce_amax) >= sizeof(current_scaling_options_abi14));
  CHECK(offsetof(octet_current_scaling_options, power_of_two_scales) ==
        offsetof(current_scaling_options_abi14, power_of_two_scales));
  CHECK(offsetof(octet_gemm_options, fast_accumulation) >= sizeof(gemm_options_abi13));
  CHECK(offsetof(octet_gemm_options, epilogue) == offsetof(gemm_options_abi13, epilogue));
  CHECK(offsetof(octet_backend_caps, fp8_gemm_output) >= sizeof(backend_caps_abi12));
  CHECK(offsetof(octet_backend_caps, fused_cast_transpose) == offsetof(backend_caps_abi12, fused_cast_transpose));
  CHECK(offsetof(octet_gemm_args, fast_accumulation) >= sizeof(gemm_args_abi12));
  CHECK(offsetof(octet_gemm_args, epilogue) == offsetof(gemm_args_abi12, epilogue));
}

/* octet_math.h compiles as C99 and gives tanh/exp to FP32 accuracy
 * (values from the definitions: tanh(0.5) = 0.46211715726..., e^1). */
static void check_octet_math(void) {
  CHECK(fabsf(octet_math_tanhf(0.5f) - 0.46211715726f) <= 3e-8f);
  CHECK(octet_math_tanhf(-20.0f) == -1.0f);
  CHECK(fabsf(octet_math_expf(1.0f) - 2.71828182846f) <= 3e-7f);
  CHECK(octet_math_expf(-200.0f) == 0.0f);
}

/* A DLPack producer in C: counts its deleter's calls. */
static int dlpack_deleted = 0;
static void count_deleter(octet_dlpack_managed_tensor_versioned* self) {
  (void)self;
  ++dlpack_deleted;
}

static void test_dlpack(octet_context* ctx) {
  octet_tensor* t = NULL;
  octet_tensor* imported = NULL;
  octet_dlpack_managed_tensor_versioned* exported = NULL;
  octet_dlpack_managed_tensor_versioned producer;
  int64_t shape[2] = {2, 8};
  unsigned char* raw = (unsigned char*)malloc(64 + 64);
  float* memory;
  float got[16], values[16];
  int i;
  if (!raw) return;
  memory = (float*)(void*)(raw + (64 - (uintptr_t)raw % 64) % 64);
  for (i = 0; i < 16; ++i) memory[i] = (float)i;
  memset(&producer, 0, sizeof producer);
  producer.version.major = OCTET_DLPACK_MAJOR_VERSION;
  producer.deleter = count_deleter;
  producer.dl_tensor.data = memory;
  producer.dl_tensor.device.device_type = OCTET_DLPACK_DEVICE_CPU;
  producer.dl_tensor.ndim = 2;
  producer.dl_tensor.dtype.code = OCTET_DLPACK_CODE_FLOAT;
  producer.dl_tensor.dtype.bits = 32;
  producer.dl_tensor.dtype.lanes = 1;
  producer.dl_tensor.shape = shape;
  /* Refused (read-only): the deleter stays the caller's. */
  producer.flags = OCTET_DLPACK_FLAG_READ_ONLY;
  CHECK_FAILS(octet_tensor_from_dlpack(ctx, &producer, &t), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK(t == NULL && dlpack_deleted == 0);
  producer.flags = 0;
  CHECK_OK(octet_tensor_from_dlpack(ctx, &producer, &t));
  if (t) {
    /* Export the import: one memory, three names. */
    CHECK_OK(octet_tensor_to_dlpack(t, OCTET_COMPONENT_DATA, &exported));
    CHECK_OK(octet_tensor_copy_to_host(t, OCTET_COMPONENT_DATA, got, sizeof got));
    CHECK(got[15] == 15.0f);
    octet_tensor_destroy(t);
    CHECK(dlpack_deleted == 0); /* the export still holds it */
    if (exported) {
      CHECK(exported->dl_tensor.data == (void*)memory && exported->dl_tensor.strides[0] == 8);
      CHECK(exported->version.major == 1 && exported->flags == 0);
      CHECK_OK(octet_tensor_from_dlpack(ctx, exported, &imported));
      for (i = 0; i < 16; ++i) values[i] = -1.0f;
      if (imported) CHECK_OK(octet_tensor_copy_from_host(imported, OCTET_COMPONENT_DATA, values, sizeof values));
      CHECK(memory[3] == -1.0f);
      octet_tensor_destroy(imported); /* calls the export's deleter, which lets the producer go */
    }
  }
  CHECK(dlpack_deleted == 1);
  free(raw);
}

int main(void) {
  octet_context_options options;
  octet_context* ctx = NULL;
  octet_context* unused = NULL;
  octet_backend_info info;

  check_octet_math();
  check_appended_fields_start_past_old_sizes();

  test_versions_and_statuses();
  test_dtypes();
  test_codecs();
  test_backends();

  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = "no_such_backend";
  CHECK_FAILS(octet_context_create(&options, &unused), OCTET_STATUS_NOT_FOUND);
  CHECK(unused == NULL);
  options.backend = "reference";
  CHECK_FAILS(octet_context_create(&options, NULL), OCTET_STATUS_INVALID_ARGUMENT);
  CHECK_OK(octet_context_create(&options, &ctx));
  if (!ctx) return 1;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  CHECK_OK(octet_context_get_info(ctx, &info));
  CHECK(strcmp(info.name, "reference") == 0);
  CHECK_OK(octet_context_synchronize(ctx));

  test_tensors_quantize_gemm(ctx);
  test_wrap(ctx, info.alignment);
  test_dlpack(ctx);

  /* Destroy accepts NULL. */
  octet_context_destroy(NULL);
  octet_tensor_destroy(NULL);
  octet_context_destroy(ctx);

  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_abi: all checks passed\n");
  return 0;
}
