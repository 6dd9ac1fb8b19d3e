"""The library's versions and its backends (registered, and plugins that
failed to load)."""

import ctypes as _c

from . import _lib
from ._errors import _check
from ._lib import lib as _libc


def _text(b):
    return b.decode() if b is not None else ""


def library_version():
    v = _libc.octet_library_version()
    return (v.major, v.minor, v.patch)


def abi_version():
    v = _libc.octet_abi_version()
    return (v.major, v.minor)


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
        "dtypes": info.dtypes,  # OCTET_DTYPE_BIT flags: 1 << octet.E4M3FNUZ, ...
        "fp8_gemm_layouts": info.fp8_gemm_layouts,
        "features": info.features,
        "alignment": info.alignment,
        "caller_alignment": info.caller_alignment,
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

