//! The raw declaration of `octet.h` (with the `octet_types.h` it includes)
//! and `octet_dlpack.h`: every type, constant and `OCTET_API` function of the
//! headers, spelled as they spell it.
//!
//! This is the crate's only declaration of the C ABI. The unit tests in
//! `src/abi_check.rs` compare it with the header itself: a C program compiled
//! with `octet.h` prints every struct's size, alignment and field offsets and
//! every constant's value, and the header's function prototypes and typedefs
//! are parsed and compared, type by type, with the `extern "C"` block below.
//! A field, constant or function added to the header but not here fails them.
//!
//! Enumerations are integer constants of the header's typedef (`i32`), or
//! `u32` for the bit-flag enumerations, as the header's fields hold them.
//! Everything here is `unsafe` to use: see the header's comments for the
//! contract, and the crate root for the safe layer.
#![allow(non_camel_case_types)]

pub use core::ffi::{c_char, c_void};

/// One struct's layout as Rust sees it: (field, offset, type as written).
#[cfg(test)]
pub(crate) struct StructLayout {
    pub name: &'static str,
    pub size: usize,
    pub align: usize,
    pub fields: &'static [(&'static str, usize, &'static str)],
}

/// Declares `#[repr(C)]` structs and, for the tests, their layout table.
macro_rules! c_structs {
    ($(
        $(#[$attr:meta])*
        pub struct $name:ident {
            $($(#[$field_attr:meta])* pub $field:ident: $ty:ty,)*
        }
    )*) => {
        $(
            $(#[$attr])*
            #[repr(C)]
            #[derive(Clone, Copy, Debug)]
            pub struct $name {
                $($(#[$field_attr])* pub $field: $ty,)*
            }
        )*
        #[cfg(test)]
        pub(crate) const STRUCTS: &[StructLayout] = &[$(StructLayout {
            name: stringify!($name),
            size: core::mem::size_of::<$name>(),
            align: core::mem::align_of::<$name>(),
            fields: &[$((
                stringify!($field),
                core::mem::offset_of!($name, $field),
                stringify!($ty),
            )),*],
        }),*];
    };
}

/// Declares constants and, for the tests, a table of their values.
macro_rules! c_constants {
    ($($(#[$attr:meta])* pub const $name:ident: $ty:ty = $value:expr;)*) => {
        $($(#[$attr])* pub const $name: $ty = $value;)*
        #[cfg(test)]
        pub(crate) const CONSTANTS: &[(&str, i128)] = &[$((stringify!($name), $name as i128)),*];
    };
}

// ---- typedefs -------------------------------------------------------------

pub type octet_status = i32;
pub type octet_dtype = i32;
pub type octet_e8m0_rounding = i32;
pub type octet_memory_kind = i32;
pub type octet_capability_profile = i32;
pub type octet_memory_category = i32;
pub type octet_component = i32;
pub type octet_epilogue = i32;
pub type octet_recipe_kind = i32;
pub type octet_fp8_format = i32;
pub type octet_tensor_role = i32;
pub type octet_amax_compute_algo = i32;
pub type octet_mx_rounding = i32;
pub type octet_norm_kind = i32;
pub type octet_activation_kind = i32;
pub type octet_weight_storage = i32;
pub type octet_reduce_op = i32;
pub type octet_collective_kind = i32;

pub type octet_amax_compute_fn = Option<
    unsafe extern "C" fn(
        history: *const f32,
        length: usize,
        amax: *mut f32,
        user_data: *mut c_void,
    ) -> octet_status,
>;
pub type octet_scale_compute_fn = Option<
    unsafe extern "C" fn(
        amax: f32,
        old_scale: f32,
        fp8_max: f32,
        margin: i32,
        new_scale: *mut f32,
        user_data: *mut c_void,
    ) -> octet_status,
>;

/// `OCTET_DTYPE_BIT(dtype)`: the bit of a dtype in `octet_backend_info.dtypes`.
#[allow(non_snake_case)]
pub const fn OCTET_DTYPE_BIT(dtype: octet_dtype) -> u32 {
    1u32 << dtype as u32
}

// ---- opaque handles ---------------------------------------------------------

macro_rules! opaque {
    ($($name:ident),*) => {$(
        /// An opaque handle of the C library.
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
            _not_send_sync: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,
        }
    )*};
}
opaque!(
    octet_context,
    octet_tensor,
    octet_recipe,
    octet_quantizer,
    octet_layer,
    octet_saved
);

// ---- constants --------------------------------------------------------------

c_constants! {
    pub const OCTET_VERSION_MAJOR: u32 = 0;
    pub const OCTET_VERSION_MINOR: u32 = 1;
    pub const OCTET_VERSION_PATCH: u32 = 0;
    pub const OCTET_ABI_MAJOR: u32 = 1;
    pub const OCTET_ABI_MINOR: u32 = 9;

    pub const OCTET_STATUS_SUCCESS: octet_status = 0;
    pub const OCTET_STATUS_INVALID_ARGUMENT: octet_status = 1;
    pub const OCTET_STATUS_UNSUPPORTED: octet_status = 2;
    pub const OCTET_STATUS_OUT_OF_MEMORY: octet_status = 3;
    pub const OCTET_STATUS_NOT_FOUND: octet_status = 4;
    pub const OCTET_STATUS_BACKEND_ERROR: octet_status = 5;
    pub const OCTET_STATUS_ABI_MISMATCH: octet_status = 6;
    pub const OCTET_STATUS_UNAVAILABLE: octet_status = 7;
    pub const OCTET_STATUS_INTERNAL: octet_status = 8;

    pub const OCTET_DTYPE_INVALID: octet_dtype = 0;
    pub const OCTET_DTYPE_FP32: octet_dtype = 1;
    pub const OCTET_DTYPE_BF16: octet_dtype = 2;
    pub const OCTET_DTYPE_FP16: octet_dtype = 3;
    pub const OCTET_DTYPE_E4M3: octet_dtype = 10;
    pub const OCTET_DTYPE_E5M2: octet_dtype = 12;
    pub const OCTET_DTYPE_E8M0: octet_dtype = 14;
    pub const OCTET_DTYPE_E4M3FNUZ: octet_dtype = 11;
    pub const OCTET_DTYPE_E5M2FNUZ: octet_dtype = 13;
    pub const OCTET_DTYPE_E2M1: octet_dtype = 17;

    pub const OCTET_E8M0_ROUND_CEIL: octet_e8m0_rounding = 0;
    pub const OCTET_E8M0_ROUND_FLOOR: octet_e8m0_rounding = 1;

    pub const OCTET_SCALING_PER_TENSOR: u32 = 1 << 0;
    pub const OCTET_SCALING_MXFP8_1X32: u32 = 1 << 1;
    pub const OCTET_SCALING_BLOCK_1X128: u32 = 1 << 2;
    pub const OCTET_SCALING_BLOCK_128X128: u32 = 1 << 3;
    pub const OCTET_SCALING_PER_ROW: u32 = 1 << 4;
    pub const OCTET_SCALING_PER_COLUMN: u32 = 1 << 5;
    pub const OCTET_SCALING_MXFP4_1X32: u32 = 1 << 6;
    pub const OCTET_SCALING_NVFP4_1X16: u32 = 1 << 7;
    pub const OCTET_SCALING_NVFP4_16X16: u32 = 1 << 8;

    pub const OCTET_GEMM_LAYOUT_TN: u32 = 1 << 0;
    pub const OCTET_GEMM_LAYOUT_NN: u32 = 1 << 1;
    pub const OCTET_GEMM_LAYOUT_TT: u32 = 1 << 2;
    pub const OCTET_GEMM_LAYOUT_NT: u32 = 1 << 3;
    pub const OCTET_GEMM_LAYOUT_ALL: u32 = 0xF;

    pub const OCTET_MEMORY_HOST: octet_memory_kind = 0;
    pub const OCTET_MEMORY_DEVICE: octet_memory_kind = 1;

    pub const OCTET_FEATURE_CONVERT: u32 = 1 << 0;
    pub const OCTET_FEATURE_AMAX: u32 = 1 << 1;
    pub const OCTET_FEATURE_QUANTIZE: u32 = 1 << 2;
    pub const OCTET_FEATURE_FUSED_CAST_TRANSPOSE: u32 = 1 << 3;
    pub const OCTET_FEATURE_TRANSPOSE: u32 = 1 << 4;
    pub const OCTET_FEATURE_DEQUANTIZE: u32 = 1 << 5;
    pub const OCTET_FEATURE_GEMM_FP8: u32 = 1 << 6;
    pub const OCTET_FEATURE_GEMM_HIGH_PRECISION: u32 = 1 << 7;
    pub const OCTET_FEATURE_QUANTIZE_STATISTICS: u32 = 1 << 8;
    pub const OCTET_FEATURE_BLOCK_QUANTIZE: u32 = 1 << 9;
    pub const OCTET_FEATURE_BLOCK_GEMM: u32 = 1 << 10;
    pub const OCTET_FEATURE_NORM: u32 = 1 << 11;
    pub const OCTET_FEATURE_ACTIVATION: u32 = 1 << 12;
    pub const OCTET_FEATURE_BIAS_GRADIENT: u32 = 1 << 13;
    pub const OCTET_FEATURE_ACCUMULATE: u32 = 1 << 14;
    pub const OCTET_FEATURE_GEMM_FP8_OUTPUT: u32 = 1 << 15;
    pub const OCTET_FEATURE_FP4_QUANTIZE: u32 = 1 << 18;
    pub const OCTET_FEATURE_FP4_GEMM: u32 = 1 << 19;
    pub const OCTET_FEATURE_STOCHASTIC_ROUNDING: u32 = 1 << 20;
    pub const OCTET_FEATURE_HADAMARD_TRANSFORM: u32 = 1 << 21;
    pub const OCTET_FEATURE_GROUPED_GEMM: u32 = 1 << 22;

    pub const OCTET_PROFILE_NATIVE: octet_capability_profile = 0;
    pub const OCTET_PROFILE_HOPPER_LIKE: octet_capability_profile = 1;
    pub const OCTET_PROFILE_BLACKWELL_LIKE: octet_capability_profile = 2;

    pub const OCTET_MEMORY_USER_TENSORS: octet_memory_category = 0;
    pub const OCTET_MEMORY_PARAMETERS: octet_memory_category = 1;
    pub const OCTET_MEMORY_QUANTIZED_COPIES: octet_memory_category = 2;
    pub const OCTET_MEMORY_SAVED_ACTIVATIONS: octet_memory_category = 3;
    pub const OCTET_MEMORY_WORKSPACE: octet_memory_category = 4;
    pub const OCTET_MEMORY_CATEGORY_COUNT: octet_memory_category = 5;
    pub const OCTET_MEMORY_MAX_CATEGORIES: usize = 8;

    pub const OCTET_REDUCE_SUM: octet_reduce_op = 0;
    pub const OCTET_REDUCE_MAX: octet_reduce_op = 1;
    pub const OCTET_COMM_HOST_MEMORY: u32 = 1;
    pub const OCTET_COMM_DEVICE_MEMORY: u32 = 2;
    pub const OCTET_COLLECTIVE_AMAX: octet_collective_kind = 0;
    pub const OCTET_COLLECTIVE_ALLREDUCE: octet_collective_kind = 1;
    pub const OCTET_COLLECTIVE_ALLGATHER: octet_collective_kind = 2;
    pub const OCTET_COLLECTIVE_REDUCE_SCATTER: octet_collective_kind = 3;
    pub const OCTET_COLLECTIVE_KIND_COUNT: octet_collective_kind = 4;
    pub const OCTET_COLLECTIVE_MAX_KINDS: usize = 8;

    pub const OCTET_MAX_DIMS: usize = 8;

    pub const OCTET_USAGE_ROWWISE: u32 = 1 << 0;
    pub const OCTET_USAGE_COLUMNWISE: u32 = 1 << 1;
    pub const OCTET_USAGE_BOTH: u32 = 3;

    pub const OCTET_COMPONENT_DATA: octet_component = 0;
    pub const OCTET_COMPONENT_COLUMNWISE_DATA: octet_component = 1;
    pub const OCTET_COMPONENT_SCALE: octet_component = 2;
    pub const OCTET_COMPONENT_SCALE_INV: octet_component = 3;
    pub const OCTET_COMPONENT_AMAX: octet_component = 4;
    pub const OCTET_COMPONENT_ROWWISE_SCALE_INV: octet_component = 5;
    pub const OCTET_COMPONENT_COLUMNWISE_SCALE_INV: octet_component = 6;

    pub const OCTET_EPILOGUE_NONE: octet_epilogue = 0;
    pub const OCTET_EPILOGUE_GELU: octet_epilogue = 1;

    pub const OCTET_GROUP_SPLIT_M: i32 = 0;
    pub const OCTET_GROUP_SPLIT_K: i32 = 1;

    pub const OCTET_RECIPE_DELAYED: octet_recipe_kind = 0;
    pub const OCTET_RECIPE_CURRENT: octet_recipe_kind = 1;
    pub const OCTET_RECIPE_STATIC: octet_recipe_kind = 2;
    pub const OCTET_RECIPE_MXFP8: octet_recipe_kind = 3;
    pub const OCTET_RECIPE_BLOCK: octet_recipe_kind = 4;
    pub const OCTET_RECIPE_ROWWISE: octet_recipe_kind = 5;
    pub const OCTET_RECIPE_MXFP4: octet_recipe_kind = 6;
    pub const OCTET_RECIPE_NVFP4: octet_recipe_kind = 7;

    pub const OCTET_FORMAT_E4M3: octet_fp8_format = 0;
    pub const OCTET_FORMAT_E5M2: octet_fp8_format = 1;
    pub const OCTET_FORMAT_HYBRID: octet_fp8_format = 2;
    pub const OCTET_FORMAT_E4M3FNUZ: octet_fp8_format = 3;
    pub const OCTET_FORMAT_E5M2FNUZ: octet_fp8_format = 4;
    pub const OCTET_FORMAT_HYBRID_FNUZ: octet_fp8_format = 5;

    pub const OCTET_ROLE_INPUT: octet_tensor_role = 0;
    pub const OCTET_ROLE_WEIGHT: octet_tensor_role = 1;
    pub const OCTET_ROLE_GRADIENT: octet_tensor_role = 2;

    pub const OCTET_AMAX_MOST_RECENT: octet_amax_compute_algo = 0;
    pub const OCTET_AMAX_MAX: octet_amax_compute_algo = 1;
    pub const OCTET_AMAX_CALLBACK: octet_amax_compute_algo = 2;

    pub const OCTET_MX_ROUND_RCEIL: octet_mx_rounding = 0;
    pub const OCTET_MX_ROUND_FLOOR: octet_mx_rounding = 1;

    pub const OCTET_NORM_LAYERNORM: octet_norm_kind = 0;
    pub const OCTET_NORM_RMSNORM: octet_norm_kind = 1;
    pub const OCTET_ACTIVATION_GELU: octet_activation_kind = 0;
    pub const OCTET_ACTIVATION_SWIGLU: octet_activation_kind = 1;
    // octet.h's source-compatibility aliases of the four above.
    pub const OCTET_LAYER_LAYERNORM: octet_norm_kind = OCTET_NORM_LAYERNORM;
    pub const OCTET_LAYER_RMSNORM: octet_norm_kind = OCTET_NORM_RMSNORM;
    pub const OCTET_LAYER_GELU: octet_activation_kind = OCTET_ACTIVATION_GELU;
    pub const OCTET_LAYER_SWIGLU: octet_activation_kind = OCTET_ACTIVATION_SWIGLU;

    pub const OCTET_WEIGHTS_HIGH_PRECISION: octet_weight_storage = 0;
    pub const OCTET_WEIGHTS_FP8_ONLY: octet_weight_storage = 1;

    // octet_dlpack.h
    pub const OCTET_DLPACK_MAJOR_VERSION: u32 = 1;
    pub const OCTET_DLPACK_MINOR_VERSION: u32 = 1;
    pub const OCTET_DLPACK_DEVICE_CPU: i32 = 1;
    pub const OCTET_DLPACK_DEVICE_CUDA: i32 = 2;
    pub const OCTET_DLPACK_DEVICE_CUDA_HOST: i32 = 3;
    pub const OCTET_DLPACK_DEVICE_CUDA_MANAGED: i32 = 13;
    pub const OCTET_DLPACK_CODE_FLOAT: u8 = 2;
    pub const OCTET_DLPACK_CODE_BFLOAT: u8 = 4;
    pub const OCTET_DLPACK_CODE_FLOAT8_E4M3FN: u8 = 10;
    pub const OCTET_DLPACK_CODE_FLOAT8_E5M2: u8 = 12;
    pub const OCTET_DLPACK_CODE_FLOAT8_E8M0FNU: u8 = 14;
    pub const OCTET_DLPACK_CODE_FLOAT8_E4M3FNUZ: u8 = 11;
    pub const OCTET_DLPACK_CODE_FLOAT8_E5M2FNUZ: u8 = 13;
    pub const OCTET_DLPACK_CODE_FLOAT4_E2M1FN: u8 = 17;
    pub const OCTET_DLPACK_FLAG_READ_ONLY: u64 = 1;
    pub const OCTET_DLPACK_FLAG_IS_COPIED: u64 = 2;
    pub const OCTET_DLPACK_FLAG_IS_SUBBYTE_TYPE_PADDED: u64 = 4;
}

// ---- structs ------------------------------------------------------------------

c_structs! {
    pub struct octet_version {
        pub major: u32,
        pub minor: u32,
        pub patch: u32,
    }

    pub struct octet_backend_info {
        pub struct_size: usize,
        pub name: *const c_char,
        pub version: *const c_char,
        pub device: *const c_char,
        pub path: *const c_char,
        pub memory_kind: i32,
        pub available: i32,
        pub unavailable_reason: *const c_char,
        pub abi_major: u32,
        pub abi_minor: u32,
        pub dtypes: u32,
        pub scaling_modes: u32,
        pub native_columnwise: i32,
        pub fp8_gemm_layouts: u32,
        pub features: u32,
        pub alignment: u64,
        pub caller_alignment: u64,
    }

    pub struct octet_backend_failure {
        pub struct_size: usize,
        pub path: *const c_char,
        pub reason: *const c_char,
    }

    pub struct octet_context_options {
        pub struct_size: usize,
        pub backend: *const c_char,
        pub capability_profile: i32,
        pub stream: *mut c_void,
    }

    pub struct octet_memory_stats {
        pub struct_size: usize,
        pub current_bytes: [u64; OCTET_MEMORY_MAX_CATEGORIES],
        pub peak_bytes: [u64; OCTET_MEMORY_MAX_CATEGORIES],
        pub current_total: u64,
        pub peak_total: u64,
    }

    pub struct octet_tensor_desc {
        pub struct_size: usize,
        pub dtype: i32,
        pub ndim: i32,
        pub shape: [i64; OCTET_MAX_DIMS],
        pub usages: u32,
        pub scaling_mode: i32,
    }

    pub struct octet_tensor_info {
        pub struct_size: usize,
        pub dtype: i32,
        pub ndim: i32,
        pub shape: [i64; OCTET_MAX_DIMS],
        pub usages: u32,
        pub owns_memory: i32,
        pub has_rowwise_data: i32,
        pub has_columnwise_data: i32,
        pub rowwise_bytes: u64,
        pub columnwise_bytes: u64,
        pub total_bytes: u64,
        pub scaling_mode: i32,
        pub block_rows: i32,
        pub block_cols: i32,
        pub scale_inv_dtype: i32,
        pub rowwise_scale_inv_bytes: u64,
        pub columnwise_scale_inv_bytes: u64,
    }

    pub struct octet_quantize_options {
        pub struct_size: usize,
        pub usages: u32,
        pub saturate: i32,
        // users' ABI 1.8: FP4 outputs
        pub stochastic_rounding: i32,
        pub hadamard_transform: i32,
        pub seed: u64,
        pub offset: u64,
    }

    pub struct octet_gemm_options {
        pub struct_size: usize,
        pub trans_a: i32,
        pub trans_b: i32,
        pub alpha: f32,
        pub beta: f32,
        pub bias: *const octet_tensor,
        pub epilogue: i32,
        pub reserved_padding: i32,
        pub fast_accumulation: i32,
        pub saturate_output: i32,
    }

    pub struct octet_grouped_gemm_options {
        pub struct_size: usize,
        pub trans_a: i32,
        pub trans_b: i32,
        pub alpha: f32,
        pub beta: f32,
        pub split: i32,
        pub epilogue: i32,
        pub fast_accumulation: i32,
        pub reserved: i32,
        pub bias: *const *const octet_tensor,
    }

    pub struct octet_quantize_stats {
        pub struct_size: usize,
        pub nan_count: u64,
        pub saturated_count: u64,
        pub flushed_count: u64,
        pub total_count: u64,
        pub amax: f32,
    }

    pub struct octet_delayed_scaling_options {
        pub struct_size: usize,
        pub margin: i32,
        pub interval: i32,
        pub format: i32,
        pub amax_history_len: i32,
        pub amax_compute_algo: i32,
        pub amax_compute_callback: octet_amax_compute_fn,
        pub amax_compute_user_data: *mut c_void,
        pub scale_compute_callback: octet_scale_compute_fn,
        pub scale_compute_user_data: *mut c_void,
        pub power_of_two_scales: i32,
        pub override_fprop: i32,
        pub override_dgrad: i32,
        pub override_wgrad: i32,
        pub reduce_amax: i32,
    }

    pub struct octet_current_scaling_options {
        pub struct_size: usize,
        pub format: i32,
        pub amax_epsilon: f32,
        pub power_of_two_scales: i32,
        pub reserved_padding: i32,
        pub reduce_amax: i32,
    }

    pub struct octet_static_scaling_options {
        pub struct_size: usize,
        pub format: i32,
        pub scale: f32,
        pub observe: i32,
    }

    pub struct octet_mxfp8_options {
        pub struct_size: usize,
        pub format: i32,
        pub rounding: i32,
    }

    pub struct octet_mxfp4_options {
        pub struct_size: usize,
        pub rounding: i32,
        pub stochastic_rounding: i32,
        pub seed: u64,
    }

    pub struct octet_nvfp4_options {
        pub struct_size: usize,
        pub weight_2d: i32,
        pub stochastic_rounding: i32,
        pub hadamard_transform: i32,
        pub reserved: i32,
        pub seed: u64,
    }

    pub struct octet_block_scaling_options {
        pub struct_size: usize,
        pub format: i32,
        pub amax_epsilon: f32,
        pub power_of_two_scales: i32,
    }

    pub struct octet_rowwise_scaling_options {
        pub struct_size: usize,
        pub format: i32,
        pub amax_epsilon: f32,
        pub power_of_two_scales: i32,
        pub high_precision_wgrad: i32,
    }

    pub struct octet_recipe_info {
        pub struct_size: usize,
        pub kind: i32,
        pub format: i32,
        pub override_fprop: i32,
        pub override_dgrad: i32,
        pub override_wgrad: i32,
    }

    pub struct octet_quantizer_info {
        pub struct_size: usize,
        pub role: i32,
        pub recipe_kind: i32,
        pub scale: f32,
        pub scale_inv: f32,
        pub amax: f32,
        pub amax_history_len: u32,
        pub update_count: u64,
        pub observed_amax: f32,
        pub observed_saturated: u64,
        pub observed_total: u64,
        pub saturated_fraction: f64,
    }

    pub struct octet_communicator {
        pub struct_size: usize,
        pub allreduce_max: Option<
            unsafe extern "C" fn(values: *mut f32, count: usize, user_data: *mut c_void) -> octet_status,
        >,
        pub user_data: *mut c_void,
        pub rank: i32,
        pub size: i32,
        pub memory_kinds: u32,
        pub reserved_padding: i32,
        pub allreduce: Option<
            unsafe extern "C" fn(
                send: *const c_void,
                recv: *mut c_void,
                count: usize,
                dtype: i32,
                op: i32,
                request: *mut *mut c_void,
                user_data: *mut c_void,
            ) -> octet_status,
        >,
        pub allgather: Option<
            unsafe extern "C" fn(
                send: *const c_void,
                recv: *mut c_void,
                send_count: usize,
                dtype: i32,
                request: *mut *mut c_void,
                user_data: *mut c_void,
            ) -> octet_status,
        >,
        pub reduce_scatter: Option<
            unsafe extern "C" fn(
                send: *const c_void,
                recv: *mut c_void,
                recv_count: usize,
                dtype: i32,
                op: i32,
                request: *mut *mut c_void,
                user_data: *mut c_void,
            ) -> octet_status,
        >,
        pub wait: Option<unsafe extern "C" fn(request: *mut c_void, user_data: *mut c_void) -> octet_status>,
    }

    pub struct octet_communication_stats {
        pub struct_size: usize,
        pub calls: [u64; OCTET_COLLECTIVE_MAX_KINDS],
        pub bytes_sent: [u64; OCTET_COLLECTIVE_MAX_KINDS],
    }

    pub struct octet_linear_options {
        pub struct_size: usize,
        pub in_features: i64,
        pub out_features: i64,
        pub bias: i32,
        pub params_dtype: i32,
        pub weight_storage: i32,
        pub recipe: *const octet_recipe,
        pub save_original_input: i32,
        pub minimize_memory: i32,
        pub weight_cache: i32,
        pub skip_weight_allocation: i32,
    }

    pub struct octet_layernorm_linear_options {
        pub struct_size: usize,
        pub linear: *const octet_linear_options,
        pub norm: i32,
        pub epsilon: f32,
    }

    pub struct octet_layernorm_mlp_options {
        pub struct_size: usize,
        pub linear: *const octet_linear_options,
        pub ffn_features: i64,
        pub norm: i32,
        pub epsilon: f32,
        pub activation: i32,
    }

    pub struct octet_grouped_linear_options {
        pub struct_size: usize,
        pub linear: *const octet_linear_options,
        pub num_groups: i64,
        pub shared_quantizers: i32,
    }

    // octet_dlpack.h: DLPack's structs under Octet's names (DLPackVersion,
    // DLDevice, DLDataType, DLTensor, DLManagedTensor, DLManagedTensorVersioned).
    pub struct octet_dlpack_version {
        pub major: u32,
        pub minor: u32,
    }

    pub struct octet_dlpack_device {
        pub device_type: i32,
        pub device_id: i32,
    }

    pub struct octet_dlpack_dtype {
        pub code: u8,
        pub bits: u8,
        pub lanes: u16,
    }

    pub struct octet_dlpack_tensor {
        pub data: *mut c_void,
        pub device: octet_dlpack_device,
        pub ndim: i32,
        pub dtype: octet_dlpack_dtype,
        pub shape: *mut i64,
        pub strides: *mut i64,
        pub byte_offset: u64,
    }

    pub struct octet_dlpack_managed_tensor {
        pub dl_tensor: octet_dlpack_tensor,
        pub manager_ctx: *mut c_void,
        pub deleter: Option<unsafe extern "C" fn(this: *mut octet_dlpack_managed_tensor)>,
    }

    pub struct octet_dlpack_managed_tensor_versioned {
        pub version: octet_dlpack_version,
        pub manager_ctx: *mut c_void,
        pub deleter: Option<unsafe extern "C" fn(this: *mut octet_dlpack_managed_tensor_versioned)>,
        pub flags: u64,
        pub dl_tensor: octet_dlpack_tensor,
    }
}

// ---- functions ------------------------------------------------------------------

extern "C" {
    // Versions
    pub fn octet_library_version() -> octet_version;
    pub fn octet_abi_version() -> octet_version;

    // Status codes and errors
    pub fn octet_status_name(status: octet_status) -> *const c_char;
    pub fn octet_last_error_message() -> *const c_char;

    // Data types
    pub fn octet_dtype_size(dtype: octet_dtype) -> usize;
    pub fn octet_dtype_name(dtype: octet_dtype) -> *const c_char;
    pub fn octet_dtype_to_dlpack(dtype: octet_dtype, code: *mut u8, bits: *mut u8) -> octet_status;
    pub fn octet_dtype_from_dlpack(code: u8, bits: u8, dtype: *mut octet_dtype) -> octet_status;

    // Scalar and array codecs
    pub fn octet_fp8_encode(value: f32, dtype: i32, saturate: i32) -> u8;
    pub fn octet_fp8_decode(code: u8, dtype: i32) -> f32;
    pub fn octet_bf16_encode(value: f32) -> u16;
    pub fn octet_bf16_decode(code: u16) -> f32;
    pub fn octet_fp16_encode(value: f32) -> u16;
    pub fn octet_fp16_decode(code: u16) -> f32;
    pub fn octet_e8m0_encode(value: f32, rounding: i32) -> u8;
    pub fn octet_e8m0_decode(code: u8) -> f32;
    pub fn octet_fp8_encode_array(
        input: *const f32,
        out: *mut u8,
        n: usize,
        dtype: i32,
        saturate: i32,
    ) -> octet_status;
    pub fn octet_fp8_decode_array(
        input: *const u8,
        out: *mut f32,
        n: usize,
        dtype: i32,
    ) -> octet_status;
    pub fn octet_bf16_encode_array(input: *const f32, out: *mut u16, n: usize) -> octet_status;
    pub fn octet_bf16_decode_array(input: *const u16, out: *mut f32, n: usize) -> octet_status;
    pub fn octet_fp16_encode_array(input: *const f32, out: *mut u16, n: usize) -> octet_status;
    pub fn octet_fp16_decode_array(input: *const u16, out: *mut f32, n: usize) -> octet_status;
    pub fn octet_e8m0_encode_array(
        input: *const f32,
        out: *mut u8,
        n: usize,
        rounding: i32,
    ) -> octet_status;
    pub fn octet_e8m0_decode_array(input: *const u8, out: *mut f32, n: usize) -> octet_status;

    // Backends
    pub fn octet_backend_count(count: *mut usize) -> octet_status;
    pub fn octet_backend_get_info(index: usize, info: *mut octet_backend_info) -> octet_status;
    pub fn octet_backend_failure_count(count: *mut usize) -> octet_status;
    pub fn octet_backend_get_failure(
        index: usize,
        failure: *mut octet_backend_failure,
    ) -> octet_status;
    pub fn octet_backend_load(path: *const c_char) -> octet_status;

    // Contexts
    pub fn octet_context_options_init(options: *mut octet_context_options) -> octet_status;
    pub fn octet_context_create(
        options: *const octet_context_options,
        context: *mut *mut octet_context,
    ) -> octet_status;
    pub fn octet_context_destroy(context: *mut octet_context);
    pub fn octet_context_get_info(
        context: *const octet_context,
        info: *mut octet_backend_info,
    ) -> octet_status;
    pub fn octet_context_get_memory_stats(
        context: *const octet_context,
        stats: *mut octet_memory_stats,
    ) -> octet_status;
    pub fn octet_context_reset_peak_memory(context: *mut octet_context) -> octet_status;
    pub fn octet_memory_category_name(category: i32) -> *const c_char;
    pub fn octet_context_synchronize(context: *mut octet_context) -> octet_status;

    // Tensors
    pub fn octet_tensor_create(
        context: *mut octet_context,
        desc: *const octet_tensor_desc,
        tensor: *mut *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_tensor_wrap(
        context: *mut octet_context,
        desc: *const octet_tensor_desc,
        data: *mut c_void,
        tensor: *mut *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_tensor_destroy(tensor: *mut octet_tensor);
    pub fn octet_tensor_get_info(
        tensor: *const octet_tensor,
        info: *mut octet_tensor_info,
    ) -> octet_status;
    pub fn octet_tensor_copy_from_host(
        tensor: *mut octet_tensor,
        component: i32,
        src: *const c_void,
        bytes: usize,
    ) -> octet_status;
    pub fn octet_tensor_copy_to_host(
        tensor: *const octet_tensor,
        component: i32,
        dst: *mut c_void,
        bytes: usize,
    ) -> octet_status;

    // Operations
    pub fn octet_convert(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        saturate: i32,
    ) -> octet_status;
    pub fn octet_amax(
        context: *mut octet_context,
        input: *const octet_tensor,
        amax: *mut f32,
    ) -> octet_status;
    /// The users' ABI 1.0 export: writes the 1.0-1.7 struct only. Call
    /// [`octet_quantize_options_init_sized`], as the header's macro does.
    pub fn octet_quantize_options_init(options: *mut octet_quantize_options) -> octet_status;
    pub fn octet_quantize_options_init_sized(
        options: *mut octet_quantize_options,
        struct_size: usize,
    ) -> octet_status;
    pub fn octet_quantize(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        options: *const octet_quantize_options,
    ) -> octet_status;
    pub fn octet_dequantize(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
    ) -> octet_status;
    /// The users' ABI 1.0 export: writes the 1.0-1.3 struct only. Call
    /// [`octet_gemm_options_init_sized`] with `size_of::<octet_gemm_options>()`,
    /// as the header's macro does.
    pub fn octet_gemm_options_init(options: *mut octet_gemm_options) -> octet_status;
    pub fn octet_gemm_options_init_sized(
        options: *mut octet_gemm_options,
        struct_size: usize,
    ) -> octet_status;
    pub fn octet_gemm(
        context: *mut octet_context,
        a: *const octet_tensor,
        b: *const octet_tensor,
        d: *mut octet_tensor,
        options: *const octet_gemm_options,
    ) -> octet_status;
    pub fn octet_grouped_gemm_options_init_sized(
        options: *mut octet_grouped_gemm_options,
        struct_size: usize,
    ) -> octet_status;
    pub fn octet_grouped_gemm(
        context: *mut octet_context,
        group_count: usize,
        splits: *const i64,
        a: *const *const octet_tensor,
        a_count: usize,
        b: *const *const octet_tensor,
        b_count: usize,
        d: *const *mut octet_tensor,
        d_count: usize,
        options: *const octet_grouped_gemm_options,
    ) -> octet_status;

    // Numerics statistics
    pub fn octet_quantize_with_stats(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        options: *const octet_quantize_options,
        stats: *mut octet_quantize_stats,
    ) -> octet_status;

    // Scaling recipes
    pub fn octet_mxfp4_options_init(options: *mut octet_mxfp4_options) -> octet_status;
    pub fn octet_nvfp4_options_init(options: *mut octet_nvfp4_options) -> octet_status;
    pub fn octet_delayed_scaling_options_init(
        options: *mut octet_delayed_scaling_options,
    ) -> octet_status;
    /// The users' ABI 1.1 export: writes the 1.1-1.4 struct only. Call
    /// [`octet_current_scaling_options_init_sized`], as the header's macro does.
    pub fn octet_current_scaling_options_init(
        options: *mut octet_current_scaling_options,
    ) -> octet_status;
    pub fn octet_static_scaling_options_init(
        options: *mut octet_static_scaling_options,
    ) -> octet_status;
    pub fn octet_mxfp8_options_init(options: *mut octet_mxfp8_options) -> octet_status;
    pub fn octet_block_scaling_options_init(
        options: *mut octet_block_scaling_options,
    ) -> octet_status;
    pub fn octet_rowwise_scaling_options_init(
        options: *mut octet_rowwise_scaling_options,
    ) -> octet_status;
    pub fn octet_current_scaling_options_init_sized(
        options: *mut octet_current_scaling_options,
        struct_size: usize,
    ) -> octet_status;
    pub fn octet_recipe_create_delayed(
        options: *const octet_delayed_scaling_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_current(
        options: *const octet_current_scaling_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_static(
        options: *const octet_static_scaling_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_mxfp8(
        options: *const octet_mxfp8_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_block(
        options: *const octet_block_scaling_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_rowwise(
        options: *const octet_rowwise_scaling_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_mxfp4(
        options: *const octet_mxfp4_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_create_nvfp4(
        options: *const octet_nvfp4_options,
        recipe: *mut *mut octet_recipe,
    ) -> octet_status;
    pub fn octet_recipe_destroy(recipe: *mut octet_recipe);
    pub fn octet_recipe_get_info(
        recipe: *const octet_recipe,
        info: *mut octet_recipe_info,
    ) -> octet_status;
    pub fn octet_recipe_tensor_format(
        recipe: *const octet_recipe,
        role: i32,
        dtype: *mut i32,
        scaling_mode: *mut i32,
    ) -> octet_status;

    // Quantizers
    pub fn octet_quantizer_create(
        recipe: *const octet_recipe,
        role: i32,
        quantizer: *mut *mut octet_quantizer,
    ) -> octet_status;
    pub fn octet_quantizer_destroy(quantizer: *mut octet_quantizer);
    pub fn octet_quantizer_quantize(
        context: *mut octet_context,
        quantizer: *mut octet_quantizer,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        options: *const octet_quantize_options,
        stats: *mut octet_quantize_stats,
    ) -> octet_status;
    pub fn octet_quantizer_record_amax(quantizer: *mut octet_quantizer, amax: f32) -> octet_status;
    pub fn octet_quantizer_update_scale(quantizer: *mut octet_quantizer) -> octet_status;
    pub fn octet_quantizer_set_scale(quantizer: *mut octet_quantizer, scale: f32) -> octet_status;
    pub fn octet_quantizer_get_info(
        quantizer: *const octet_quantizer,
        info: *mut octet_quantizer_info,
    ) -> octet_status;
    pub fn octet_quantizer_get_amax_history(
        quantizer: *const octet_quantizer,
        out: *mut f32,
        length: usize,
    ) -> octet_status;
    pub fn octet_quantizer_save(
        quantizer: *const octet_quantizer,
        buffer: *mut c_void,
        capacity: usize,
        size: *mut usize,
    ) -> octet_status;
    pub fn octet_quantizer_load(
        quantizer: *mut octet_quantizer,
        buffer: *const c_void,
        size: usize,
    ) -> octet_status;

    // Autocast scopes and the communicator
    pub fn octet_context_set_communicator(
        context: *mut octet_context,
        communicator: *const octet_communicator,
    ) -> octet_status;
    pub fn octet_allreduce(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        op: i32,
    ) -> octet_status;
    pub fn octet_allgather(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_reduce_scatter(
        context: *mut octet_context,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        op: i32,
    ) -> octet_status;
    pub fn octet_context_get_communication_stats(
        context: *const octet_context,
        stats: *mut octet_communication_stats,
    ) -> octet_status;
    pub fn octet_context_reset_communication_stats(context: *mut octet_context) -> octet_status;
    pub fn octet_autocast_begin(
        context: *mut octet_context,
        recipe: *const octet_recipe,
    ) -> octet_status;
    pub fn octet_autocast_end(context: *mut octet_context) -> octet_status;
    pub fn octet_autocast_get_state(
        context: *const octet_context,
        depth: *mut i32,
        recipe: *mut *const octet_recipe,
    ) -> octet_status;

    // Layers
    pub fn octet_linear_options_init(options: *mut octet_linear_options) -> octet_status;
    pub fn octet_layernorm_linear_options_init(
        options: *mut octet_layernorm_linear_options,
    ) -> octet_status;
    pub fn octet_layernorm_mlp_options_init(
        options: *mut octet_layernorm_mlp_options,
    ) -> octet_status;
    pub fn octet_grouped_linear_options_init(
        options: *mut octet_grouped_linear_options,
    ) -> octet_status;
    pub fn octet_layer_create_linear(
        context: *mut octet_context,
        options: *const octet_linear_options,
        layer: *mut *mut octet_layer,
    ) -> octet_status;
    pub fn octet_layer_create_layernorm_linear(
        context: *mut octet_context,
        options: *const octet_layernorm_linear_options,
        layer: *mut *mut octet_layer,
    ) -> octet_status;
    pub fn octet_layer_create_layernorm_mlp(
        context: *mut octet_context,
        options: *const octet_layernorm_mlp_options,
        layer: *mut *mut octet_layer,
    ) -> octet_status;
    pub fn octet_layer_create_grouped_linear(
        context: *mut octet_context,
        options: *const octet_grouped_linear_options,
        layer: *mut *mut octet_layer,
    ) -> octet_status;
    pub fn octet_layer_destroy(layer: *mut octet_layer);
    pub fn octet_layer_parameter_count(
        layer: *const octet_layer,
        count: *mut usize,
    ) -> octet_status;
    pub fn octet_layer_parameter_name(
        layer: *const octet_layer,
        index: usize,
        name: *mut *const c_char,
    ) -> octet_status;
    pub fn octet_layer_find_parameter(
        layer: *const octet_layer,
        name: *const c_char,
        index: *mut usize,
    ) -> octet_status;
    pub fn octet_layer_get_parameter(
        layer: *mut octet_layer,
        index: usize,
        parameter: *mut *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_layer_get_gradient(
        layer: *mut octet_layer,
        index: usize,
        gradient: *mut *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_layer_set_weight(
        layer: *mut octet_layer,
        index: usize,
        weight: *const octet_tensor,
    ) -> octet_status;
    pub fn octet_layer_set_saved_weight(
        layer: *mut octet_layer,
        saved: *mut octet_saved,
        index: usize,
        weight: *const octet_tensor,
    ) -> octet_status;
    pub fn octet_layer_load_weight(
        layer: *mut octet_layer,
        index: usize,
        weight: *const octet_tensor,
    ) -> octet_status;
    pub fn octet_layer_new_step(layer: *mut octet_layer) -> octet_status;
    pub fn octet_layer_get_quantizer(
        layer: *mut octet_layer,
        linear_index: usize,
        role: i32,
        quantizer: *mut *mut octet_quantizer,
    ) -> octet_status;
    pub fn octet_layer_forward(
        layer: *mut octet_layer,
        input: *const octet_tensor,
        output: *mut octet_tensor,
        training: i32,
        saved: *mut *mut octet_saved,
    ) -> octet_status;
    pub fn octet_layer_forward_grouped(
        layer: *mut octet_layer,
        input: *const octet_tensor,
        group_count: usize,
        splits: *const i64,
        output: *mut octet_tensor,
        training: i32,
        saved: *mut *mut octet_saved,
    ) -> octet_status;
    pub fn octet_layer_backward(
        layer: *mut octet_layer,
        saved: *mut *mut octet_saved,
        grad_output: *const octet_tensor,
        grad_input: *mut octet_tensor,
        accumulate: i32,
    ) -> octet_status;
    pub fn octet_saved_destroy(saved: *mut octet_saved);

    // DLPack (octet_dlpack.h)
    pub fn octet_tensor_from_dlpack(
        context: *mut octet_context,
        managed: *mut octet_dlpack_managed_tensor_versioned,
        tensor: *mut *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_tensor_from_dlpack_legacy(
        context: *mut octet_context,
        managed: *mut octet_dlpack_managed_tensor,
        tensor: *mut *mut octet_tensor,
    ) -> octet_status;
    pub fn octet_tensor_to_dlpack(
        tensor: *mut octet_tensor,
        component: i32,
        managed: *mut *mut octet_dlpack_managed_tensor_versioned,
    ) -> octet_status;
    pub fn octet_tensor_to_dlpack_legacy(
        tensor: *mut octet_tensor,
        component: i32,
        managed: *mut *mut octet_dlpack_managed_tensor,
    ) -> octet_status;
}
