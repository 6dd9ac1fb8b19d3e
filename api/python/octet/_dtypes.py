"""Octet's dtypes, tensor components, usages and scaling modes; their NumPy
(and ml_dtypes) host types; checks of dtype and shape arguments; the FP8
codecs fp8_encode / fp8_decode."""

import operator as _operator

import numpy as _np

try:  # optional: FP8, BF16 and E8M0 data as typed NumPy arrays
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the installation
    _ml_dtypes = None

from ._errors import _check
from ._lib import lib as _libc

FP32, BF16, FP16, E4M3, E5M2, E8M0 = 1, 2, 3, 10, 12, 14
# FNUZ FP8 (one NaN 0x80, no inf, no -0) and FP4 E2M1 (users' ABI 1.7).
E4M3FNUZ, E5M2FNUZ, E2M1 = 11, 13, 17
ROWWISE, COLUMNWISE, BOTH = 1, 2, 3
DATA, COLUMNWISE_DATA, SCALE, SCALE_INV, AMAX = 0, 1, 2, 3, 4
ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV = 5, 6
# Scaling modes of a quantized tensor (octet_tensor_desc.scaling_mode).
SCALING_PER_TENSOR, SCALING_MXFP8_1X32, SCALING_BLOCK_1X128, SCALING_BLOCK_128X128 = 1, 2, 4, 8
# One FP32 scale per row / per column (users' ABI 1.8, numerics.md section 16).
SCALING_PER_ROW, SCALING_PER_COLUMN = 16, 32
# FP4 modes of E2M1 tensors (users' ABI 1.8, numerics.md section 15): MXFP4
# (1x32 blocks, E8M0 scales), NVFP4 (1x16 or 16x16 blocks, E4M3 scales and
# an FP32 tensor scale).
SCALING_MXFP4_1X32, SCALING_NVFP4_1X16, SCALING_NVFP4_16X16 = 64, 128, 256
_FP4_MODES = (SCALING_MXFP4_1X32, SCALING_NVFP4_1X16, SCALING_NVFP4_16X16)
# Host representation of each dtype: FP8 and BF16 as raw codes.
_NUMPY = {FP32: _np.float32, FP16: _np.float16, BF16: _np.uint16, E4M3: _np.uint8, E5M2: _np.uint8, E8M0: _np.uint8,
          E4M3FNUZ: _np.uint8, E5M2FNUZ: _np.uint8}
# The ml_dtypes type of each coded dtype (when ml_dtypes is installed and has it).
_ML_NAMES = {BF16: "bfloat16", E4M3: "float8_e4m3fn", E5M2: "float8_e5m2", E8M0: "float8_e8m0fnu",
             E4M3FNUZ: "float8_e4m3fnuz", E5M2FNUZ: "float8_e5m2fnuz", E2M1: "float4_e2m1fn"}
_ML = {code: _np.dtype(getattr(_ml_dtypes, name)) for code, name in _ML_NAMES.items()
       if _ml_dtypes is not None and hasattr(_ml_dtypes, name)}
_FROM_ML = {dt: code for code, dt in _ML.items()}
# Largest finite value of each FP8 format (numerics.md section 1), and where
# octet_quantize_stats.saturated_count starts: a scaled |y| whose
# non-saturating conversion overflows (E4M3 |y| > 464, E5M2 |y| >= 61440,
# E4M3FNUZ |y| >= 248, E5M2FNUZ |y| >= 61440).
_FP8_MAX = {E4M3: 448.0, E5M2: 57344.0, E4M3FNUZ: 240.0, E5M2FNUZ: 57344.0}
_OVERFLOWS = {E4M3: lambda y: y > 464.0, E5M2: lambda y: y >= 61440.0, E4M3FNUZ: lambda y: y >= 248.0,
              E5M2FNUZ: lambda y: y >= 61440.0}
# Where octet_quantize_stats.flushed_count ends: a non-zero scaled |y| at or
# below half the smallest subnormal rounds to zero (to nearest even).
_FLUSH_LIMIT = {E4M3: 2.0**-10, E5M2: 2.0**-17, E4M3FNUZ: 2.0**-11, E5M2FNUZ: 2.0**-18}


def _lib_dtype_name(dtype):
    return {FP32: "fp32", BF16: "bf16", FP16: "fp16", E4M3: "e4m3", E5M2: "e5m2", E8M0: "e8m0", E4M3FNUZ: "e4m3fnuz",
            E5M2FNUZ: "e5m2fnuz", E2M1: "e2m1"}.get(dtype, str(dtype))


