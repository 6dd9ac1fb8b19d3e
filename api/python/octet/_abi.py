"""The one ctypes declaration of octet.h (with the octet_types.h it includes,
and octet_dlpack.h) in the repository.

Every enumeration constant (OCTET_ prefix dropped), every struct (all its
fields, spelled and ordered as octet.h has them) and every OCTET_API
function (FUNCTIONS: name -> (restype, argtypes)). The package (_lib.py)
applies them to the liboctet it loads; the GPU benchmark
(tests/bench/gpu/bench_cuda.py) loads this file by path and applies them to
the liboctet it is given. tests/python/test_abi.py checks this file against
a C compile of octet.h (struct sizes and field offsets, constant values,
every function declared with octet.h's argument count and kinds), so a
change to the header that is not made here fails that test.

Every "ABI x.y" below is the users' ABI of octet.h (OCTET_ABI_MAJOR/MINOR),
never the plugin ABI of octet_backend.h: the minor in which that field or
function was added.

Only ctypes is imported here: no NumPy and no library loading, so the file
can be loaded on its own (importlib, by path)."""

import ctypes as _c

_i32, _u32, _i64, _u64 = _c.c_int32, _c.c_uint32, _c.c_int64, _c.c_uint64
_u8, _u16, _f32, _f64 = _c.c_uint8, _c.c_uint16, _c.c_float, _c.c_double
_sz, _p, _str = _c.c_size_t, _c.c_void_p, _c.c_char_p
_P = _c.POINTER

# ---- #defines ---------------------------------------------------------------------
# (OCTET_VERSION_*: not restated; octet.__version__ asks the loaded library.)
ABI_MAJOR, ABI_MINOR = 1, 9
MAX_DIMS = 8
MEMORY_MAX_CATEGORIES = 8
COLLECTIVE_MAX_KINDS = 8

# ---- enumerations (octet.h's OCTET_* constants without the prefix) ------------------
STATUS_SUCCESS, STATUS_INVALID_ARGUMENT, STATUS_UNSUPPORTED, STATUS_OUT_OF_MEMORY = 0, 1, 2, 3
STATUS_NOT_FOUND, STATUS_BACKEND_ERROR, STATUS_ABI_MISMATCH, STATUS_UNAVAILABLE, STATUS_INTERNAL = 4, 5, 6, 7, 8

DTYPE_INVALID, DTYPE_FP32, DTYPE_BF16, DTYPE_FP16 = 0, 1, 2, 3
DTYPE_E4M3, DTYPE_E5M2, DTYPE_E8M0 = 10, 12, 14
DTYPE_E4M3FNUZ, DTYPE_E5M2FNUZ, DTYPE_E2M1 = 11, 13, 17

E8M0_ROUND_CEIL, E8M0_ROUND_FLOOR = 0, 1

SCALING_PER_TENSOR, SCALING_MXFP8_1X32, SCALING_BLOCK_1X128, SCALING_BLOCK_128X128 = 1, 2, 4, 8
# Axiswise FP32 scales (ABI 1.8)
SCALING_PER_ROW, SCALING_PER_COLUMN = 1 << 4, 1 << 5
# FP4 (ABI 1.8)
SCALING_MXFP4_1X32, SCALING_NVFP4_1X16, SCALING_NVFP4_16X16 = 1 << 6, 1 << 7, 1 << 8

GEMM_LAYOUT_TN, GEMM_LAYOUT_NN, GEMM_LAYOUT_TT, GEMM_LAYOUT_NT, GEMM_LAYOUT_ALL = 1, 2, 4, 8, 0xF

MEMORY_HOST, MEMORY_DEVICE = 0, 1

# Collectives (ABI 1.7)
REDUCE_SUM, REDUCE_MAX = 0, 1
COMM_HOST_MEMORY, COMM_DEVICE_MEMORY = 1, 2
COLLECTIVE_AMAX, COLLECTIVE_ALLREDUCE, COLLECTIVE_ALLGATHER, COLLECTIVE_REDUCE_SCATTER = 0, 1, 2, 3
COLLECTIVE_KIND_COUNT = 4

