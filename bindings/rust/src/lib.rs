//! Rust bindings to Octet, a portable FP8 compute library, over its C ABI
//! (`octet.h`).
//!
//! Two layers:
//!
//! - [`sys`]: the raw declaration of every type, constant and function of
//!   `octet.h`, checked against the header by the crate's tests;
//! - this module: owning handles that free themselves ([`Context`],
//!   [`Tensor`], [`Recipe`], [`Quantizer`], [`Layer`], [`Saved`],
//!   [`Autocast`]), every
//!   fallible call returning [`Result`] with an [`Error`] that carries the
//!   status and the library's message, and host data passed as slices whose
//!   length is checked before the library sees them.
//!
//! # Threads
//!
//! `docs/abi.md`: global functions (versions, names, codecs, backend
//! enumeration) may be called from any thread; "a context, and the tensors
//! created on it, are used by one thread at a time" (a layer and its saved
//! handles count as the context's); a recipe is immutable and "may be shared
//! by any number of quantizers, contexts and threads". Hence:
//!
//! - [`Context`] is `Send` (it may move to another thread) but not `Sync`
//!   (two threads may not use it at once);
//! - [`Tensor`], [`Layer`], [`Saved`] and [`Autocast`] borrow their context,
//!   so they are neither `Send` nor `Sync` (a `&Context` is not `Send` when
//!   `Context` is not `Sync`), and a context can only move to another thread
//!   with nothing of it left behind;
//! - [`Quantizer`] is neither: its state lives in the memory of the backend
//!   it last quantized on, so it stays on that context's thread;
//! - [`Recipe`] is `Send` and `Sync`.
//!
//! These are checked at compile time (the compiler refuses each of these):
//!
//! ```compile_fail
//! fn sync<T: Sync>() {}
//! sync::<octet::Context>();
//! ```
//! ```compile_fail
//! fn send<T: Send>() {}
//! send::<octet::Tensor<'static>>();
//! ```
//! ```compile_fail
//! fn send<T: Send>() {}
//! send::<octet::Layer<'static>>();
//! ```
//! ```compile_fail
//! fn send<T: Send>() {}
//! send::<octet::Saved<'static>>();
//! ```
//! ```compile_fail
//! fn send<T: Send>() {}
//! send::<octet::Quantizer<'static>>();
//! ```
//! ```compile_fail
//! fn send<T: Send>() {}
//! send::<octet::DlpackTensor>();
//! ```
//! ```compile_fail
//! // A tensor cannot outlive its context.
//! let tensor = {
//!     let ctx = octet::Context::new("reference").unwrap();
//!     ctx.tensor_from_f32(&[1], &[1.0]).unwrap()
//! };
//! ```
//!
//! while these compile:
//!
//! ```
//! fn send<T: Send>() {}
//! fn sync<T: Sync>() {}
//! send::<octet::Context>();
//! send::<octet::Recipe>();
//! sync::<octet::Recipe>();
//! ```
//!
//! # Linking
//!
//! `build.rs` links `liboctet` from `OCTET_LIB_DIR`, by default the
//! repository's `build/lib`, and gives the crate's tests and examples an
//! rpath to it (docs/rust.md).
#![warn(missing_docs)]

use std::cell::Cell;
use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

#[allow(missing_docs)]
pub mod sys;

#[cfg(test)]
mod abi_check;

// ---- errors --------------------------------------------------------------------

/// The status of a failed call (`octet_status`, never `SUCCESS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The caller broke a documented rule.
    InvalidArgument,
    /// A valid request that this backend cannot do.
    Unsupported,
    /// An allocation failed.
    OutOfMemory,
    /// No such backend, file or entry.
    NotFound,
    /// The backend failed while running.
    BackendError,
    /// A plugin and the host cannot agree on a plugin ABI.
    AbiMismatch,
    /// The backend is loaded but has no usable device.
    Unavailable,
    /// A bug in Octet.
    Internal,
    /// A status this crate does not know (a newer library).
    Other(i32),
}

impl Status {
    /// The status from its code (`sys::OCTET_STATUS_*`); `None` for success.
    pub fn from_code(code: sys::octet_status) -> Option<Status> {
        Some(match code {
            sys::OCTET_STATUS_SUCCESS => return None,
            sys::OCTET_STATUS_INVALID_ARGUMENT => Status::InvalidArgument,
            sys::OCTET_STATUS_UNSUPPORTED => Status::Unsupported,
            sys::OCTET_STATUS_OUT_OF_MEMORY => Status::OutOfMemory,
            sys::OCTET_STATUS_NOT_FOUND => Status::NotFound,
            sys::OCTET_STATUS_BACKEND_ERROR => Status::BackendError,
            sys::OCTET_STATUS_ABI_MISMATCH => Status::AbiMismatch,
            sys::OCTET_STATUS_UNAVAILABLE => Status::Unavailable,
            sys::OCTET_STATUS_INTERNAL => Status::Internal,
            other => Status::Other(other),
        })
    }

    /// The C code of the status.
    pub fn code(self) -> sys::octet_status {
        match self {
            Status::InvalidArgument => sys::OCTET_STATUS_INVALID_ARGUMENT,
            Status::Unsupported => sys::OCTET_STATUS_UNSUPPORTED,
            Status::OutOfMemory => sys::OCTET_STATUS_OUT_OF_MEMORY,
            Status::NotFound => sys::OCTET_STATUS_NOT_FOUND,
            Status::BackendError => sys::OCTET_STATUS_BACKEND_ERROR,
            Status::AbiMismatch => sys::OCTET_STATUS_ABI_MISMATCH,
            Status::Unavailable => sys::OCTET_STATUS_UNAVAILABLE,
            Status::Internal => sys::OCTET_STATUS_INTERNAL,
            Status::Other(code) => code,
        }
    }

    /// The symbolic name, from `octet_status_name` ("OCTET_STATUS_UNSUPPORTED").
    pub fn name(self) -> &'static str {
        // SAFETY: octet_status_name returns a string in static storage.
        unsafe { static_str(sys::octet_status_name(self.code())) }
    }
}

/// A failed call: its status and the library's message
/// (`octet_last_error_message`, copied at once, since the library keeps it
/// only until the next call on the thread).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    message: String,
}

impl Error {
    /// The status the call returned.
    pub fn status(&self) -> Status {
        self.status
    }

    /// The library's explanation, naming the argument and the rule.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// An error raised by this crate before calling the library.
    fn invalid(message: String) -> Error {
        Error {
            status: Status::InvalidArgument,
            message,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

/// The result of a fallible call.
pub type Result<T> = std::result::Result<T, Error>;

/// A status into a `Result`, reading the thread's last error message on
/// failure. Call it right after the C call, on the same thread.
fn check(code: sys::octet_status) -> Result<()> {
    match Status::from_code(code) {
        None => Ok(()),
        Some(status) => Err(Error {
            status,
            message: last_error_message(),
        }),
    }
}

fn last_error_message() -> String {
    // SAFETY: the message is a valid C string until the next Octet call on
    // this thread; it is copied before any.
    unsafe {
        let message = sys::octet_last_error_message();
        if message.is_null() {
            String::new()
        } else {
            CStr::from_ptr(message).to_string_lossy().into_owned()
        }
    }
}

/// # Safety
/// `s` is NULL or a C string that lives as long as the process.
unsafe fn static_str(s: *const sys::c_char) -> &'static str {
    if s.is_null() {
        ""
    } else {
        CStr::from_ptr(s).to_str().unwrap_or("")
    }
}

fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::invalid(format!("{what} {s:?} contains a NUL byte")))
}

// ---- versions, dtypes, backends ---------------------------------------------------------

/// A version triple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// Major.
    pub major: u32,
    /// Minor.
    pub minor: u32,
    /// Patch.
    pub patch: u32,
}

impl From<sys::octet_version> for Version {
    fn from(v: sys::octet_version) -> Version {
        Version {
            major: v.major,
            minor: v.minor,
            patch: v.patch,
        }
    }
}

