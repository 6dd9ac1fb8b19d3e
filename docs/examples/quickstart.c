/*
 * Quick start: quantize two matrices to FP8 (E4M3) and multiply them.
 * The README shows this file; tests/c_abi builds and runs it, so it stays true.
 *
 *   cc -std=c99 quickstart.c -I<octet>/include -L<octet>/lib -loctet -Wl,-rpath,<octet>/lib
 */
#include <octet/octet.h>

#include <stdio.h>
#include <string.h>

/* Every Octet call returns a status; on failure the message says why. */
#define TRY(call)                                                        \
  do {                                                                   \
    octet_status status_ = (call);                                       \
    if (status_ != OCTET_STATUS_SUCCESS) {                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call,                      \
              octet_status_name(status_), octet_last_error_message());   \
      return 1;                                                          \
    }                                                                    \
  } while (0)

static octet_tensor_desc matrix(octet_dtype dtype, int64_t rows, int64_t cols,
                                uint32_t usages) {
  octet_tensor_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.dtype = dtype;
  desc.ndim = 2;
  desc.shape[0] = rows;
  desc.shape[1] = cols;
  desc.usages = usages;
  return desc;
}

int main(void) {
  /* x: 2x3 activations; w: 2x3 weights stored [N, K] as a Linear keeps them. */
  const float x[6] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -3.0f};
  const float w[6] = {1.0f, 2.0f, -1.0f, 0.5f, -0.5f, 4.0f};
  const float x_scale = 448.0f / 3.0f; /* maps max |x| onto E4M3's max */
  float y[4];
  int i;

  octet_context_options options;
  octet_context* ctx = NULL;
  octet_tensor_desc hp = matrix(OCTET_DTYPE_FP32, 2, 3, 0);
  octet_tensor_desc q = matrix(OCTET_DTYPE_E4M3, 2, 3, OCTET_USAGE_ROWWISE);
  octet_tensor_desc out = matrix(OCTET_DTYPE_FP32, 2, 2, 0);
  octet_tensor *tx = NULL, *tw = NULL, *qx = NULL, *qw = NULL, *ty = NULL;

  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.backend = "reference"; /* or NULL: the best available backend */
  TRY(octet_context_create(&options, &ctx));

  TRY(octet_tensor_create(ctx, &hp, &tx));
  TRY(octet_tensor_create(ctx, &hp, &tw));
  TRY(octet_tensor_create(ctx, &q, &qx));
  TRY(octet_tensor_create(ctx, &q, &qw)); /* SCALE starts at 1 */
  TRY(octet_tensor_create(ctx, &out, &ty));
  TRY(octet_tensor_copy_from_host(tx, OCTET_COMPONENT_DATA, x, sizeof x));
  TRY(octet_tensor_copy_from_host(tw, OCTET_COMPONENT_DATA, w, sizeof w));
  TRY(octet_tensor_copy_from_host(qx, OCTET_COMPONENT_SCALE, &x_scale, sizeof x_scale));

  /* q = fp8(x * scale); the tensor also records scale_inv and amax. */
  TRY(octet_quantize(ctx, tx, qx, NULL));
  TRY(octet_quantize(ctx, tw, qw, NULL));

  /* y = x w^T, computed from the FP8 codes and their scales. */
  TRY(octet_gemm(ctx, qx, qw, ty, NULL));
  TRY(octet_tensor_copy_to_host(ty, OCTET_COMPONENT_DATA, y, sizeof y));

  for (i = 0; i < 4; ++i) {
    int r = i / 2, c = i % 2;
    float exact = x[r * 3] * w[c * 3] + x[r * 3 + 1] * w[c * 3 + 1] + x[r * 3 + 2] * w[c * 3 + 2];
    printf("y[%d][%d] = %8.4f   (FP32: %8.4f)\n", r, c, y[i], exact);
  }

  octet_tensor_destroy(ty);
  octet_tensor_destroy(qw);
  octet_tensor_destroy(qx);
  octet_tensor_destroy(tw);
  octet_tensor_destroy(tx);
  octet_context_destroy(ctx);
  return 0;
}