FEATURE_CONVERT = 1 << 0
FEATURE_AMAX = 1 << 1
FEATURE_QUANTIZE = 1 << 2
FEATURE_FUSED_CAST_TRANSPOSE = 1 << 3
FEATURE_TRANSPOSE = 1 << 4
FEATURE_DEQUANTIZE = 1 << 5
FEATURE_GEMM_FP8 = 1 << 6
FEATURE_GEMM_HIGH_PRECISION = 1 << 7
FEATURE_QUANTIZE_STATISTICS = 1 << 8
FEATURE_BLOCK_QUANTIZE = 1 << 9
FEATURE_BLOCK_GEMM = 1 << 10
FEATURE_NORM = 1 << 11
FEATURE_ACTIVATION = 1 << 12
FEATURE_BIAS_GRADIENT = 1 << 13
FEATURE_ACCUMULATE = 1 << 14
FEATURE_GEMM_FP8_OUTPUT = 1 << 15
FEATURE_FP4_QUANTIZE = 1 << 18
FEATURE_FP4_GEMM = 1 << 19
FEATURE_STOCHASTIC_ROUNDING = 1 << 20
FEATURE_HADAMARD_TRANSFORM = 1 << 21
FEATURE_GROUPED_GEMM = 1 << 22

GROUP_SPLIT_M, GROUP_SPLIT_K = 0, 1

PROFILE_NATIVE, PROFILE_HOPPER_LIKE, PROFILE_BLACKWELL_LIKE = 0, 1, 2

MEMORY_USER_TENSORS, MEMORY_PARAMETERS, MEMORY_QUANTIZED_COPIES = 0, 1, 2
MEMORY_SAVED_ACTIVATIONS, MEMORY_WORKSPACE, MEMORY_CATEGORY_COUNT = 3, 4, 5

USAGE_ROWWISE, USAGE_COLUMNWISE, USAGE_BOTH = 1, 2, 3

COMPONENT_DATA, COMPONENT_COLUMNWISE_DATA, COMPONENT_SCALE, COMPONENT_SCALE_INV, COMPONENT_AMAX = 0, 1, 2, 3, 4
COMPONENT_ROWWISE_SCALE_INV, COMPONENT_COLUMNWISE_SCALE_INV = 5, 6

EPILOGUE_NONE, EPILOGUE_GELU = 0, 1

RECIPE_DELAYED, RECIPE_CURRENT, RECIPE_STATIC, RECIPE_MXFP8, RECIPE_BLOCK = 0, 1, 2, 3, 4
RECIPE_ROWWISE = 5
RECIPE_MXFP4, RECIPE_NVFP4 = 6, 7
FORMAT_E4M3, FORMAT_E5M2, FORMAT_HYBRID = 0, 1, 2
FORMAT_E4M3FNUZ, FORMAT_E5M2FNUZ, FORMAT_HYBRID_FNUZ = 3, 4, 5
ROLE_INPUT, ROLE_WEIGHT, ROLE_GRADIENT = 0, 1, 2
AMAX_MOST_RECENT, AMAX_MAX, AMAX_CALLBACK = 0, 1, 2
MX_ROUND_RCEIL, MX_ROUND_FLOOR = 0, 1

NORM_LAYERNORM, NORM_RMSNORM = 0, 1
ACTIVATION_GELU, ACTIVATION_SWIGLU = 0, 1
LAYER_LAYERNORM, LAYER_RMSNORM = NORM_LAYERNORM, NORM_RMSNORM  # octet.h's aliases
LAYER_GELU, LAYER_SWIGLU = ACTIVATION_GELU, ACTIVATION_SWIGLU
WEIGHTS_HIGH_PRECISION, WEIGHTS_FP8_ONLY = 0, 1