/// The version of the library actually loaded.
pub fn library_version() -> Version {
    // SAFETY: no arguments; callable from any thread.
    unsafe { sys::octet_library_version() }.into()
}

/// The users' ABI version of the library actually loaded (patch 0).
pub fn abi_version() -> Version {
    // SAFETY: as above.
    unsafe { sys::octet_abi_version() }.into()
}

/// Element types of tensors (`octet_dtype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32.
    Fp32,
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    Fp16,
    /// OCP FP8 E4M3FN.
    E4m3,
    /// OCP FP8 E5M2.
    E5m2,
    /// Unsigned power-of-two scale.
    E8m0,
}

impl DType {
    /// The C code (`sys::OCTET_DTYPE_*`).
    pub fn code(self) -> sys::octet_dtype {
        match self {
            DType::Fp32 => sys::OCTET_DTYPE_FP32,
            DType::Bf16 => sys::OCTET_DTYPE_BF16,
            DType::Fp16 => sys::OCTET_DTYPE_FP16,
            DType::E4m3 => sys::OCTET_DTYPE_E4M3,
            DType::E5m2 => sys::OCTET_DTYPE_E5M2,
            DType::E8m0 => sys::OCTET_DTYPE_E8M0,
        }
    }

    /// The dtype of a C code; `None` for an unknown one.
    pub fn from_code(code: sys::octet_dtype) -> Option<DType> {
        [
            DType::Fp32,
            DType::Bf16,
            DType::Fp16,
            DType::E4m3,
            DType::E5m2,
            DType::E8m0,
        ]
        .into_iter()
        .find(|d| d.code() == code)
    }

    /// Bytes per element (`octet_dtype_size`).
    pub fn size(self) -> usize {
        // SAFETY: a global function.
        unsafe { sys::octet_dtype_size(self.code()) }
    }

    /// "fp32", "bf16", ... (`octet_dtype_name`).
    pub fn name(self) -> &'static str {
        // SAFETY: static storage.
        unsafe { static_str(sys::octet_dtype_name(self.code())) }
    }
}

/// FP32 to FP8 (E4M3 or E5M2), rounding to nearest even
/// (`octet_fp8_encode`); `saturate` clamps overflow to +-max.
pub fn fp8_encode(value: f32, dtype: DType, saturate: bool) -> Result<u8> {
    if !matches!(dtype, DType::E4m3 | DType::E5m2) {
        return Err(Error::invalid(format!(
            "fp8_encode: {} is not an FP8 dtype",
            dtype.name()
        )));
    }
    // SAFETY: a global function.
    Ok(unsafe { sys::octet_fp8_encode(value, dtype.code(), saturate as i32) })
}

/// FP8 to FP32, exactly (`octet_fp8_decode`).
pub fn fp8_decode(code: u8, dtype: DType) -> Result<f32> {
    if !matches!(dtype, DType::E4m3 | DType::E5m2) {
        return Err(Error::invalid(format!(
            "fp8_decode: {} is not an FP8 dtype",
            dtype.name()
        )));
    }
    // SAFETY: a global function.
    Ok(unsafe { sys::octet_fp8_decode(code, dtype.code()) })
}

/// What a backend offers (`octet_backend_info`, strings copied).
#[derive(Clone, Debug)]
pub struct BackendInfo {
    /// "reference", "cpu", "cuda", ...
    pub name: String,
    /// The backend's own version string.
    pub version: String,
    /// Human-readable device name.
    pub device: String,
    /// Whether it has a usable device.
    pub available: bool,
    /// Why not, when it has none.
    pub unavailable_reason: String,
    /// `sys::OCTET_FEATURE_*` bits.
    pub features: u32,
    /// `sys::OCTET_SCALING_*` bits.
    pub scaling_modes: u32,
    /// The raw struct.
    pub raw: sys::octet_backend_info,
}

impl BackendInfo {
    fn from_raw(raw: sys::octet_backend_info) -> BackendInfo {
        // SAFETY: the strings live as long as the process (octet.h).
        unsafe {
            BackendInfo {
                name: static_str(raw.name).into(),
                version: static_str(raw.version).into(),
                device: static_str(raw.device).into(),
                available: raw.available != 0,
                unavailable_reason: static_str(raw.unavailable_reason).into(),
                features: raw.features,
                scaling_modes: raw.scaling_modes,
                raw,
            }
        }
    }
}

/// The sys structs that start with `size_t struct_size` and whose fields
/// are all integers, floats, raw pointers or `Option<fn>`: all-zero is a
/// valid value of each.
///
/// # Safety
/// Implement only for such structs.
unsafe trait SizedCStruct: Copy {}

macro_rules! sized_c_structs {
    ($($name:ident),*) => {$(
        // SAFETY: a #[repr(C)] sys struct starting with struct_size, with
        // only integer, float, raw pointer and Option<fn> fields.
        unsafe impl SizedCStruct for sys::$name {}
    )*};
}
sized_c_structs!(
    octet_backend_info,
    octet_context_options,
    octet_current_scaling_options,
    octet_layernorm_linear_options,
    octet_layernorm_mlp_options,
    octet_delayed_scaling_options,
    octet_linear_options,
    octet_mxfp4_options,
    octet_nvfp4_options,
    octet_quantizer_info,
    octet_recipe_info,
    octet_rowwise_scaling_options,
    octet_tensor_desc,
    octet_tensor_info
);

/// A zeroed struct with its struct_size set, ready for an `_init` or a get.
fn zeroed_with_size<T: SizedCStruct>() -> T {
    // SAFETY: all-zero is a valid T (SizedCStruct's contract).
    let mut value: T = unsafe { std::mem::zeroed() };
    // SAFETY: T is #[repr(C)] and starts with struct_size, a usize.
    unsafe { ptr::write(&mut value as *mut T as *mut usize, std::mem::size_of::<T>()) };
    value
}

/// The registered backends, in the library's order (`octet_backend_count`,
/// `octet_backend_get_info`); the first call discovers plugins.
pub fn backends() -> Result<Vec<BackendInfo>> {
    let mut count = 0usize;
    // SAFETY: global functions with valid out-pointers.
    unsafe {
        check(sys::octet_backend_count(&mut count))?;
        (0..count)
            .map(|index| {
                let mut info: sys::octet_backend_info = zeroed_with_size();
                check(sys::octet_backend_get_info(index, &mut info))?;
                Ok(BackendInfo::from_raw(info))
            })
            .collect()
    }
}

// ---- contexts ------------------------------------------------------------------------

/// Capability profiles (`octet_capability_profile`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Profile {
    /// What the backend declares.
    #[default]
    Native,
    /// TN-only FP8 GEMM, transposed copies.
    HopperLike,
    /// Native columnwise access, all layouts.
    BlackwellLike,
}

