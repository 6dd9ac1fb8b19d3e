"""Tensor: a tensor in a context's backend memory; aligned_empty: host
memory a context can wrap."""

import ctypes as _c
import math as _math

import numpy as _np

from . import _codes, _dlpack, _dtypes, _lib
from ._dtypes import (AMAX, BF16, COLUMNWISE_SCALE_INV, DATA, E2M1, E4M3, E4M3FNUZ, E5M2, E5M2FNUZ, E8M0, FP16, FP32,
                      ROWWISE_SCALE_INV,
                      SCALE, SCALE_INV, SCALING_PER_TENSOR, _FP4_MODES, _ML_NAMES, _NUMPY, _dims, _lib_dtype_name)
from ._errors import _check
from ._handle import _Handle
from ._lib import lib as _libc


class Tensor(_Handle):
    """A tensor in a context's backend memory (owned; freed by close/GC).

    A borrowed tensor (a layer's parameter or gradient) belongs to its owner:
    close() only forgets it, and it becomes unusable when the owner closes."""

    def __init__(self, context, handle, dtype, shape, usages, scaling_mode=0, owner=None):
        self._handle = None
        self._context = context  # keeps the context handle alive for our calls
        self._owner = owner      # borrowed: the object that owns the handle
        self._handle = handle
        self.dtype = dtype
        self.shape = tuple(shape)
        self.usages = usages
        self.scaling_mode = scaling_mode or (SCALING_PER_TENSOR if usages else 0)

    @classmethod
    def _borrowed(cls, context, handle, owner):
        info = _lib.TensorInfo(struct_size=_c.sizeof(_lib.TensorInfo))
        _check(_libc.octet_tensor_get_info(handle, _c.byref(info)))
        shape = tuple(info.shape[i] for i in range(info.ndim))
        return cls(context, handle, info.dtype, shape, info.usages, info.scaling_mode if info.usages else 0, owner)

    def __repr__(self):
        state = "" if self._handle else ", closed"
        return f"Tensor(shape={self.shape}, dtype={_lib_dtype_name(self.dtype)}{state})"

    _kind = "tensor"
    _destroy = "octet_tensor_destroy"
    # The C side may read an owned tensor after the Python call that gave it
    # returns: a layer's weight lent by set_weight, an input a training
    # forward keeps (save_original_input). Each such borrower pins it; close()
    # of a pinned tensor only hides the handle, and the last unpin destroys it.
    _pins = 0
    _deferred = None

    def _pin(self):
        self._pins += 1

    def _unpin(self):
        self._pins -= 1
        if self._pins == 0 and self._deferred is not None:
            handle, self._deferred = self._deferred, None
            self._release(handle)

    def close(self):
        if getattr(self, "_handle", None) and self._owner is None and self._pins:
            self._deferred, self._handle = self._handle, None
            return
        super().close()

    def info(self):
        """octet_tensor_get_info as a dict (sizes in bytes, block shape, ...)."""
        info = _lib.TensorInfo(struct_size=_c.sizeof(_lib.TensorInfo))
        _check(_libc.octet_tensor_get_info(self.handle, _c.byref(info)))
        result = {name: getattr(info, name) for name, _ in _lib.TensorInfo._fields_ if name != "struct_size"}
        result["shape"] = tuple(info.shape[i] for i in range(info.ndim))
        return result

    def component(self, which=DATA):
        """Copies one component to the host: DATA/COLUMNWISE_DATA as the
        dtype's host representation (an E2M1 tensor's as stored, packed two
        codes per byte: uint8 [rows, (cols + 1) // 2]; codes() unpacks
        them), SCALE/SCALE_INV/AMAX as a float (an NVFP4 tensor's SCALE_INV:
        its two FP32 tensor scales, rowwise then columnwise, as a float32
        array), ROWWISE_SCALE_INV/COLUMNWISE_SCALE_INV (block-scaled tensors)
        as the scale grid (uint8 codes for E8M0 (MXFP8, MXFP4) and E4M3
        (NVFP4) scales, float32 otherwise)."""
        if isinstance(which, bool) or not isinstance(which, (int, _np.integer)):
            raise TypeError(f"component must be one of octet.DATA, COLUMNWISE_DATA, SCALE, SCALE_INV, AMAX, "
                            f"ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV; got {which!r}")
        which = int(which)
        if which in (ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV):
            info = self.info()
            rows, cols = _codes.matrix_shape(self.shape)
            grid = _codes.grid_shape(self.scaling_mode, rows, cols, which == COLUMNWISE_SCALE_INV)
            if grid is None:
                raise ValueError(f"component {which} (a scale grid) does not exist on a per-tensor quantized tensor: "
                                 "it has SCALE_INV (one number)")
            out = _np.empty(grid, dtype=_np.float32 if info["scale_inv_dtype"] == FP32 else _np.uint8)
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
            return out
        fp4 = self.dtype == E2M1 and self.scaling_mode in _FP4_MODES
        if which == SCALE_INV and fp4 and self.scaling_mode != _FP4_MODES[0]:  # NVFP4: (rowwise g, columnwise g)
            out = _np.empty(2, dtype=_np.float32)
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
            return out
        if which in (SCALE, SCALE_INV, AMAX):
            value = _c.c_float()
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, _c.byref(value), 4))
            return value.value
        shape = self.shape if which == DATA else (self.shape[-1], int(_np.prod(self.shape[:-1])))
        if self.dtype == E2M1:  # packed rows: (cols + 1) // 2 bytes each
            rows = int(_np.prod(shape[:-1]))
            out = _np.empty((rows, (shape[-1] + 1) // 2), dtype=_np.uint8)
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
            return out
        out = _np.empty(shape, dtype=_NUMPY[self.dtype])
        _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
        return out

    def numpy(self):
        """The stored elements as a NumPy array: float32 (FP32), float16
        (FP16); BF16, E4M3, E5M2 and E8M0 as ml_dtypes arrays (bfloat16,
        float8_e4m3fn, float8_e5m2, float8_e8m0fnu) when ml_dtypes is
        installed, else as raw codes (uint16/uint8, as codes() gives). A
        quantized tensor's elements are the scaled values x * SCALE; values()
        gives what they stand for. E2M1 (FP4): one code per element
        (float4_e2m1fn with ml_dtypes, else uint8 codes, as codes() gives)."""
        data = self.codes() if self.dtype == E2M1 else self.component(DATA)
        typed = _dtypes._ML.get(self.dtype)  # looked up per call (tests act as if ml_dtypes were absent)
        return data.view(typed) if typed is not None else data

    def codes(self, which=DATA):
        """The raw codes of a BF16 (uint16), FP8 or E8M0 (uint8) tensor,
        whether or not ml_dtypes is installed; an E2M1 (FP4) tensor's
        unpacked, one code per uint8 (low nibble) in the tensor's shape (the
        columnwise copy, which=COLUMNWISE_DATA: [cols, rows])."""
        if self.dtype not in _ML_NAMES:
            raise TypeError(f"codes() is for BF16/FP8/E8M0/E2M1 tensors; this one is "
                            f"{_lib_dtype_name(self.dtype)}: use numpy()")
        data = self.component(which)
        if self.dtype != E2M1:
            return data
        shape = self.shape if which == DATA else (self.shape[-1], int(_np.prod(self.shape[:-1])))
        unpacked = _np.empty((data.shape[0], 2 * data.shape[1]), dtype=_np.uint8)
        unpacked[:, 0::2] = data & 0xF
        unpacked[:, 1::2] = data >> 4
        return unpacked[:, :shape[-1]].reshape(shape)

    def values(self):
        """float32 values the tensor stands for: a quantized tensor
        dequantized (codes times its scale_inv, per tensor or per block);
        BF16/FP8 (FNUZ included)/E8M0/FP16 elements decoded (exact); FP32
        as stored."""
        if self.usages:
            return self._context.dequantize(self, FP32).numpy()
        data = self.component(DATA)
        if self.dtype in (FP32, FP16):
            return data.astype(_np.float32)
        out = _np.empty(data.shape, dtype=_np.float32)
        decode = {BF16: ("octet_bf16_decode_array",), E8M0: ("octet_e8m0_decode_array",),
                  **{fp8: ("octet_fp8_decode_array", fp8) for fp8 in (E4M3, E5M2, E4M3FNUZ, E5M2FNUZ)}}[self.dtype]
        _check(getattr(_libc, decode[0])(data.ctypes.data, out.ctypes.data, data.size, *decode[1:]))
        return out

    def scales(self):
        """The scales of a quantized tensor, as ctx.from_codes takes them
        (docs/python.md, "Codes and scales in and out"): a dict with
        scaling_mode, scale_inv (per-tensor: a float; per-row [rows, 1],
        per-column [1, cols], 1x128 and 128x128: float32 grids of scale_inv
        values; MXFP8/MXFP4: uint8 E8M0 codes; NVFP4: uint8 E4M3 codes),
        columnwise_scale_inv (only where the columnwise copy has scales of
        its own: per-row, MXFP8, 1x128, MXFP4, NVFP4 1x16), tensor_scale
        (NVFP4: g, or (rowwise g, columnwise g) when they differ), scale
        (per-tensor: its SCALE, of which scale_inv is the FP32 reciprocal)
        and amax.
        A plain tensor gives {"scaling_mode": None, "scale_inv": None}.
        Dequantized = codes * scale_inv, per block."""
        return _codes.scales(self)

    def parts(self):
        """Everything ctx.from_codes needs to rebuild this tensor bit for
        bit: scales() plus codes (DATA, one code per uint8), dtype, and for
        a tensor with the columnwise usage usages=octet.BOTH and
        columnwise_codes where that copy is not the rowwise one transposed
        (ctx.from_codes(**q.parts()))."""
        return _codes.parts(self)

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(tensor): a quantized tensor gives values() (float32,
        dequantized); a plain one numpy() where NumPy has its type (FP32,
        FP16, and BF16/FP8/E8M0 with ml_dtypes installed), else values().
        Always a copy from the backend, so copy=False raises ValueError."""
        if copy is False:
            raise ValueError("an octet Tensor lives in its backend's memory: converting it to a NumPy array always "
                             "copies (use copy=None or True, or ctx.wrap an array to share memory)")
        if self.usages or (self.dtype not in (FP32, FP16) and self.dtype not in _dtypes._ML):
            array = self.values()
        else:
            array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The Python DLPack protocol (np.from_dlpack(t), torch.from_dlpack(t)):
        a capsule over the tensor's memory, no copy; for a quantized tensor
        its FP8 codes (DATA; dlpack_component gives the scales). The
        consumer shares the memory and keeps it alive past close(). A
        versioned capsule (DLPack 1.x) when the consumer passes max_version,
        else a legacy one. copy=True and another dl_device raise
        BufferError (octet never copies here)."""
        return _dlpack.export(self, DATA, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """(device type, id): (1, 0), kDLCPU, on a host-memory backend;
        (2, 0), kDLCUDA, on the cuda backend."""
        return _dlpack.device_of(self._context)

    def dlpack_component(self, which=DATA):
        """One component as a DLPack producer (no copy): DATA, COLUMNWISE_DATA
        ([cols, rows]), SCALE / SCALE_INV / AMAX (float32, shape (1,)),
        ROWWISE_SCALE_INV / COLUMNWISE_SCALE_INV (the block scale grid), e.g.
        torch.from_dlpack(q.dlpack_component(octet.SCALE_INV))."""
        if isinstance(which, bool) or not isinstance(which, (int, _np.integer)):
            raise TypeError(f"which must be an octet component (octet.DATA, SCALE_INV, ...); got {which!r}")
        return _dlpack.DLPackComponent(self, int(which))

    def set_scale(self, scale):
        """Sets the SCALE of a per-tensor quantized tensor, and its SCALE_INV
        to 1/scale (the pair octet_tensor_copy_from_host keeps consistent), so
        dequantize gives codes / scale. The scale must be finite and > 0
        with a finite reciprocal, the rule of octet_quantizer_set_scale: 0
        would make SCALE_INV infinite, a NaN every code NaN."""
        if isinstance(scale, bool) or not isinstance(scale, (int, float, _np.integer, _np.floating)):
            raise TypeError(f"scale must be a number; got {type(scale).__name__}")
        if not (_math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be finite and > 0; got {scale!r}")
        value = _c.c_float(scale)
        _check(_libc.octet_tensor_copy_from_host(self.handle, SCALE, _c.byref(value), 4))


def aligned_empty(shape, dtype=_np.float32, alignment=64):
    """An uninitialised C-contiguous NumPy array whose data is aligned to
    `alignment` bytes (a power of two): memory Context.wrap accepts on a
    host backend (ctx.info()["alignment"] says what the backend needs)."""
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two; got {alignment}")
    dtype = _np.dtype(dtype)
    shape = _dims(shape if isinstance(shape, (tuple, list)) else (shape,))
    if any(n < 0 for n in shape):
        raise ValueError(f"shape must not have negative dimensions; got {shape}")
    nbytes = int(_np.prod(shape, dtype=_np.int64)) * dtype.itemsize
    raw = _np.empty(nbytes + alignment, dtype=_np.uint8)
    offset = -raw.ctypes.data % alignment
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)

