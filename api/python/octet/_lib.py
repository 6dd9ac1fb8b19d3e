"""Loads liboctet and declares the C signatures this package uses.

The library is found, in order, through the OCTET_LIBRARY environment
variable (a file path), beside an installed package (<prefix>/lib), or by the
system's usual search (ctypes.util.find_library)."""

import ctypes
import ctypes.util
import os
import pathlib

_c = ctypes


class Version(_c.Structure):
    _fields_ = [("major", _c.c_uint32), ("minor", _c.c_uint32), ("patch", _c.c_uint32)]


class BackendInfo(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("name", _c.c_char_p),
        ("version", _c.c_char_p),
        ("device", _c.c_char_p),
        ("path", _c.c_char_p),
        ("memory_kind", _c.c_int32),
        ("available", _c.c_int32),
        ("unavailable_reason", _c.c_char_p),
        ("abi_major", _c.c_uint32),
        ("abi_minor", _c.c_uint32),
        ("dtypes", _c.c_uint32),
        ("scaling_modes", _c.c_uint32),
        ("native_columnwise", _c.c_int32),
        ("fp8_gemm_layouts", _c.c_uint32),
        ("features", _c.c_uint32),
        ("alignment", _c.c_uint64),
    ]


class BackendFailure(_c.Structure):
    _fields_ = [("struct_size", _c.c_size_t), ("path", _c.c_char_p), ("reason", _c.c_char_p)]


class ContextOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("backend", _c.c_char_p),
        ("capability_profile", _c.c_int32),
        ("stream", _c.c_void_p),
    ]


MAX_DIMS = 8


class TensorDesc(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("dtype", _c.c_int32),
        ("ndim", _c.c_int32),
        ("shape", _c.c_int64 * MAX_DIMS),
        ("usages", _c.c_uint32),
    ]


class QuantizeOptions(_c.Structure):
    _fields_ = [("struct_size", _c.c_size_t), ("usages", _c.c_uint32), ("saturate", _c.c_int32)]


class GemmOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("trans_a", _c.c_int32),
        ("trans_b", _c.c_int32),
        ("alpha", _c.c_float),
        ("beta", _c.c_float),
        ("bias", _c.c_void_p),
        ("epilogue", _c.c_int32),
        # ABI 1.4 (after the 1.3 struct's tail padding)
        ("reserved_padding", _c.c_int32),
        ("fast_accumulation", _c.c_int32),
        ("saturate_output", _c.c_int32),
    ]


def _candidates():
    explicit = os.environ.get("OCTET_LIBRARY")
    if explicit:
        yield explicit
        return
    here = pathlib.Path(__file__).resolve()
    for up in here.parents:
        for name in ("liboctet.so.1", "liboctet.so"):
            for sub in ("lib", "lib64"):
                candidate = up / sub / name
                if candidate.exists():
                    yield str(candidate)
    found = ctypes.util.find_library("octet")
    if found:
        yield found


def _load():
    errors = []
    for path in _candidates():
        try:
            return _c.CDLL(path)
        except OSError as e:  # keep looking, report everything if none loads
            errors.append(f"{path}: {e}")
    raise ImportError(
        "cannot find liboctet: set OCTET_LIBRARY to its path"
        + (" (tried: " + "; ".join(errors) + ")" if errors else "")
    )


lib = _load()


def _declare(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)


_i32, _u8, _u16, _f32, _sz = _c.c_int32, _c.c_uint8, _c.c_uint16, _c.c_float, _c.c_size_t
_p = _c.c_void_p

_declare("octet_library_version", Version)
_declare("octet_abi_version", Version)
_declare("octet_status_name", _c.c_char_p, _i32)
_declare("octet_last_error_message", _c.c_char_p)
_declare("octet_fp8_encode", _u8, _f32, _i32, _i32)
_declare("octet_fp8_decode", _f32, _u8, _i32)
_declare("octet_bf16_encode", _u16, _f32)
_declare("octet_bf16_decode", _f32, _u16)
_declare("octet_fp16_encode", _u16, _f32)
_declare("octet_fp16_decode", _f32, _u16)
_declare("octet_fp8_encode_array", _i32, _p, _p, _sz, _i32, _i32)
_declare("octet_fp8_decode_array", _i32, _p, _p, _sz, _i32)
_declare("octet_backend_count", _i32, _c.POINTER(_sz))
_declare("octet_backend_get_info", _i32, _sz, _c.POINTER(BackendInfo))
_declare("octet_backend_failure_count", _i32, _c.POINTER(_sz))
_declare("octet_backend_get_failure", _i32, _sz, _c.POINTER(BackendFailure))
_declare("octet_context_options_init", _i32, _c.POINTER(ContextOptions))
_declare("octet_context_create", _i32, _c.POINTER(ContextOptions), _c.POINTER(_p))
_declare("octet_context_destroy", None, _p)
_declare("octet_context_get_info", _i32, _p, _c.POINTER(BackendInfo))
_declare("octet_tensor_create", _i32, _p, _c.POINTER(TensorDesc), _c.POINTER(_p))
_declare("octet_tensor_destroy", None, _p)
_declare("octet_tensor_copy_from_host", _i32, _p, _i32, _p, _sz)
_declare("octet_tensor_copy_to_host", _i32, _p, _i32, _p, _sz)
_declare("octet_amax", _i32, _p, _p, _c.POINTER(_f32))
_declare("octet_quantize_options_init", _i32, _c.POINTER(QuantizeOptions))
_declare("octet_quantize", _i32, _p, _p, _p, _c.POINTER(QuantizeOptions))
_declare("octet_dequantize", _i32, _p, _p, _p)
_declare("octet_convert", _i32, _p, _p, _p, _i32)
_declare("octet_gemm_options_init_sized", _i32, _c.POINTER(GemmOptions), _c.c_size_t)
_declare("octet_gemm", _i32, _p, _p, _p, _p, _c.POINTER(GemmOptions))