/// A context: one backend, its memory and its work (`octet_context`).
///
/// `Send` but not `Sync`: docs/abi.md allows a context and what was created
/// on it to be used by one thread at a time, any thread. Everything created
/// on it borrows it, so it moves to another thread only alone.
pub struct Context {
    raw: NonNull<sys::octet_context>,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: a context may be used from any thread, one at a time (docs/abi.md,
// "Thread safety"); `Context` is not `Sync`, and the handles created on it
// borrow it, so it can only move with nothing of it in use elsewhere.
unsafe impl Send for Context {}

impl Context {
    /// A context on the backend named `backend` ("reference", "cpu", "cuda",
    /// or "auto": the first available device backend, else a host one).
    pub fn new(backend: &str) -> Result<Context> {
        Context::with_profile(backend, Profile::Native)
    }

    /// A context presenting a capability profile.
    pub fn with_profile(backend: &str, profile: Profile) -> Result<Context> {
        let name = c_string("backend", backend)?;
        let mut options: sys::octet_context_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers; `name` outlives the create call, which
        // reads the options only while it runs.
        unsafe {
            check(sys::octet_context_options_init(&mut options))?;
            options.backend = name.as_ptr();
            options.capability_profile = match profile {
                Profile::Native => sys::OCTET_PROFILE_NATIVE,
                Profile::HopperLike => sys::OCTET_PROFILE_HOPPER_LIKE,
                Profile::BlackwellLike => sys::OCTET_PROFILE_BLACKWELL_LIKE,
            };
            check(sys::octet_context_create(&options, &mut raw))?;
        }
        Ok(Context {
            raw: NonNull::new(raw).expect("octet_context_create succeeded with NULL"),
            _not_sync: PhantomData,
        })
    }

    /// The raw handle, for calls through [`sys`]; it stays owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::octet_context {
        self.raw.as_ptr()
    }

    /// The capabilities in effect for this context (after the profile).
    pub fn info(&self) -> Result<BackendInfo> {
        let mut info: sys::octet_backend_info = zeroed_with_size();
        // SAFETY: a live context and a valid out-pointer.
        unsafe { check(sys::octet_context_get_info(self.as_ptr(), &mut info))? };
        Ok(BackendInfo::from_raw(info))
    }

    /// Waits until all work queued on the context has finished.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live context.
        unsafe { check(sys::octet_context_synchronize(self.as_ptr())) }
    }

    /// A new tensor in the context's memory; contents unspecified (a
    /// quantized tensor's SCALE starts at 1).
    pub fn tensor(&self, desc: &TensorDesc) -> Result<Tensor<'_>> {
        let raw_desc = desc.to_raw()?;
        let mut raw = ptr::null_mut();
        // SAFETY: a live context and valid pointers.
        unsafe { check(sys::octet_tensor_create(self.as_ptr(), &raw_desc, &mut raw))? };
        Ok(Tensor::owned(raw))
    }

    /// A plain FP32 tensor of `shape` holding a copy of `data`.
    pub fn tensor_from_f32(&self, shape: &[i64], data: &[f32]) -> Result<Tensor<'_>> {
        let mut tensor = self.tensor(&TensorDesc::new(DType::Fp32, shape))?;
        tensor.copy_from_host(data)?;
        Ok(tensor)
    }

    /// max |x| over a high-precision tensor (NaN ignored), `octet_amax`.
    pub fn amax(&self, input: &Tensor<'_>) -> Result<f32> {
        let mut amax = 0f32;
        // SAFETY: live handles, a valid out-pointer.
        unsafe { check(sys::octet_amax(self.as_ptr(), input.as_ptr(), &mut amax))? };
        Ok(amax)
    }

    /// `output = fp8(input * scale)` with the scale read from `output`'s
    /// SCALE component, every usage of `output`, saturating (`octet_quantize`
    /// with default options). `output` is a quantized tensor
    /// ([`TensorDesc::quantized`]).
    pub fn quantize(&self, input: &Tensor<'_>, output: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; NULL options are the defaults.
        unsafe {
            check(sys::octet_quantize(
                self.as_ptr(),
                input.as_ptr(),
                output.as_ptr(),
                ptr::null(),
            ))
        }
    }

    /// `output = decode(input) * scale_inv` (`octet_dequantize`).
    pub fn dequantize(&self, input: &Tensor<'_>, output: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles.
        unsafe {
            check(sys::octet_dequantize(
                self.as_ptr(),
                input.as_ptr(),
                output.as_ptr(),
            ))
        }
    }

    /// Opens an autocast scope with `recipe` (kept alive by the scope),
    /// closed when the returned guard is dropped or [`Autocast::end`]ed.
    pub fn autocast(&self, recipe: &Recipe) -> Result<Autocast<'_>> {
        // SAFETY: a live context and recipe.
        unsafe {
            check(sys::octet_autocast_begin(
                self.as_ptr(),
                recipe.raw.as_ptr(),
            ))?
        };
        Ok(Autocast {
            context: self,
            open: true,
        })
    }

    /// A Linear layer, `y = x W^T + b` (see [`LinearOptions`]).
    pub fn linear(&self, options: &LinearOptions) -> Result<Layer<'_>> {
        let mut raw_options: sys::octet_linear_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: a live context, valid pointers; the recipe pointer is read
        // at creation and the layer keeps its own reference.
        unsafe {
            check(sys::octet_linear_options_init(&mut raw_options))?;
            options.fill(&mut raw_options);
            check(sys::octet_layer_create_linear(
                self.as_ptr(),
                &raw_options,
                &mut raw,
            ))?;
        }
        Ok(Layer {
            raw: NonNull::new(raw).expect("octet_layer_create_linear succeeded with NULL"),
            _context: PhantomData,
        })
    }

    /// LayerNorm or RMSNorm over the last dimension, then a Linear
    /// (`linear.in_features` is the normalized size). Parameters:
    /// "norm_weight", "norm_bias" (LayerNorm only), "weight", "bias".
    pub fn layernorm_linear(
        &self,
        linear: &LinearOptions,
        norm: Norm,
        epsilon: f32,
    ) -> Result<Layer<'_>> {
        let mut raw_linear: sys::octet_linear_options = zeroed_with_size();
        let mut raw_options: sys::octet_layernorm_linear_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers; raw_linear outlives the create call, which
        // reads it only while it runs.
        unsafe {
            check(sys::octet_linear_options_init(&mut raw_linear))?;
            linear.fill(&mut raw_linear);
            check(sys::octet_layernorm_linear_options_init(&mut raw_options))?;
            raw_options.linear = &raw_linear;
            raw_options.norm = norm.code();
            raw_options.epsilon = epsilon;
            check(sys::octet_layer_create_layernorm_linear(
                self.as_ptr(),
                &raw_options,
                &mut raw,
            ))?;
        }
        Ok(Layer {
            raw: NonNull::new(raw)
                .expect("octet_layer_create_layernorm_linear succeeded with NULL"),
            _context: PhantomData,
        })
    }

    /// Norm, FC1 (hidden -> ffn, or 2*ffn for SwiGLU), activation, FC2
    /// (ffn -> hidden), with hidden = `linear.in_features` (its
    /// out_features is ignored). Parameters: "norm_weight", "norm_bias"
    /// (LayerNorm only), "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias".
    pub fn layernorm_mlp(
        &self,
        linear: &LinearOptions,
        ffn_features: i64,
        norm: Norm,
        activation: Activation,
        epsilon: f32,
    ) -> Result<Layer<'_>> {
        let mut raw_linear: sys::octet_linear_options = zeroed_with_size();
        let mut raw_options: sys::octet_layernorm_mlp_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: as in layernorm_linear.
        unsafe {
            check(sys::octet_linear_options_init(&mut raw_linear))?;
            linear.fill(&mut raw_linear);
            check(sys::octet_layernorm_mlp_options_init(&mut raw_options))?;
            raw_options.linear = &raw_linear;
            raw_options.ffn_features = ffn_features;
            raw_options.norm = norm.code();
            raw_options.activation = activation.code();
            raw_options.epsilon = epsilon;
            check(sys::octet_layer_create_layernorm_mlp(
                self.as_ptr(),
                &raw_options,
                &mut raw,
            ))?;
        }
        Ok(Layer {
            raw: NonNull::new(raw).expect("octet_layer_create_layernorm_mlp succeeded with NULL"),
            _context: PhantomData,
        })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: owned; nothing borrows it any more.
        unsafe { sys::octet_context_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("raw", &self.raw).finish()
    }
}

/// An open autocast scope; dropping it ends the scope (errors ignored: call
/// [`Autocast::end`] to see them).
#[must_use = "the scope ends when the guard is dropped"]
pub struct Autocast<'c> {
    context: &'c Context,
    open: bool,
}

impl Autocast<'_> {
    /// Ends the scope; the outermost one applies the delayed-scaling updates.
    pub fn end(mut self) -> Result<()> {
        self.open = false;
        // SAFETY: a live context with this scope open.
        unsafe { check(sys::octet_autocast_end(self.context.as_ptr())) }
    }
}

