"""Loads liboctet and declares the C signatures this package uses.

The library is found, in order, through the OCTET_LIBRARY environment
variable (a file path), in the package itself (octet/lib: the copy a pip
install bundles; _candidates() walks up from this file, so it comes first),
beside an installed package (<prefix>/lib), or by the system's usual search
(ctypes.util.find_library)."""

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
        ("scaling_mode", _c.c_int32),  # ABI 1.1
    ]


class TensorInfo(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("dtype", _c.c_int32),
        ("ndim", _c.c_int32),
        ("shape", _c.c_int64 * MAX_DIMS),
        ("usages", _c.c_uint32),
        ("owns_memory", _c.c_int32),
        ("has_rowwise_data", _c.c_int32),
        ("has_columnwise_data", _c.c_int32),
        ("rowwise_bytes", _c.c_uint64),
        ("columnwise_bytes", _c.c_uint64),
        ("total_bytes", _c.c_uint64),
        ("scaling_mode", _c.c_int32),
        ("block_rows", _c.c_int32),
        ("block_cols", _c.c_int32),
        ("scale_inv_dtype", _c.c_int32),
        ("rowwise_scale_inv_bytes", _c.c_uint64),
        ("columnwise_scale_inv_bytes", _c.c_uint64),
    ]


MAX_MEMORY_CATEGORIES = 8


class MemoryStats(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("current_bytes", _c.c_uint64 * MAX_MEMORY_CATEGORIES),
        ("peak_bytes", _c.c_uint64 * MAX_MEMORY_CATEGORIES),
        ("current_total", _c.c_uint64),
        ("peak_total", _c.c_uint64),
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


class QuantizeStats(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("nan_count", _c.c_uint64),
        ("saturated_count", _c.c_uint64),
        ("flushed_count", _c.c_uint64),
        ("total_count", _c.c_uint64),
        ("amax", _c.c_float),
    ]


# Recipes (ABI 1.1; the callbacks' C types)
AMAX_COMPUTE_FN = _c.CFUNCTYPE(_c.c_int32, _c.POINTER(_c.c_float), _c.c_size_t, _c.POINTER(_c.c_float), _c.c_void_p)
SCALE_COMPUTE_FN = _c.CFUNCTYPE(_c.c_int32, _c.c_float, _c.c_float, _c.c_float, _c.c_int32, _c.POINTER(_c.c_float),
                                _c.c_void_p)
ALLREDUCE_MAX_FN = _c.CFUNCTYPE(_c.c_int32, _c.POINTER(_c.c_float), _c.c_size_t, _c.c_void_p)


class DelayedScalingOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("margin", _c.c_int32),
        ("interval", _c.c_int32),
        ("format", _c.c_int32),
        ("amax_history_len", _c.c_int32),
        ("amax_compute_algo", _c.c_int32),
        ("amax_compute_callback", AMAX_COMPUTE_FN),
        ("amax_compute_user_data", _c.c_void_p),
        ("scale_compute_callback", SCALE_COMPUTE_FN),
        ("scale_compute_user_data", _c.c_void_p),
        ("power_of_two_scales", _c.c_int32),
        ("override_fprop", _c.c_int32),
        ("override_dgrad", _c.c_int32),
        ("override_wgrad", _c.c_int32),
        ("reduce_amax", _c.c_int32),
    ]


class CurrentScalingOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("format", _c.c_int32),
        ("amax_epsilon", _c.c_float),
        ("power_of_two_scales", _c.c_int32),
        # ABI 1.5 (after the 1.1-1.4 struct's tail padding)
        ("reserved_padding", _c.c_int32),
        ("reduce_amax", _c.c_int32),
    ]


class StaticScalingOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("format", _c.c_int32),
        ("scale", _c.c_float),
        ("observe", _c.c_int32),
    ]


class MXFP8Options(_c.Structure):
    _fields_ = [("struct_size", _c.c_size_t), ("format", _c.c_int32), ("rounding", _c.c_int32)]


class BlockScalingOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("format", _c.c_int32),
        ("amax_epsilon", _c.c_float),
        ("power_of_two_scales", _c.c_int32),
    ]


class RecipeInfo(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("kind", _c.c_int32),
        ("format", _c.c_int32),
        ("override_fprop", _c.c_int32),
        ("override_dgrad", _c.c_int32),
        ("override_wgrad", _c.c_int32),
    ]


class QuantizerInfo(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("role", _c.c_int32),
        ("recipe_kind", _c.c_int32),
        ("scale", _c.c_float),
        ("scale_inv", _c.c_float),
        ("amax", _c.c_float),
        ("amax_history_len", _c.c_uint32),
        ("update_count", _c.c_uint64),
        ("observed_amax", _c.c_float),
        ("observed_saturated", _c.c_uint64),
        ("observed_total", _c.c_uint64),
        ("saturated_fraction", _c.c_double),
    ]


class Communicator(_c.Structure):
    _fields_ = [("struct_size", _c.c_size_t), ("allreduce_max", ALLREDUCE_MAX_FN), ("user_data", _c.c_void_p)]


# Layers (ABI 1.3)
class LinearOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("in_features", _c.c_int64),
        ("out_features", _c.c_int64),
        ("bias", _c.c_int32),
        ("params_dtype", _c.c_int32),
        ("weight_storage", _c.c_int32),
        ("recipe", _c.c_void_p),
        ("save_original_input", _c.c_int32),
        ("minimize_memory", _c.c_int32),
        ("weight_cache", _c.c_int32),
        ("skip_weight_allocation", _c.c_int32),
    ]


class LayerNormLinearOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("linear", _c.POINTER(LinearOptions)),
        ("norm", _c.c_int32),
        ("epsilon", _c.c_float),
    ]


