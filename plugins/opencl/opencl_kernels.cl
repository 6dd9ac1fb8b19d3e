/* The opencl backend's kernels (OpenCL C 1.2). The host builds them with the
 * dtype codes of octet_types.h passed as -D options (OCTET_FP32, OCTET_BF16,
 * OCTET_FP16, OCTET_E4M3, OCTET_E5M2) and no relaxed-math option: every FP32
 * operation rounds to nearest even with IEEE subnormals.
 *
 * Every buffer argument is a cl_mem plus a byte offset (the host maps the
 * core's device pointers to both); elements are read and written byte by
 * byte, so no offset needs more than byte alignment. Codecs are integer
 * arithmetic on bit patterns, as numerics.md sections 2 to 4 define them. */
#pragma OPENCL FP_CONTRACT OFF

typedef __global uchar* mem_t;
typedef __global const uchar* cmem_t;

/* ---- Raw loads and stores --------------------------------------------- */

uint load_u32(cmem_t p) {
  return (uint)p[0] | ((uint)p[1] << 8) | ((uint)p[2] << 16) | ((uint)p[3] << 24);
}
void store_u32(mem_t p, uint v) {
  p[0] = (uchar)v;
  p[1] = (uchar)(v >> 8);
  p[2] = (uchar)(v >> 16);
  p[3] = (uchar)(v >> 24);
}
uint load_u16(cmem_t p) { return (uint)p[0] | ((uint)p[1] << 8); }
void store_u16(mem_t p, uint v) {
  p[0] = (uchar)v;
  p[1] = (uchar)(v >> 8);
}

/* ---- FP32 operations with numerics.md section 13's NaN rule ----------- */

