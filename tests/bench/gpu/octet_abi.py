"""ctypes declarations of the parts of octet.h that bench_cuda.py uses.

No torch, no numpy, no GPU needed: test_bench_report.py loads liboctet with
these declarations on any machine and checks every symbol, struct layout
(against a C compile of octet.h where a compiler is present) and the
struct_size each `_init` function writes.

Every Structure below spells its fields exactly as octet.h does (the
layout test relies on that). Function-pointer fields are declared c_void_p
(same size and alignment); the benchmark never sets them."""

import ctypes
import os
import pathlib

_c = ctypes
_i32, _u32, _i64, _u64 = _c.c_int32, _c.c_uint32, _c.c_int64, _c.c_uint64
_f32, _f64, _sz, _p = _c.c_float, _c.c_double, _c.c_size_t, _c.c_void_p
_u8 = _c.c_uint8

MAX_DIMS = 8
MEMORY_MAX_CATEGORIES = 8

# enums (octet.h)
STATUS_SUCCESS = 0
STATUS_UNSUPPORTED = 2
STATUS_UNAVAILABLE = 7

DTYPE_FP32, DTYPE_BF16, DTYPE_FP16 = 1, 2, 3
DTYPE_E4M3, DTYPE_E5M2, DTYPE_E8M0 = 10, 12, 14

MEMORY_HOST, MEMORY_DEVICE = 0, 1

PROFILE_NATIVE, PROFILE_HOPPER_LIKE, PROFILE_BLACKWELL_LIKE = 0, 1, 2

USAGE_ROWWISE, USAGE_COLUMNWISE, USAGE_BOTH = 1, 2, 3

COMPONENT_DATA = 0
COMPONENT_COLUMNWISE_DATA = 1
COMPONENT_SCALE = 2
COMPONENT_SCALE_INV = 3
COMPONENT_AMAX = 4

SCALING_PER_TENSOR = 1

RECIPE_DELAYED, RECIPE_CURRENT = 0, 1
FORMAT_E4M3, FORMAT_E5M2, FORMAT_HYBRID = 0, 1, 2
ROLE_INPUT, ROLE_WEIGHT, ROLE_GRADIENT = 0, 1, 2

WEIGHTS_HIGH_PRECISION = 0

FEATURE_FUSED_CAST_TRANSPOSE = 1 << 3
FEATURE_GEMM_FP8 = 1 << 6


class Version(_c.Structure):
    _fields_ = [("major", _u32), ("minor", _u32), ("patch", _u32)]


class BackendInfo(_c.Structure):
    _c_name = "octet_backend_info"
    _fields_ = [
        ("struct_size", _sz),
        ("name", _c.c_char_p),
        ("version", _c.c_char_p),
        ("device", _c.c_char_p),
        ("path", _c.c_char_p),
        ("memory_kind", _i32),
        ("available", _i32),
        ("unavailable_reason", _c.c_char_p),
        ("abi_major", _u32),
        ("abi_minor", _u32),
        ("dtypes", _u32),
        ("scaling_modes", _u32),
        ("native_columnwise", _i32),
        ("fp8_gemm_layouts", _u32),
        ("features", _u32),
        ("alignment", _u64),
    ]


class BackendFailure(_c.Structure):
    _c_name = "octet_backend_failure"
    _fields_ = [("struct_size", _sz), ("path", _c.c_char_p), ("reason", _c.c_char_p)]


class ContextOptions(_c.Structure):
    _c_name = "octet_context_options"
    _fields_ = [
        ("struct_size", _sz),
        ("backend", _c.c_char_p),
        ("capability_profile", _i32),
        ("stream", _p),  # cudaStream_t; NULL = the backend's own stream
    ]


class TensorDesc(_c.Structure):
    _c_name = "octet_tensor_desc"
    _fields_ = [
        ("struct_size", _sz),
        ("dtype", _i32),
        ("ndim", _i32),
        ("shape", _i64 * MAX_DIMS),
        ("usages", _u32),
        ("scaling_mode", _i32),
    ]