# octet_dlpack.h: DLPack's values, under OCTET_DLPACK_* names
DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION = 1, 1
DLPACK_DEVICE_CPU, DLPACK_DEVICE_CUDA, DLPACK_DEVICE_CUDA_HOST, DLPACK_DEVICE_CUDA_MANAGED = 1, 2, 3, 13
DLPACK_CODE_FLOAT, DLPACK_CODE_BFLOAT = 2, 4
DLPACK_CODE_FLOAT8_E4M3FN, DLPACK_CODE_FLOAT8_E5M2, DLPACK_CODE_FLOAT8_E8M0FNU = 10, 12, 14
DLPACK_CODE_FLOAT8_E4M3FNUZ, DLPACK_CODE_FLOAT8_E5M2FNUZ, DLPACK_CODE_FLOAT4_E2M1FN = 11, 13, 17
DLPACK_FLAG_READ_ONLY, DLPACK_FLAG_IS_COPIED, DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED = 1, 2, 4


# ---- structs (_c_name: the C typedef) ------------------------------------------------

class Version(_c.Structure):
    _c_name = "octet_version"
    _fields_ = [("major", _u32), ("minor", _u32), ("patch", _u32)]


class BackendInfo(_c.Structure):
    _c_name = "octet_backend_info"
    _fields_ = [
        ("struct_size", _sz),
        ("name", _str),
        ("version", _str),
        ("device", _str),
        ("path", _str),
        ("memory_kind", _i32),
        ("available", _i32),
        ("unavailable_reason", _str),
        ("abi_major", _u32),
        ("abi_minor", _u32),
        ("dtypes", _u32),
        ("scaling_modes", _u32),
        ("native_columnwise", _i32),
        ("fp8_gemm_layouts", _u32),
        ("features", _u32),
        ("alignment", _u64),
        ("caller_alignment", _u64),
    ]


class BackendFailure(_c.Structure):
    _c_name = "octet_backend_failure"
    _fields_ = [("struct_size", _sz), ("path", _str), ("reason", _str)]


class ContextOptions(_c.Structure):
    _c_name = "octet_context_options"
    _fields_ = [
        ("struct_size", _sz),
        ("backend", _str),
        ("capability_profile", _i32),
        ("stream", _p),
    ]


class MemoryStats(_c.Structure):
    _c_name = "octet_memory_stats"
    _fields_ = [
        ("struct_size", _sz),
        ("current_bytes", _u64 * MEMORY_MAX_CATEGORIES),
        ("peak_bytes", _u64 * MEMORY_MAX_CATEGORIES),
        ("current_total", _u64),
        ("peak_total", _u64),
    ]


class TensorDesc(_c.Structure):
    _c_name = "octet_tensor_desc"
    _fields_ = [
        ("struct_size", _sz),
        ("dtype", _i32),
        ("ndim", _i32),
        ("shape", _i64 * MAX_DIMS),
        ("usages", _u32),
        ("scaling_mode", _i32),  # ABI 1.1
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
        ("scaling_mode", _i32),  # ABI 1.1
        ("block_rows", _i32),
        ("block_cols", _i32),
        ("scale_inv_dtype", _i32),
        ("rowwise_scale_inv_bytes", _u64),
        ("columnwise_scale_inv_bytes", _u64),
    ]


class GroupedGemmOptions(_c.Structure):
    _c_name = "octet_grouped_gemm_options"
    _fields_ = [
        ("struct_size", _sz),
        ("trans_a", _i32),
        ("trans_b", _i32),
        ("alpha", _f32),
        ("beta", _f32),
        ("split", _i32),
        ("epilogue", _i32),
        ("fast_accumulation", _i32),
        ("reserved", _i32),
        ("bias", _P(_p)),
    ]


class QuantizeOptions(_c.Structure):
    _c_name = "octet_quantize_options"
    _fields_ = [
        ("struct_size", _sz), ("usages", _u32), ("saturate", _i32),
        # ABI 1.8: FP4 outputs
        ("stochastic_rounding", _i32), ("hadamard_transform", _i32), ("seed", _u64), ("offset", _u64),
    ]


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


