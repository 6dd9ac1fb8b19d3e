"""Inputs of the checks: every FP32 bit pattern in chunks (--full), a
stratified FP32 sample (--quick), every BF16 and FP16 value, every code."""

import numpy as np

FULL_CHUNK_BITS = 24  # 256 chunks of 2^24 FP32 patterns
QUICK_RANDOM = 1 << 17
SPECIAL_BITS = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001,
                0x7FFFFFFF, 0xFFFFFFFF, 0x7FA00000, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000,
                0x7F7FFFFF, 0xFF7FFFFF]


def bits_to_f32(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def full_fp32_chunks():
    """Every FP32 bit pattern, as 2^(32 - FULL_CHUNK_BITS) float32 arrays."""
    n = 1 << FULL_CHUNK_BITS
    for start in range(0, 1 << 32, n):
        yield np.arange(start, start + n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def quick_fp32(fmt, seed=0):
    """A stratified FP32 sample for `fmt`: every value of the format, every
    midpoint between neighbours (the ties, the subnormal/normal boundary,
    the tie past the largest value), each of those and the FP32 values one
    step either side, both signs; the saturation region up to FLT_MAX;
    NaN payloads, infinities, zeros, FP32 subnormals; powers of two across
    FP32's range; and QUICK_RANDOM random bit patterns."""
    g = fmt.grid
    points = np.concatenate([g, (g[:-1] + g[1:]) / 2, g[-1] * np.array([1.5, 2, 4, 1e3, 1e10])])
    if fmt.unsigned_pow2:
        points = np.concatenate([points, points * 1.5, points * 0.75])
    with np.errstate(over="ignore"):
        p32 = points.astype(np.float32)
    near = np.concatenate([p32, np.nextafter(p32, np.float32(np.inf)), np.nextafter(p32, np.float32(0))])
    pow2 = np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32)
    rng = np.random.default_rng(seed)
    random_bits = rng.integers(0, 1 << 32, QUICK_RANDOM, dtype=np.uint64).astype(np.uint32)
    saturation = np.geomspace(max(fmt.max, 1.0), 3.4e38, 512).astype(np.float32)
    positive = np.concatenate([near, pow2, pow2 * np.float32(1.5), saturation])
    values = np.concatenate([positive, -positive, bits_to_f32(SPECIAL_BITS), bits_to_f32(random_bits)])
    return np.unique(values.view(np.uint32)).view(np.float32)


def all_bf16_bits():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def all_fp16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)


def all_codes(fmt):
    return np.arange(fmt.ncodes, dtype=np.uint8)
