"""Python interface to Octet over its C ABI (ctypes + NumPy).

    import numpy as np, octet
    with octet.Context("reference", profile="hopper-like") as ctx:
        x = ctx.quantize(np.random.randn(64, 32).astype(np.float32), octet.E4M3, scale=8.0)
        w = ctx.quantize(np.random.randn(16, 32).astype(np.float32), octet.E4M3, scale=64.0)
        y = ctx.gemm(x, w).numpy()          # y = x w^T, FP32, scales applied

Every failure of the library raises OctetError with the library's status and
message. Tensors belong to their context; closing the context early is safe
(the library keeps what tensors need alive).
"""

import ctypes as _c

import numpy as _np

from . import _lib
from ._lib import lib as _libc

FP32, BF16, FP16, E4M3, E5M2, E8M0 = 1, 2, 3, 10, 12, 14
ROWWISE, COLUMNWISE, BOTH = 1, 2, 3
DATA, COLUMNWISE_DATA, SCALE, SCALE_INV, AMAX = 0, 1, 2, 3, 4
_PROFILES = {"native": 0, "hopper-like": 1, "blackwell-like": 2}
# Host representation of each dtype: FP8 and BF16 as raw codes.
_NUMPY = {FP32: _np.float32, FP16: _np.float16, BF16: _np.uint16, E4M3: _np.uint8, E5M2: _np.uint8, E8M0: _np.uint8}


class OctetError(RuntimeError):
    """A failed Octet call: .status (int), .status_name and the message."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = _libc.octet_status_name(status).decode()
        super().__init__(f"{self.status_name}: {message}")


def _check(status):
    if status != 0:
        raise OctetError(status, _libc.octet_last_error_message().decode())


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


def fp8_encode(values, dtype, saturate=True):
    """FP32 values -> FP8 codes (uint8), exactly as numerics.md section 2."""
    src = _np.array(values, dtype=_np.float32, order="C")  # keeps 0-d scalars 0-d
    out = _np.empty(src.shape, dtype=_np.uint8)
    _check(_libc.octet_fp8_encode_array(src.ctypes.data, out.ctypes.data, src.size, dtype, int(bool(saturate))))
    return out


def fp8_decode(codes, dtype):
    """FP8 codes (uint8) -> FP32 values (exact)."""
    src = _np.array(codes, dtype=_np.uint8, order="C")
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


class Tensor:
    """A tensor in a context's backend memory (owned; freed by close/GC)."""

    def __init__(self, context, handle, dtype, shape, usages):
        self._handle = None
        self._context = context  # keeps the context handle alive for our calls
        self._handle = handle
        self.dtype = dtype
        self.shape = tuple(shape)
        self.usages = usages

    @property
    def handle(self):
        if not self._handle:
            raise ValueError("tensor is closed")
        return self._handle

    def close(self):
        if self._handle:
            _libc.octet_tensor_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def component(self, which=DATA):
        """Copies one component to the host: DATA/COLUMNWISE_DATA as the
        dtype's host representation, SCALE/SCALE_INV/AMAX as a float."""
        if which in (SCALE, SCALE_INV, AMAX):
            value = _c.c_float()
            _check(_libc.octet_tensor_copy_to_host(self.handle, which, _c.byref(value), 4))
            return value.value
        shape = self.shape if which == DATA else (self.shape[-1], int(_np.prod(self.shape[:-1])))
        out = _np.empty(shape, dtype=_NUMPY[self.dtype])
        _check(_libc.octet_tensor_copy_to_host(self.handle, which, out.ctypes.data, out.nbytes))
        return out

    def numpy(self):
        """The data as the dtype's host representation (FP8/BF16: raw codes)."""
        return self.component(DATA)

    def set_scale(self, scale):
        value = _c.c_float(scale)
        _check(_libc.octet_tensor_copy_from_host(self.handle, SCALE, _c.byref(value), 4))