# Recipes (ABI 1.1; the callbacks' C types)
AMAX_COMPUTE_FN = _c.CFUNCTYPE(_i32, _P(_f32), _sz, _P(_f32), _p)
SCALE_COMPUTE_FN = _c.CFUNCTYPE(_i32, _f32, _f32, _f32, _i32, _P(_f32), _p)
ALLREDUCE_MAX_FN = _c.CFUNCTYPE(_i32, _P(_f32), _sz, _p)
# The collectives of octet_communicator (ABI 1.7)
COMM_ALLREDUCE_FN = _c.CFUNCTYPE(_i32, _p, _p, _sz, _i32, _i32, _P(_p), _p)
COMM_ALLGATHER_FN = _c.CFUNCTYPE(_i32, _p, _p, _sz, _i32, _P(_p), _p)
COMM_REDUCE_SCATTER_FN = _c.CFUNCTYPE(_i32, _p, _p, _sz, _i32, _i32, _P(_p), _p)
COMM_WAIT_FN = _c.CFUNCTYPE(_i32, _p, _p)


class DelayedScalingOptions(_c.Structure):
    _c_name = "octet_delayed_scaling_options"
    _fields_ = [
        ("struct_size", _sz),
        ("margin", _i32),
        ("interval", _i32),
        ("format", _i32),
        ("amax_history_len", _i32),
        ("amax_compute_algo", _i32),
        ("amax_compute_callback", AMAX_COMPUTE_FN),
        ("amax_compute_user_data", _p),
        ("scale_compute_callback", SCALE_COMPUTE_FN),
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
        # ABI 1.5 (after the 1.1-1.4 struct's tail padding)
        ("reserved_padding", _i32),
        ("reduce_amax", _i32),
    ]


class StaticScalingOptions(_c.Structure):
    _c_name = "octet_static_scaling_options"
    _fields_ = [("struct_size", _sz), ("format", _i32), ("scale", _f32), ("observe", _i32)]


class MXFP8Options(_c.Structure):
    _c_name = "octet_mxfp8_options"
    _fields_ = [("struct_size", _sz), ("format", _i32), ("rounding", _i32)]


class MXFP4Options(_c.Structure):
    _c_name = "octet_mxfp4_options"
    _fields_ = [("struct_size", _sz), ("rounding", _i32), ("stochastic_rounding", _i32), ("seed", _u64)]


class NVFP4Options(_c.Structure):
    _c_name = "octet_nvfp4_options"
    _fields_ = [
        ("struct_size", _sz), ("weight_2d", _i32), ("stochastic_rounding", _i32), ("hadamard_transform", _i32),
        ("reserved", _i32), ("seed", _u64),
    ]


class BlockScalingOptions(_c.Structure):
    _c_name = "octet_block_scaling_options"
    _fields_ = [("struct_size", _sz), ("format", _i32), ("amax_epsilon", _f32), ("power_of_two_scales", _i32)]


class RowwiseScalingOptions(_c.Structure):
    _c_name = "octet_rowwise_scaling_options"
    _fields_ = [
        ("struct_size", _sz),
        ("format", _i32),
        ("amax_epsilon", _f32),
        ("power_of_two_scales", _i32),
        ("high_precision_wgrad", _i32),
    ]


