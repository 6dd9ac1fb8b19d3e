"""Quantized tensors from stored codes and scales, and back: the checks and
conversions behind Context.from_codes and Tensor.scales / Tensor.parts
(docs/python.md, "Codes and scales in and out").

A quantized tensor is its codes (DATA, and for the columnwise usage
COLUMNWISE_DATA) plus its scales; from_codes creates one with
octet_tensor_create and writes each component with
octet_tensor_copy_from_host, after checking every argument here so that a
wrong shape, dtype or scale is refused naming the argument and the rule."""

import ctypes as _c
import math as _math

import numpy as _np

from ._dtypes import (AMAX, BOTH, COLUMNWISE, COLUMNWISE_DATA, COLUMNWISE_SCALE_INV, DATA, E2M1, E4M3, E4M3FNUZ,
                      E5M2, E5M2FNUZ, E8M0, ROWWISE, ROWWISE_SCALE_INV, SCALE, SCALE_INV, SCALING_BLOCK_1X128,
                      SCALING_BLOCK_128X128, SCALING_MXFP4_1X32, SCALING_MXFP8_1X32, SCALING_NVFP4_16X16,
                      SCALING_NVFP4_1X16, SCALING_PER_COLUMN, SCALING_PER_ROW, SCALING_PER_TENSOR, _FROM_ML,
                      _dtype_code, _lib_dtype_name, _raw_codes, fp8_decode, fp8_encode)
from ._errors import _check
from ._lib import lib as _libc

FP8_DTYPES = (E4M3, E5M2, E4M3FNUZ, E5M2FNUZ)
FP8_MODES = (SCALING_PER_TENSOR, SCALING_PER_ROW, SCALING_PER_COLUMN, SCALING_MXFP8_1X32, SCALING_BLOCK_1X128,
             SCALING_BLOCK_128X128)
FP4_MODES = (SCALING_MXFP4_1X32, SCALING_NVFP4_1X16, SCALING_NVFP4_16X16)
MODE_NAMES = {SCALING_PER_TENSOR: "SCALING_PER_TENSOR", SCALING_PER_ROW: "SCALING_PER_ROW",
              SCALING_PER_COLUMN: "SCALING_PER_COLUMN", SCALING_MXFP8_1X32: "SCALING_MXFP8_1X32",
              SCALING_BLOCK_1X128: "SCALING_BLOCK_1X128", SCALING_BLOCK_128X128: "SCALING_BLOCK_128X128",
              SCALING_MXFP4_1X32: "SCALING_MXFP4_1X32", SCALING_NVFP4_1X16: "SCALING_NVFP4_1X16",
              SCALING_NVFP4_16X16: "SCALING_NVFP4_16X16"}
# Modes whose columnwise copy is exactly the rowwise one transposed, with
# the same scales (numerics.md sections 7, 11, 15 and 16): from_codes
# derives it when it is not given.
DERIVED_COLUMNWISE = (SCALING_PER_TENSOR, SCALING_PER_COLUMN, SCALING_BLOCK_128X128, SCALING_NVFP4_16X16)
# The type of each mode's grid entries: FP32 scale_inv values, or codes.
_GRID_CODES = {SCALING_MXFP8_1X32: E8M0, SCALING_MXFP4_1X32: E8M0, SCALING_NVFP4_1X16: E4M3,
               SCALING_NVFP4_16X16: E4M3}
_UNIT_E8M0 = 127  # 2^0


def _mode_name(mode):
    return "octet." + MODE_NAMES.get(mode, str(mode))


def matrix_shape(shape):
    """(rows, cols) of a tensor seen as a matrix: rows = product of all
    dimensions but the last (docs/abi.md, "Data interchange")."""
    return int(_np.prod(shape[:-1], dtype=_np.int64)), int(shape[-1])