impl Drop for Autocast<'_> {
    fn drop(&mut self) {
        if self.open {
            // SAFETY: as in end.
            unsafe { sys::octet_autocast_end(self.context.as_ptr()) };
        }
    }
}

// ---- tensors ----------------------------------------------------------------------

/// Components of a tensor, for host copies (`octet_component`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// The (rowwise) data.
    Data,
    /// The physically transposed copy of a quantized tensor.
    ColumnwiseData,
    /// The per-tensor scale (FP32).
    Scale,
    /// Its inverse (FP32).
    ScaleInv,
    /// The recorded amax (FP32).
    Amax,
    /// Per-block scale_inv of the rowwise copy.
    RowwiseScaleInv,
    /// Per-block scale_inv of the columnwise copy.
    ColumnwiseScaleInv,
}

impl Component {
    fn code(self) -> sys::octet_component {
        match self {
            Component::Data => sys::OCTET_COMPONENT_DATA,
            Component::ColumnwiseData => sys::OCTET_COMPONENT_COLUMNWISE_DATA,
            Component::Scale => sys::OCTET_COMPONENT_SCALE,
            Component::ScaleInv => sys::OCTET_COMPONENT_SCALE_INV,
            Component::Amax => sys::OCTET_COMPONENT_AMAX,
            Component::RowwiseScaleInv => sys::OCTET_COMPONENT_ROWWISE_SCALE_INV,
            Component::ColumnwiseScaleInv => sys::OCTET_COMPONENT_COLUMNWISE_SCALE_INV,
        }
    }
}

/// What a tensor to create looks like (`octet_tensor_desc`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    /// Element type.
    pub dtype: DType,
    /// 1 to 8 dimensions, row-major.
    pub shape: Vec<i64>,
    /// FP8 only: 0 for plain codes, else `sys::OCTET_USAGE_*` (quantized).
    pub usages: u32,
    /// One `sys::OCTET_SCALING_*` for a quantized tensor (0: per tensor).
    pub scaling_mode: i32,
}

impl TensorDesc {
    /// A plain tensor.
    pub fn new(dtype: DType, shape: &[i64]) -> TensorDesc {
        TensorDesc {
            dtype,
            shape: shape.to_vec(),
            usages: 0,
            scaling_mode: 0,
        }
    }

    /// A quantized FP8 tensor (per-tensor scaling) with `usages`
    /// (`sys::OCTET_USAGE_*`): codes plus SCALE, SCALE_INV and AMAX.
    pub fn quantized(dtype: DType, shape: &[i64], usages: u32) -> TensorDesc {
        TensorDesc {
            usages,
            ..TensorDesc::new(dtype, shape)
        }
    }

    fn to_raw(&self) -> Result<sys::octet_tensor_desc> {
        if self.shape.is_empty() || self.shape.len() > sys::OCTET_MAX_DIMS {
            return Err(Error::invalid(format!(
                "a tensor has 1 to {} dimensions, not {}",
                sys::OCTET_MAX_DIMS,
                self.shape.len()
            )));
        }
        let mut raw: sys::octet_tensor_desc = zeroed_with_size();
        raw.dtype = self.dtype.code();
        raw.ndim = self.shape.len() as i32;
        raw.shape[..self.shape.len()].copy_from_slice(&self.shape);
        raw.usages = self.usages;
        raw.scaling_mode = self.scaling_mode;
        Ok(raw)
    }
}

/// Host element types for copies: `f32` (FP32), `u16` (BF16/FP16 codes),
/// `u8` (FP8/E8M0 codes). Sealed.
pub trait HostElement: Copy + private::Sealed {
    /// Whether a tensor of `dtype` holds elements of this type.
    fn matches(dtype: i32) -> bool;
    /// This type's name, for messages.
    const NAME: &'static str;
}

mod private {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for u16 {}
    impl Sealed for u8 {}
}

impl HostElement for f32 {
    fn matches(dtype: i32) -> bool {
        dtype == sys::OCTET_DTYPE_FP32
    }
    const NAME: &'static str = "f32";
}

impl HostElement for u16 {
    fn matches(dtype: i32) -> bool {
        dtype == sys::OCTET_DTYPE_BF16 || dtype == sys::OCTET_DTYPE_FP16
    }
    const NAME: &'static str = "u16";
}

impl HostElement for u8 {
    fn matches(dtype: i32) -> bool {
        [
            sys::OCTET_DTYPE_E4M3,
            sys::OCTET_DTYPE_E5M2,
            sys::OCTET_DTYPE_E8M0,
        ]
        .contains(&dtype)
    }
    const NAME: &'static str = "u8";
}

/// A tensor on a context (`octet_tensor`): owned (destroyed on drop) or
/// borrowed from a layer (a parameter or gradient, valid while the layer is
/// borrowed). Neither `Send` nor `Sync`: it is used by its context's thread.
pub struct Tensor<'a> {
    raw: NonNull<sys::octet_tensor>,
    owned: bool,
    _context: PhantomData<&'a Context>,
}

impl<'a> Tensor<'a> {
    fn owned(raw: *mut sys::octet_tensor) -> Tensor<'a> {
        Tensor {
            raw: NonNull::new(raw).expect("octet_tensor_create succeeded with NULL"),
            owned: true,
            _context: PhantomData,
        }
    }

    /// The raw handle, for calls through [`sys`]; it stays owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::octet_tensor {
        self.raw.as_ptr()
    }

    /// The tensor's description and sizes (`octet_tensor_get_info`).
    pub fn info(&self) -> Result<sys::octet_tensor_info> {
        let mut info: sys::octet_tensor_info = zeroed_with_size();
        // SAFETY: a live tensor and a valid out-pointer.
        unsafe { check(sys::octet_tensor_get_info(self.as_ptr(), &mut info))? };
        Ok(info)
    }

    /// The shape.
    pub fn shape(&self) -> Result<Vec<i64>> {
        let info = self.info()?;
        Ok(info.shape[..info.ndim as usize].to_vec())
    }

    /// The element type.
    pub fn dtype(&self) -> Result<DType> {
        let code = self.info()?.dtype;
        DType::from_code(code).ok_or_else(|| Error::invalid(format!("unknown dtype {code}")))
    }

    /// The size in bytes of one component and the dtype of its elements.
    fn component_bytes(&self, component: Component) -> Result<(u64, i32)> {
        let info = self.info()?;
        Ok(match component {
            Component::Data => (info.rowwise_bytes, info.dtype),
            Component::ColumnwiseData => (info.columnwise_bytes, info.dtype),
            Component::Scale | Component::ScaleInv | Component::Amax => (4, sys::OCTET_DTYPE_FP32),
            Component::RowwiseScaleInv => (info.rowwise_scale_inv_bytes, info.scale_inv_dtype),
            Component::ColumnwiseScaleInv => {
                (info.columnwise_scale_inv_bytes, info.scale_inv_dtype)
            }
        })
    }

    fn check_host<T: HostElement>(&self, component: Component, len: usize) -> Result<usize> {
        let (bytes, dtype) = self.component_bytes(component)?;
        // SAFETY: a global function.
        let dtype_name = unsafe { static_str(sys::octet_dtype_name(dtype)) };
        if !T::matches(dtype) {
            return Err(Error::invalid(format!(
                "{component:?} holds {dtype_name} elements, which a [{}] does not",
                T::NAME
            )));
        }
        let given = (len * std::mem::size_of::<T>()) as u64;
        if given != bytes {
            return Err(Error::invalid(format!(
                "{component:?} is {bytes} bytes ({} {dtype_name} elements), the slice {given} \
                 ({len} elements)",
                bytes / std::mem::size_of::<T>() as u64
            )));
        }
        Ok(bytes as usize)
    }

    /// Copies `data` into the tensor's data; its length must be the tensor's
    /// element count, and its type match the dtype (`f32` for FP32, `u16`
    /// for BF16/FP16 codes, `u8` for FP8 codes).
    pub fn copy_from_host<T: HostElement>(&mut self, data: &[T]) -> Result<()> {
        self.copy_component_from_host(Component::Data, data)
    }

    /// Copies the tensor's data into `out` (length and type as in
    /// [`Tensor::copy_from_host`]).
    pub fn copy_to_host<T: HostElement>(&self, out: &mut [T]) -> Result<()> {
        self.copy_component_to_host(Component::Data, out)
    }

    /// The tensor's data as a new vector.
    pub fn to_vec<T: HostElement + Default>(&self) -> Result<Vec<T>> {
        let (bytes, _) = self.component_bytes(Component::Data)?;
        let mut out = vec![T::default(); bytes as usize / std::mem::size_of::<T>()];
        self.copy_to_host(&mut out)?;
        Ok(out)
    }

    /// Copies one component from the host, its size checked first.
    pub fn copy_component_from_host<T: HostElement>(
        &mut self,
        component: Component,
        data: &[T],
    ) -> Result<()> {
        let bytes = self.check_host::<T>(component, data.len())?;
        // SAFETY: `data` holds exactly `bytes` bytes; a live tensor.
        unsafe {
            check(sys::octet_tensor_copy_from_host(
                self.as_ptr(),
                component.code(),
                data.as_ptr().cast(),
                bytes,
            ))
        }
    }

    /// Copies one component to the host, its size checked first.
    pub fn copy_component_to_host<T: HostElement>(
        &self,
        component: Component,
        out: &mut [T],
    ) -> Result<()> {
        let bytes = self.check_host::<T>(component, out.len())?;
        // SAFETY: `out` holds exactly `bytes` writable bytes; a live tensor.
        unsafe {
            check(sys::octet_tensor_copy_to_host(
                self.as_ptr(),
                component.code(),
                out.as_mut_ptr().cast(),
                bytes,
            ))
        }
    }
}