class RecipeInfo(_c.Structure):
    _c_name = "octet_recipe_info"
    _fields_ = [
        ("struct_size", _sz),
        ("kind", _i32),
        ("format", _i32),
        ("override_fprop", _i32),
        ("override_dgrad", _i32),
        ("override_wgrad", _i32),
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


class Communicator(_c.Structure):
    _c_name = "octet_communicator"
    _fields_ = [
        ("struct_size", _sz),
        ("allreduce_max", ALLREDUCE_MAX_FN),
        ("user_data", _p),
        # ABI 1.7
        ("rank", _i32),
        ("size", _i32),
        ("memory_kinds", _u32),
        ("reserved_padding", _i32),
        ("allreduce", COMM_ALLREDUCE_FN),
        ("allgather", COMM_ALLGATHER_FN),
        ("reduce_scatter", COMM_REDUCE_SCATTER_FN),
        ("wait", COMM_WAIT_FN),
    ]


class CommunicationStats(_c.Structure):
    _c_name = "octet_communication_stats"
    _fields_ = [
        ("struct_size", _sz),
        ("calls", _u64 * COLLECTIVE_MAX_KINDS),
        ("bytes_sent", _u64 * COLLECTIVE_MAX_KINDS),
    ]


# Layers (ABI 1.3)
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


class LayerNormLinearOptions(_c.Structure):
    _c_name = "octet_layernorm_linear_options"
    _fields_ = [
        ("struct_size", _sz),
        ("linear", _P(LinearOptions)),
        ("norm", _i32),
        ("epsilon", _f32),
    ]


class LayerNormMLPOptions(_c.Structure):
    _c_name = "octet_layernorm_mlp_options"
    _fields_ = [
        ("struct_size", _sz),
        ("linear", _P(LinearOptions)),
        ("ffn_features", _i64),
        ("norm", _i32),
        ("epsilon", _f32),
        ("activation", _i32),
    ]


class GroupedLinearOptions(_c.Structure):
    _c_name = "octet_grouped_linear_options"
    _fields_ = [
        ("struct_size", _sz),
        ("linear", _P(LinearOptions)),
        ("num_groups", _i64),
        ("shared_quantizers", _i32),
    ]


# octet_dlpack.h: DLPack's structs (the same layout as dlpack.h's).

class DLPackVersion(_c.Structure):
    _c_name = "octet_dlpack_version"
    _fields_ = [("major", _u32), ("minor", _u32)]


class DLPackDevice(_c.Structure):
    _c_name = "octet_dlpack_device"
    _fields_ = [("device_type", _i32), ("device_id", _i32)]


class DLPackDtype(_c.Structure):
    _c_name = "octet_dlpack_dtype"
    _fields_ = [("code", _u8), ("bits", _u8), ("lanes", _u16)]


class DLPackTensor(_c.Structure):
    _c_name = "octet_dlpack_tensor"
    _fields_ = [
        ("data", _p),
        ("device", DLPackDevice),
        ("ndim", _i32),
        ("dtype", DLPackDtype),
        ("shape", _P(_i64)),
        ("strides", _P(_i64)),
        ("byte_offset", _u64),
    ]


class DLPackManagedTensor(_c.Structure):
    _c_name = "octet_dlpack_managed_tensor"


class DLPackManagedTensorVersioned(_c.Structure):
    _c_name = "octet_dlpack_managed_tensor_versioned"


DLPACK_DELETER_FN = _c.CFUNCTYPE(None, _P(DLPackManagedTensor))
DLPACK_VERSIONED_DELETER_FN = _c.CFUNCTYPE(None, _P(DLPackManagedTensorVersioned))
DLPackManagedTensor._fields_ = [
    ("dl_tensor", DLPackTensor),
    ("manager_ctx", _p),
    ("deleter", DLPACK_DELETER_FN),
]
DLPackManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", _p),
    ("deleter", DLPACK_VERSIONED_DELETER_FN),
    ("flags", _u64),
    ("dl_tensor", DLPackTensor),
]


# Every struct of octet.h and octet_dlpack.h, by its C name.
STRUCTS = {cls._c_name: cls for cls in (
    Version, BackendInfo, BackendFailure, ContextOptions, MemoryStats, TensorDesc, TensorInfo, QuantizeOptions,
    GemmOptions, GroupedGemmOptions, QuantizeStats, DelayedScalingOptions, CurrentScalingOptions, StaticScalingOptions, MXFP8Options,
    BlockScalingOptions, RowwiseScalingOptions, MXFP4Options, NVFP4Options, RecipeInfo, QuantizerInfo, Communicator, CommunicationStats, LinearOptions, LayerNormLinearOptions,
    LayerNormMLPOptions, GroupedLinearOptions, DLPackVersion, DLPackDevice, DLPackDtype, DLPackTensor, DLPackManagedTensor,
    DLPackManagedTensorVersioned)}

