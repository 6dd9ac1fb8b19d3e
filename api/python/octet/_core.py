"""Core of the package: errors, codecs, backends, tensors and contexts.

Re-exported by octet/__init__.py; see there for an overview.
"""

import ctypes as _c
import math as _math
import operator as _operator
import threading as _threading
import warnings as _warnings

import numpy as _np

try:  # optional: FP8, BF16 and E8M0 data as typed NumPy arrays
    import ml_dtypes as _ml_dtypes
except ImportError:  # pragma: no cover - depends on the installation
    _ml_dtypes = None

from . import _lib
from ._lib import lib as _libc

FP32, BF16, FP16, E4M3, E5M2, E8M0 = 1, 2, 3, 10, 12, 14
ROWWISE, COLUMNWISE, BOTH = 1, 2, 3
DATA, COLUMNWISE_DATA, SCALE, SCALE_INV, AMAX = 0, 1, 2, 3, 4
ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV = 5, 6
# Scaling modes of a quantized tensor (octet_tensor_desc.scaling_mode).
SCALING_PER_TENSOR, SCALING_MXFP8_1X32, SCALING_BLOCK_1X128, SCALING_BLOCK_128X128 = 1, 2, 4, 8
_MEMORY_CATEGORY_COUNT = 5
_PROFILES = {"native": 0, "hopper-like": 1, "blackwell-like": 2}
# Host representation of each dtype: FP8 and BF16 as raw codes.
_NUMPY = {FP32: _np.float32, FP16: _np.float16, BF16: _np.uint16, E4M3: _np.uint8, E5M2: _np.uint8, E8M0: _np.uint8}
# The ml_dtypes type of each coded dtype (when ml_dtypes is installed and has it).
_ML_NAMES = {BF16: "bfloat16", E4M3: "float8_e4m3fn", E5M2: "float8_e5m2", E8M0: "float8_e8m0fnu"}
_ML = {code: _np.dtype(getattr(_ml_dtypes, name)) for code, name in _ML_NAMES.items()
       if _ml_dtypes is not None and hasattr(_ml_dtypes, name)}
_FROM_ML = {dt: code for code, dt in _ML.items()}
# Largest finite value of each FP8 format (numerics.md section 1), and where
# octet_quantize_stats.saturated_count starts: a scaled |y| whose
# non-saturating conversion overflows (E4M3 |y| > 464, E5M2 |y| >= 61440).
_FP8_MAX = {E4M3: 448.0, E5M2: 57344.0}
_OVERFLOWS = {E4M3: lambda y: y > 464.0, E5M2: lambda y: y >= 61440.0}
_FEATURE_QUANTIZE_STATISTICS = 1 << 8


class SaturationWarning(RuntimeWarning):
    """ctx.quantize saturated values: |x * scale| rounded beyond the FP8
    format's largest value (448 for E4M3, 57344 for E5M2) and was clamped
    to it (or became NaN/inf with saturate=False)."""