impl Drop for Tensor<'_> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: owned by this handle.
            unsafe { sys::octet_tensor_destroy(self.raw.as_ptr()) }
        }
    }
}

impl fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("raw", &self.raw)
            .field("owned", &self.owned)
            .finish()
    }
}

// ---- recipes -------------------------------------------------------------------------

/// FP8 formats of a recipe (`octet_fp8_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// E4M3 everywhere.
    E4m3,
    /// E5M2 everywhere.
    E5m2,
    /// E4M3 for inputs and weights, E5M2 for gradients.
    #[default]
    Hybrid,
}

impl Format {
    fn code(self) -> sys::octet_fp8_format {
        match self {
            Format::E4m3 => sys::OCTET_FORMAT_E4M3,
            Format::E5m2 => sys::OCTET_FORMAT_E5M2,
            Format::Hybrid => sys::OCTET_FORMAT_HYBRID,
        }
    }
}

/// A scaling recipe (`octet_recipe`): how scales are chosen.
///
/// `Send` and `Sync`: a recipe is immutable once created and may be shared
/// by any number of quantizers, contexts and threads (octet.h).
pub struct Recipe {
    raw: NonNull<sys::octet_recipe>,
}

// SAFETY: immutable after creation and documented as shareable across
// threads (octet.h, "Scaling recipes"); its destroy drops a reference count.
unsafe impl Send for Recipe {}
// SAFETY: as above.
unsafe impl Sync for Recipe {}

impl Recipe {
    fn from_raw(status: sys::octet_status, raw: *mut sys::octet_recipe) -> Result<Recipe> {
        check(status)?;
        Ok(Recipe {
            raw: NonNull::new(raw).expect("octet_recipe_create succeeded with NULL"),
        })
    }

    /// Current scaling: each tensor's scale from its own amax.
    pub fn current(format: Format) -> Result<Recipe> {
        let mut options: sys::octet_current_scaling_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: the sized init, as the header's macro calls it; valid pointers.
        unsafe {
            check(sys::octet_current_scaling_options_init_sized(
                &mut options,
                std::mem::size_of::<sys::octet_current_scaling_options>(),
            ))?;
            options.format = format.code();
            Recipe::from_raw(sys::octet_recipe_create_current(&options, &mut raw), raw)
        }
    }

    /// Delayed scaling with the library's defaults but for the format,
    /// margin and amax history length.
    pub fn delayed(format: Format, margin: i32, amax_history_len: i32) -> Result<Recipe> {
        let mut options: sys::octet_delayed_scaling_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers; no callbacks.
        unsafe {
            check(sys::octet_delayed_scaling_options_init(&mut options))?;
            options.format = format.code();
            options.margin = margin;
            options.amax_history_len = amax_history_len;
            Recipe::from_raw(sys::octet_recipe_create_delayed(&options, &mut raw), raw)
        }
    }

    /// MXFP4 (E2M1, 1x32 E8M0 scales, every role) with the library's
    /// defaults but for stochastic rounding of the gradient role and the
    /// seed of its random bits (numerics.md section 15).
    pub fn mxfp4(stochastic_rounding: bool, seed: u64) -> Result<Recipe> {
        let mut options: sys::octet_mxfp4_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers.
        unsafe {
            check(sys::octet_mxfp4_options_init(&mut options))?;
            options.stochastic_rounding = i32::from(stochastic_rounding);
            options.seed = seed;
            Recipe::from_raw(sys::octet_recipe_create_mxfp4(&options, &mut raw), raw)
        }
    }

    /// NVFP4 as Transformer Engine runs it (16x16 weight blocks, stochastic
    /// rounding of gradients, the random Hadamard transform of the
    /// weight-gradient operands), drawing its random bits from `seed`.
    pub fn nvfp4(seed: u64) -> Result<Recipe> {
        let mut options: sys::octet_nvfp4_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers.
        unsafe {
            check(sys::octet_nvfp4_options_init(&mut options))?;
            options.seed = seed;
            Recipe::from_raw(sys::octet_recipe_create_nvfp4(&options, &mut raw), raw)
        }
    }

    /// Rowwise scaling (torchao's "rowwise" recipe; with
    /// `high_precision_wgrad`, "rowwise_with_gw_hp"): one FP32 scale per
    /// row of each stored copy, the library's defaults but for the format.
    pub fn rowwise(format: Format, high_precision_wgrad: bool) -> Result<Recipe> {
        let mut options: sys::octet_rowwise_scaling_options = zeroed_with_size();
        let mut raw = ptr::null_mut();
        // SAFETY: valid pointers.
        unsafe {
            check(sys::octet_rowwise_scaling_options_init(&mut options))?;
            options.format = format.code();
            options.high_precision_wgrad = i32::from(high_precision_wgrad);
            Recipe::from_raw(sys::octet_recipe_create_rowwise(&options, &mut raw), raw)
        }
    }

    /// The raw handle, for calls through [`sys`]; it stays owned by `self`.
    pub fn as_ptr(&self) -> *const sys::octet_recipe {
        self.raw.as_ptr()
    }

    /// Kind, format and overrides (`octet_recipe_get_info`).
    pub fn info(&self) -> Result<sys::octet_recipe_info> {
        let mut info: sys::octet_recipe_info = zeroed_with_size();
        // SAFETY: a live recipe, a valid out-pointer.
        unsafe { check(sys::octet_recipe_get_info(self.as_ptr(), &mut info))? };
        Ok(info)
    }
}

/// Tensor roles of a quantizer (`octet_tensor_role`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A GEMM's input (activations).
    Input,
    /// A weight.
    Weight,
    /// A gradient.
    Gradient,
}

impl Role {
    fn code(self) -> sys::octet_tensor_role {
        match self {
            Role::Input => sys::OCTET_ROLE_INPUT,
            Role::Weight => sys::OCTET_ROLE_WEIGHT,
            Role::Gradient => sys::OCTET_ROLE_GRADIENT,
        }
    }
}