# Option structs and their `_init` function. A `_sized` one is told the
# caller's size; the others write the size their ABI minor had when they
# were introduced or, for newer structs, the whole struct.
INIT_FUNCTIONS = {
    "octet_context_options": "octet_context_options_init",
    "octet_quantize_options": "octet_quantize_options_init_sized",
    "octet_gemm_options": "octet_gemm_options_init_sized",
    "octet_grouped_gemm_options": "octet_grouped_gemm_options_init_sized",
    "octet_delayed_scaling_options": "octet_delayed_scaling_options_init",
    "octet_current_scaling_options": "octet_current_scaling_options_init_sized",
    "octet_static_scaling_options": "octet_static_scaling_options_init",
    "octet_mxfp8_options": "octet_mxfp8_options_init",
    "octet_block_scaling_options": "octet_block_scaling_options_init",
    "octet_rowwise_scaling_options": "octet_rowwise_scaling_options_init",
    "octet_mxfp4_options": "octet_mxfp4_options_init",
    "octet_nvfp4_options": "octet_nvfp4_options_init",
    "octet_linear_options": "octet_linear_options_init",
    "octet_layernorm_linear_options": "octet_layernorm_linear_options_init",
    "octet_layernorm_mlp_options": "octet_layernorm_mlp_options_init",
    "octet_grouped_linear_options": "octet_grouped_linear_options_init",
}