float quieted(float x) { return as_float(as_uint(x) | 0x00400000u); }
bool is_nan_bits(float x) { return (as_uint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
float nan_rule(float a, float b, float r) {
  if (is_nan_bits(a)) return quieted(a);
  if (is_nan_bits(b)) return quieted(b);
  if (is_nan_bits(r)) return as_float(0xFFC00000u);
  return r;
}
float mul_rule(float a, float b) { return nan_rule(a, b, a * b); }

/* ---- Codecs ------------------------------------------------------------ */

uint round_to_format(uint abs_bits, int man_bits, int bias) {
  uint exponent_field = abs_bits >> 23;
  int min_exponent = 1 - bias;
  int exponent = exponent_field == 0 ? -126 : (int)exponent_field - 127;
  uint significand = (abs_bits & 0x7FFFFFu) | (exponent_field == 0 ? 0u : 0x800000u);
  int grid_exponent = exponent > min_exponent ? exponent : min_exponent;
  int shift = 23 + grid_exponent - man_bits - exponent;
  uint steps;
  if (shift > 24) {
    steps = 0;
  } else {
    uint remainder = significand & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1);
    steps = significand >> shift;
    if (remainder > halfway || (remainder == halfway && (steps & 1u))) steps += 1;
  }
  if (steps < (1u << man_bits)) return steps;
  if (steps >= (2u << man_bits)) {
    steps >>= 1;
    grid_exponent += 1;
  }
  return ((uint)(grid_exponent + bias) << man_bits) | (steps - (1u << man_bits));
}

float finite_value(uint magnitude, int man_bits, int bias) {
  uint exponent_field = magnitude >> man_bits;
  uint mantissa = magnitude & ((1u << man_bits) - 1u);
  if (exponent_field == 0) {
    float unit = as_float((uint)(127 + 1 - bias - man_bits) << 23);
    return (float)mantissa * unit;
  }
  return as_float(((exponent_field - (uint)bias + 127u) << 23) | (mantissa << (23 - man_bits)));
}

float with_sign(float magnitude, bool negative) {
  return negative ? as_float(as_uint(magnitude) | 0x80000000u) : magnitude;
}

uchar fp8_encode(float value, int dtype, int saturate) {
  bool e4m3 = dtype == OCTET_E4M3;
  int man_bits = e4m3 ? 3 : 2;
  int bias = e4m3 ? 7 : 15;
  uint max_finite = e4m3 ? 0x7Eu : 0x7Bu;
  uint bits = as_uint(value);
  uint sign = (bits >> 24) & 0x80u;
  uint abs_bits = bits & 0x7FFFFFFFu;
  uint magnitude;
  if (abs_bits > 0x7F800000u) return (uchar)(sign | 0x7Fu);
  magnitude = abs_bits == 0x7F800000u ? max_finite + 1u : round_to_format(abs_bits, man_bits, bias);
  if (magnitude <= max_finite) return (uchar)(sign | magnitude);
  if (saturate) return (uchar)(sign | max_finite);
  return (uchar)(sign | (e4m3 ? 0x7Fu : 0x7Cu));
}

float fp8_decode(uint code, int dtype) {
  bool negative = (code & 0x80u) != 0;
  uint magnitude = code & 0x7Fu;
  if (dtype == OCTET_E4M3) {
    if (magnitude == 0x7Fu) return as_float((negative ? 0x80000000u : 0u) | 0x7FC00000u);
    return with_sign(finite_value(magnitude, 3, 7), negative);
  }
  if (magnitude == 0x7Cu) return with_sign(as_float(0x7F800000u), negative);
  if (magnitude > 0x7Cu) return as_float((negative ? 0x80000000u : 0u) | 0x7FC00000u);
  return with_sign(finite_value(magnitude, 2, 15), negative);
}

uint bf16_encode(float value) {
  uint bits = as_uint(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return ((bits >> 16) | 0x0040u) & 0xFFFFu;
  return ((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16) & 0xFFFFu;
}

float bf16_decode(uint code) {
  uint bits = code << 16;
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits |= 0x00400000u;
  return as_float(bits);
}

uint fp16_encode(float value) {
  uint bits = as_uint(value);
  uint sign = (bits >> 16) & 0x8000u;
  uint abs_bits = bits & 0x7FFFFFFFu;
  uint magnitude;
  if (abs_bits > 0x7F800000u) return sign | 0x7E00u | ((abs_bits & 0x7FFFFFu) >> 13);
  if (abs_bits == 0x7F800000u) return sign | 0x7C00u;
  magnitude = round_to_format(abs_bits, 10, 15);
  if (magnitude > 0x7BFFu) return sign | 0x7C00u;
  return sign | magnitude;
}

float fp16_decode(uint code) {
  bool negative = (code & 0x8000u) != 0;
  uint magnitude = code & 0x7FFFu;
  if ((magnitude >> 10) == 0x1Fu) {
    uint payload = (magnitude & 0x3FFu) << 13;
    if (payload == 0) return with_sign(as_float(0x7F800000u), negative);
    return as_float((negative ? 0x80000000u : 0u) | 0x7FC00000u | payload);
  }
  return with_sign(finite_value(magnitude, 10, 15), negative);
}

int element_bytes(int dtype) {
  return dtype == OCTET_FP32 ? 4 : (dtype == OCTET_BF16 || dtype == OCTET_FP16) ? 2 : 1;
}

/* Element `index` widened to FP32 (FP8 as the value of its code). */
float load_element(cmem_t base, int dtype, long index) {
  if (dtype == OCTET_FP32) return as_float(load_u32(base + index * 4));
  if (dtype == OCTET_BF16) return bf16_decode(load_u16(base + index * 2));
  if (dtype == OCTET_FP16) return fp16_decode(load_u16(base + index * 2));
  return fp8_decode(base[index], dtype);
}

void store_element(mem_t base, int dtype, long index, float value, int saturate) {
  if (dtype == OCTET_FP32) {
    store_u32(base + index * 4, as_uint(value));
  } else if (dtype == OCTET_BF16) {
    store_u16(base + index * 2, bf16_encode(value));
  } else if (dtype == OCTET_FP16) {
    store_u16(base + index * 2, fp16_encode(value));
  } else {
    base[index] = fp8_encode(value, dtype, saturate);
  }
}

/* ---- Element-wise kernels: global size (cols, rows) --------------------- */

__kernel void octet_convert(cmem_t in, ulong in_offset, long in_ld, int in_dtype, mem_t out,
                            ulong out_offset, long out_ld, int out_dtype, long rows, long cols,
                            int saturate) {
  long c = get_global_id(0), r = get_global_id(1);
  if (r >= rows || c >= cols) return;
  store_element(out + out_offset, out_dtype, r * out_ld + c,
                load_element(in + in_offset, in_dtype, r * in_ld + c), saturate);
}

/* q = fp8(x * scale) into the rowwise [rows, cols] and/or the columnwise
 * [cols, rows] codes (both dense); has_rowwise / has_columnwise say which. */
__kernel void octet_quantize(cmem_t in, ulong in_offset, long in_ld, int in_dtype, cmem_t scale,
                             ulong scale_offset, int out_dtype, int saturate, mem_t rowwise,
                             ulong rowwise_offset, int has_rowwise, mem_t columnwise,
                             ulong columnwise_offset, int has_columnwise, long rows, long cols) {
  long c = get_global_id(0), r = get_global_id(1);
  float x, s;
  uchar q;
  if (r >= rows || c >= cols) return;
  x = load_element(in + in_offset, in_dtype, r * in_ld + c);
  s = as_float(load_u32(scale + scale_offset));
  q = fp8_encode(mul_rule(x, s), out_dtype, saturate);
  if (has_rowwise) rowwise[rowwise_offset + r * cols + c] = q;
  if (has_columnwise) columnwise[columnwise_offset + c * rows + r] = q;
}

/* x' = decode(q) * scale_inv, rounded to the output dtype. */
__kernel void octet_dequantize(cmem_t in, ulong in_offset, long in_ld, int in_dtype,
                               cmem_t scale_inv, ulong scale_inv_offset, mem_t out,
                               ulong out_offset, long out_ld, int out_dtype, long rows, long cols) {
  long c = get_global_id(0), r = get_global_id(1);
  float q, s;
  if (r >= rows || c >= cols) return;
  q = load_element(in + in_offset, in_dtype, r * in_ld + c);
  s = as_float(load_u32(scale_inv + scale_inv_offset));
  store_element(out + out_offset, out_dtype, r * out_ld + c, mul_rule(q, s), 1);
}

/* out[c, r] = in[r, c] for elements of element_size bytes (1, 2 or 4). */
__kernel void octet_transpose(cmem_t in, ulong in_offset, long in_ld, mem_t out, ulong out_offset,
                              long out_ld, int element_size, long rows, long cols) {
  long c = get_global_id(0), r = get_global_id(1);
  int b;
  if (r >= rows || c >= cols) return;
  for (b = 0; b < element_size; ++b) {
    out[out_offset + (c * out_ld + r) * element_size + b] =
        in[in_offset + (r * in_ld + c) * element_size + b];
  }
}

/* ---- Scalars: one work-item --------------------------------------------- */

/* *scale_inv_out = 1.0f / *scale (one FP32 division). */
__kernel void octet_reciprocal(cmem_t scale, ulong scale_offset, mem_t out, ulong out_offset) {
  float s = as_float(load_u32(scale + scale_offset));
  float r = 1.0f / s;
  store_u32(out + out_offset, as_uint(nan_rule(1.0f, s, r)));
}

/* ---- amax: one work-group of AMAX_GROUP work-items ----------------------- */

#define AMAX_GROUP 256

/* max |x| like fmaxf (NaN ignored, inf counts, empty gives 0). A max is
 * exact in any order, so the tree below gives the reference's bits. */
__kernel __attribute__((reqd_work_group_size(AMAX_GROUP, 1, 1))) void octet_amax(
    cmem_t in, ulong in_offset, long in_ld, int in_dtype, long rows, long cols, mem_t out,
    ulong out_offset) {
  __local float partial[AMAX_GROUP];
  int lid = (int)get_local_id(0);
  long n = rows * cols, i;
  float best = 0.0f;
  int step;
  for (i = lid; i < n; i += AMAX_GROUP) {
    float x = fabs(load_element(in + in_offset, in_dtype, (i / cols) * in_ld + i % cols));
    if (!is_nan_bits(x) && x > best) best = x;
  }
  partial[lid] = best;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (step = AMAX_GROUP / 2; step > 0; step /= 2) {
    if (lid < step && partial[lid + step] > partial[lid]) partial[lid] = partial[lid + step];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) store_u32(out + out_offset, as_uint(partial[0]));
}

/* ---- Tiled GEMM: work-groups of TILE x TILE ---------------------------- */

#define TILE 16

/* D[m, n] = alpha * (sa * sb) * sum_k A'[m, k] * B'[n, k] (+ beta * D)
 * (+ bias[n]), numerics.md section 8. A' is A ([m, k], a_ld) or, with
 * trans_a, A^T (A stored [k, m]); B' likewise ([n, k] or [k, n]). Each
 * work-item owns one D element and adds its products in ascending k (tile
 * by tile, then within the tile), with FP_CONTRACT off: the reference's
 * exact order, so the result is its bits. Operands are decoded once into
 * local memory per tile. */
__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1))) void octet_gemm(
    long m, long n, long k, cmem_t a, ulong a_offset, long a_ld, int a_dtype, int trans_a,
    cmem_t b, ulong b_offset, long b_ld, int b_dtype, int trans_b, cmem_t a_scale_inv,
    ulong a_scale_offset, int has_a_scale, cmem_t b_scale_inv, ulong b_scale_offset,
    int has_b_scale, float alpha, float beta, mem_t d, ulong d_offset, long d_ld, int d_dtype,
    cmem_t bias, ulong bias_offset, int bias_dtype, int has_bias) {
  __local float a_tile[TILE][TILE + 1]; /* [row of D][k] */
  __local float b_tile[TILE][TILE + 1]; /* [column of D][k] */
  int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  long col = get_group_id(0) * TILE + tx; /* n index */
  long row = get_group_id(1) * TILE + ty; /* m index */
  long k0;
  float acc = 0.0f;
  for (k0 = 0; k0 < k; k0 += TILE) {
    /* Work-item (tx, ty) loads A'[group row + ty, k0 + tx] and B'[group col + ty, k0 + tx]. */
    long ka = k0 + tx;
    long am = get_group_id(1) * TILE + ty;
    long bn = get_group_id(0) * TILE + ty;
    int kk;
    a_tile[ty][tx] = (am < m && ka < k)
        ? load_element(a + a_offset, a_dtype, trans_a ? ka * a_ld + am : am * a_ld + ka)
        : 0.0f;
    b_tile[ty][tx] = (bn < n && ka < k)
        ? load_element(b + b_offset, b_dtype, trans_b ? ka * b_ld + bn : bn * b_ld + ka)
        : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (kk = 0; kk < TILE && k0 + kk < k; ++kk) {
      float p = a_tile[ty][kk] * b_tile[tx][kk];
      acc = acc + p;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < m && col < n) {
    float sa = has_a_scale ? as_float(load_u32(a_scale_inv + a_scale_offset)) : 1.0f;
    float sb = has_b_scale ? as_float(load_u32(b_scale_inv + b_scale_offset)) : 1.0f;
    float v = (alpha * (sa * sb)) * acc;
    if (beta != 0.0f) {
      float old = load_element(d + d_offset, d_dtype, row * d_ld + col);
      float scaled = beta * old;
      v = v + scaled;
    }
    if (has_bias) v = v + load_element(bias + bias_offset, bias_dtype, col);
    store_element(d + d_offset, d_dtype, row * d_ld + col, v, 1);
  }
}

/* ---- Layer helpers ------------------------------------------------------ */

float add_rule(float a, float b) { return nan_rule(a, b, a + b); }

/* sums[c] = dy[0, c] + dy[1, c] + ... in row order, from 0.0f: one
 * work-item per column. */
__kernel void octet_column_sums(cmem_t dy, ulong dy_offset, long dy_ld, int dy_dtype, long rows, long cols,
                                mem_t sums, ulong sums_offset) {
  long c = get_global_id(0), r;
  float sum = 0.0f;
  if (c >= cols) return;
  for (r = 0; r < rows; ++r) sum = add_rule(sum, load_element(dy + dy_offset, dy_dtype, r * dy_ld + c));
  store_u32(sums + sums_offset + c * 4, as_uint(sum));
}

/* y = x + y (accumulate) or y = x, in FP32, rounded to y's dtype. */
__kernel void octet_accumulate(cmem_t x, ulong x_offset, long x_ld, int x_dtype, mem_t y, ulong y_offset, long y_ld,
                               int y_dtype, long rows, long cols, int accumulate) {
  long c = get_global_id(0), r = get_global_id(1);
  float v;
  if (r >= rows || c >= cols) return;
  v = load_element(x + x_offset, x_dtype, r * x_ld + c);
  if (accumulate) v = add_rule(v, load_element(y + y_offset, y_dtype, r * y_ld + c));
  store_element(y + y_offset, y_dtype, r * y_ld + c, v, 1);
}