class TensorInfo(_c.Structure):
    _c_name = "octet_tensor_info"
    _fields_ = [
        ("struct_size", _sz),
        ("dtype", _i32),
        ("ndim", _i32),
        ("shape", _i64 * MAX_DIMS),
        ("usages", _u32),
        ("owns_memory", _i32),
        ("has_rowwise_data", _i32),
        ("has_columnwise_data", _i32),
        ("rowwise_bytes", _u64),
        ("columnwise_bytes", _u64),
        ("total_bytes", _u64),
        ("scaling_mode", _i32),
        ("block_rows", _i32),
        ("block_cols", _i32),
        ("scale_inv_dtype", _i32),
        ("rowwise_scale_inv_bytes", _u64),
        ("columnwise_scale_inv_bytes", _u64),
    ]


class QuantizeOptions(_c.Structure):
    _c_name = "octet_quantize_options"
    _fields_ = [("struct_size", _sz), ("usages", _u32), ("saturate", _i32)]


class GemmOptions(_c.Structure):
    _c_name = "octet_gemm_options"
    _fields_ = [
        ("struct_size", _sz),
        ("trans_a", _i32),
        ("trans_b", _i32),
        ("alpha", _f32),
        ("beta", _f32),
        ("bias", _p),
        ("epilogue", _i32),
        # ABI 1.4 (after the 1.3 struct's tail padding)
        ("reserved_padding", _i32),
        ("fast_accumulation", _i32),
        ("saturate_output", _i32),
    ]


class QuantizeStats(_c.Structure):
    _c_name = "octet_quantize_stats"
    _fields_ = [
        ("struct_size", _sz),
        ("nan_count", _u64),
        ("saturated_count", _u64),
        ("flushed_count", _u64),
        ("total_count", _u64),
        ("amax", _f32),
    ]


class DelayedScalingOptions(_c.Structure):
    _c_name = "octet_delayed_scaling_options"
    _fields_ = [
        ("struct_size", _sz),
        ("margin", _i32),
        ("interval", _i32),
        ("format", _i32),
        ("amax_history_len", _i32),
        ("amax_compute_algo", _i32),
        ("amax_compute_callback", _p),
        ("amax_compute_user_data", _p),
        ("scale_compute_callback", _p),
        ("scale_compute_user_data", _p),
        ("power_of_two_scales", _i32),
        ("override_fprop", _i32),
        ("override_dgrad", _i32),
        ("override_wgrad", _i32),
        ("reduce_amax", _i32),
    ]


class CurrentScalingOptions(_c.Structure):
    _c_name = "octet_current_scaling_options"
    _fields_ = [
        ("struct_size", _sz),
        ("format", _i32),
        ("amax_epsilon", _f32),
        ("power_of_two_scales", _i32),
        ("reserved_padding", _i32),  # ABI 1.5
        ("reduce_amax", _i32),
    ]


class QuantizerInfo(_c.Structure):
    _c_name = "octet_quantizer_info"
    _fields_ = [
        ("struct_size", _sz),
        ("role", _i32),
        ("recipe_kind", _i32),
        ("scale", _f32),
        ("scale_inv", _f32),
        ("amax", _f32),
        ("amax_history_len", _u32),
        ("update_count", _u64),
        ("observed_amax", _f32),
        ("observed_saturated", _u64),
        ("observed_total", _u64),
        ("saturated_fraction", _f64),
    ]


class LinearOptions(_c.Structure):
    _c_name = "octet_linear_options"
    _fields_ = [
        ("struct_size", _sz),
        ("in_features", _i64),
        ("out_features", _i64),
        ("bias", _i32),
        ("params_dtype", _i32),
        ("weight_storage", _i32),
        ("recipe", _p),
        ("save_original_input", _i32),
        ("minimize_memory", _i32),
        ("weight_cache", _i32),
        ("skip_weight_allocation", _i32),
    ]


# Every Structure with an octet.h counterpart (Version is returned by value
# and has no struct_size).
STRUCTS = [BackendInfo, BackendFailure, ContextOptions, TensorDesc, TensorInfo, QuantizeOptions,
           GemmOptions, QuantizeStats, DelayedScalingOptions, CurrentScalingOptions, QuantizerInfo,
           LinearOptions]

# Option structs with an `_init` function: (Structure, init function name).
INIT_FUNCTIONS = [
    (ContextOptions, "octet_context_options_init"),
    (QuantizeOptions, "octet_quantize_options_init"),
    (GemmOptions, "octet_gemm_options_init_sized"),
    (DelayedScalingOptions, "octet_delayed_scaling_options_init"),
    (CurrentScalingOptions, "octet_current_scaling_options_init_sized"),
    (LinearOptions, "octet_linear_options_init"),
]