# ---- functions: name -> (restype, argtypes), in octet.h's order -----------------------
FUNCTIONS = {
    # versions, status
    "octet_library_version": (Version, []),
    "octet_abi_version": (Version, []),
    "octet_status_name": (_str, [_i32]),
    "octet_last_error_message": (_str, []),
    # dtypes and codecs
    "octet_dtype_size": (_sz, [_i32]),
    "octet_dtype_name": (_str, [_i32]),
    "octet_dtype_to_dlpack": (_i32, [_i32, _P(_u8), _P(_u8)]),
    "octet_dtype_from_dlpack": (_i32, [_u8, _u8, _P(_i32)]),
    "octet_fp8_encode": (_u8, [_f32, _i32, _i32]),
    "octet_fp8_decode": (_f32, [_u8, _i32]),
    "octet_bf16_encode": (_u16, [_f32]),
    "octet_bf16_decode": (_f32, [_u16]),
    "octet_fp16_encode": (_u16, [_f32]),
    "octet_fp16_decode": (_f32, [_u16]),
    "octet_e8m0_encode": (_u8, [_f32, _i32]),
    "octet_e8m0_decode": (_f32, [_u8]),
    "octet_fp8_encode_array": (_i32, [_p, _p, _sz, _i32, _i32]),
    "octet_fp8_decode_array": (_i32, [_p, _p, _sz, _i32]),
    "octet_bf16_encode_array": (_i32, [_p, _p, _sz]),
    "octet_bf16_decode_array": (_i32, [_p, _p, _sz]),
    "octet_fp16_encode_array": (_i32, [_p, _p, _sz]),
    "octet_fp16_decode_array": (_i32, [_p, _p, _sz]),
    "octet_e8m0_encode_array": (_i32, [_p, _p, _sz, _i32]),
    "octet_e8m0_decode_array": (_i32, [_p, _p, _sz]),
    # backends
    "octet_backend_count": (_i32, [_P(_sz)]),
    "octet_backend_get_info": (_i32, [_sz, _P(BackendInfo)]),
    "octet_backend_failure_count": (_i32, [_P(_sz)]),
    "octet_backend_get_failure": (_i32, [_sz, _P(BackendFailure)]),
    "octet_backend_load": (_i32, [_str]),
    # contexts
    "octet_context_options_init": (_i32, [_P(ContextOptions)]),
    "octet_context_create": (_i32, [_P(ContextOptions), _P(_p)]),
    "octet_context_destroy": (None, [_p]),
    "octet_context_get_info": (_i32, [_p, _P(BackendInfo)]),
    "octet_context_get_memory_stats": (_i32, [_p, _P(MemoryStats)]),
    "octet_context_reset_peak_memory": (_i32, [_p]),
    "octet_memory_category_name": (_str, [_i32]),
    "octet_context_synchronize": (_i32, [_p]),
    # tensors and operations
    "octet_tensor_create": (_i32, [_p, _P(TensorDesc), _P(_p)]),
    "octet_tensor_wrap": (_i32, [_p, _P(TensorDesc), _p, _P(_p)]),
    "octet_tensor_destroy": (None, [_p]),
    "octet_tensor_get_info": (_i32, [_p, _P(TensorInfo)]),
    "octet_tensor_copy_from_host": (_i32, [_p, _i32, _p, _sz]),
    "octet_tensor_copy_to_host": (_i32, [_p, _i32, _p, _sz]),
    "octet_convert": (_i32, [_p, _p, _p, _i32]),
    "octet_amax": (_i32, [_p, _p, _P(_f32)]),
    "octet_quantize_options_init": (_i32, [_P(QuantizeOptions)]),  # writes the ABI 1.7 size; prefer _sized
    "octet_quantize_options_init_sized": (_i32, [_P(QuantizeOptions), _sz]),
    "octet_quantize": (_i32, [_p, _p, _p, _P(QuantizeOptions)]),
    "octet_dequantize": (_i32, [_p, _p, _p]),
    "octet_gemm_options_init": (_i32, [_P(GemmOptions)]),  # writes the ABI 1.3 size; prefer _sized
    "octet_gemm_options_init_sized": (_i32, [_P(GemmOptions), _sz]),
    "octet_gemm": (_i32, [_p, _p, _p, _p, _P(GemmOptions)]),
    "octet_grouped_gemm_options_init_sized": (_i32, [_P(GroupedGemmOptions), _sz]),
    "octet_grouped_gemm": (_i32, [_p, _sz, _P(_i64), _P(_p), _sz, _P(_p), _sz, _P(_p), _sz,
                                  _P(GroupedGemmOptions)]),
    "octet_quantize_with_stats": (_i32, [_p, _p, _p, _P(QuantizeOptions), _P(QuantizeStats)]),
    # recipes
    "octet_mxfp4_options_init": (_i32, [_P(MXFP4Options)]),
    "octet_nvfp4_options_init": (_i32, [_P(NVFP4Options)]),
    "octet_delayed_scaling_options_init": (_i32, [_P(DelayedScalingOptions)]),
    "octet_current_scaling_options_init": (_i32, [_P(CurrentScalingOptions)]),  # the ABI 1.4 size; prefer _sized
    "octet_static_scaling_options_init": (_i32, [_P(StaticScalingOptions)]),
    "octet_mxfp8_options_init": (_i32, [_P(MXFP8Options)]),
    "octet_block_scaling_options_init": (_i32, [_P(BlockScalingOptions)]),
    "octet_rowwise_scaling_options_init": (_i32, [_P(RowwiseScalingOptions)]),
    "octet_current_scaling_options_init_sized": (_i32, [_P(CurrentScalingOptions), _sz]),
    "octet_recipe_create_delayed": (_i32, [_P(DelayedScalingOptions), _P(_p)]),
    "octet_recipe_create_current": (_i32, [_P(CurrentScalingOptions), _P(_p)]),
    "octet_recipe_create_static": (_i32, [_P(StaticScalingOptions), _P(_p)]),
    "octet_recipe_create_mxfp8": (_i32, [_P(MXFP8Options), _P(_p)]),
    "octet_recipe_create_block": (_i32, [_P(BlockScalingOptions), _P(_p)]),
    "octet_recipe_create_rowwise": (_i32, [_P(RowwiseScalingOptions), _P(_p)]),
    "octet_recipe_create_mxfp4": (_i32, [_P(MXFP4Options), _P(_p)]),
    "octet_recipe_create_nvfp4": (_i32, [_P(NVFP4Options), _P(_p)]),
    "octet_recipe_destroy": (None, [_p]),
    "octet_recipe_get_info": (_i32, [_p, _P(RecipeInfo)]),
    "octet_recipe_tensor_format": (_i32, [_p, _i32, _P(_i32), _P(_i32)]),
    # quantizers
    "octet_quantizer_create": (_i32, [_p, _i32, _P(_p)]),
    "octet_quantizer_destroy": (None, [_p]),
    "octet_quantizer_quantize": (_i32, [_p, _p, _p, _p, _P(QuantizeOptions), _P(QuantizeStats)]),
    "octet_quantizer_record_amax": (_i32, [_p, _f32]),
    "octet_quantizer_update_scale": (_i32, [_p]),
    "octet_quantizer_set_scale": (_i32, [_p, _f32]),
    "octet_quantizer_get_info": (_i32, [_p, _P(QuantizerInfo)]),
    "octet_quantizer_get_amax_history": (_i32, [_p, _p, _sz]),
    "octet_quantizer_save": (_i32, [_p, _p, _sz, _P(_sz)]),
    "octet_quantizer_load": (_i32, [_p, _p, _sz]),
    # autocast and the communicator
    "octet_context_set_communicator": (_i32, [_p, _P(Communicator)]),
    "octet_allreduce": (_i32, [_p, _p, _p, _i32]),
    "octet_allgather": (_i32, [_p, _p, _p]),
    "octet_reduce_scatter": (_i32, [_p, _p, _p, _i32]),
    "octet_context_get_communication_stats": (_i32, [_p, _P(CommunicationStats)]),
    "octet_context_reset_communication_stats": (_i32, [_p]),
    "octet_autocast_begin": (_i32, [_p, _p]),
    "octet_autocast_end": (_i32, [_p]),
    "octet_autocast_get_state": (_i32, [_p, _P(_i32), _P(_p)]),
    # layers
    "octet_linear_options_init": (_i32, [_P(LinearOptions)]),
    "octet_layernorm_linear_options_init": (_i32, [_P(LayerNormLinearOptions)]),
    "octet_layernorm_mlp_options_init": (_i32, [_P(LayerNormMLPOptions)]),
    "octet_grouped_linear_options_init": (_i32, [_P(GroupedLinearOptions)]),
    "octet_layer_create_linear": (_i32, [_p, _P(LinearOptions), _P(_p)]),
    "octet_layer_create_layernorm_linear": (_i32, [_p, _P(LayerNormLinearOptions), _P(_p)]),
    "octet_layer_create_layernorm_mlp": (_i32, [_p, _P(LayerNormMLPOptions), _P(_p)]),
    "octet_layer_create_grouped_linear": (_i32, [_p, _P(GroupedLinearOptions), _P(_p)]),
    "octet_layer_destroy": (None, [_p]),
    "octet_layer_parameter_count": (_i32, [_p, _P(_sz)]),
    "octet_layer_parameter_name": (_i32, [_p, _sz, _P(_str)]),
    "octet_layer_find_parameter": (_i32, [_p, _str, _P(_sz)]),
    "octet_layer_get_parameter": (_i32, [_p, _sz, _P(_p)]),
    "octet_layer_get_gradient": (_i32, [_p, _sz, _P(_p)]),
    "octet_layer_set_weight": (_i32, [_p, _sz, _p]),
    "octet_layer_set_saved_weight": (_i32, [_p, _p, _sz, _p]),
    "octet_layer_load_weight": (_i32, [_p, _sz, _p]),
    "octet_layer_new_step": (_i32, [_p]),
    "octet_layer_get_quantizer": (_i32, [_p, _sz, _i32, _P(_p)]),
    "octet_layer_forward": (_i32, [_p, _p, _p, _i32, _P(_p)]),
    "octet_layer_forward_grouped": (_i32, [_p, _p, _sz, _P(_i64), _p, _i32, _P(_p)]),
    "octet_layer_backward": (_i32, [_p, _P(_p), _p, _p, _i32]),
    "octet_saved_destroy": (None, [_p]),
    # DLPack (octet_dlpack.h, ABI 1.6)
    "octet_tensor_from_dlpack": (_i32, [_p, _P(DLPackManagedTensorVersioned), _P(_p)]),
    "octet_tensor_from_dlpack_legacy": (_i32, [_p, _P(DLPackManagedTensor), _P(_p)]),
    "octet_tensor_to_dlpack": (_i32, [_p, _i32, _P(_p)]),
    "octet_tensor_to_dlpack_legacy": (_i32, [_p, _i32, _P(_p)]),
}


def declare(cdll):
    """Sets restype and argtypes of every function in FUNCTIONS on `cdll`
    (a ctypes.CDLL of liboctet). Returns the names the library lacks (an
    older liboctet), declaring the others."""
    missing = []
    for name, (restype, argtypes) in FUNCTIONS.items():
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = list(argtypes)
    return missing


def sized(cls, **fields):
    """A `cls` with struct_size set to its size and the given fields."""
    return cls(struct_size=_c.sizeof(cls), **fields)