def _ceil(a, b):
    return -(-a // b)


def grid_shape(mode, rows, cols, columnwise=False):
    """The scale grid of one copy of a [rows, cols] tensor in `mode`: the
    rowwise copy's (ROWWISE_SCALE_INV) or the columnwise copy's
    (COLUMNWISE_SCALE_INV, a grid over the [cols, rows] copy); None for
    per-tensor scaling, which has one SCALE_INV."""
    if mode == SCALING_PER_TENSOR:
        return None
    if columnwise:
        if mode in (SCALING_PER_ROW, SCALING_PER_COLUMN):
            return (cols, 1)
        rows, cols = cols, rows
    if mode == SCALING_PER_ROW:
        return (rows, 1)
    if mode == SCALING_PER_COLUMN:
        return (1, cols)
    block = {SCALING_MXFP8_1X32: (1, 32), SCALING_MXFP4_1X32: (1, 32), SCALING_BLOCK_1X128: (1, 128),
             SCALING_BLOCK_128X128: (128, 128), SCALING_NVFP4_1X16: (1, 16), SCALING_NVFP4_16X16: (16, 16)}[mode]
    return (_ceil(rows, block[0]), _ceil(cols, block[1]))


def grid_dtype(mode):
    """numpy type of a mode's grid as Tensor.scales gives it: uint8 codes
    (E8M0 for MXFP8/MXFP4, E4M3 for NVFP4) or float32 scale_inv values."""
    return _np.uint8 if mode in _GRID_CODES else _np.float32


def _numbers(value, what):
    """value as a NumPy array of real numbers (bool, complex and objects
    refused). A torch tensor passes through numpy.asarray when it is on
    the CPU."""
    try:
        array = _np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be a number or an array of numbers; got {type(value).__name__}: {e}") from None
    if array.dtype == object or array.dtype.kind not in "fiu" and array.dtype not in _FROM_ML:
        raise TypeError(f"{what} must hold real numbers (float or integer); got {array.dtype}")
    return array


def positive_scalar(value, what, reciprocal=True):
    """A finite FP32 number > 0 (with a finite FP32 reciprocal when
    `reciprocal`), from a number or a one-element array."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be a number; got a bool")
    array = _numbers(value, what)
    if array.size != 1:
        raise ValueError(f"{what} must be one number (a scalar or a one-element array); got shape {array.shape}")
    if array.dtype in _FROM_ML:
        array = array.astype(_np.float32)
    scalar = _np.float32(array.reshape(()))
    if not (_math.isfinite(float(scalar)) and scalar > 0):
        raise ValueError(f"{what} must be finite and > 0 (dequantized = codes * scale_inv); got {float(scalar)!r}")
    if reciprocal and not _math.isfinite(float(_np.float32(1) / scalar)):
        raise ValueError(f"{what} {float(scalar)!r} has no finite FP32 reciprocal (the SCALE it implies): it must "
                         f"be at least about 2.94e-39")
    return float(scalar)


def _fp32_grid(value, shape, mode, what):
    array = _numbers(value, what)
    if array.dtype in _FROM_ML:
        array = array.astype(_np.float32)
    alternatives = {shape}
    if mode == SCALING_PER_ROW or shape[1] == 1:
        alternatives.add((shape[0],))
    if mode == SCALING_PER_COLUMN and shape[0] == 1:
        alternatives.add((shape[1],))
    if array.shape not in alternatives:
        raise ValueError(f"{what} must have shape {shape} for {_mode_name(mode)} (the dense grid of one FP32 "
                         f"scale_inv per block); got {array.shape}")
    grid = _np.ascontiguousarray(array, dtype=_np.float32).reshape(shape)
    bad = ~(_np.isfinite(grid) & (grid > 0))
    if bad.any():
        index = tuple(int(i) for i in _np.argwhere(bad)[0])
        raise ValueError(f"{what}[{', '.join(map(str, index))}] is {float(grid[index])!r}: every scale_inv of "
                         f"{_mode_name(mode)} must be finite and > 0 (dequantized = codes * scale_inv)")
    return grid


def _code_grid(value, shape, mode, what):
    """An E8M0 (MXFP8, MXFP4) or E4M3 (NVFP4) grid as uint8 codes: from
    uint8/integer codes, an ml_dtypes array of the code type (its codes), or
    float values that the code type holds exactly (finite and > 0)."""
    code_type = _GRID_CODES[mode]
    array = _numbers(value, what)
    if array.shape != shape:
        raise ValueError(f"{what} must have shape {shape} for {_mode_name(mode)} (the dense grid of one "
                         f"{_lib_dtype_name(code_type).upper()} scale per block); got {array.shape}")
    typed = _FROM_ML.get(array.dtype)
    if typed is not None:
        if typed != code_type:
            raise TypeError(f"{what} is {array.dtype.name}, but {_mode_name(mode)} scales are "
                            f"{_lib_dtype_name(code_type).upper()} codes")
        codes = _np.ascontiguousarray(array).view(_np.uint8)
    elif array.dtype.kind in "iu":
        _raw_codes(array, _np.uint8, f"{what} ({_lib_dtype_name(code_type).upper()} codes)")
        codes = _np.ascontiguousarray(array, dtype=_np.uint8)
    else:  # values: each must be a code's value exactly
        values = array.astype(_np.float64)
        bad = ~(_np.isfinite(values) & (values > 0))
        if bad.any():
            index = tuple(int(i) for i in _np.argwhere(bad)[0])
            raise ValueError(f"{what}[{', '.join(map(str, index))}] is {values[index]!r}: scale values must be "
                             f"finite and > 0 (pass raw uint8 codes to write a NaN-block or zero code)")
        if code_type == E8M0:
            mantissa, exponent = _np.frexp(values)  # value = mantissa * 2^exponent, mantissa in [0.5, 1)
            exact = (mantissa == 0.5) & (exponent - 1 >= -127) & (exponent - 1 <= 127)
            codes = _np.where(exact, exponent - 1 + 127, 0).astype(_np.uint8)
            rule = "a power of two from 2^-127 to 2^127 (an E8M0 value)"
        else:
            codes = fp8_encode(values.astype(_np.float32), E4M3, saturate=False)
            from_codes = fp8_decode(codes, E4M3).astype(_np.float64)
            exact = from_codes == values
            rule = "a value E4M3 holds exactly"
        if not exact.all():
            index = tuple(int(i) for i in _np.argwhere(~exact)[0])
            raise ValueError(f"{what}[{', '.join(map(str, index))}] is {values[index]!r}, which is not {rule}: "
                             f"{_mode_name(mode)} stores its scales as codes")
        return _np.ascontiguousarray(codes.reshape(shape))
    if code_type == E4M3 and codes.size and int(codes.max()) & 0x80:
        index = tuple(int(i) for i in _np.argwhere(codes & 0x80)[0])
        raise ValueError(f"{what}[{', '.join(map(str, index))}] is the E4M3 code {int(codes[index]):#04x}, a "
                         f"negative scale: NVFP4 block scales are codes 0x00 to 0x7f")
    return codes


def scale_grid(value, mode, rows, cols, what, columnwise=False):
    """A caller's grid for one copy, checked and converted to the bytes the
    component holds."""
    shape = grid_shape(mode, rows, cols, columnwise)
    if mode in _GRID_CODES:
        return _code_grid(value, shape, mode, what)
    return _fp32_grid(value, shape, mode, what)


def codes_array(codes, dtype, what):
    """The caller's codes as (uint8 array, dtype): one code per uint8 (E2M1
    in the low nibble), from an integer array or an ml_dtypes array
    (float8_e4m3fn, ..., float4_e2m1fn: its codes)."""
    if codes is None:
        raise TypeError(f"{what} must be an array of codes; got None")
    if hasattr(codes, "__module__") and type(codes).__module__.startswith("octet"):
        raise TypeError(f"{what} must be a host array of codes, not an octet Tensor: q.codes() gives a tensor's")
    try:
        array = _np.asarray(codes)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must be an array of codes; got {type(codes).__name__}: {e}") from None
    typed = _FROM_ML.get(array.dtype)
    if dtype is None:
        if typed is None:
            raise TypeError(f"dtype is needed for {what} of {array.dtype} (raw codes): octet.E4M3, E5M2, E4M3FNUZ, "
                            "E5M2FNUZ or E2M1 (an ml_dtypes float8/float4 array says its own dtype)")
        dtype = typed
    dtype = _dtype_code(dtype)
    if dtype not in FP8_DTYPES + (E2M1,):
        raise ValueError(f"dtype must be octet.E4M3, E5M2, E4M3FNUZ, E5M2FNUZ or E2M1 (the code formats of a "
                         f"quantized tensor); got {_lib_dtype_name(dtype)}")
    if typed is not None:
        if typed != dtype:
            raise TypeError(f"{what} is {array.dtype.name} ({_lib_dtype_name(typed)}) but dtype is "
                            f"{_lib_dtype_name(dtype)}")
        array = array.view(_np.uint8)
    elif array.dtype == object or array.dtype.kind not in "iu":
        raise TypeError(f"{what} must hold codes (an unsigned integer array, or an ml_dtypes float8/float4 array); "
                        f"got {array.dtype} values: ctx.quantize makes codes from values, octet.fp8_encode encodes "
                        "unscaled ones")
    else:
        _raw_codes(array, _np.uint8, f"{what} ({_lib_dtype_name(dtype)} codes)")
    array = _np.ascontiguousarray(array, dtype=_np.uint8)
    if array.ndim == 0:
        array = array.reshape(1)
    if not 1 <= array.ndim <= 8:
        raise ValueError(f"{what} must have 1..8 dimensions; got shape {array.shape}")
    if 0 in array.shape:
        raise ValueError(f"{what} must not have an empty dimension; got shape {array.shape}")
    if dtype == E2M1 and array.size and int(array.max()) > 0xF:
        index = tuple(int(i) for i in _np.argwhere(array > 0xF)[0])
        raise ValueError(f"{what}[{', '.join(map(str, index))}] is {int(array[index])}: E2M1 codes are 0 to 15, one "
                         "per uint8")
    return array, dtype


def pack_e2m1(matrix):
    """[rows, cols] codes (one per uint8) -> the packed rows a tensor holds:
    element 2i in the low nibble of byte i, an odd row padded with 0."""
    rows, cols = matrix.shape
    padded = _np.zeros((rows, cols + (cols & 1)), dtype=_np.uint8)
    padded[:, :cols] = matrix
    return _np.ascontiguousarray(padded[:, 0::2] | (padded[:, 1::2] << 4))


def _write(tensor, component, array):
    array = _np.ascontiguousarray(array)
    _check(_libc.octet_tensor_copy_from_host(tensor.handle, component, array.ctypes.data, array.nbytes))


def from_codes(ctx, codes, dtype=None, *, scaling_mode=None, scale_inv=None, columnwise_codes=None,
               columnwise_scale_inv=None, tensor_scale=None, amax=None, usages=None, scale=None):
    """Context.from_codes (its docstring is the contract)."""
    codes, dtype = codes_array(codes, dtype, "codes")
    shape = codes.shape
    rows, cols = matrix_shape(shape)
    if scaling_mode is not None and (isinstance(scaling_mode, bool) or not isinstance(scaling_mode, (int, _np.integer))
                                     or int(scaling_mode) not in MODE_NAMES):
        raise ValueError(f"scaling_mode must be None or one of octet.{', '.join(MODE_NAMES.values())}; "
                         f"got {scaling_mode!r}")
    mode = None if scaling_mode is None else int(scaling_mode)
    plain = mode is None and scale_inv is None and scale is None
    if plain:  # no scaling: a plain tensor of codes
        for name, value in (("columnwise_codes", columnwise_codes), ("columnwise_scale_inv", columnwise_scale_inv),
                            ("tensor_scale", tensor_scale), ("amax", amax), ("usages", usages)):
            if value is not None:
                raise ValueError(f"{name} needs a quantized tensor: pass scale_inv (and scaling_mode) as well")
        if dtype != E2M1:
            return ctx.tensor(codes, dtype)
        # E2M1 tensors are quantized FP4 tensors in the library: plain E2M1
        # data is an MXFP4 tensor whose block scales are all 1 (E8M0 127), so
        # dequantize and convert give the E2M1 values exactly.
        mode, scale_inv = SCALING_MXFP4_1X32, _np.full(grid_shape(SCALING_MXFP4_1X32, rows, cols), _UNIT_E8M0,
                                                       _np.uint8)
    if mode is None:
        if dtype == E2M1:
            raise ValueError("scaling_mode is needed for E2M1 codes with scales: octet.SCALING_MXFP4_1X32, "
                             "SCALING_NVFP4_1X16 or SCALING_NVFP4_16X16")
        mode = SCALING_PER_TENSOR
    if dtype == E2M1 and mode not in FP4_MODES:
        raise ValueError(f"scaling_mode {_mode_name(mode)} takes FP8 codes; E2M1 codes take "
                         "octet.SCALING_MXFP4_1X32, SCALING_NVFP4_1X16 or SCALING_NVFP4_16X16")
    if dtype != E2M1 and mode not in FP8_MODES:
        raise ValueError(f"scaling_mode {_mode_name(mode)} takes E2M1 codes; {_lib_dtype_name(dtype)} codes take "
                         "octet.SCALING_PER_TENSOR, SCALING_PER_ROW, SCALING_PER_COLUMN, SCALING_MXFP8_1X32, "
                         "SCALING_BLOCK_1X128 or SCALING_BLOCK_128X128")
    if scale is not None:
        if mode != SCALING_PER_TENSOR:
            raise ValueError(f"scale is for per-tensor scaling only; {_mode_name(mode)} takes scale_inv grids")
        scale = positive_scalar(scale, "scale")
        implied = float(_np.float32(1) / _np.float32(scale))
        if scale_inv is None:
            scale_inv = implied
        elif positive_scalar(scale_inv, "scale_inv") != implied:
            raise ValueError(f"scale {scale!r} and scale_inv {float(_np.float32(scale_inv))!r} disagree: scale_inv "
                             f"must be 1.0f / scale ({implied!r}), the pair a quantize writes; pass one of them")
    if scale_inv is None:
        raise ValueError(f"scale_inv is needed for {_mode_name(mode)}: "
                         + ("one number (dequantized = codes * scale_inv)" if mode == SCALING_PER_TENSOR else
                            f"the grid of shape {grid_shape(mode, rows, cols)}"))
    nvfp4 = mode in (SCALING_NVFP4_1X16, SCALING_NVFP4_16X16)
    if nvfp4 and tensor_scale is None:
        raise ValueError(f"tensor_scale is needed for {_mode_name(mode)}: the FP32 tensor scale g (dequantized = "
                         "codes * decode(block scale) * g), one number or (rowwise, columnwise)")
    if not nvfp4 and tensor_scale is not None:
        raise ValueError(f"tensor_scale is for NVFP4 modes only; {_mode_name(mode)} has none")
    if usages is None:
        usages = BOTH if columnwise_codes is not None else ROWWISE
    if usages not in (ROWWISE, BOTH):
        raise ValueError(f"usages must be None, octet.ROWWISE or octet.BOTH (a tensor from codes has its rowwise "
                         f"codes); got {usages!r}")
    derived = mode in DERIVED_COLUMNWISE
    if usages == ROWWISE and (columnwise_codes is not None or columnwise_scale_inv is not None):
        raise ValueError("columnwise_codes / columnwise_scale_inv need usages=octet.BOTH (or usages=None)")
    # Checked before anything is allocated.
    if mode == SCALING_PER_TENSOR:
        if columnwise_scale_inv is not None:
            raise ValueError("columnwise_scale_inv: a per-tensor tensor has one scale_inv for both copies")
        rowwise_grid = positive_scalar(scale_inv, "scale_inv")
    else:
        rowwise_grid = scale_grid(scale_inv, mode, rows, cols, "scale_inv")
    if nvfp4:
        pair = _numbers(tensor_scale, "tensor_scale").reshape(-1)
        if pair.size not in (1, 2):
            raise ValueError(f"tensor_scale must be one number or two (rowwise, columnwise); got {pair.size}")
        g = [positive_scalar(v, "tensor_scale", reciprocal=False) for v in pair]
        g = _np.array(g * 2 if len(g) == 1 else g, dtype=_np.float32)
    if amax is not None:
        amax_value = _numbers(amax, "amax").reshape(-1)
        if amax_value.size != 1 or not (_math.isfinite(float(amax_value[0])) and float(amax_value[0]) >= 0):
            raise ValueError(f"amax must be one finite number >= 0 (the max |x| the codes were quantized from); "
                             f"got {amax!r}")
    columnwise_matrix = columnwise_grid = None
    if usages == BOTH:
        matrix = codes.reshape(rows, cols)
        if columnwise_codes is not None:
            columnwise_matrix, _ = codes_array(columnwise_codes, dtype, "columnwise_codes")
            if columnwise_matrix.shape != (cols, rows):
                raise ValueError(f"columnwise_codes must have shape {(cols, rows)} (the [cols, rows] copy of codes "
                                 f"{shape}); got {columnwise_matrix.shape}")
            if derived and not _np.array_equal(columnwise_matrix, matrix.T):
                raise ValueError(f"columnwise_codes must be the transpose of codes under {_mode_name(mode)} (both "
                                 "copies hold the same quantization); leave it out to have it derived")
        elif derived:
            columnwise_matrix = _np.ascontiguousarray(matrix.T)
        else:
            raise ValueError(f"columnwise_codes is needed for usages=octet.BOTH under {_mode_name(mode)}: its "
                             "columnwise copy is a separate quantization of x^T, not the codes transposed")
        if mode != SCALING_PER_TENSOR:
            if columnwise_scale_inv is None and not derived:
                raise ValueError(f"columnwise_scale_inv is needed with columnwise_codes under {_mode_name(mode)}: "
                                 f"the grid of shape {grid_shape(mode, rows, cols, True)}")
            if columnwise_scale_inv is not None:
                columnwise_grid = scale_grid(columnwise_scale_inv, mode, rows, cols, "columnwise_scale_inv", True)
                if derived and not _np.array_equal(columnwise_grid.reshape(-1), _derived_grid(rowwise_grid, mode)
                                                   .reshape(-1)):
                    raise ValueError(f"columnwise_scale_inv must hold the rowwise grid's scales (transposed) under "
                                     f"{_mode_name(mode)}; leave it out to have it derived")
            else:
                columnwise_grid = _derived_grid(rowwise_grid, mode)
    t = ctx.empty(shape, dtype, usages, mode)
    try:
        info = t.info()
        if dtype == E2M1:
            _write(t, DATA, pack_e2m1(codes.reshape(rows, cols)))
        else:
            _write(t, DATA, codes)
        if columnwise_matrix is not None and info["has_columnwise_data"]:
            _write(t, COLUMNWISE_DATA, pack_e2m1(columnwise_matrix) if dtype == E2M1 else columnwise_matrix)
        if mode == SCALING_PER_TENSOR:  # one write of the pair; the other half is its FP32 reciprocal
            value = _c.c_float(rowwise_grid if scale is None else scale)
            _check(_libc.octet_tensor_copy_from_host(t.handle, SCALE_INV if scale is None else SCALE,
                                                     _c.byref(value), 4))
        else:
            _write(t, ROWWISE_SCALE_INV, rowwise_grid)
            if columnwise_grid is not None and info["columnwise_scale_inv_bytes"]:
                _write(t, COLUMNWISE_SCALE_INV, columnwise_grid)
        if nvfp4:
            _write(t, SCALE_INV, g)
        if amax is None:  # that of the values the codes stand for (NaN ignored, infinities count)
            amax = ctx.amax(ctx.dequantize(t))
        value = _c.c_float(float(_np.float32(amax)))
        _check(_libc.octet_tensor_copy_from_host(t.handle, AMAX, _c.byref(value), 4))
    except BaseException:
        t.close()
        raise
    return t


def _derived_grid(grid, mode):
    """The columnwise grid of a mode whose columnwise copy is the rowwise
    one transposed: 128x128 and 16x16 grids transposed; PER_COLUMN's [1, C]
    as [C, 1]."""
    return _np.ascontiguousarray(grid.T)


def scales(tensor):
    """Tensor.scales (its docstring is the contract)."""
    if not tensor.usages:
        return {"scaling_mode": None, "scale_inv": None}
    mode = tensor.scaling_mode
    info = tensor.info()
    result = {"scaling_mode": mode}
    rows_present = bool(info["has_rowwise_data"])
    if mode == SCALING_PER_TENSOR:
        result["scale_inv"] = tensor.component(SCALE_INV)
        result["scale"] = tensor.component(SCALE)
    else:
        result["scale_inv"] = tensor.component(ROWWISE_SCALE_INV) if rows_present else None
        if info["columnwise_scale_inv_bytes"] and mode not in DERIVED_COLUMNWISE:
            result["columnwise_scale_inv"] = tensor.component(COLUMNWISE_SCALE_INV)
    if mode in (SCALING_NVFP4_1X16, SCALING_NVFP4_16X16):
        g = tensor.component(SCALE_INV)
        result["tensor_scale"] = float(g[0]) if g[0] == g[1] else (float(g[0]), float(g[1]))
    result["amax"] = tensor.component(AMAX)
    return result


def parts(tensor):
    """Tensor.parts (its docstring is the contract)."""
    info = tensor.info()
    result = {"codes": tensor.codes(DATA) if info["has_rowwise_data"] else None, "dtype": tensor.dtype}
    if not tensor.usages:
        return result
    if not info["has_rowwise_data"]:
        raise ValueError("parts() needs the rowwise codes; this tensor was quantized for the columnwise usage only")
    result.update(scales(tensor))
    if tensor.usages & COLUMNWISE:
        result["usages"] = BOTH
        if info["has_columnwise_data"] and tensor.scaling_mode not in DERIVED_COLUMNWISE:
            result["columnwise_codes"] = tensor.codes(COLUMNWISE_DATA)
    return result