impl Recipe {
    /// The dtype and scaling mode (`sys::OCTET_SCALING_*`) a quantized
    /// tensor of `role` takes under this recipe (`octet_recipe_tensor_format`).
    pub fn tensor_format(&self, role: Role) -> Result<(DType, i32)> {
        let (mut dtype, mut mode) = (0, 0);
        // SAFETY: a live recipe, valid out-pointers.
        unsafe {
            check(sys::octet_recipe_tensor_format(
                self.as_ptr(),
                role.code(),
                &mut dtype,
                &mut mode,
            ))?
        };
        let dtype = DType::from_code(dtype)
            .ok_or_else(|| Error::invalid(format!("unknown dtype {dtype}")))?;
        Ok((dtype, mode))
    }

    /// A quantized tensor description for `role` under this recipe, with
    /// `usages` (`sys::OCTET_USAGE_*`).
    pub fn tensor_desc(&self, role: Role, shape: &[i64], usages: u32) -> Result<TensorDesc> {
        let (dtype, scaling_mode) = self.tensor_format(role)?;
        Ok(TensorDesc {
            scaling_mode,
            ..TensorDesc::quantized(dtype, shape, usages)
        })
    }
}

impl Drop for Recipe {
    fn drop(&mut self) {
        // SAFETY: owned by this handle (layers and scopes keep their own).
        unsafe { sys::octet_recipe_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Recipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recipe").field("raw", &self.raw).finish()
    }
}

// ---- quantizers ----------------------------------------------------------------------

/// The scaling state of one tensor role (`octet_quantizer`): owned (from
/// [`Quantizer::new`], destroyed on drop) or borrowed from a layer
/// ([`Layer::quantizer`]).
///
/// Neither `Send` nor `Sync`: octet.h ties no quantizer to a context, but
/// its state lives in the memory of the backend it last quantized on
/// (docs/recipes.md, "Where the scaling state lives"), so it is kept to one
/// thread, like that context.
pub struct Quantizer<'a> {
    raw: NonNull<sys::octet_quantizer>,
    owned: bool,
    _borrow: PhantomData<&'a ()>,
}

impl Quantizer<'static> {
    /// A quantizer of `role` under `recipe` (which it keeps alive).
    pub fn new(recipe: &Recipe, role: Role) -> Result<Quantizer<'static>> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live recipe, a valid out-pointer.
        unsafe {
            check(sys::octet_quantizer_create(
                recipe.as_ptr(),
                role.code(),
                &mut raw,
            ))?
        };
        Ok(Quantizer {
            raw: NonNull::new(raw).expect("octet_quantizer_create succeeded with NULL"),
            owned: true,
            _borrow: PhantomData,
        })
    }
}

impl Quantizer<'_> {
    /// The raw handle, for calls through [`sys`]; it stays owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::octet_quantizer {
        self.raw.as_ptr()
    }

    /// Quantizes `input` into `output` on `context` with the recipe's scale
    /// (current scaling: from this input's amax), recording the amax. The
    /// output's format must be [`Recipe::tensor_format`]'s.
    pub fn quantize(
        &mut self,
        context: &Context,
        input: &Tensor<'_>,
        output: &mut Tensor<'_>,
    ) -> Result<()> {
        // SAFETY: live handles; NULL options and stats are allowed.
        unsafe {
            check(sys::octet_quantizer_quantize(
                context.as_ptr(),
                self.as_ptr(),
                input.as_ptr(),
                output.as_ptr(),
                ptr::null(),
                ptr::null_mut(),
            ))
        }
    }

    /// Role, recipe kind, scale, scale_inv, amax and counters.
    pub fn info(&self) -> Result<sys::octet_quantizer_info> {
        let mut info: sys::octet_quantizer_info = zeroed_with_size();
        // SAFETY: a live quantizer, a valid out-pointer.
        unsafe { check(sys::octet_quantizer_get_info(self.as_ptr(), &mut info))? };
        Ok(info)
    }

    /// Sets the scale (and scale_inv = 1/scale).
    pub fn set_scale(&mut self, scale: f32) -> Result<()> {
        // SAFETY: a live quantizer.
        unsafe { check(sys::octet_quantizer_set_scale(self.as_ptr(), scale)) }
    }

    /// Records an amax measured elsewhere, as a quantize would.
    pub fn record_amax(&mut self, amax: f32) -> Result<()> {
        // SAFETY: a live quantizer.
        unsafe { check(sys::octet_quantizer_record_amax(self.as_ptr(), amax)) }
    }

    /// Applies the recipe's scale update (delayed scaling).
    pub fn update_scale(&mut self) -> Result<()> {
        // SAFETY: a live quantizer.
        unsafe { check(sys::octet_quantizer_update_scale(self.as_ptr())) }
    }

    /// The checkpoint bytes of the state (`octet_quantizer_save`).
    pub fn save(&self) -> Result<Vec<u8>> {
        let mut size = 0;
        // SAFETY: a NULL buffer asks for the size; then a buffer of that size.
        unsafe {
            check(sys::octet_quantizer_save(
                self.as_ptr(),
                ptr::null_mut(),
                0,
                &mut size,
            ))?;
            let mut bytes = vec![0u8; size];
            check(sys::octet_quantizer_save(
                self.as_ptr(),
                bytes.as_mut_ptr().cast(),
                bytes.len(),
                &mut size,
            ))?;
            bytes.truncate(size);
            Ok(bytes)
        }
    }

    /// Restores a state saved by [`Quantizer::save`] (same role, recipe kind
    /// and history length).
    pub fn load(&mut self, bytes: &[u8]) -> Result<()> {
        // SAFETY: a live quantizer; `bytes` is readable for its length.
        unsafe {
            check(sys::octet_quantizer_load(
                self.as_ptr(),
                bytes.as_ptr().cast(),
                bytes.len(),
            ))
        }
    }
}

impl Drop for Quantizer<'_> {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: owned by this handle.
            unsafe { sys::octet_quantizer_destroy(self.raw.as_ptr()) }
        }
    }
}

impl fmt::Debug for Quantizer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quantizer")
            .field("raw", &self.raw)
            .field("owned", &self.owned)
            .finish()
    }
}

// ---- layers ----------------------------------------------------------------------------

/// Options of a Linear layer (the fields of `octet_linear_options` that the
/// safe layer offers; the rest keep the library's defaults).
#[derive(Clone, Copy, Debug)]
pub struct LinearOptions<'r> {
    /// Input features (>= 1).
    pub in_features: i64,
    /// Output features (>= 1).
    pub out_features: i64,
    /// With a bias (default true).
    pub bias: bool,
    /// FP32 or BF16 parameters (default FP32).
    pub params_dtype: DType,
    /// The layer's own recipe; `None`: the autocast scope's, else high
    /// precision. The layer keeps its own reference.
    pub recipe: Option<&'r Recipe>,
    /// Quantize each weight once per step ([`Layer::new_step`]).
    pub weight_cache: bool,
}

impl LinearOptions<'_> {
    /// A Linear `in_features -> out_features` with bias, FP32 parameters.
    pub fn new(in_features: i64, out_features: i64) -> Self {
        LinearOptions {
            in_features,
            out_features,
            bias: true,
            params_dtype: DType::Fp32,
            recipe: None,
            weight_cache: false,
        }
    }

    fn fill(&self, raw: &mut sys::octet_linear_options) {
        raw.in_features = self.in_features;
        raw.out_features = self.out_features;
        raw.bias = self.bias as i32;
        raw.params_dtype = self.params_dtype.code();
        raw.recipe = self.recipe.map_or(ptr::null(), |r| r.as_ptr());
        raw.weight_cache = self.weight_cache as i32;
    }
}

/// Normalisations of the fused layers (`octet_norm_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Norm {
    /// LayerNorm (weight and bias).
    #[default]
    LayerNorm,
    /// RMSNorm (weight only).
    RmsNorm,
}