class OctetError(RuntimeError):
    """A failed Octet call: .status (int), .status_name and the message."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = _libc.octet_status_name(status).decode()
        super().__init__(f"{self.status_name}: {message}")


# A Python exception raised inside a callback the library called (a recipe's
# amax/scale callback, a communicator) cannot cross the C frames: the
# callback returns a non-success status instead and parks the exception
# here, and the _check of the C call that failed chains it (__cause__).
_callback_errors = _threading.local()

# What a callback returns when the Python code raised (an OctetError raised
# by the callback returns its own status).
_CALLBACK_FAILURE_STATUS = 5  # OCTET_STATUS_BACKEND_ERROR


def _callback_failed(exc):
    """Records exc (raised by a Python callback) and returns the status the
    callback hands back to the library."""
    _callback_errors.pending = exc
    if isinstance(exc, OctetError):
        return exc.status
    return _CALLBACK_FAILURE_STATUS


def _check(status):
    pending = getattr(_callback_errors, "pending", None)
    _callback_errors.pending = None
    if status != 0:
        message = _libc.octet_last_error_message().decode()
        if pending is not None:
            message += f" (a Python callback raised {type(pending).__name__}: {pending})"
        raise OctetError(status, message) from pending


def _lib_dtype_name(dtype):
    return {FP32: "fp32", BF16: "bf16", FP16: "fp16", E4M3: "e4m3", E5M2: "e5m2", E8M0: "e8m0"}.get(dtype, str(dtype))


def _text(b):
    return b.decode() if b is not None else ""


def library_version():
    v = _libc.octet_library_version()
    return (v.major, v.minor, v.patch)


def abi_version():
    v = _libc.octet_abi_version()
    return (v.major, v.minor)


def _dtype_code(dtype, what="dtype"):
    """An Octet dtype: a constant (octet.E4M3, ...), an int checked before
    ctypes sees it (ctypes would raise its own ArgumentError; the library
    checks the value), or the NumPy type of one: numpy.float32 -> FP32,
    numpy.float16 -> FP16, ml_dtypes bfloat16 / float8_e4m3fn / float8_e5m2
    / float8_e8m0fnu -> BF16 / E4M3 / E5M2 / E8M0."""
    if isinstance(dtype, (int, _np.integer)) and not isinstance(dtype, bool):
        return int(dtype)
    try:
        numpy_type = _np.dtype(dtype) if dtype is not None and not isinstance(dtype, bool) else None
    except TypeError:
        numpy_type = None
    code = {_np.dtype(_np.float32): FP32, _np.dtype(_np.float16): FP16, **_FROM_ML}.get(numpy_type)
    if code is None:
        raise TypeError(f"{what} must be an Octet dtype (octet.FP32, FP16, BF16, E4M3, E5M2, E8M0) or the NumPy "
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
    """FP32 values -> FP8 codes (uint8), exactly as numerics.md section 2."""
    dtype = _dtype_code(dtype)
    src = _np.array(values, dtype=_np.float32, order="C")  # keeps 0-d scalars 0-d
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
    _check(_libc.octet_fp8_decode_array(src.ctypes.data, out.ctypes.data, src.size, dtype))
    return out


def _info_dict(info):
    return {
        "name": _text(info.name),
        "version": _text(info.version),
        "device": _text(info.device),
        "path": _text(info.path),
        "memory": "device" if info.memory_kind == 1 else "host",
        "available": bool(info.available),
        "unavailable_reason": _text(info.unavailable_reason),
        "native_columnwise": bool(info.native_columnwise),
        "fp8_gemm_layouts": info.fp8_gemm_layouts,
        "features": info.features,
        "alignment": info.alignment,
    }


def backends():
    """Registered backends, reference first, as dicts."""
    count = _c.c_size_t()
    _check(_libc.octet_backend_count(_c.byref(count)))
    result = []
    for i in range(count.value):
        info = _lib.BackendInfo(struct_size=_c.sizeof(_lib.BackendInfo))
        _check(_libc.octet_backend_get_info(i, _c.byref(info)))
        result.append(_info_dict(info))
    return result


def backend_failures():
    """Plugins that failed to load: list of (path, reason)."""
    count = _c.c_size_t()
    _check(_libc.octet_backend_failure_count(_c.byref(count)))
    result = []
    for i in range(count.value):
        f = _lib.BackendFailure(struct_size=_c.sizeof(_lib.BackendFailure))
        _check(_libc.octet_backend_get_failure(i, _c.byref(f)))
        result.append((_text(f.path), _text(f.reason)))
    return result


class _Handle:
    """A C handle held by a Python object. `handle` raises once closed;
    close() releases it through _release() unless the handle is borrowed
    (`_owner` set: the owner frees it); also a context manager, and closed
    by the garbage collector. Subclasses set _kind and _destroy."""

    _kind = "object"
    _destroy = None   # name of the C destroy function
    _handle = None
    _owner = None

    @property
    def handle(self):
        if not getattr(self, "_handle", None):
            raise ValueError(f"{self._kind} is closed")
        return self._handle

    def _release(self, handle):
        getattr(_libc, self._destroy)(handle)

    def close(self):
        if getattr(self, "_handle", None):
            if self._owner is None:
                self._release(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


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
        dtype's host representation, SCALE/SCALE_INV/AMAX as a float,
        ROWWISE_SCALE_INV/COLUMNWISE_SCALE_INV (block-scaled tensors) as the
        scale grid (uint8 E8M0 codes for MXFP8, float32 otherwise)."""
        if isinstance(which, bool) or not isinstance(which, (int, _np.integer)):
            raise TypeError(f"component must be one of octet.DATA, COLUMNWISE_DATA, SCALE, SCALE_INV, AMAX, "
                            f"ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV; got {which!r}")
        which = int(which)
        if which in (ROWWISE_SCALE_INV, COLUMNWISE_SCALE_INV):
            info = self.info()
            rows, cols = int(_np.prod(self.shape[:-1])), self.shape[-1]
            if which == COLUMNWISE_SCALE_INV:
                rows, cols = cols, rows
            grid = (-(-rows // info["block_rows"]), -(-cols // info["block_cols"]))
            out = _np.empty(grid, dtype=_np.uint8 if info["scale_inv_dtype"] == E8M0 else _np.float32)
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
            return out
        if which in (SCALE, SCALE_INV, AMAX):
            value = _c.c_float()
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, _c.byref(value), 4))
            return value.value
        shape = self.shape if which == DATA else (self.shape[-1], int(_np.prod(self.shape[:-1])))
        out = _np.empty(shape, dtype=_NUMPY[self.dtype])
        _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
        return out

    def numpy(self):
        """The stored elements as a NumPy array: float32 (FP32), float16
        (FP16); BF16, E4M3, E5M2 and E8M0 as ml_dtypes arrays (bfloat16,
        float8_e4m3fn, float8_e5m2, float8_e8m0fnu) when ml_dtypes is
        installed, else as raw codes (uint16/uint8, as codes() gives). A
        quantized tensor's elements are the scaled values x * SCALE; values()
        gives what they stand for."""
        data = self.component(DATA)
        typed = _ML.get(self.dtype)
        return data.view(typed) if typed is not None else data

    def codes(self):
        """The raw codes of a BF16 (uint16), E4M3/E5M2 or E8M0 (uint8)
        tensor, whether or not ml_dtypes is installed."""
        if self.dtype not in _ML_NAMES:
            raise TypeError(f"codes() is for BF16/FP8/E8M0 tensors; this one is {_lib_dtype_name(self.dtype)}: "
                            "use numpy()")
        return self.component(DATA)

    def values(self):
        """float32 values the tensor stands for: a quantized tensor
        dequantized (codes times its scale_inv, per tensor or per block);
        BF16/FP8/E8M0/FP16 elements decoded (exact); FP32 as stored."""
        if self.usages:
            return self._context.dequantize(self, FP32).numpy()
        data = self.component(DATA)
        if self.dtype in (FP32, FP16):
            return data.astype(_np.float32)
        out = _np.empty(data.shape, dtype=_np.float32)
        decode = {BF16: ("octet_bf16_decode_array",), E8M0: ("octet_e8m0_decode_array",),
                  E4M3: ("octet_fp8_decode_array", E4M3), E5M2: ("octet_fp8_decode_array", E5M2)}[self.dtype]
        _check(getattr(_libc, decode[0])(data.ctypes.data, out.ctypes.data, data.size, *decode[1:]))
        return out

    def __array__(self, dtype=None, copy=None):
        """numpy.asarray(tensor): a quantized tensor gives values() (float32,
        dequantized); a plain one numpy() where NumPy has its type (FP32,
        FP16, and BF16/FP8/E8M0 with ml_dtypes installed), else values().
        Always a copy from the backend, so copy=False raises ValueError."""
        if copy is False:
            raise ValueError("an octet Tensor lives in its backend's memory: converting it to a NumPy array always "
                             "copies (use copy=None or True, or ctx.wrap an array to share memory)")
        if self.usages or (self.dtype not in (FP32, FP16) and self.dtype not in _ML):
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
        from ._dlpack import export
        return export(self, DATA, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """(device type, id): (1, 0), kDLCPU, on a host-memory backend;
        (2, 0), kDLCUDA, on the cuda backend."""
        from ._dlpack import _device_of
        return _device_of(self._context)

    def dlpack_component(self, which=DATA):
        """One component as a DLPack producer (no copy): DATA, COLUMNWISE_DATA
        ([cols, rows]), SCALE / SCALE_INV / AMAX (float32, shape (1,)),
        ROWWISE_SCALE_INV / COLUMNWISE_SCALE_INV (the block scale grid), e.g.
        torch.from_dlpack(q.dlpack_component(octet.SCALE_INV))."""
        from ._dlpack import DLPackComponent
        if isinstance(which, bool) or not isinstance(which, (int, _np.integer)):
            raise TypeError(f"which must be an octet component (octet.DATA, SCALE_INV, ...); got {which!r}")
        return DLPackComponent(self, int(which))

    def set_scale(self, scale):
        """Sets the SCALE of a quantized tensor (finite and > 0, the rule of
        octet_quantizer_set_scale: 0 would make SCALE_INV infinite, a NaN
        every code NaN)."""
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


def _stream_handle(stream):
    """The raw stream handle of `stream`: None, an int, or an object with
    `cuda_stream` (torch.cuda.Stream) or `ptr` (cupy.cuda.Stream)."""
    if stream is None:
        return None
    for attribute in ("cuda_stream", "ptr"):
        if hasattr(stream, attribute):
            stream = getattr(stream, attribute)
            break
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise TypeError("stream must be None, a non-negative int handle, or an object with .cuda_stream "
                        f"(torch.cuda.Stream) or .ptr (cupy); got {type(stream).__name__}")
    if stream == 0:
        raise ValueError("stream 0 is CUDA's legacy default stream, which octet_context_options reads as 'the "
                         "backend's own': pass None for that, or cudaStreamLegacy (1) / cudaStreamPerThread (2)")
    return stream


class Context(_Handle):
    """A context on one backend ("auto", "reference", "cpu", ...).

    stream: the backend stream to run on (octet_context_options.stream),
    e.g. torch.cuda.current_stream() for the cuda backend, so Octet's work
    is ordered with the framework's; None: the backend's own. Host backends
    run on the calling thread and ignore it."""

    def __init__(self, backend="auto", profile="native", stream=None):
        self._handle = None
        if backend is not None and not isinstance(backend, str):
            raise TypeError(f"backend must be a backend name (str) or None (\"auto\"); got {type(backend).__name__}")
        if not isinstance(profile, str) or profile not in _PROFILES:
            raise ValueError(f"profile must be one of {sorted(_PROFILES)}; got {profile!r}")
        options = _lib.ContextOptions()
        _check(_libc.octet_context_options_init(_c.byref(options)))
        options.backend = backend.encode() if backend is not None else None  # NULL: "auto"
        options.capability_profile = _PROFILES[profile]
        options.stream = _stream_handle(stream)
        handle = _c.c_void_p()
        _check(_libc.octet_context_create(_c.byref(options), _c.byref(handle)))
        self._handle = handle
        # Python objects the C context may call or hold while it lives: the
        # communicator's callback and the recipes of autocast scopes (their
        # callbacks). Kept past close(): tensors and layers keep the C
        # context alive, and they hold this object.
        self._communicator = None
        self._scope_recipes = {}
        self._scope_stack = []  # the recipes of the open scopes, innermost last

    _kind = "context"
    _destroy = "octet_context_destroy"

    def info(self):
        info = _lib.BackendInfo(struct_size=_c.sizeof(_lib.BackendInfo))
        _check(_libc.octet_context_get_info(self.handle, _c.byref(info)))
        return _info_dict(info)

    def empty(self, shape, dtype, usages=0, scaling_mode=0):
        """An uninitialised tensor. FP8 with usages != 0 makes a quantized
        tensor, per-tensor scaled unless scaling_mode names a block mode
        (SCALING_MXFP8_1X32, SCALING_BLOCK_1X128, SCALING_BLOCK_128X128)."""
        shape = _dims(shape)
        if not 1 <= len(shape) <= _lib.MAX_DIMS:
            raise ValueError(f"shape must have 1..{_lib.MAX_DIMS} dimensions")
        dtype = _dtype_code(dtype)
        desc = _lib.TensorDesc(struct_size=_c.sizeof(_lib.TensorDesc), dtype=dtype, ndim=len(shape), usages=usages,
                               scaling_mode=scaling_mode)
        for i, n in enumerate(shape):
            desc.shape[i] = n
        handle = _c.c_void_p()
        _check(_libc.octet_tensor_create(self.handle, _c.byref(desc), _c.byref(handle)))
        return Tensor(self, handle, dtype, shape, usages, scaling_mode)

    def synchronize(self):
        """Waits until all work queued on the context has finished."""
        _check(_libc.octet_context_synchronize(self.handle))

    def memory_stats(self):
        """Bytes the context holds: {category: {"current": n, "peak": n}},
        plus "total" (octet_context_get_memory_stats)."""
        stats = _lib.MemoryStats(struct_size=_c.sizeof(_lib.MemoryStats))
        _check(_libc.octet_context_get_memory_stats(self.handle, _c.byref(stats)))
        result = {}
        for i in range(_MEMORY_CATEGORY_COUNT):
            name = _libc.octet_memory_category_name(i).decode()
            result[name] = {"current": stats.current_bytes[i], "peak": stats.peak_bytes[i]}
        result["total"] = {"current": stats.current_total, "peak": stats.peak_total}
        return result

    def reset_peak_memory(self):
        _check(_libc.octet_context_reset_peak_memory(self.handle))

    def autocast(self, recipe):
        """`with ctx.autocast(recipe): ...` opens an autocast scope (see
        octet.autocast)."""
        from .autocast import Autocast
        return Autocast(self, recipe)

    def autocast_state(self):
        """(depth, recipe in effect or None) of the context's scopes."""
        from .autocast import autocast_state
        return autocast_state(self)

    def set_communicator(self, allreduce_max):
        """Sets the cross-process reduction: allreduce_max(values) replaces
        the float32 array `values` in place by the element-wise max over all
        processes; None removes it (see octet.autocast.set_communicator)."""
        from .autocast import set_communicator
        set_communicator(self, allreduce_max)

    def wrap(self, obj, dtype=None):
        """A tensor over the memory of `obj`, without copying
        (octet_tensor_wrap): on a host-memory backend a NumPy array (or any
        object with __array_interface__), on a device backend an object with
        __cuda_array_interface__ (a PyTorch or CuPy CUDA tensor). Writes
        through Octet are seen in `obj` and the other way round; the tensor
        keeps `obj` alive. Rules: C-contiguous, writable, 1 to 8 dimensions,
        data aligned to the backend's alignment (ctx.info()["alignment"]).
        dtype: inferred for float32 (FP32), float16 (FP16) and ml_dtypes
        bfloat16/float8_e4m3fn/float8_e5m2 arrays; pass BF16/E4M3/E5M2 for
        uint16/uint8 memory holding raw codes."""
        device = self.info()["memory"] == "device"
        attribute = "__cuda_array_interface__" if device else "__array_interface__"
        interface = getattr(obj, attribute, None)
        if interface is None:
            where = "device memory (e.g. a CUDA tensor)" if device else "host memory (e.g. a NumPy array)"
            raise TypeError(f"this context's backend works on {where}: wrap needs an object with {attribute}; "
                            f"got {type(obj).__name__} (ctx.tensor() copies instead)")
        pointer, readonly = interface["data"]
        shape = tuple(int(n) for n in interface["shape"])
        item = _np.dtype(interface["typestr"])
        if readonly:
            raise ValueError("cannot wrap read-only memory: Octet may write to a tensor (copy it, or use ctx.tensor())")
        if not 1 <= len(shape) <= _lib.MAX_DIMS:
            raise ValueError(f"wrap needs 1..{_lib.MAX_DIMS} dimensions; got shape {shape}")
        strides = interface.get("strides")
        if strides is not None:
            expected, step = [], item.itemsize
            for n in reversed(shape):
                expected.append(step)
                step *= n
            if tuple(strides) != tuple(reversed(expected)) and 0 not in shape:
                raise ValueError(f"wrap needs C-contiguous memory; got strides {tuple(strides)} for shape {shape}")
        typed = _FROM_ML.get(obj.dtype) if isinstance(obj, _np.ndarray) else None  # an ml_dtypes array
        if dtype is None:
            dtype = typed or {_np.dtype(_np.float32): FP32, _np.dtype(_np.float16): FP16}.get(item.newbyteorder("="))
            if dtype is None or item.byteorder == ">":
                raise TypeError(f"wrap cannot infer an Octet dtype from {item} memory: it wraps float32 (FP32) and "
                                "float16 (FP16) arrays, ml_dtypes bfloat16/float8_e4m3fn/float8_e5m2 arrays, and "
                                "uint16/uint8 arrays of raw codes with dtype=octet.BF16/E4M3/E5M2; other data "
                                "(float64, lists) needs a copy: ctx.tensor(x) rounds it to float32")
        if dtype not in _NUMPY or dtype == E8M0:
            raise ValueError(f"dtype must be FP32, FP16, BF16, E4M3 or E5M2; got {dtype}")
        if typed is not None and typed != dtype:
            raise TypeError(f"obj is {obj.dtype.name} ({_lib_dtype_name(typed)}) but dtype= asks for "
                            f"{_lib_dtype_name(dtype)}: leave dtype out")
        if item.itemsize != _np.dtype(_NUMPY[dtype]).itemsize or (item.kind not in "fiu" and typed is None):
            raise TypeError(f"{item} memory cannot hold {_lib_dtype_name(dtype)} elements "
                            f"({_np.dtype(_NUMPY[dtype]).itemsize} bytes each)")
        alignment = max(int(self.info()["alignment"]), 1)
        if pointer % alignment != 0:
            raise ValueError(f"the memory at {pointer:#x} is not aligned to the backend's alignment of {alignment} "
                             f"bytes (octet_tensor_wrap's rule): allocate it aligned, or use ctx.tensor()")
        desc = _lib.TensorDesc(struct_size=_c.sizeof(_lib.TensorDesc), dtype=dtype, ndim=len(shape))
        for i, n in enumerate(shape):
            desc.shape[i] = n
        handle = _c.c_void_p()
        _check(_libc.octet_tensor_wrap(self.handle, _c.byref(desc), _c.c_void_p(pointer), _c.byref(handle)))
        t = Tensor(self, handle, dtype, shape, 0)
        t._base = obj  # the memory stays alive as long as the tensor
        return t

    def from_dlpack(self, obj):
        """A tensor on this context over the memory of `obj` (anything with
        __dlpack__: a NumPy array, a torch tensor, an octet Tensor; or a
        DLPack capsule), without copying (octet_tensor_from_dlpack): writes
        on either side are seen on the other, and the memory stays alive
        until the tensor is closed. Refused with OctetError, never copied:
        non-contiguous or misaligned memory, read-only memory, other
        devices, dtypes Octet lacks (see docs/python.md, "DLPack")."""
        from ._dlpack import import_
        return import_(self, obj)

    def tensor(self, array, dtype=None):
        """Uploads data (a copy) as a plain tensor.

        array: a NumPy array, anything numpy.asarray takes (a list, a
        scalar), or an ml_dtypes array. Without dtype: float32 -> FP32,
        float16 -> FP16, an ml_dtypes bfloat16 / float8_e4m3fn / float8_e5m2
        / float8_e8m0fnu array -> BF16 / E4M3 / E5M2 / E8M0 (its codes,
        exactly); float64 and integer arrays (and lists) -> FP32, rounded to
        float32 by NumPy (round to nearest even). dtype=FP32/FP16: any real
        numbers, rounded the same way. dtype=BF16: float values rounded to
        BF16 (float32 first, then BF16, both to nearest even: a float64
        value can round twice), or raw uint16 codes from an integer array.
        dtype=E4M3/E5M2/E8M0: raw uint8 codes from an integer array, or a
        matching ml_dtypes array; float values are refused (ctx.quantize
        scales them, octet.fp8_encode encodes them unscaled)."""
        what = "array"
        if isinstance(array, Tensor):
            raise TypeError("array is already an octet Tensor: ctx.convert(t, dtype) changes its dtype")
        try:
            array = _np.asarray(array)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what} must be a NumPy array or a (nested) list of numbers with one shape (not "
                            f"ragged); got {type(array).__name__}: {e}") from None
        if dtype is not None:
            dtype = _dtype_code(dtype)
            if dtype not in _NUMPY:
                raise ValueError(f"dtype must be one of octet.FP32, FP16, BF16, E4M3, E5M2, E8M0; got {dtype}")
        typed = _FROM_ML.get(array.dtype)
        if typed is not None:  # an ml_dtypes array: its codes, as they are
            if dtype is not None and dtype != typed:
                raise ValueError(f"{what} is {array.dtype.name} ({_lib_dtype_name(typed)}) but dtype= asks for "
                                 f"{_lib_dtype_name(dtype)}: leave dtype out, or .astype() the array first")
            dtype = typed
            array = array.view(_NUMPY[typed])
        elif array.dtype == object or array.dtype.kind not in "fiu":
            raise TypeError(f"{what} must hold real numbers (float, integer or an ml_dtypes type); got "
                            f"{array.dtype}" + (" (a ragged list, or one holding non-numbers?)"
                                                if array.dtype == object else ""))
        elif dtype is None:
            dtype = FP16 if array.dtype == _np.float16 else FP32
        host = _np.dtype(_NUMPY[dtype])
        if _np.issubdtype(host, _np.integer) and typed is None:
            if array.dtype.kind == "f":
                if dtype == BF16:  # values: float32 (RNE), then BF16 (RNE) by the library
                    return self.convert(self.tensor(array.astype(_np.float32)), BF16)
                raise TypeError(f"a {array.dtype} {what} holds values, and dtype={_lib_dtype_name(dtype)} takes "
                                f"raw {host} codes: for scaled FP8 use ctx.quantize(x, "
                                f"octet.{_lib_dtype_name(dtype).upper()}) (scale from the data's amax), for "
                                "unscaled codes octet.fp8_encode(x, dtype), or pass an ml_dtypes array")
            _raw_codes(array, host, f"raw {_lib_dtype_name(dtype)} codes")
        array = _np.ascontiguousarray(array, dtype=host)
        if array.ndim == 0:
            array = array.reshape(1)
        t = self.empty(array.shape, dtype)
        _check(_libc.octet_tensor_copy_from_host(t.handle, DATA, array.ctypes.data, array.nbytes))
        return t

    def _as_tensor(self, x):
        return x if isinstance(x, Tensor) else self.tensor(x)

    def amax(self, x):
        value = _c.c_float()
        x = self._as_tensor(x)  # held: a temporary would be freed before the call
        _check(_libc.octet_amax(self.handle, x.handle, _c.byref(value)))
        return value.value

    def quantize(self, x, dtype=E4M3, scale=None, usages=BOTH, saturate=True, stats=False):
        """q = fp8(x * scale), per-tensor scaled, for the usages asked.

        x: a Tensor or anything ctx.tensor takes (float64 and lists are
        rounded to float32 first). scale=None (the default) is current
        scaling, octet.CurrentScaling's rule (numerics.md section 3.2):
        scale = fp8_max / amax(x) (448 for E4M3, 57344 for E5M2), so the
        largest |x| maps to fp8_max and nothing saturates. The amax ignores
        NaN (NaN stays NaN); amax 0 (all zeros or all NaN) and amax inf give
        scale 1, and a quotient that overflows float32 gives FLT_MAX.
        A number is the caller's scale (finite, > 0).

        Saturation is never silent: values whose |x * scale| rounds beyond
        fp8_max (octet_quantize_stats.saturated_count: E4M3 above 464, E5M2
        from 61440; clamped to +-fp8_max, or NaN/inf with saturate=False)
        raise an octet.SaturationWarning naming the count and a scale that
        avoids it. stats=True returns (q, counts): the call's
        nan/saturated/flushed/total counts and amax (on a backend without
        the statistics kernel, octet.h's OCTET_FEATURE_QUANTIZE_STATISTICS,
        the counts other than total are None and saturation is judged
        from amax * scale)."""
        dtype = _dtype_code(dtype)
        if dtype not in _FP8_MAX:
            raise ValueError(f"dtype must be octet.E4M3 or octet.E5M2 (quantize makes FP8); got "
                             f"{_lib_dtype_name(dtype)}")
        x = self._as_tensor(x)
        if scale is None:
            from .quantizers import Quantizer
            from .recipes import CurrentScaling
            quantizer = Quantizer(CurrentScaling(format="e4m3" if dtype == E4M3 else "e5m2"), "input")
            q, counts = quantizer.quantize(self, x, usages=usages, saturate=saturate, stats=True)
        else:
            q = self.empty(x.shape, dtype, usages)
            q.set_scale(scale)
            options = _lib.QuantizeOptions()
            _check(_libc.octet_quantize_options_init(_c.byref(options)))
            options.saturate = int(bool(saturate))
            if self.info()["features"] & _FEATURE_QUANTIZE_STATISTICS:
                raw = _lib.QuantizeStats(struct_size=_c.sizeof(_lib.QuantizeStats))
                _check(_libc.octet_quantize_with_stats(self.handle, x.handle, q.handle, _c.byref(options),
                                                       _c.byref(raw)))
                counts = {name: getattr(raw, name) for name, _ in _lib.QuantizeStats._fields_
                          if name != "struct_size"}
            else:  # a backend without the statistics kernel: amax tells whether anything saturated
                _check(_libc.octet_quantize(self.handle, x.handle, q.handle, _c.byref(options)))
                amax = q.component(AMAX)
                beyond = _OVERFLOWS[dtype](float(_np.float32(amax) * _np.float32(scale))) or not _math.isfinite(amax)
                counts = {"nan_count": None, "saturated_count": None, "flushed_count": None,
                          "total_count": int(_np.prod(x.shape)), "amax": amax}
                saturated = "some" if beyond else 0
        if counts["saturated_count"] is not None:
            saturated = counts["saturated_count"]
        if saturated:
            used, amax = q.component(SCALE), counts["amax"]
            limit = _FP8_MAX[dtype] / amax if _math.isfinite(amax) and amax > 0 else None
            advice = (f"a scale of at most {limit:.6g} (fp8_max / amax) avoids it; scale=None takes that one from "
                      "the data" if limit is not None else
                      "the data holds inf (its amax is not finite), which no scale avoids")
            became = f"clamped to +-{_FP8_MAX[dtype]:g}" if saturate else "became NaN/inf (saturate=False)"
            _warnings.warn(SaturationWarning(
                f"quantize to {_lib_dtype_name(dtype)}: {saturated} of {counts['total_count']} values went beyond "
                f"the format's range and {became}, with scale {used:.6g} and amax {amax:.6g}: {advice}"),
                stacklevel=2)
        return (q, counts) if stats else q

    def dequantize(self, q, dtype=FP32):
        if not isinstance(q, Tensor):
            raise TypeError(f"dequantize takes a quantized octet Tensor (ctx.quantize gives one); "
                            f"got {type(q).__name__}")
        out = self.empty(q.shape, dtype)
        _check(_libc.octet_dequantize(self.handle, q.handle, out.handle))
        return out

    def convert(self, x, dtype, saturate=True):
        x = self._as_tensor(x)
        out = self.empty(x.shape, dtype)
        _check(_libc.octet_convert(self.handle, x.handle, out.handle, int(bool(saturate))))
        return out

    def gemm(self, a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, bias=None, out=None, out_dtype=FP32,
             fast_accumulation=False, saturate_output=True):
        """D = alpha * sa * sb * A' B'^T + beta * D + bias (octet_gemm).

        `out` may be a quantized FP8 tensor (per-tensor scaling, its SCALE set):
        D is then fp8(result * SCALE), with SCALE_INV and AMAX written
        (saturating unless saturate_output is False; beta must be 0).
        fast_accumulation lets a GPU backend accumulate FP8 products with
        reduced precision."""
        if out is not None and not isinstance(out, Tensor):
            raise TypeError(f"out must be an octet Tensor (ctx.empty or ctx.wrap makes one); got {type(out).__name__}")
        a, b = self._as_tensor(a), self._as_tensor(b)
        m = a.shape[-1] if trans_a else int(_np.prod(a.shape[:-1]))
        n = b.shape[-1] if trans_b else int(_np.prod(b.shape[:-1]))
        if out is None:
            out = self.empty((m, n), out_dtype)
        options = _lib.GemmOptions()
        _check(_libc.octet_gemm_options_init_sized(_c.byref(options), _c.sizeof(options)))
        options.trans_a, options.trans_b = int(trans_a), int(trans_b)
        options.fast_accumulation = int(bool(fast_accumulation))
        options.saturate_output = int(bool(saturate_output))
        options.alpha, options.beta = alpha, beta
        bias_tensor = self._as_tensor(bias) if bias is not None else None
        options.bias = bias_tensor.handle if bias_tensor is not None else None
        _check(_libc.octet_gemm(self.handle, a.handle, b.handle, out.handle, _c.byref(options)))
        return out


def from_dlpack(obj, context=None):
    """octet's from_dlpack: a Tensor over the memory of `obj` without copying
    (Context.from_dlpack). context=None: a context of this thread for the
    memory's device (host data: the first available host plugin, else the
    reference; CUDA data: the cuda backend), created on first use."""
    from ._dlpack import default_context
    if context is None:
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        context = default_context(int(device[0]))
    elif not isinstance(context, Context):
        raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
    return context.from_dlpack(obj)