class Context:
    """A context on one backend ("auto", "reference", "cpu", ...)."""

    def __init__(self, backend="auto", profile="native"):
        self._handle = None
        if profile not in _PROFILES:
            raise ValueError(f"profile must be one of {sorted(_PROFILES)}")
        options = _lib.ContextOptions()
        _check(_libc.octet_context_options_init(_c.byref(options)))
        options.backend = backend.encode()
        options.capability_profile = _PROFILES[profile]
        handle = _c.c_void_p()
        _check(_libc.octet_context_create(_c.byref(options), _c.byref(handle)))
        self._handle = handle

    @property
    def handle(self):
        if not self._handle:
            raise ValueError("context is closed")
        return self._handle

    def close(self):
        if self._handle:
            _libc.octet_context_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def info(self):
        info = _lib.BackendInfo(struct_size=_c.sizeof(_lib.BackendInfo))
        _check(_libc.octet_context_get_info(self.handle, _c.byref(info)))
        return _info_dict(info)

    def empty(self, shape, dtype, usages=0):
        desc = _lib.TensorDesc(struct_size=_c.sizeof(_lib.TensorDesc), dtype=dtype, ndim=len(shape), usages=usages)
        if not 1 <= len(shape) <= _lib.MAX_DIMS:
            raise ValueError(f"shape must have 1..{_lib.MAX_DIMS} dimensions")
        for i, n in enumerate(shape):
            desc.shape[i] = int(n)
        handle = _c.c_void_p()
        _check(_libc.octet_tensor_create(self.handle, _c.byref(desc), _c.byref(handle)))
        return Tensor(self, handle, dtype, shape, usages)

    def tensor(self, array, dtype=None):
        """Uploads a NumPy array: float32 -> FP32, float16 -> FP16; pass
        dtype=BF16/E4M3/E5M2 for uint16/uint8 arrays of raw codes."""
        array = _np.ascontiguousarray(array)
        if dtype is None:
            dtype = {_np.dtype(_np.float32): FP32, _np.dtype(_np.float16): FP16}.get(array.dtype)
            if dtype is None:
                raise TypeError(f"cannot infer an Octet dtype from {array.dtype}; pass dtype=")
        if dtype not in _NUMPY:
            raise ValueError(f"unknown Octet dtype {dtype}")
        host = _np.dtype(_NUMPY[dtype])
        # Float values are never taken as raw codes (a cast would truncate
        # them to integers silently): encode them first (fp8_encode).
        if _np.issubdtype(host, _np.integer) and not _np.issubdtype(array.dtype, _np.integer):
            raise TypeError(f"a {array.dtype} array cannot hold {_lib_dtype_name(dtype)} data: "
                            f"pass {host} (raw codes for BF16/FP8)")
        array = _np.ascontiguousarray(array, dtype=host)
        t = self.empty(array.shape, dtype)
        _check(_libc.octet_tensor_copy_from_host(t.handle, DATA, array.ctypes.data, array.nbytes))
        return t

    def _as_tensor(self, x):
        return x if isinstance(x, Tensor) else self.tensor(x)

    def amax(self, x):
        value = _c.c_float()
        _check(_libc.octet_amax(self.handle, self._as_tensor(x).handle, _c.byref(value)))
        return value.value

    def quantize(self, x, dtype=E4M3, scale=1.0, usages=BOTH, saturate=True):
        """q = fp8(x * scale) for the usages asked; returns the quantized tensor."""
        x = self._as_tensor(x)
        q = self.empty(x.shape, dtype, usages)
        q.set_scale(scale)
        options = _lib.QuantizeOptions()
        _check(_libc.octet_quantize_options_init(_c.byref(options)))
        options.saturate = int(bool(saturate))
        _check(_libc.octet_quantize(self.handle, x.handle, q.handle, _c.byref(options)))
        return q

    def dequantize(self, q, dtype=FP32):
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