class LayerNormMLPOptions(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("linear", _c.POINTER(LinearOptions)),
        ("ffn_features", _c.c_int64),
        ("norm", _c.c_int32),
        ("epsilon", _c.c_float),
        ("activation", _c.c_int32),
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
_declare("octet_tensor_wrap", _i32, _p, _c.POINTER(TensorDesc), _p, _c.POINTER(_p))
_declare("octet_tensor_copy_from_host", _i32, _p, _i32, _p, _sz)
_declare("octet_tensor_copy_to_host", _i32, _p, _i32, _p, _sz)
_declare("octet_amax", _i32, _p, _p, _c.POINTER(_f32))
_declare("octet_quantize_options_init", _i32, _c.POINTER(QuantizeOptions))
_declare("octet_quantize", _i32, _p, _p, _p, _c.POINTER(QuantizeOptions))
_declare("octet_dequantize", _i32, _p, _p, _p)
_declare("octet_convert", _i32, _p, _p, _p, _i32)
_declare("octet_gemm_options_init_sized", _i32, _c.POINTER(GemmOptions), _c.c_size_t)
_declare("octet_gemm", _i32, _p, _p, _p, _p, _c.POINTER(GemmOptions))
_declare("octet_tensor_get_info", _i32, _p, _c.POINTER(TensorInfo))
_declare("octet_quantize_with_stats", _i32, _p, _p, _p, _c.POINTER(QuantizeOptions), _c.POINTER(QuantizeStats))
_declare("octet_context_get_memory_stats", _i32, _p, _c.POINTER(MemoryStats))
_declare("octet_context_reset_peak_memory", _i32, _p)
_declare("octet_memory_category_name", _c.c_char_p, _i32)
_declare("octet_context_synchronize", _i32, _p)

# Recipes
_declare("octet_delayed_scaling_options_init", _i32, _c.POINTER(DelayedScalingOptions))
_declare("octet_current_scaling_options_init_sized", _i32, _c.POINTER(CurrentScalingOptions), _sz)
_declare("octet_static_scaling_options_init", _i32, _c.POINTER(StaticScalingOptions))
_declare("octet_mxfp8_options_init", _i32, _c.POINTER(MXFP8Options))
_declare("octet_block_scaling_options_init", _i32, _c.POINTER(BlockScalingOptions))
_declare("octet_recipe_create_delayed", _i32, _c.POINTER(DelayedScalingOptions), _c.POINTER(_p))
_declare("octet_recipe_create_current", _i32, _c.POINTER(CurrentScalingOptions), _c.POINTER(_p))
_declare("octet_recipe_create_static", _i32, _c.POINTER(StaticScalingOptions), _c.POINTER(_p))
_declare("octet_recipe_create_mxfp8", _i32, _c.POINTER(MXFP8Options), _c.POINTER(_p))
_declare("octet_recipe_create_block", _i32, _c.POINTER(BlockScalingOptions), _c.POINTER(_p))
_declare("octet_recipe_destroy", None, _p)
_declare("octet_recipe_get_info", _i32, _p, _c.POINTER(RecipeInfo))
_declare("octet_recipe_tensor_format", _i32, _p, _i32, _c.POINTER(_i32), _c.POINTER(_i32))

# Quantizers
_declare("octet_quantizer_create", _i32, _p, _i32, _c.POINTER(_p))
_declare("octet_quantizer_destroy", None, _p)
_declare("octet_quantizer_quantize", _i32, _p, _p, _p, _p, _c.POINTER(QuantizeOptions), _c.POINTER(QuantizeStats))
_declare("octet_quantizer_record_amax", _i32, _p, _f32)
_declare("octet_quantizer_update_scale", _i32, _p)
_declare("octet_quantizer_set_scale", _i32, _p, _f32)
_declare("octet_quantizer_get_info", _i32, _p, _c.POINTER(QuantizerInfo))
_declare("octet_quantizer_get_amax_history", _i32, _p, _p, _sz)
_declare("octet_quantizer_save", _i32, _p, _p, _sz, _c.POINTER(_sz))
_declare("octet_quantizer_load", _i32, _p, _p, _sz)

# Autocast and the communicator
_declare("octet_context_set_communicator", _i32, _p, _c.POINTER(Communicator))
_declare("octet_autocast_begin", _i32, _p, _p)
_declare("octet_autocast_end", _i32, _p)
_declare("octet_autocast_get_state", _i32, _p, _c.POINTER(_i32), _c.POINTER(_p))

# Layers
_declare("octet_linear_options_init", _i32, _c.POINTER(LinearOptions))
_declare("octet_layernorm_linear_options_init", _i32, _c.POINTER(LayerNormLinearOptions))
_declare("octet_layernorm_mlp_options_init", _i32, _c.POINTER(LayerNormMLPOptions))
_declare("octet_layer_create_linear", _i32, _p, _c.POINTER(LinearOptions), _c.POINTER(_p))
_declare("octet_layer_create_layernorm_linear", _i32, _p, _c.POINTER(LayerNormLinearOptions), _c.POINTER(_p))
_declare("octet_layer_create_layernorm_mlp", _i32, _p, _c.POINTER(LayerNormMLPOptions), _c.POINTER(_p))
_declare("octet_layer_destroy", None, _p)
_declare("octet_layer_parameter_count", _i32, _p, _c.POINTER(_sz))
_declare("octet_layer_parameter_name", _i32, _p, _sz, _c.POINTER(_c.c_char_p))
_declare("octet_layer_find_parameter", _i32, _p, _c.c_char_p, _c.POINTER(_sz))
_declare("octet_layer_get_parameter", _i32, _p, _sz, _c.POINTER(_p))
_declare("octet_layer_get_gradient", _i32, _p, _sz, _c.POINTER(_p))
_declare("octet_layer_set_weight", _i32, _p, _sz, _p)
_declare("octet_layer_load_weight", _i32, _p, _sz, _p)
_declare("octet_layer_new_step", _i32, _p)
_declare("octet_layer_get_quantizer", _i32, _p, _sz, _i32, _c.POINTER(_p))
_declare("octet_layer_forward", _i32, _p, _p, _p, _i32, _c.POINTER(_p))
_declare("octet_layer_backward", _i32, _p, _c.POINTER(_p), _p, _p, _i32)
_declare("octet_saved_destroy", None, _p)