impl Norm {
    fn code(self) -> sys::octet_norm_kind {
        match self {
            Norm::LayerNorm => sys::OCTET_LAYER_LAYERNORM,
            Norm::RmsNorm => sys::OCTET_LAYER_RMSNORM,
        }
    }
}

/// Activations of LayerNormMLP (`octet_activation_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Activation {
    /// GELU.
    #[default]
    Gelu,
    /// SwiGLU (FC1 is twice as wide).
    SwiGlu,
}

impl Activation {
    fn code(self) -> sys::octet_activation_kind {
        match self {
            Activation::Gelu => sys::OCTET_LAYER_GELU,
            Activation::SwiGlu => sys::OCTET_LAYER_SWIGLU,
        }
    }
}

/// A layer on a context (`octet_layer`): it owns its parameters, their
/// gradients and its quantizers. Neither `Send` nor `Sync` (it borrows its
/// context, and counts as the context's for threads).
pub struct Layer<'c> {
    raw: NonNull<sys::octet_layer>,
    _context: PhantomData<&'c Context>,
}

/// What a training forward kept for its backward (`octet_saved`). It
/// borrows the layer and the input, which must stay alive and unchanged until
/// the backward has run.
#[must_use = "pass it to Layer::backward (dropping it releases what it holds)"]
pub struct Saved<'a> {
    raw: *mut sys::octet_saved,
    _borrows: PhantomData<&'a ()>,
}

impl Drop for Saved<'_> {
    fn drop(&mut self) {
        // SAFETY: owned; NULL after a backward consumed it, which is accepted.
        unsafe { sys::octet_saved_destroy(self.raw) }
    }
}

impl<'c> Layer<'c> {
    /// The raw handle, for calls through [`sys`]; it stays owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::octet_layer {
        self.raw.as_ptr()
    }

    /// Index of a parameter by name ("weight", "bias", ...).
    pub fn find_parameter(&self, name: &str) -> Result<usize> {
        let name = c_string("parameter name", name)?;
        let mut index = 0;
        // SAFETY: a live layer, valid pointers.
        unsafe {
            check(sys::octet_layer_find_parameter(
                self.as_ptr(),
                name.as_ptr(),
                &mut index,
            ))?
        };
        Ok(index)
    }

    /// The names of the parameters, in the layer's order.
    pub fn parameter_names(&self) -> Result<Vec<String>> {
        let mut count = 0;
        // SAFETY: a live layer; names live as long as the layer and are copied.
        unsafe {
            check(sys::octet_layer_parameter_count(self.as_ptr(), &mut count))?;
            (0..count)
                .map(|i| {
                    let mut name = ptr::null();
                    check(sys::octet_layer_parameter_name(self.as_ptr(), i, &mut name))?;
                    Ok(CStr::from_ptr(name).to_string_lossy().into_owned())
                })
                .collect()
        }
    }

    /// A parameter tensor, borrowed from the layer.
    pub fn parameter(&self, index: usize) -> Result<Tensor<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live layer; the tensor lives until the layer is destroyed,
        // which the returned borrow prevents.
        unsafe {
            check(sys::octet_layer_get_parameter(
                self.as_ptr(),
                index,
                &mut raw,
            ))?
        };
        Ok(Tensor {
            raw: NonNull::new(raw).expect("octet_layer_get_parameter succeeded with NULL"),
            owned: false,
            _context: PhantomData,
        })
    }

    /// The gradient of a parameter, borrowed from the layer (zero-filled if
    /// asked before any backward).
    pub fn gradient(&self, index: usize) -> Result<Tensor<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: as in parameter.
        unsafe {
            check(sys::octet_layer_get_gradient(
                self.as_ptr(),
                index,
                &mut raw,
            ))?
        };
        Ok(Tensor {
            raw: NonNull::new(raw).expect("octet_layer_get_gradient succeeded with NULL"),
            owned: false,
            _context: PhantomData,
        })
    }

    /// `output = layer(input)` for training: the returned handle is what
    /// [`Layer::backward`] needs.
    pub fn forward<'a>(
        &'a self,
        input: &'a Tensor<'_>,
        output: &mut Tensor<'_>,
    ) -> Result<Saved<'a>> {
        let mut saved = ptr::null_mut();
        // SAFETY: live handles; the saved handle borrows the layer and input.
        unsafe {
            check(sys::octet_layer_forward(
                self.as_ptr(),
                input.as_ptr(),
                output.as_ptr(),
                1,
                &mut saved,
            ))?
        };
        Ok(Saved {
            raw: saved,
            _borrows: PhantomData,
        })
    }

    /// `output = layer(input)`, keeping nothing for a backward.
    pub fn infer(&self, input: &Tensor<'_>, output: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; saved may be NULL with training = 0.
        unsafe {
            check(sys::octet_layer_forward(
                self.as_ptr(),
                input.as_ptr(),
                output.as_ptr(),
                0,
                ptr::null_mut(),
            ))
        }
    }

    /// Backward of the forward that returned `saved` (consumed):
    /// `grad_output` is dL/doutput; `grad_input`, if given, receives
    /// dL/dinput; the parameter gradients are overwritten, or added to with
    /// `accumulate`.
    pub fn backward(
        &self,
        mut saved: Saved<'_>,
        grad_output: &Tensor<'_>,
        grad_input: Option<&mut Tensor<'_>>,
        accumulate: bool,
    ) -> Result<()> {
        // SAFETY: live handles. The call sets saved.raw to NULL when it
        // consumed the handle; Drop destroys whatever is left.
        unsafe {
            check(sys::octet_layer_backward(
                self.as_ptr(),
                &mut saved.raw,
                grad_output.as_ptr(),
                grad_input.map_or(ptr::null_mut(), |t| t.as_ptr()),
                accumulate as i32,
            ))
        }
    }

    /// The quantizer of `role` of linear `linear_index` (0: the only one),
    /// borrowed from the layer.
    pub fn quantizer(&self, linear_index: usize, role: Role) -> Result<Quantizer<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live layer; the quantizer lives as long as the layer,
        // which the returned borrow guarantees.
        unsafe {
            check(sys::octet_layer_get_quantizer(
                self.as_ptr(),
                linear_index,
                role.code(),
                &mut raw,
            ))?
        };
        Ok(Quantizer {
            raw: NonNull::new(raw).expect("octet_layer_get_quantizer succeeded with NULL"),
            owned: false,
            _borrow: PhantomData,
        })
    }

    /// The optimizer stepped: cached FP8 weights are quantized again.
    pub fn new_step(&self) -> Result<()> {
        // SAFETY: a live layer.
        unsafe { check(sys::octet_layer_new_step(self.as_ptr())) }
    }
}

impl Drop for Layer<'_> {
    fn drop(&mut self) {
        // SAFETY: owned; borrowed parameters and saved handles cannot outlive
        // the borrow of self.
        unsafe { sys::octet_layer_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Layer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layer").field("raw", &self.raw).finish()
    }
}

// ---- DLPack ---------------------------------------------------------------------------

/// An owned DLPack tensor (`DLManagedTensorVersioned`, under Octet's name
/// `octet_dlpack_managed_tensor_versioned`, `octet_dlpack.h`): what
/// [`Tensor::to_dlpack`] exports, or what another producer hands over to
/// import with [`Context::tensor_from_dlpack`]. Its deleter runs exactly
/// once: on drop, unless [`DlpackTensor::into_raw`] handed it on.
///
/// Neither `Send` nor `Sync`: the deleter of an export may free Octet memory,
/// which must happen on a thread that may use the tensor's context
/// (docs/abi.md, "Thread safety").
pub struct DlpackTensor {
    raw: NonNull<sys::octet_dlpack_managed_tensor_versioned>,
    _not_send_sync: PhantomData<*mut u8>,
}

