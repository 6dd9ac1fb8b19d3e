/* A quantized tensor from codes and scales made elsewhere, and back
 * (docs/abi.md, "Quantized tensors from codes and scales"): an E4M3
 * weight [200, 300] with one FP32 scale_inv per 128 x 128 block, the
 * layout of fine-grained FP8 checkpoints, then a per-tensor one.
 * Dequantized = code value * scale_inv of its block. */
#include <octet/octet.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define TRY(call)                                                            \
  do {                                                                       \
    if ((call) != OCTET_STATUS_SUCCESS) {                                    \
      fprintf(stderr, "%s failed: %s\n", #call, octet_last_error_message()); \
      return 1;                                                              \
    }                                                                        \
  } while (0)

enum { ROWS = 200, COLS = 300, GRID_ROWS = (ROWS + 127) / 128, GRID_COLS = (COLS + 127) / 128 };

int main(void) {
  static uint8_t codes[ROWS * COLS], back[ROWS * COLS];
  static float values[ROWS * COLS];
  float grid[GRID_ROWS * GRID_COLS], grid_back[GRID_ROWS * GRID_COLS];
  octet_context* ctx = NULL;
  octet_tensor *w = NULL, *out = NULL, *p = NULL;
  octet_tensor_desc desc, out_desc;
  octet_tensor_info info;
  int i, bad = 0;
  float scale_inv = 0.25f, scale = 0.0f;

  memset(&desc, 0, sizeof desc);
  memset(&out_desc, 0, sizeof out_desc);
  memset(&info, 0, sizeof info);
  desc.struct_size = out_desc.struct_size = sizeof desc;
  info.struct_size = sizeof info;
  for (i = 0; i < ROWS * COLS; ++i) codes[i] = (uint8_t)(0x38 + (i % 3)); /* 1.0, 1.125, 1.25 */
  for (i = 0; i < GRID_ROWS * GRID_COLS; ++i) grid[i] = 0.5f * (float)(i + 1);

  TRY(octet_context_create(NULL, &ctx));
  /* 1. The tensor: E4M3 codes, rowwise usage, 128 x 128 FP32 block scales. */
  desc.dtype = OCTET_DTYPE_E4M3;
  desc.ndim = 2;
  desc.shape[0] = ROWS;
  desc.shape[1] = COLS;
  desc.usages = OCTET_USAGE_ROWWISE;
  desc.scaling_mode = OCTET_SCALING_BLOCK_128X128;
  TRY(octet_tensor_create(ctx, &desc, &w));
  TRY(octet_tensor_get_info(w, &info)); /* the sizes to copy: rowwise_bytes, rowwise_scale_inv_bytes */
  /* 2. Each component written as it is (each grid entry must be finite and > 0). */
  TRY(octet_tensor_copy_from_host(w, OCTET_COMPONENT_DATA, codes, (size_t)info.rowwise_bytes));
  TRY(octet_tensor_copy_from_host(w, OCTET_COMPONENT_ROWWISE_SCALE_INV, grid, (size_t)info.rowwise_scale_inv_bytes));
  /* 3. Dequantize: code * scale_inv of its block. */
  out_desc.dtype = OCTET_DTYPE_FP32;
  out_desc.ndim = 2;
  out_desc.shape[0] = ROWS;
  out_desc.shape[1] = COLS;
  TRY(octet_tensor_create(ctx, &out_desc, &out));
  TRY(octet_dequantize(ctx, w, out));
  TRY(octet_tensor_copy_to_host(out, OCTET_COMPONENT_DATA, values, sizeof(values)));
  for (i = 0; i < ROWS * COLS; ++i) {
    int r = i / COLS, c = i % COLS;
    float code_value = 1.0f + 0.125f * (float)(i % 3);
    if (values[i] != code_value * grid[(r / 128) * GRID_COLS + c / 128]) ++bad;
  }
  /* 4. And back: the codes and the grid, bit for bit. */
  TRY(octet_tensor_copy_to_host(w, OCTET_COMPONENT_DATA, back, sizeof(back)));
  TRY(octet_tensor_copy_to_host(w, OCTET_COMPONENT_ROWWISE_SCALE_INV, grid_back, sizeof(grid_back)));
  for (i = 0; i < ROWS * COLS; ++i) bad += back[i] != codes[i];
  for (i = 0; i < GRID_ROWS * GRID_COLS; ++i) bad += grid_back[i] != grid[i];

  /* Per-tensor: write SCALE_INV (dequantize reads it); SCALE becomes 1/SCALE_INV. */
  desc.scaling_mode = OCTET_SCALING_PER_TENSOR;
  TRY(octet_tensor_create(ctx, &desc, &p));
  TRY(octet_tensor_copy_from_host(p, OCTET_COMPONENT_DATA, codes, sizeof(codes)));
  TRY(octet_tensor_copy_from_host(p, OCTET_COMPONENT_SCALE_INV, &scale_inv, sizeof(scale_inv)));
  TRY(octet_tensor_copy_to_host(p, OCTET_COMPONENT_SCALE, &scale, sizeof(scale)));
  TRY(octet_dequantize(ctx, p, out));
  TRY(octet_tensor_copy_to_host(out, OCTET_COMPONENT_DATA, values, sizeof(values)));
  for (i = 0; i < ROWS * COLS; ++i) bad += values[i] != (1.0f + 0.125f * (float)(i % 3)) * scale_inv;
  bad += scale != 4.0f;

  octet_tensor_destroy(p);
  octet_tensor_destroy(out);
  octet_tensor_destroy(w);
  octet_context_destroy(ctx);
  if (bad) {
    printf("from_codes: %d mismatches\n", bad);
    return 1;
  }
  printf("from_codes: block and per-tensor tensors match their codes and scales\n");
  return 0;
}