_P = _c.POINTER
# name -> (restype, argtypes), in octet.h's argument order.
SIGNATURES = {
    "octet_library_version": (Version, []),
    "octet_abi_version": (Version, []),
    "octet_status_name": (_c.c_char_p, [_i32]),
    "octet_last_error_message": (_c.c_char_p, []),
    "octet_fp8_encode_array": (_i32, [_p, _p, _sz, _i32, _i32]),
    # host codecs (used by the tests of these declarations)
    "octet_fp8_decode": (_f32, [_u8, _i32]),
    "octet_bf16_encode": (_c.c_uint16, [_f32]),
    "octet_bf16_decode": (_f32, [_c.c_uint16]),
    "octet_backend_count": (_i32, [_P(_sz)]),
    "octet_backend_get_info": (_i32, [_sz, _P(BackendInfo)]),
    "octet_backend_failure_count": (_i32, [_P(_sz)]),
    "octet_backend_get_failure": (_i32, [_sz, _P(BackendFailure)]),
    "octet_context_options_init": (_i32, [_P(ContextOptions)]),
    "octet_context_create": (_i32, [_P(ContextOptions), _P(_p)]),
    "octet_context_destroy": (None, [_p]),
    "octet_context_get_info": (_i32, [_p, _P(BackendInfo)]),
    "octet_context_synchronize": (_i32, [_p]),
    "octet_tensor_create": (_i32, [_p, _P(TensorDesc), _P(_p)]),
    "octet_tensor_wrap": (_i32, [_p, _P(TensorDesc), _p, _P(_p)]),
    "octet_tensor_destroy": (None, [_p]),
    "octet_tensor_get_info": (_i32, [_p, _P(TensorInfo)]),
    "octet_tensor_copy_from_host": (_i32, [_p, _i32, _p, _sz]),
    "octet_tensor_copy_to_host": (_i32, [_p, _i32, _p, _sz]),
    "octet_amax": (_i32, [_p, _p, _P(_f32)]),
    "octet_quantize_options_init": (_i32, [_P(QuantizeOptions)]),
    "octet_quantize": (_i32, [_p, _p, _p, _P(QuantizeOptions)]),
    "octet_gemm_options_init": (_i32, [_P(GemmOptions)]),
    "octet_gemm_options_init_sized": (_i32, [_P(GemmOptions), _sz]),
    "octet_gemm": (_i32, [_p, _p, _p, _p, _P(GemmOptions)]),
    "octet_delayed_scaling_options_init": (_i32, [_P(DelayedScalingOptions)]),
    "octet_current_scaling_options_init": (_i32, [_P(CurrentScalingOptions)]),
    "octet_current_scaling_options_init_sized": (_i32, [_P(CurrentScalingOptions), _sz]),
    "octet_recipe_create_delayed": (_i32, [_P(DelayedScalingOptions), _P(_p)]),
    "octet_recipe_create_current": (_i32, [_P(CurrentScalingOptions), _P(_p)]),
    "octet_recipe_destroy": (None, [_p]),
    "octet_recipe_tensor_format": (_i32, [_p, _i32, _P(_i32), _P(_i32)]),
    "octet_quantizer_create": (_i32, [_p, _i32, _P(_p)]),
    "octet_quantizer_destroy": (None, [_p]),
    "octet_quantizer_quantize": (_i32, [_p, _p, _p, _p, _P(QuantizeOptions), _P(QuantizeStats)]),
    "octet_quantizer_get_info": (_i32, [_p, _P(QuantizerInfo)]),
    "octet_autocast_begin": (_i32, [_p, _p]),
    "octet_autocast_end": (_i32, [_p]),
    "octet_linear_options_init": (_i32, [_P(LinearOptions)]),
    "octet_layer_create_linear": (_i32, [_p, _P(LinearOptions), _P(_p)]),
    "octet_layer_destroy": (None, [_p]),
    "octet_layer_find_parameter": (_i32, [_p, _c.c_char_p, _P(_sz)]),
    "octet_layer_set_weight": (_i32, [_p, _sz, _p]),
    "octet_layer_get_gradient": (_i32, [_p, _sz, _P(_p)]),
    "octet_layer_get_quantizer": (_i32, [_p, _sz, _i32, _P(_p)]),
    "octet_layer_forward": (_i32, [_p, _p, _p, _i32, _P(_p)]),
    "octet_layer_backward": (_i32, [_p, _P(_p), _p, _p, _i32]),
    "octet_saved_destroy": (None, [_p]),
}


