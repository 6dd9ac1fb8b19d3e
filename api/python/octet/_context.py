"""ContextBase: a context on one backend, with its tensor operations
(creation, copies, wrapping host or device memory, DLPack import, amax,
dequantize, convert, gemm). octet.Context (octet/_core.py) adds what needs
recipes, quantizers and autocast scopes."""

import ctypes as _c

import numpy as _np

from . import _codes, _dlpack, _lib
from ._backends import _info_dict
from ._dtypes import (BF16, DATA, E2M1, E8M0, FP16, FP32, _FROM_ML, _NUMPY, _dims, _dtype_code, _lib_dtype_name,
                      _raw_codes)
from ._errors import _check
from ._handle import _Handle
from ._lib import lib as _libc
from ._tensor import Tensor

_MEMORY_CATEGORY_COUNT = 5
_PROFILES = {"native": 0, "hopper-like": 1, "blackwell-like": 2}


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


class ContextBase(_Handle):
    """A context on one backend: its handle, its tensors and the operations
    that need no recipe. octet.Context (octet/_core.py) is this class with
    what needs recipes, quantizers and autocast scopes added.

    Quantizers and autocast scopes, which octet.Context's module imports,
    check that they were given a context with isinstance(ctx, ContextBase).
    They and the layers keep the Python objects the C context may call
    while it lives (the recipes of autocast scopes, the communicator)
    through the methods of "Held for the C context" below, never through
    its fields."""

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

    # Held for the C context (the interface of octet.autocast, quantizers
    # and layers to the state above).

    def _enter_scope(self, recipe):
        """Records an autocast scope opened with `recipe`: the context may run
        the recipe's callbacks until it is destroyed (quantizers remember the
        last scope recipe they were used with)."""
        self._scope_recipes[id(recipe)] = recipe
        self._scope_stack.append(recipe)

    def _leave_scope(self):
        """Forgets the innermost open scope (if any), even when its end fails."""
        if self._scope_stack:
            self._scope_stack.pop()

    def _innermost_scope_recipe(self, depth):
        """The recipe of the innermost open scope, or None when the library's
        scope depth `depth` is not the number of scopes opened from Python."""
        if depth == 0 or depth != len(self._scope_stack):
            return None
        return self._scope_stack[-1]

    def _scope_recipes_seen(self):
        """Every recipe an autocast scope of this context was opened with."""
        return list(self._scope_recipes.values())

    def _hold_communicator(self, held):
        """Keeps `held` (the communicator's C thunk and Python function, or
        None) alive while the C context may call it."""
        self._communicator = held

    _kind = "context"
    _destroy = "octet_context_destroy"

    def info(self):
        info = _lib.BackendInfo(struct_size=_c.sizeof(_lib.BackendInfo))
        _check(_libc.octet_context_get_info(self.handle, _c.byref(info)))
        return _info_dict(info)

    def empty(self, shape, dtype, usages=0, scaling_mode=0):
        """An uninitialised tensor. FP8 with usages != 0 makes a quantized
        tensor, per-tensor scaled unless scaling_mode names a block mode
        (SCALING_MXFP8_1X32, SCALING_BLOCK_1X128, SCALING_BLOCK_128X128) or
        an axiswise one (SCALING_PER_ROW, SCALING_PER_COLUMN)."""
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

    def wrap(self, obj, dtype=None):
        """A tensor over the memory of `obj`, without copying
        (octet_tensor_wrap): on a host-memory backend a NumPy array (or any
        object with __array_interface__), on a device backend an object with
        __cuda_array_interface__ (a PyTorch or CuPy CUDA tensor). Writes
        through Octet are seen in `obj` and the other way round; the tensor
        keeps `obj` alive. Rules: C-contiguous, writable, 1 to 8 dimensions,
        data aligned to its element size and to the backend's
        ctx.info()["caller_alignment"] (1 on the host backends Octet ships).
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
            raise ValueError(f"dtype must be FP32, FP16, BF16, E4M3, E5M2, E4M3FNUZ or E5M2FNUZ; got {dtype}")
        if typed is not None and typed != dtype:
            raise TypeError(f"obj is {obj.dtype.name} ({_lib_dtype_name(typed)}) but dtype= asks for "
                            f"{_lib_dtype_name(dtype)}: leave dtype out")
        if item.itemsize != _np.dtype(_NUMPY[dtype]).itemsize or (item.kind not in "fiu" and typed is None):
            raise TypeError(f"{item} memory cannot hold {_lib_dtype_name(dtype)} elements "
                            f"({_np.dtype(_NUMPY[dtype]).itemsize} bytes each)")
        alignment = max(int(self.info()["caller_alignment"]), item.itemsize, 1)
        if pointer % alignment != 0:
            raise ValueError(f"the memory at {pointer:#x} is not aligned to {alignment} bytes, as this backend needs "
                             f"of memory it did not allocate (octet_tensor_wrap's rule): allocate it aligned "
                             f"(octet.aligned_empty), or use ctx.tensor()")
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
        return Tensor._borrowed(self, _dlpack.import_handle(self, obj), None)

    def from_codes(self, codes, dtype=None, *, scaling_mode=None, scale_inv=None, columnwise_codes=None,
                   columnwise_scale_inv=None, tensor_scale=None, amax=None, usages=None, scale=None):
        """A tensor from stored codes and their scales (a copy; docs/python.md,
        "Codes and scales in and out"). Dequantized = codes * scale_inv.

        codes: one code per element, as uint8 (an integer array) or an
        ml_dtypes float8_e4m3fn / float8_e5m2 / float8_e4m3fnuz /
        float8_e5m2fnuz / float4_e2m1fn array (which gives dtype); E2M1
        codes 0..15, one per uint8. dtype: octet.E4M3, E5M2, E4M3FNUZ,
        E5M2FNUZ or E2M1.

        Without scale_inv and scaling_mode: a plain tensor (FP8 codes as
        ctx.tensor takes them; E2M1 codes as an MXFP4 tensor whose block
        scales are all 1, so dequantize and convert decode them exactly).

        scaling_mode (default octet.SCALING_PER_TENSOR when scale_inv is
        given; needed for grids) and scale_inv, for codes of shape [..., C]
        seen as [R, C]: PER_TENSOR one number; PER_ROW [R, 1] (or [R]);
        PER_COLUMN [1, C] (or [C]); BLOCK_1X128 [R, ceil(C/128)];
        BLOCK_128X128 [ceil(R/128), ceil(C/128)]: FP32 values, each finite
        and > 0 (float64 rounded to float32). MXFP8_1X32 and MXFP4_1X32
        [R, ceil(C/32)], NVFP4_1X16 [R, ceil(C/16)], NVFP4_16X16
        [ceil(R/16), ceil(C/16)]: E8M0 (MX) or E4M3 (NVFP4) codes (uint8 or
        the ml_dtypes type, every code as written, the NaN-block codes
        included), or float values the code type holds exactly (> 0).
        tensor_scale: NVFP4's FP32 g (one number, or rowwise and columnwise).

        usages: None (octet.BOTH when columnwise_codes is given, else
        octet.ROWWISE), ROWWISE or BOTH. The columnwise copy of
        PER_TENSOR, PER_COLUMN, BLOCK_128X128 and NVFP4_16X16 is the codes
        transposed with the same scales, derived when not given (and checked
        when given); the other modes need columnwise_codes [C, R] and
        columnwise_scale_inv (the grid over the [C, R] copy). amax: recorded
        as AMAX; default that of the dequantized values. scale (per-tensor
        only): the SCALE a quantizer used, written as such with SCALE_INV =
        1.0f / scale (the pair a quantize writes; scale_inv, if given too,
        must equal it), so that a quantized tensor's parts() rebuild both
        halves bit for bit; with scale_inv alone SCALE = 1.0f / scale_inv."""
        return _codes.from_codes(self, codes, dtype, scaling_mode=scaling_mode, scale_inv=scale_inv,
                                 columnwise_codes=columnwise_codes, columnwise_scale_inv=columnwise_scale_inv,
                                 tensor_scale=tensor_scale, amax=amax, usages=usages, scale=scale)

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
        scales them, octet.fp8_encode encodes them unscaled). E2M1 (dtype=
        or a float4_e2m1fn array): codes 0..15, one per uint8, as
        ctx.from_codes(array, octet.E2M1) makes them."""
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
            if dtype not in _NUMPY and dtype != E2M1:
                raise ValueError(f"dtype must be one of octet.FP32, FP16, BF16, E4M3, E5M2, E8M0, E4M3FNUZ, E5M2FNUZ, "
                                 f"E2M1; got {dtype}")
        typed = _FROM_ML.get(array.dtype)
        if E2M1 in (dtype, typed):  # E2M1 codes (uint8 0..15, or float4_e2m1fn): from_codes without scales
            if dtype is not None and typed is not None and dtype != typed:
                raise ValueError(f"{what} is {array.dtype.name} ({_lib_dtype_name(typed)}) but dtype= asks for "
                                 f"{_lib_dtype_name(dtype)}: leave dtype out, or .astype() the array first")
            if typed is None and array.dtype.kind == "f":
                raise TypeError(f"a {array.dtype} {what} holds values, and dtype=e2m1 takes raw codes 0..15: "
                                "octet.fp8_encode(x, octet.E2M1) encodes values")
            return self.from_codes(array, E2M1)
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

    def dequantize(self, q, dtype=FP32):
        if not isinstance(q, Tensor):
            raise TypeError(f"dequantize takes a quantized octet Tensor (ctx.quantize gives one); "
                            f"got {type(q).__name__}")
        out = self.empty(q.shape, dtype)
        _check(_libc.octet_dequantize(self.handle, q.handle, out.handle))
        return out

    def convert(self, x, dtype, saturate=True):
        x = self._as_tensor(x)
        if x.dtype == E2M1:  # FP4 codes are read by dequantize (octet_convert does not take E2M1)
            x = self.dequantize(x, FP32)
            if _dtype_code(dtype) == FP32:
                return x
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

    def grouped_gemm(self, a, b, splits, split="m", trans_a=False, trans_b=False, alpha=1.0, beta=0.0, bias=None,
                     out=None, out_dtype=FP32, fast_accumulation=False):
        """G GEMMs in one call (octet_grouped_gemm; docs/grouped_gemm.md).

        split="m" (forward, dgrad): `a` is stacked along the product's rows,
        sum(splits) of them; `b` is a list of G tensors or one 3-D tensor
        [G, rows, cols]; the result is one stacked [sum(splits), N] tensor.
        split="k" (wgrad): `a` and `b` are stacked along K; the result is a
        3-D [G, M, N] tensor (or `out`: one 3-D tensor or a list of G).
        `a` may also be a list of G tensors, one per group. `bias`: None or
        a list of G vectors (None entries allowed). Returns `out`."""
        modes = {"m": _lib.GROUP_SPLIT_M, "k": _lib.GROUP_SPLIT_K}
        if split not in modes:
            raise ValueError(f"split must be 'm' or 'k'; got {split!r}")
        splits = [int(s) for s in splits]
        groups = len(splits)
        if groups == 0:
            raise ValueError("splits is empty: a grouped GEMM has at least one group")

        def operand(x, name):
            if isinstance(x, (list, tuple)):
                if len(x) != groups:
                    raise ValueError(f"{name} is a list of {len(x)} tensors for {groups} groups")
                return [self._as_tensor(t) for t in x]
            return [self._as_tensor(x)]

        ta, tb = operand(a, "a"), operand(b, "b")
        if out is None:
            first_b = tb[0]
            n = (first_b.shape[-1] if trans_b else first_b.shape[-2 if len(first_b.shape) > 1 else 0])
            if split == "m":
                out = self.empty((sum(splits), n), out_dtype)
            else:
                first_a = ta[0]
                m = first_a.shape[-1] if trans_a else first_a.shape[0]
                out = self.empty((groups, m, n), out_dtype)
        td = operand(out, "out")
        options = _lib.GroupedGemmOptions()
        _check(_libc.octet_grouped_gemm_options_init_sized(_c.byref(options), _c.sizeof(options)))
        options.trans_a, options.trans_b = int(trans_a), int(trans_b)
        options.alpha, options.beta = alpha, beta
        options.split = modes[split]
        options.fast_accumulation = int(bool(fast_accumulation))
        biases = None
        if bias is not None:
            if len(bias) != groups:
                raise ValueError(f"bias is a list of {len(bias)} vectors for {groups} groups")
            held = [self._as_tensor(v) if v is not None else None for v in bias]
            biases = (_c.c_void_p * groups)(*[v.handle if v is not None else None for v in held])
            options.bias = _c.cast(biases, _c.POINTER(_c.c_void_p))

        def handles(tensors):
            return (_c.c_void_p * len(tensors))(*[t.handle for t in tensors])

        c_splits = (_c.c_int64 * groups)(*splits)
        _check(_libc.octet_grouped_gemm(self.handle, groups, c_splits, handles(ta), len(ta), handles(tb), len(tb),
                                        handles(td), len(td), _c.byref(options)))
        return out if not isinstance(out, (list, tuple)) else list(td)