def _dtype_code(dtype, what="dtype"):
    """An Octet dtype: a constant (octet.E4M3, ...), an int checked before
    ctypes sees it (ctypes would raise its own ArgumentError; the library
    checks the value), or the NumPy type of one: numpy.float32 -> FP32,
    numpy.float16 -> FP16, ml_dtypes bfloat16 / float8_e4m3fn / float8_e5m2
    / float8_e8m0fnu / float8_e4m3fnuz / float8_e5m2fnuz / float4_e2m1fn ->
    BF16 / E4M3 / E5M2 / E8M0 / E4M3FNUZ / E5M2FNUZ / E2M1."""
    if isinstance(dtype, (int, _np.integer)) and not isinstance(dtype, bool):
        return int(dtype)
    try:
        numpy_type = _np.dtype(dtype) if dtype is not None and not isinstance(dtype, bool) else None
    except TypeError:
        numpy_type = None
    code = {_np.dtype(_np.float32): FP32, _np.dtype(_np.float16): FP16, **_FROM_ML}.get(numpy_type)
    if code is None:
        raise TypeError(f"{what} must be an Octet dtype (octet.FP32, FP16, BF16, E4M3, E5M2, E8M0, E4M3FNUZ, "
                        f"E5M2FNUZ, E2M1) or the NumPy "
                        f"type of one (numpy.float32, numpy.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, "
                        f"...); got {dtype!r}")
    return code


def _dims(shape, what="shape"):
    """A shape as a tuple of ints that fit the C int64 fields (ctypes would
    truncate larger ones silently); floats are refused, not truncated."""
    try:
        dims = tuple(_operator.index(n) for n in shape)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers; got {shape!r}") from None
    for n in dims:
        if not -(1 << 63) <= n < (1 << 63):
            raise ValueError(f"{what} {dims}: {n} does not fit in a 64-bit signed integer")
    return dims


def _raw_codes(array, host, what):
    """Checks that an integer array's values fit the host code type (uint8
    for FP8/E8M0, uint16 for BF16) before it is cast: a cast would wrap
    300 to 44 silently."""
    if array.dtype != host and array.size:
        info = _np.iinfo(host)
        low, high = array.min(), array.max()
        if low < info.min or high > info.max:
            raise ValueError(f"{what} must be in [{info.min}, {info.max}] ({_np.dtype(host)} codes); "
                             f"got values from {low} to {high}")


def fp8_encode(values, dtype, saturate=True):
    """FP32 values -> FP8 or FP4 codes (uint8), exactly as numerics.md
    section 1. E2M1 gives one code per uint8 (low nibble), as ml_dtypes'
    float4_e2m1fn holds them; a value with no E2M1 code (NaN; beyond 6 without
    saturation) raises OctetError (INVALID_ARGUMENT) naming its index."""
    dtype = _dtype_code(dtype)
    src = _np.array(values, dtype=_np.float32, order="C")  # keeps 0-d scalars 0-d
    if dtype == E2M1:
        flat = src.reshape(-1)
        packed = _np.zeros((flat.size + 1) // 2, dtype=_np.uint8)
        _check(_libc.octet_fp8_encode_array(flat.ctypes.data, packed.ctypes.data, flat.size, dtype,
                                            int(bool(saturate))))
        out = _np.empty(flat.size, dtype=_np.uint8)
        out[0::2] = packed & 0xF
        out[1::2] = packed[:flat.size // 2] >> 4
        return out.reshape(src.shape)
    out = _np.empty(src.shape, dtype=_np.uint8)
    _check(_libc.octet_fp8_encode_array(src.ctypes.data, out.ctypes.data, src.size, dtype, int(bool(saturate))))
    return out


def fp8_decode(codes, dtype):
    """FP8 codes (uint8) -> FP32 values (exact)."""
    dtype = _dtype_code(dtype)
    src = _np.asarray(codes)
    if src.dtype.kind not in "ui" and src.size:
        raise TypeError(f"codes must be integers (uint8 FP8 codes); got {src.dtype} (fp8_encode makes codes from "
                        "values)")
    _raw_codes(src, _np.uint8, "codes")
    src = _np.array(src, dtype=_np.uint8, order="C")
    out = _np.empty(src.shape, dtype=_np.float32)
    if dtype == E2M1:  # one code per uint8 here; the library reads them packed
        flat = src.reshape(-1)
        if flat.size and int(flat.max()) > 0xF:
            raise ValueError(f"codes must be E2M1 codes in [0, 15]; got {int(flat.max())}")
        packed = _np.zeros((flat.size + 1) // 2, dtype=_np.uint8)
        packed |= flat[0::2]
        packed[:flat.size // 2] |= flat[1::2] << 4
        _check(_libc.octet_fp8_decode_array(packed.ctypes.data, out.ctypes.data, flat.size, dtype))
        return out
    _check(_libc.octet_fp8_decode_array(src.ctypes.data, out.ctypes.data, src.size, dtype))
    return out