class OctetError(RuntimeError):
    """An Octet call returned a status other than SUCCESS."""

    def __init__(self, call, status, name, message):
        super().__init__(f"{call} failed: {name} ({status}): {message}")
        self.call, self.status, self.status_name, self.message = call, status, name, message


def default_library_candidates(repo_root):
    """Where liboctet is looked for when no path is given: OCTET_LIBRARY,
    then the build folders .ci/gpu and CI use."""
    out = []
    if os.environ.get("OCTET_LIBRARY"):
        out.append(os.environ["OCTET_LIBRARY"])
    root = pathlib.Path(repo_root)
    for build in (os.environ.get("OCTET_GPU_BUILD_DIR", "build-gpu"), "build", "build-gpub"):
        out.append(str(root / build / "lib" / "liboctet.so"))
    return out


class Library:
    """liboctet loaded with the declarations above; `call` raises OctetError
    with octet_last_error_message() on failure."""

    def __init__(self, path):
        self.path = str(path)
        self.lib = _c.CDLL(self.path)
        missing = []
        for name, (restype, argtypes) in SIGNATURES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                missing.append(name)
                continue
            fn.restype = restype
            fn.argtypes = list(argtypes)
        if missing:
            raise OctetError("dlsym", -1, "MISSING_SYMBOL",
                             f"{self.path} lacks: {', '.join(missing)}")

    def fn(self, name):
        return getattr(self.lib, name)

    def last_error(self):
        msg = self.lib.octet_last_error_message()
        return msg.decode(errors="replace") if msg else ""

    def call(self, name, *args):
        status = getattr(self.lib, name)(*args)
        if status != STATUS_SUCCESS:
            message = self.last_error()
            sname = self.lib.octet_status_name(status)
            raise OctetError(name, status, sname.decode() if sname else "?", message)
        return status

    def init_struct(self, cls, init_name):
        """An option struct filled by its `_init` function. The struct lives
        in a buffer with room to spare: a newer liboctet whose struct has
        more (appended, ABI minor) fields writes them there, sets
        struct_size to its own size, and so reads its own defaults for the
        fields these declarations do not know."""
        room = max(_c.sizeof(cls), 1024)
        buf = (_c.c_ubyte * room)()
        s = cls.from_buffer(buf)  # keeps buf alive
        if init_name.endswith("_sized"):  # ABI 1.4+: told the room it may fill
            self.call(init_name, _c.byref(s), room)
        else:
            self.call(init_name, _c.byref(s))
        if s.struct_size < _c.sizeof(cls) or s.struct_size > room:
            raise OctetError(init_name, -1, "LAYOUT_MISMATCH",
                             f"wrote struct_size {s.struct_size}; {cls.__name__} here has "
                             f"{_c.sizeof(cls)} bytes: update tests/bench/gpu/octet_abi.py")
        return s

    def backends(self):
        count = _sz(0)
        self.call("octet_backend_count", _c.byref(count))
        out = []
        for i in range(count.value):
            info = BackendInfo()
            info.struct_size = _c.sizeof(info)
            self.call("octet_backend_get_info", i, _c.byref(info))
            out.append(info)
        return out

    def failures(self):
        count = _sz(0)
        self.call("octet_backend_failure_count", _c.byref(count))
        out = []
        for i in range(count.value):
            f = BackendFailure()
            f.struct_size = _c.sizeof(f)
            self.call("octet_backend_get_failure", i, _c.byref(f))
            out.append((f.path.decode(errors="replace") if f.path else "",
                        f.reason.decode(errors="replace") if f.reason else ""))
        return out

    def version_string(self):
        v = self.lib.octet_library_version()
        a = self.lib.octet_abi_version()
        return f"{v.major}.{v.minor}.{v.patch} (ABI {a.major}.{a.minor})"


def make_desc(dtype, shape, usages=0, scaling_mode=0):
    d = TensorDesc()
    d.struct_size = _c.sizeof(d)
    d.dtype = dtype
    d.ndim = len(shape)
    for i, s in enumerate(shape):
        d.shape[i] = int(s)
    d.usages = usages
    d.scaling_mode = scaling_mode
    return d
