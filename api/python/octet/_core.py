"""Core of the package: octet.Context, and the names the package's modules
and octet/__init__.py take from it.

The modules, each importing only those listed before it (no import
circles; tests/python/test_import_graph.py checks it):
  _abi, _lib      the C declarations, the loaded library
  _errors         OctetError and the status check of every call
  _dtypes         dtypes, components, usages, scaling modes; FP8 codecs
  _handle         the base of every object holding a C handle
  _backends       versions and backends
  _dlpack         DLPack capsules (export and import)
  _tensor         Tensor, aligned_empty
  _context        ContextBase: a context and its tensor operations
  recipes         scaling recipes
  autocast        autocast scopes and the communicator
  quantizers      Quantizer
  _core           Context: ContextBase with quantize (a recipe's scale) and
                  autocast; octet.from_dlpack
  layers          Linear, LayerNormLinear, LayerNormMLP
Re-exported by octet/__init__.py; see there for an overview.
"""

import ctypes as _c
import math as _math
import threading as _threading
import warnings as _warnings

import numpy as _np

from . import _dlpack, _lib
from . import autocast as _autocast
from ._backends import _info_dict, _text, abi_version, backend_failures, backends, library_version  # noqa: F401
from ._context import ContextBase, _stream_handle  # noqa: F401
# _dtypes._ML is not re-exported: tensors read it there, so a test that
# replaces it (as if ml_dtypes were absent) must replace it there.
from ._dtypes import (AMAX, BF16, BOTH, COLUMNWISE, COLUMNWISE_DATA, COLUMNWISE_SCALE_INV, DATA, E4M3,  # noqa: F401
                      E5M2, E8M0, E2M1, E4M3FNUZ, E5M2FNUZ, FP16, FP32, ROWWISE, ROWWISE_SCALE_INV, SCALE, SCALE_INV, SCALING_BLOCK_1X128,
                      SCALING_BLOCK_128X128, SCALING_MXFP4_1X32, SCALING_MXFP8_1X32, SCALING_NVFP4_16X16,
                      SCALING_NVFP4_1X16, SCALING_PER_COLUMN, SCALING_PER_ROW,
                      SCALING_PER_TENSOR, _FP8_MAX, _FROM_ML, _ML_NAMES,
                      _NUMPY, _OVERFLOWS, _dims, _dtype_code, _lib_dtype_name, _raw_codes, fp8_decode, fp8_encode)
from ._errors import _CALLBACK_FAILURE_STATUS, OctetError, _callback_errors, _callback_failed, _check  # noqa: F401
from ._handle import _Handle  # noqa: F401
from ._lib import lib as _libc
from ._tensor import Tensor, aligned_empty  # noqa: F401
from .quantizers import Quantizer
from .recipes import CurrentScaling

_FEATURE_QUANTIZE_STATISTICS = 1 << 8


class SaturationWarning(RuntimeWarning):
    """ctx.quantize saturated values: |x * scale| rounded beyond the FP8
    format's largest value (448 for E4M3, 57344 for E5M2) and was clamped
    to it (or became NaN/inf with saturate=False)."""


class Context(ContextBase):
    """A context on one backend ("auto", "reference", "cpu", ...).

    stream: the backend stream to run on (octet_context_options.stream),
    e.g. torch.cuda.current_stream() for the cuda backend, so Octet's work
    is ordered with the framework's; None: the backend's own. Host backends
    run on the calling thread and ignore it."""

    def autocast(self, recipe):
        """`with ctx.autocast(recipe): ...` opens an autocast scope (see
        octet.autocast)."""
        return _autocast.Autocast(self, recipe)

    def autocast_state(self):
        """(depth, recipe in effect or None) of the context's scopes."""
        return _autocast.autocast_state(self)

    def set_communicator(self, allreduce_max):
        """Sets the cross-process reduction: allreduce_max(values) replaces
        the float32 array `values` in place by the element-wise max over all
        processes; None removes it (see octet.autocast.set_communicator)."""
        _autocast.set_communicator(self, allreduce_max)

    def quantize(self, x, dtype=E4M3, scale=None, usages=BOTH, saturate=True, stats=False):
        """q = fp8(x * scale), per-tensor scaled, for the usages asked.

        x: a Tensor or anything ctx.tensor takes (float64 and lists are
        rounded to float32 first). scale=None (the default) is current
        scaling, octet.CurrentScaling's rule (numerics.md section 14.1):
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
            raise ValueError(f"dtype must be octet.E4M3, E5M2, E4M3FNUZ or E5M2FNUZ (quantize makes FP8); got "
                             f"{_lib_dtype_name(dtype)}")
        x = self._as_tensor(x)
        if scale is None:
            quantizer = Quantizer(CurrentScaling(format=_lib_dtype_name(dtype)), "input")
            q, counts = quantizer.quantize(self, x, usages=usages, saturate=saturate, stats=True)
        else:
            q = self.empty(x.shape, dtype, usages)
            q.set_scale(scale)
            options = _lib.QuantizeOptions()
            _check(_libc.octet_quantize_options_init_sized(_c.byref(options), _c.sizeof(options)))
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


_defaults = _threading.local()


def _default_context(device_type):
    """The context octet.from_dlpack uses for data on `device_type` when none
    is given: one per thread (contexts are used by one thread at a time)
    and device type. Host memory: the first available host plugin (as
    "auto" orders them), else the reference; CUDA memory: "cuda"."""
    contexts = getattr(_defaults, "contexts", None)
    if contexts is None:
        contexts = _defaults.contexts = {}
    host = device_type in _dlpack.HOST_DEVICES
    if host not in contexts:
        if host:
            names = [b["name"] for b in backends() if b["available"] and b["memory"] == "host"]
            plugins = [n for n in names if n != "reference"]
            contexts[host] = Context(plugins[0] if plugins else "reference")
        elif device_type in _dlpack.CUDA_DEVICES:
            contexts[host] = Context("cuda")
        else:
            raise BufferError(f"DLPack device type {device_type} is neither host memory nor CUDA memory: octet "
                              "cannot address it")
    return contexts[host]


def from_dlpack(obj, context=None):
    """octet's from_dlpack: a Tensor over the memory of `obj` without copying
    (Context.from_dlpack). context=None: a context of this thread for the
    memory's device (host data: the first available host plugin, else the
    reference; CUDA data: the cuda backend), created on first use."""
    if context is None:
        device = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (1, 0)
        context = _default_context(int(device[0]))
    elif not isinstance(context, Context):
        raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
    return context.from_dlpack(obj)


def from_codes(codes, dtype=None, *, context=None, **scales):
    """octet.from_codes: Context.from_codes on `context`, or with
    context=None on this thread's host context (the one octet.from_dlpack
    uses for host data). Keywords: scaling_mode, scale_inv,
    columnwise_codes, columnwise_scale_inv, tensor_scale, amax, usages."""
    if context is None:
        context = _default_context(1)  # kDLCPU: the codes are host arrays
    elif not isinstance(context, Context):
        raise TypeError(f"context must be an octet.Context or None; got {type(context).__name__}")
    return context.from_codes(codes, dtype, **scales)