impl DlpackTensor {
    /// Takes ownership of a producer's struct (None for NULL).
    ///
    /// # Safety
    /// `raw` is NULL or a valid `DLManagedTensorVersioned` that nobody else
    /// will delete: its deleter (if any) may be called once, by this object
    /// or by the Octet tensor it is imported into, and its memory is what
    /// `dl_tensor` describes until then.
    pub unsafe fn from_raw(
        raw: *mut sys::octet_dlpack_managed_tensor_versioned,
    ) -> Option<DlpackTensor> {
        NonNull::new(raw).map(|raw| DlpackTensor {
            raw,
            _not_send_sync: PhantomData,
        })
    }

    /// Hands the struct on (to a consumer that will call its deleter once).
    pub fn into_raw(self) -> *mut sys::octet_dlpack_managed_tensor_versioned {
        let raw = self.raw.as_ptr();
        std::mem::forget(self);
        raw
    }

    /// The struct, still owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::octet_dlpack_managed_tensor_versioned {
        self.raw.as_ptr()
    }

    /// The described tensor (`DLTensor`).
    pub fn dl_tensor(&self) -> &sys::octet_dlpack_tensor {
        // SAFETY: valid while self owns it (from_raw's contract).
        unsafe { &self.raw.as_ref().dl_tensor }
    }

    /// `(device_type, device_id)`: `OCTET_DLPACK_DEVICE_*`.
    pub fn device(&self) -> (i32, i32) {
        let d = self.dl_tensor().device;
        (d.device_type, d.device_id)
    }

    /// The shape.
    pub fn shape(&self) -> &[i64] {
        let t = self.dl_tensor();
        if t.ndim <= 0 || t.shape.is_null() {
            return &[];
        }
        // SAFETY: DLPack's shape holds ndim entries.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// The Octet dtype of the elements (`octet_dtype_from_dlpack`).
    pub fn dtype(&self) -> Result<DType> {
        let t = self.dl_tensor();
        if t.dtype.lanes != 1 {
            return Err(Error::invalid(format!(
                "a DLPack dtype with {} lanes has no Octet dtype",
                t.dtype.lanes
            )));
        }
        let mut code = 0;
        // SAFETY: a global function and a valid out-pointer.
        unsafe {
            check(sys::octet_dtype_from_dlpack(
                t.dtype.code,
                t.dtype.bits,
                &mut code,
            ))?
        };
        DType::from_code(code).ok_or_else(|| Error::invalid(format!("unknown dtype {code}")))
    }

    /// Where host code may read the elements: checks that the memory is the
    /// host's, compact row-major, of `T`'s dtype.
    fn host_elements<T: HostElement>(&self) -> Result<(*mut T, usize)> {
        let t = self.dl_tensor();
        let (device, _) = self.device();
        if ![
            sys::OCTET_DLPACK_DEVICE_CPU,
            sys::OCTET_DLPACK_DEVICE_CUDA_HOST,
            sys::OCTET_DLPACK_DEVICE_CUDA_MANAGED,
        ]
        .contains(&device)
        {
            return Err(Error::invalid(format!(
                "the DLPack tensor is on device type {device}, not host memory: it has no host slice"
            )));
        }
        let dtype = self.dtype()?.code();
        if !T::matches(dtype) {
            // SAFETY: a global function.
            let name = unsafe { static_str(sys::octet_dtype_name(dtype)) };
            return Err(Error::invalid(format!(
                "the DLPack tensor holds {name} elements, which a [{}] does not",
                T::NAME
            )));
        }
        let shape = self.shape();
        if !t.strides.is_null() {
            // SAFETY: DLPack's strides hold ndim entries.
            let strides = unsafe { std::slice::from_raw_parts(t.strides, shape.len()) };
            let mut expected = 1i64;
            for (size, stride) in shape.iter().zip(strides).rev() {
                if *size != 1 && *stride != expected {
                    return Err(Error::invalid(
                        "the DLPack tensor is not compact row-major: it has no slice view".into(),
                    ));
                }
                expected *= size;
            }
        }
        let count = shape.iter().product::<i64>().max(0) as usize;
        // SAFETY: the first element is at data + byte_offset (DLPack).
        let first = unsafe { (t.data as *mut u8).add(t.byte_offset as usize) } as *mut T;
        if count > 0 && (first.is_null() || first as usize % std::mem::align_of::<T>() != 0) {
            return Err(Error::invalid(
                "the DLPack tensor's data is NULL or misaligned for its type".into(),
            ));
        }
        Ok((first, count))
    }

    /// The elements as a host slice (`f32` for FP32, `u16` for BF16/FP16
    /// codes, `u8` for FP8/E8M0 codes): no copy.
    pub fn as_slice<T: HostElement>(&self) -> Result<&[T]> {
        let (first, count) = self.host_elements::<T>()?;
        if count == 0 {
            return Ok(&[]);
        }
        // SAFETY: checked above: host memory of `count` elements of T, alive while self is.
        Ok(unsafe { std::slice::from_raw_parts(first, count) })
    }

    /// The elements as a mutable host slice; refused for read-only memory
    /// (`OCTET_DLPACK_FLAG_READ_ONLY`).
    pub fn as_mut_slice<T: HostElement>(&mut self) -> Result<&mut [T]> {
        // SAFETY: valid while self owns it.
        if unsafe { self.raw.as_ref().flags } & sys::OCTET_DLPACK_FLAG_READ_ONLY != 0 {
            return Err(Error::invalid("the DLPack tensor is read-only".into()));
        }
        let (first, count) = self.host_elements::<T>()?;
        if count == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in as_slice; &mut self makes the borrow exclusive.
        Ok(unsafe { std::slice::from_raw_parts_mut(first, count) })
    }
}

impl Drop for DlpackTensor {
    fn drop(&mut self) {
        // SAFETY: owned by self; the deleter is called once.
        unsafe {
            if let Some(deleter) = self.raw.as_ref().deleter {
                deleter(self.raw.as_ptr());
            }
        }
    }
}

impl fmt::Debug for DlpackTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DlpackTensor")
            .field("raw", &self.raw)
            .field("device", &self.device())
            .field("shape", &self.shape())
            .finish()
    }
}

impl Tensor<'_> {
    /// Exports one component without copying (`octet_tensor_to_dlpack`):
    /// `Component::Data` (a quantized tensor's FP8 codes), its scales
    /// (`Scale`, `ScaleInv`, `Amax`, the block grids) or its
    /// `ColumnwiseData`. The export keeps the memory alive after the
    /// tensor is dropped.
    pub fn to_dlpack(&self, component: Component) -> Result<DlpackTensor> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live tensor and a valid out-pointer.
        unsafe {
            check(sys::octet_tensor_to_dlpack(
                self.as_ptr(),
                component.code(),
                &mut raw,
            ))?;
            Ok(DlpackTensor::from_raw(raw).expect("octet_tensor_to_dlpack succeeded with NULL"))
        }
    }
}

impl Context {
    /// A tensor on this context over the memory `managed` describes, without
    /// copying (`octet_tensor_from_dlpack`); the tensor then owns `managed`
    /// (its deleter runs when the last Octet user lets go). Refused with the
    /// library's message (non-contiguous, misaligned, read-only, another
    /// device, a dtype Octet lacks); `managed` is then dropped, which calls
    /// its deleter, as a DLPack consumer that is done with it must.
    pub fn tensor_from_dlpack(&self, managed: DlpackTensor) -> Result<Tensor<'_>> {
        let mut raw = ptr::null_mut();
        // SAFETY: a live context; a valid struct that Octet owns on success.
        unsafe {
            check(sys::octet_tensor_from_dlpack(
                self.as_ptr(),
                managed.as_ptr(),
                &mut raw,
            ))?
        };
        let _ = managed.into_raw(); // Octet owns it now
        Ok(Tensor::owned(raw))
    }
}

/// docs/rust.md: its `rust` code blocks run as doctests, so the page's
/// examples cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/rust.md")]
pub struct DocsRustMd;
