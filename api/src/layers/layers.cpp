// Layers: Linear, LayerNormLinear, LayerNormMLP (docs/layers.md). The core
// composes them from backend kernels: GEMMs through run_gemm (usages adapted
// to the backend's capabilities), quantization through quantize_into with the
// layer's quantizers, and the plugin ABI 1.2 kernels (norm, activation, bias
// gradient, accumulate).
#include "layers/layer_state.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/gemm.hpp"
#include "ops/quantize.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"
#include "scaling/autocast_scope.hpp"
#include "tensor/dtype.hpp"

namespace octet::core {
namespace {

using Ctx = std::shared_ptr<ContextState>;

std::atomic<uint64_t> next_layer_id{1};

TensorPtr make_plain(const Ctx& ctx, octet_dtype dtype, int64_t rows, int64_t cols, int32_t category) {
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.ndim = 2;
  d.shape[0] = rows;
  d.shape[1] = cols;
  return TensorPtr(create_tensor(ctx, d, category).release());
}

TensorPtr make_fp8(const Ctx& ctx, octet_dtype dtype, int64_t rows, int64_t cols, uint32_t usages,
                   int32_t scaling_mode = OCTET_SCALING_PER_TENSOR) {
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.ndim = 2;
  d.shape[0] = rows;
  d.shape[1] = cols;
  d.usages = usages;
  d.scaling_mode = scaling_mode;
  return TensorPtr(create_tensor(ctx, d, OCTET_MEMORY_QUANTIZED_COPIES).release());
}

void fill_zero(TensorState& t) {
  std::vector<unsigned char> zeros =
      host_array<unsigned char>(size_t(t.numel()) * t.element_bytes(), "the zeros that clear a tensor");
  t.data.copy_from_host(zeros.data(), zeros.size());
}

bool has_feature(const ContextState& ctx, uint32_t feature) { return (ctx.backend->features & feature) != 0; }

void copy_into(const ContextState& ctx, const TensorState& src, TensorState& dst) {
  require_entry(ctx, ctx.api().convert != nullptr, "convert");
  octet_matrix_view in = src.rowwise_view(), out = dst.rowwise_view();
  call_backend(ctx, "convert", [&] { return ctx.api().convert(ctx.handle, &in, &out, 1); });
}

TensorPtr copy_of(const Ctx& ctx, const TensorState& src, int32_t category) {
  TensorPtr t = make_plain(ctx, src.dtype, src.rows, src.cols, category);
  copy_into(*ctx, src, t->state);
  return t;
}

// y = x (+ y): FP32 sums into a gradient of the parameter dtype.
void accumulate_into(const ContextState& ctx, const TensorState& x, TensorState& y, bool accumulate) {
  require_entry(ctx, has_feature(ctx, OCTET_FEATURE_ACCUMULATE), "accumulate");
  octet_matrix_view vx{x.data.data(), x.dtype, 0, 1, x.numel(), x.numel()};
  octet_matrix_view vy{y.data.data(), y.dtype, 0, 1, y.numel(), y.numel()};
  call_backend(ctx, "accumulate", [&] { return ctx.api().accumulate(ctx.handle, &vx, &vy, accumulate ? 1 : 0); });
}

// ---- precision ----------------------------------------------------------

struct Precision {
  std::shared_ptr<const RecipeState> recipe;  // null: high precision
  bool fprop = false, dgrad = false, wgrad = false;  // FP8 per GEMM
};

Precision precision_of(const std::shared_ptr<const RecipeState>& r) {
  Precision p;
  if (!r) return p;
  p.recipe = r;
  const bool delayed = r->kind == OCTET_RECIPE_DELAYED;
  p.fprop = !(delayed && r->delayed.override_fprop);
  p.dgrad = !(delayed && r->delayed.override_dgrad);
  p.wgrad = !(delayed && r->delayed.override_wgrad);
  return p;
}

bool fp8_only(const LayerState& L) { return L.options.weight_storage == OCTET_WEIGHTS_FP8_ONLY; }

// ---- quantization through a layer's quantizers ---------------------------

struct Quantized {
  TensorPtr tensor;
  UsedScale scale;
};

const std::shared_ptr<QuantizerState>& quantizer(LinearUnit& u, int32_t role) {
  return u.quantizers[size_t(role)]->state;
}

// Static scaling with observe = 1: every quantize of new data is counted
// through the statistics kernel (numerics.md section 10), so nothing is fused.
bool observing(const RecipeState& r) { return r.kind == OCTET_RECIPE_STATIC && r.fixed.observe != 0; }

// Whether a quantize can be fused into another kernel's pass (norm forward,
// bias gradient): per-tensor with the scale known before the data.
bool fusable(const RecipeState& r) {
  return r.per_tensor() && r.kind != OCTET_RECIPE_CURRENT && !observing(r);
}

// A quantized tensor of `role` in the recipe's dtype and scaling mode (block
// recipes: 1x32 MXFP8, 1x128 for inputs and gradients, 128x128 for weights).
TensorPtr make_role(const Ctx& ctx, const RecipeState& r, int32_t role, int64_t rows, int64_t cols, uint32_t usages) {
  return make_fp8(ctx, r.dtype_for(role), rows, cols, usages, r.scaling_mode_for(role));
}

float read_scalar(const TensorState& t, ScalarSlot slot) {
  float v = 0.0f;
  t.scalars.copy_to_host(&v, sizeof(v), sizeof(float) * size_t(slot));
  return v;
}

void write_scale(TensorState& t, float scale) { t.scalars.copy_from_host(&scale, sizeof(scale), sizeof(float) * kScale); }

// Quantizes `in` for `usages` with role `role`'s quantizer (into `into` if
// given, else a new tensor) and records the amax: the quantizer bookkeeping
// octet_quantizer_quantize does (quantize_through).
Quantized quantize_role(const Ctx& ctx, LinearUnit& u, int32_t role, const std::shared_ptr<const RecipeState>& r,
                        const TensorState& in, uint32_t usages, TensorPtr into = nullptr) {
  Quantized out;
  out.tensor = into ? into : make_role(ctx, *r, role, in.rows, in.cols, usages);
  out.scale = quantize_through(ctx, quantizer(u, role), r, in, out.tensor->state, usages, true, nullptr);
  return out;
}

// Keeps the scale `t` was quantized with (see KeptScale): on the device
// path a copy of its SCALE, made now because `t` may be freed before
// backward.
KeptScale keep_scale(const Ctx& ctx, const TensorState& t, const UsedScale& used) {
  KeptScale kept;
  kept.host = used.host;
  if (used.on_device && t.scaling_mode == OCTET_SCALING_PER_TENSOR) {  // block scales: from the data
    kept.device = std::make_shared<Buffer>(ctx, sizeof(float), OCTET_MEMORY_SAVED_ACTIVATIONS);
    copy_floats(*ctx, t.scalar(kScale), static_cast<float*>(kept.device->data()), 1);
  }
  return kept;
}

// The same codes again (the scale used before, or the block scales, which
// the data determine); nothing is recorded.
TensorPtr requantize(const Ctx& ctx, const TensorState& in, const RecipeState& r, int32_t role, uint32_t usages,
                     const KeptScale& scale) {
  TensorPtr t = make_role(ctx, r, role, in.rows, in.cols, usages);
  if (r.per_tensor()) {
    if (scale.device)
      copy_floats(*ctx, static_cast<const float*>(scale.device->data()), t->state.scalar(kScale), 1);
    else
      write_scale(t->state, scale.host);
  }
  quantize_into(ctx, in, t->state, usages, true, r.block_params(), nullptr);
  return t;
}

// After the rowwise usage was consumed: keep only the columnwise one (frees
// the rowwise copy, and its block scales, where the columnwise usage is a
// separate copy).
void keep_columnwise_only(TensorState& t) {
  if (t.columnwise) {
    t.data = Buffer();
    t.rowwise_scale_inv = Buffer();
  }
  t.usages = OCTET_USAGE_COLUMNWISE;
}

// Usages of the FP8 weight in forward: rowwise for fprop, plus the
// columnwise usage when a backward (or a cached weight) will read W
// transposed and needs a copy for it:
// - block recipes: always (the columnwise usage is its own quantization of
//   W^T, numerics.md section 11);
// - per-tensor recipes: only where the backend has no native columnwise
//   access (TN-only FP8 GEMMs). dgrad then reads the transposed codes, and
//   writing them in forward's fused cast+transpose pass costs N x K bytes
//   written, where transposing the rowwise codes in backward reads and
//   writes N x K each (and needs an N x K workspace), per micro-batch for a
//   cached weight. With native access dgrad reads the rowwise codes as they
//   are.
// An FP8-only weight is the stored parameter: rowwise, as it is.
uint32_t weight_usages(const ContextState& ctx, const LayerState& L, const RecipeState& r, bool training,
                       bool dgrad) {
  if (L.options.weight_storage == OCTET_WEIGHTS_FP8_ONLY) return OCTET_USAGE_ROWWISE;
  if (r.per_tensor() && ctx.caps.native_columnwise) return OCTET_USAGE_ROWWISE;
  if ((training && dgrad && !L.options.minimize_memory) || L.options.weight_cache)
    return OCTET_USAGE_ROWWISE | OCTET_USAGE_COLUMNWISE;
  return OCTET_USAGE_ROWWISE;
}

// Fills a backend quantize call for writing `t`'s requested usages in a
// fused pass (as quantize_into does); false if the backend cannot do both
// copies in one pass.
bool fused_quantize_args(const ContextState& ctx, TensorState& t, uint32_t usages, octet_quantize_args& args) {
  const bool native = ctx.caps.native_columnwise != 0;
  const bool transposed = (usages & OCTET_USAGE_COLUMNWISE) && bool(t.columnwise);
  if (transposed && !ctx.caps.fused_cast_transpose) return false;
  args = octet_quantize_args{};
  args.struct_size = sizeof(args);
  args.out_dtype = t.dtype;
  args.saturate = 1;
  args.scale = t.scalar(kScale);
  args.scale_inv_out = t.scalar(kScaleInv);
  args.amax_out = t.scalar(kAmax);
  const bool rowwise = (usages & OCTET_USAGE_ROWWISE) || ((usages & OCTET_USAGE_COLUMNWISE) && native);
  args.rowwise_out = rowwise ? static_cast<uint8_t*>(t.data.data()) : nullptr;
  args.columnwise_out = transposed ? static_cast<uint8_t*>(t.columnwise.data()) : nullptr;
  return true;
}

// ---- parameters -----------------------------------------------------------

TensorState& ensure_grad(LayerState& L, Parameter& p, bool* fresh) {
  *fresh = !p.grad;
  if (!p.grad) {
    octet_tensor_desc d{};
    d.struct_size = sizeof(d);
    d.dtype = L.options.params_dtype;
    d.ndim = p.ndim;
    d.shape[0] = p.shape[0];
    d.shape[1] = p.shape[1];
    p.grad = TensorPtr(create_tensor(L.ctx, d, OCTET_MEMORY_PARAMETERS).release());
  }
  return p.grad->state;
}

const TensorState* weight_hp(const LayerState& L, const LinearUnit& u) {
  if (fp8_only(L)) return nullptr;
  const TensorState* w = L.params[u.weight].tensor();
  require(w != nullptr, "parameter '", L.params[u.weight].name,
          "' is not set: the layer was created with skip_weight_allocation; give it with octet_layer_set_weight");
  return w;
}

octet_gemm_options gemm_options(int32_t trans_a, int32_t trans_b, float beta, const octet_tensor* bias) {
  octet_gemm_options o{};
  o.struct_size = sizeof(o);
  o.trans_a = trans_a;
  o.trans_b = trans_b;
  o.alpha = 1.0f;
  o.beta = beta;
  o.bias = bias;
  return o;
}

// ---- one linear: forward and backward -----------------------------------

struct LinearInput {
  const TensorState* hp = nullptr;         // the high-precision input
  const octet_tensor* caller = nullptr;    // the caller's tensor (Linear), for borrowing
  TensorPtr owned;                         // an internal tensor the layer may keep
  TensorPtr quantized;                     // produced by a fused norm pass
  UsedScale scale;                         // the scale `quantized` used
};

void keep_high_precision_input(LayerState& L, const LinearInput& x, SavedLinear& sv) {
  if (L.options.save_original_input && x.caller != nullptr) {
    sv.x_borrowed = x.caller;
  } else if (x.owned) {
    x.owned->state.recategorize(OCTET_MEMORY_SAVED_ACTIVATIONS);
    sv.x_hp = x.owned;
  } else {
    sv.x_hp = copy_of(L.ctx, *x.hp, OCTET_MEMORY_SAVED_ACTIVATIONS);
  }
}

// Usages of the input's quantized copy in forward.
uint32_t input_usages(const LayerState& L, const Precision& p, bool training) {
  if (!p.recipe) return 0;
  const bool save_original = L.options.save_original_input != 0;
  uint32_t u = p.fprop ? OCTET_USAGE_ROWWISE : 0;
  if (training && p.wgrad && !save_original) u |= OCTET_USAGE_COLUMNWISE;
  return u;
}

void linear_forward(LayerState& L, LinearUnit& u, const Precision& p, bool training, LinearInput x, TensorState& y,
                    SavedLinear* sv) {
  const Ctx& ctx = L.ctx;
  const octet_tensor* bias = u.bias >= 0 ? L.params[size_t(u.bias)].value.get() : nullptr;
  const TensorState* w_hp = weight_hp(L, u);
  if (!p.recipe) {
    run_gemm(ctx, *x.hp, *w_hp, y, gemm_options(0, 0, 0.0f, bias));
    if (training) {
      sv->w_hp = w_hp;
      keep_high_precision_input(L, x, *sv);
    }
    return;
  }
  // Input: rowwise for this GEMM, columnwise kept for the weight gradient
  // (both from one fused cast+transpose pass where the backend has it).
  const uint32_t xu = input_usages(L, p, training);
  if (!x.quantized && xu != 0) {
    Quantized q = quantize_role(ctx, u, OCTET_ROLE_INPUT, p.recipe, *x.hp, xu);
    x.quantized = q.tensor;
    x.scale = q.scale;
  }
  // Weight: rowwise, and the copy dgrad reads where it needs one (see
  // weight_usages).
  TensorPtr w_q;
  UsedScale w_scale;
  const RecipeState& r = *p.recipe;
  if (p.fprop || (training && p.dgrad)) {
    const uint32_t wu = weight_usages(*ctx, L, r, training, p.dgrad);
    const TensorPtr& cached = u.cached_weight;
    const bool cache_fits = cached && cached->state.dtype == r.dtype_for(OCTET_ROLE_WEIGHT) &&
                            cached->state.scaling_mode == r.scaling_mode_for(OCTET_ROLE_WEIGHT) &&
                            (cached->state.usages & wu) == wu;
    if (fp8_only(L)) {
      w_q = L.params[u.weight].value;
      // Its scale stays where it is on the device path (kept from SCALE).
      w_scale.on_device = device_scaling(*ctx);
      if (!w_scale.on_device) w_scale.host = read_scalar(w_q->state, kScale);
    } else if (L.options.weight_cache && cache_fits) {
      w_q = u.cached_weight;
      w_scale = u.cached_scale;
    } else {
      Quantized q = quantize_role(ctx, u, OCTET_ROLE_WEIGHT, p.recipe, *w_hp, wu);
      w_q = q.tensor;
      w_scale = q.scale;
      if (L.options.weight_cache) {
        u.cached_weight = w_q;
        u.cached_scale = w_scale;
      }
    }
  }
  if (p.fprop)
    run_gemm(ctx, x.quantized->state, w_q->state, y, gemm_options(0, 0, 0.0f, bias));
  else
    run_gemm(ctx, *x.hp, *w_hp, y, gemm_options(0, 0, 0.0f, bias));
  if (!training) return;

  sv->fp8_fprop = p.fprop;
  sv->fp8_dgrad = p.dgrad;
  sv->fp8_wgrad = p.wgrad;
  sv->w_hp = w_hp;
  const bool save_original = L.options.save_original_input != 0;
  if (p.wgrad && !save_original) {
    keep_columnwise_only(x.quantized->state);
    x.quantized->state.recategorize(OCTET_MEMORY_SAVED_ACTIVATIONS);
    sv->x_q = x.quantized;
  } else {
    keep_high_precision_input(L, x, *sv);
    if (p.fprop && x.quantized) sv->x_scale = keep_scale(ctx, x.quantized->state, x.scale);
  }
  if (p.dgrad) {
    const bool shared = fp8_only(L) || L.options.weight_cache;
    if (shared || !L.options.minimize_memory) {
      // dgrad reads the columnwise copy where there is one: the rowwise
      // codes of a weight quantized for this step alone can go.
      if (!shared && w_q->state.columnwise) keep_columnwise_only(w_q->state);
      sv->w_q = w_q;
    } else
      sv->w_scale = keep_scale(ctx, w_q->state, w_scale);  // backward quantizes the weight again
  }
}

TensorPtr bias_sums(const Ctx& ctx, const TensorState& dy, const octet_quantize_args* fused) {
  const ContextState& c = *ctx;
  require_entry(c, has_feature(c, OCTET_FEATURE_BIAS_GRADIENT), "bias_gradient");
  TensorPtr sums = make_plain(ctx, OCTET_DTYPE_FP32, 1, dy.cols, OCTET_MEMORY_WORKSPACE);
  octet_bias_gradient_args a{};
  a.struct_size = sizeof(a);
  a.grad_output = dy.rowwise_view();
  a.sums_out = static_cast<float*>(sums->state.data.data());
  a.quantize = fused;
  call_backend(c, "bias_gradient", [&] { return c.api().bias_gradient(c.handle, &a); });
  return sums;
}

// A linear's backward runs in three phases: dy's FP8 copies and the bias
// column sums (the one phase that can fail after backward's checks passed:
// current scaling may all-reduce dy's amax through the communicator; it
// writes nothing the caller sees), dgrad (into dx), then the parameter
// gradients. The MLP orders the phases of its two linears so that every
// fallible one comes before the first gradient is written.
struct LinearBackward {
  uint32_t du = 0;  // dy's FP8 usages
  TensorPtr dy_q, sums;
};

LinearBackward linear_backward_quantize(LayerState& L, LinearUnit& u, const std::shared_ptr<const RecipeState>& r,
                                        const SavedLinear& sv, const TensorState& dy, bool has_dx) {
  const Ctx& ctx = L.ctx;
  Parameter* bias = u.bias >= 0 ? &L.params[size_t(u.bias)] : nullptr;
  const bool fp8 = r != nullptr;
  LinearBackward b;
  uint32_t& du = b.du;
  if (fp8 && sv.fp8_dgrad && has_dx) du |= OCTET_USAGE_ROWWISE;
  if (fp8 && sv.fp8_wgrad && !fp8_only(L)) du |= OCTET_USAGE_COLUMNWISE;

  // dy: its FP8 copies, and the bias gradient (fused into the same pass when
  // the scale is known beforehand: delayed and static scaling).
  TensorPtr& dy_q = b.dy_q;
  TensorPtr& sums = b.sums;
  if (du != 0) {
    octet_quantize_args qa{};
    TensorPtr t = make_role(ctx, *r, OCTET_ROLE_GRADIENT, dy.rows, dy.cols, du);
    if (bias != nullptr && fusable(*r) && fused_quantize_args(*ctx, t->state, du, qa)) {
      const std::shared_ptr<QuantizerState>& q = quantizer(u, OCTET_ROLE_GRADIENT);
      const UsedScale scale = quantizer_prepare(ctx, *q, *r, dy, t->state);
      sums = bias_sums(ctx, dy, &qa);
      quantizer_commit(ctx, q, r, t->state, scale, nullptr);
      dy_q = t;
    } else {
      if (bias != nullptr) sums = bias_sums(ctx, dy, nullptr);
      dy_q = quantize_role(ctx, u, OCTET_ROLE_GRADIENT, r, dy, du, t).tensor;
    }
  } else if (bias != nullptr) {
    sums = bias_sums(ctx, dy, nullptr);
  }
  return b;
}

void linear_backward_dgrad(LayerState& L, const std::shared_ptr<const RecipeState>& r, SavedLinear& sv,
                           const LinearBackward& b, const TensorState& dy, TensorState* dx) {
  const Ctx& ctx = L.ctx;
  const bool fp8 = r != nullptr;
  const TensorPtr& dy_q = b.dy_q;
  // dgrad: dx = dy W (dy rowwise, W columnwise).
  if (dx != nullptr) {
    if (fp8 && sv.fp8_dgrad) {
      TensorPtr w_q = sv.w_q;
      // minimize_memory: the forward's codes again, straight into the usage
      // dgrad reads (per-tensor: where columns are not read natively, the
      // fused pass writes the transposed copy, with no rowwise copy and no
      // transpose in the GEMM adaptation; block recipes: W^T's own blocks).
      if (!w_q) w_q = requantize(ctx, *sv.w_hp, *r, OCTET_ROLE_WEIGHT, OCTET_USAGE_COLUMNWISE, sv.w_scale);
      run_gemm(ctx, dy_q->state, w_q->state, *dx, gemm_options(0, 1, 0.0f, nullptr));
      if (b.du & OCTET_USAGE_COLUMNWISE) keep_columnwise_only(dy_q->state);
    } else {
      run_gemm(ctx, dy, *sv.w_hp, *dx, gemm_options(0, 1, 0.0f, nullptr));
    }
  }
  sv.w_q.reset();  // the weight copy is no longer needed (a cache keeps its own)
}

void linear_backward_parameters(LayerState& L, LinearUnit& u, const std::shared_ptr<const RecipeState>& r,
                                SavedLinear& sv, const LinearBackward& b, const TensorState& dy, bool accumulate) {
  const Ctx& ctx = L.ctx;
  Parameter* bias = u.bias >= 0 ? &L.params[size_t(u.bias)] : nullptr;
  const bool fp8 = r != nullptr;
  const TensorPtr& dy_q = b.dy_q;
  // wgrad: dW = dy^T x (dy columnwise, x columnwise).
  if (!fp8_only(L)) {
    bool fresh = false;
    TensorState& g = ensure_grad(L, L.params[u.weight], &fresh);
    const octet_gemm_options o = gemm_options(1, 1, accumulate && !fresh ? 1.0f : 0.0f, nullptr);
    const TensorState* x_hp = sv.x_borrowed ? &sv.x_borrowed->state : sv.x_hp ? &sv.x_hp->state : nullptr;
    if (fp8 && sv.fp8_wgrad) {
      TensorPtr x_col = sv.x_q;
      if (!x_col) {
        // save_original_input: quantize the kept input again, with the scale
        // of forward when forward quantized it (same codes).
        x_col = sv.fp8_fprop ? requantize(ctx, *x_hp, *r, OCTET_ROLE_INPUT, OCTET_USAGE_COLUMNWISE, sv.x_scale)
                             : quantize_role(ctx, u, OCTET_ROLE_INPUT, r, *x_hp, OCTET_USAGE_COLUMNWISE).tensor;
      }
      run_gemm(ctx, dy_q->state, x_col->state, g, o);
    } else {
      run_gemm(ctx, dy, *x_hp, g, o);
    }
  }
  if (bias != nullptr) {
    bool fresh = false;
    TensorState& g = ensure_grad(L, *bias, &fresh);
    accumulate_into(*ctx, b.sums->state, g, accumulate && !fresh);
  }
}

void linear_backward(LayerState& L, LinearUnit& u, const std::shared_ptr<const RecipeState>& r, SavedLinear& sv,
                     const TensorState& dy, TensorState* dx, bool accumulate) {
  const LinearBackward b = linear_backward_quantize(L, u, r, sv, dy, dx != nullptr);
  linear_backward_dgrad(L, r, sv, b, dy, dx);
  linear_backward_parameters(L, u, r, sv, b, dy, accumulate);
}

// ---- whole layers -----------------------------------------------------------

int64_t layer_in(const LayerState& L) { return L.linears.front().in; }
int64_t layer_out(const LayerState& L) { return L.kind == LayerKind::LayerNormMlp ? layer_in(L) : L.linears.front().out; }

std::string shape_text(const TensorState& t) {
  std::string s;
  for (int i = 0; i < t.ndim; ++i) s += (i ? "x" : "") + std::to_string(t.shape[i]);
  return s;
}

void check_activation(const LayerState& L, const TensorState& t, const char* name, int64_t rows, int64_t cols) {
  require(!t.quantized() && is_high_precision(t.dtype), "tensor '", name, "' must be a plain ",
          dtype_name(L.options.params_dtype), " tensor (it is ", dtype_name(t.dtype), t.quantized() ? ", quantized" : "",
          ")");
  require(t.dtype == L.options.params_dtype, "tensor '", name, "' is ", dtype_name(t.dtype), " but the layer's ",
          "params_dtype is ", dtype_name(L.options.params_dtype), ": inputs, outputs and gradients use that dtype");
  require(t.cols == cols, "tensor '", name, "' has shape ", shape_text(t), ": its last dimension must be ", cols);
  if (rows >= 0)
    require(t.rows == rows, "tensor '", name, "' has shape ", shape_text(t), ": its leading dimensions must hold ", rows,
            " rows, as the input's do");
}

struct NormOut {
  TensorPtr y, mean, rstd;
  LinearInput input;
};

NormOut norm_forward(LayerState& L, const Precision& p, bool training, const TensorState& x) {
  const Ctx& ctx = L.ctx;
  const ContextState& c = *ctx;
  require_entry(c, has_feature(c, OCTET_FEATURE_NORM), "norm_forward");
  NormOut out;
  const int32_t keep = training ? OCTET_MEMORY_SAVED_ACTIVATIONS : OCTET_MEMORY_WORKSPACE;
  out.y = make_plain(ctx, L.options.params_dtype, x.rows, x.cols, OCTET_MEMORY_WORKSPACE);
  if (L.norm == OCTET_LAYER_LAYERNORM) out.mean = make_plain(ctx, OCTET_DTYPE_FP32, 1, x.rows, keep);
  out.rstd = make_plain(ctx, OCTET_DTYPE_FP32, 1, x.rows, keep);
  octet_norm_forward_args a{};
  a.struct_size = sizeof(a);
  a.kind = L.norm == OCTET_LAYER_LAYERNORM ? OCTET_NORM_LAYERNORM : OCTET_NORM_RMSNORM;
  a.epsilon = L.epsilon;
  a.input = x.rowwise_view();
  a.gamma = L.params[size_t(L.norm_weight)].value->state.rowwise_view();
  if (L.norm_bias >= 0) a.beta = L.params[size_t(L.norm_bias)].value->state.rowwise_view();
  a.output = out.y->state.rowwise_view();
  a.mean_out = out.mean ? static_cast<float*>(out.mean->state.data.data()) : nullptr;
  a.rstd_out = static_cast<float*>(out.rstd->state.data.data());
  // The normalisation output quantized in the same pass, where the scale is
  // known before the data (delayed, static).
  LinearUnit& u = L.linears.front();
  const uint32_t xu = input_usages(L, p, training);
  octet_quantize_args qa{};
  TensorPtr q;
  UsedScale scale;
  if (xu != 0 && fusable(*p.recipe)) {
    const octet_dtype dtype = p.recipe->dtype_for(OCTET_ROLE_INPUT);
    q = make_fp8(ctx, dtype, x.rows, x.cols, xu);
    if (fused_quantize_args(c, q->state, xu, qa)) {
      // The input of quantizer_prepare is only read by current scaling,
      // which is never fused (fusable).
      scale = quantizer_prepare(ctx, *quantizer(u, OCTET_ROLE_INPUT), *p.recipe, x, q->state);
      a.quantize = &qa;
    } else {
      q.reset();
    }
  }
  call_backend(c, "norm_forward", [&] { return c.api().norm_forward(c.handle, &a); });
  if (q) quantizer_commit(ctx, quantizer(u, OCTET_ROLE_INPUT), p.recipe, q->state, scale, nullptr);
  out.input.hp = &out.y->state;
  out.input.owned = out.y;
  out.input.quantized = q;
  out.input.scale = scale;
  return out;
}

void norm_backward(LayerState& L, SavedState& s, const TensorState& dy, TensorState* dx, bool accumulate) {
  const Ctx& ctx = L.ctx;
  const ContextState& c = *ctx;
  TensorPtr scratch;
  if (dx == nullptr) {
    scratch = make_plain(ctx, L.options.params_dtype, dy.rows, dy.cols, OCTET_MEMORY_WORKSPACE);
    dx = &scratch->state;
  }
  TensorPtr dgamma = make_plain(ctx, OCTET_DTYPE_FP32, 1, dy.cols, OCTET_MEMORY_WORKSPACE);
  TensorPtr dbeta;
  if (L.norm_bias >= 0) dbeta = make_plain(ctx, OCTET_DTYPE_FP32, 1, dy.cols, OCTET_MEMORY_WORKSPACE);
  octet_norm_backward_args a{};
  a.struct_size = sizeof(a);
  a.kind = L.norm == OCTET_LAYER_LAYERNORM ? OCTET_NORM_LAYERNORM : OCTET_NORM_RMSNORM;
  a.input = s.x->state.rowwise_view();
  a.grad_output = dy.rowwise_view();
  a.gamma = L.params[size_t(L.norm_weight)].value->state.rowwise_view();
  a.mean = s.mean ? static_cast<const float*>(s.mean->state.data.data()) : nullptr;
  a.rstd = static_cast<const float*>(s.rstd->state.data.data());
  a.grad_input = octet_matrix_view{dx->data.data(), dx->dtype, 0, dx->rows, dx->cols, dx->cols};
  a.dgamma_out = static_cast<float*>(dgamma->state.data.data());
  a.dbeta_out = dbeta ? static_cast<float*>(dbeta->state.data.data()) : nullptr;
  call_backend(c, "norm_backward", [&] { return c.api().norm_backward(c.handle, &a); });
  bool fresh = false;
  TensorState& gg = ensure_grad(L, L.params[size_t(L.norm_weight)], &fresh);
  accumulate_into(c, dgamma->state, gg, accumulate && !fresh);
  if (dbeta) {
    TensorState& gb = ensure_grad(L, L.params[size_t(L.norm_bias)], &fresh);
    accumulate_into(c, dbeta->state, gb, accumulate && !fresh);
  }
}

void activation_call(const ContextState& c, int32_t kind, const TensorState& in, const TensorState* out,
                     const TensorState* dy, TensorState* dx) {
  octet_activation_args a{};
  a.struct_size = sizeof(a);
  a.kind = kind == OCTET_LAYER_SWIGLU ? OCTET_ACTIVATION_SWIGLU : OCTET_ACTIVATION_GELU;
  a.input = in.rowwise_view();
  if (out != nullptr) {
    a.output = out->rowwise_view();
    call_backend(c, "activation_forward", [&] { return c.api().activation_forward(c.handle, &a); });
    return;
  }
  a.grad_output = dy->rowwise_view();
  a.grad_input = dx->rowwise_view();
  call_backend(c, "activation_backward", [&] { return c.api().activation_backward(c.handle, &a); });
}

void layer_forward(LayerState& L, const octet_tensor* input, octet_tensor* output, bool training, SavedState& s) {
  const Ctx& ctx = L.ctx;
  const TensorState& x = tensor_arg(input, *ctx, "input");
  TensorState& y = tensor_arg(output, *ctx, "output");
  require(input != output, "tensors 'input' and 'output' must be different tensors");
  check_activation(L, x, "input", -1, layer_in(L));
  check_activation(L, y, "output", x.rows, layer_out(L));
  Precision p = precision_of(L.recipe ? L.recipe : autocast_recipe(*ctx));
  if (fp8_only(L)) {
    require(!training, "the layer stores FP8-only weights (inference): forward with training = 0");
    require(p.fprop, "the layer stores FP8-only weights but its recipe overrides the forward GEMM to high precision");
  }
  s.recipe = p.recipe;
  s.rows = x.rows;
  s.training = training;
  s.linears.resize(L.linears.size());

  if (L.kind == LayerKind::Linear) {
    LinearInput in;
    in.hp = &x;
    in.caller = input;
    linear_forward(L, L.linears[0], p, training, in, y, &s.linears[0]);
    return;
  }
  if (L.kind == LayerKind::LayerNormMlp) {
    const ContextState& c = *ctx;
    require_entry(c, has_feature(c, OCTET_FEATURE_ACTIVATION), "activation_forward");
  }
  NormOut n = norm_forward(L, p, training, x);
  if (training) {
    s.x = copy_of(ctx, x, OCTET_MEMORY_SAVED_ACTIVATIONS);
    s.mean = n.mean;
    s.rstd = n.rstd;
  }
  if (L.kind == LayerKind::LayerNormLinear) {
    linear_forward(L, L.linears[0], p, training, n.input, y, &s.linears[0]);
    return;
  }
  LinearUnit& fc1 = L.linears[0];
  TensorPtr h = make_plain(ctx, L.options.params_dtype, x.rows, fc1.out,
                           training ? OCTET_MEMORY_SAVED_ACTIVATIONS : OCTET_MEMORY_WORKSPACE);
  linear_forward(L, fc1, p, training, n.input, h->state, &s.linears[0]);
  n = NormOut{};  // the normalisation output is no longer needed (unless saved)
  TensorPtr a = make_plain(ctx, L.options.params_dtype, x.rows, L.ffn, OCTET_MEMORY_WORKSPACE);
  activation_call(*ctx, L.activation, h->state, &a->state, nullptr, nullptr);
  if (training) s.h = h;
  h.reset();
  LinearInput in;
  in.hp = &a->state;
  in.owned = a;
  a.reset();
  linear_forward(L, L.linears[1], p, training, in, y, &s.linears[1]);
}

void layer_backward(LayerState& L, SavedState& s, const TensorState& dy, TensorState* dx, bool accumulate) {
  const Ctx& ctx = L.ctx;
  if (L.kind == LayerKind::Linear) {
    linear_backward(L, L.linears[0], s.recipe, s.linears[0], dy, dx, accumulate);
    return;
  }
  TensorPtr d_norm_out = make_plain(ctx, L.options.params_dtype, s.rows, layer_in(L), OCTET_MEMORY_WORKSPACE);
  if (L.kind == LayerKind::LayerNormLinear) {
    linear_backward(L, L.linears[0], s.recipe, s.linears[0], dy, &d_norm_out->state, accumulate);
  } else {
    LinearUnit& fc1 = L.linears[0];
    LinearUnit& fc2 = L.linears[1];
    TensorPtr da = make_plain(ctx, L.options.params_dtype, s.rows, L.ffn, OCTET_MEMORY_WORKSPACE);
    // In FP8, dh is quantized before FC2's gradients are written: with
    // current scaling and reduce_amax that quantize calls the communicator,
    // and if it fails, backward must fail with every gradient as it was (no
    // result half-written, docs/abi.md). It costs FC2's saved input and dy's
    // columnwise copy living beside dh. High precision quantizes nothing, so
    // FC2 finishes first and frees its saved input before dh exists.
    const bool fp8 = s.recipe != nullptr;
    LinearBackward b2;
    if (fp8) {
      b2 = linear_backward_quantize(L, fc2, s.recipe, s.linears[1], dy, true);
      linear_backward_dgrad(L, s.recipe, s.linears[1], b2, dy, &da->state);
    } else {
      linear_backward(L, fc2, s.recipe, s.linears[1], dy, &da->state, accumulate);
      s.linears[1] = SavedLinear{};
    }
    TensorPtr dh = make_plain(ctx, L.options.params_dtype, s.rows, fc1.out, OCTET_MEMORY_WORKSPACE);
    activation_call(*ctx, L.activation, s.h->state, nullptr, &da->state, &dh->state);
    da.reset();
    s.h.reset();
    if (fp8) {
      const LinearBackward b1 = linear_backward_quantize(L, fc1, s.recipe, s.linears[0], dh->state, true);
      linear_backward_parameters(L, fc2, s.recipe, s.linears[1], b2, dy, accumulate);
      b2 = LinearBackward{};
      s.linears[1] = SavedLinear{};
      linear_backward_dgrad(L, s.recipe, s.linears[0], b1, dh->state, &d_norm_out->state);
      linear_backward_parameters(L, fc1, s.recipe, s.linears[0], b1, dh->state, accumulate);
    } else {
      linear_backward(L, fc1, s.recipe, s.linears[0], dh->state, &d_norm_out->state, accumulate);
    }
  }
  s.linears.clear();
  norm_backward(L, s, d_norm_out->state, dx, accumulate);
}

// Entry points a backward will need, checked before the saved handle is consumed.
void require_backward_entries(const LayerState& L) {
  const ContextState& c = *L.ctx;
  for (const LinearUnit& u : L.linears)
    if (u.bias >= 0) {
      require_entry(c, has_feature(c, OCTET_FEATURE_BIAS_GRADIENT), "bias_gradient");
      require_entry(c, has_feature(c, OCTET_FEATURE_ACCUMULATE), "accumulate");
    }
  if (L.kind != LayerKind::Linear) {
    require_entry(c, has_feature(c, OCTET_FEATURE_NORM), "norm_backward");
    require_entry(c, has_feature(c, OCTET_FEATURE_ACCUMULATE), "accumulate");
  }
  if (L.kind == LayerKind::LayerNormMlp) require_entry(c, has_feature(c, OCTET_FEATURE_ACTIVATION), "activation_backward");
}

// ---- creation ----------------------------------------------------------------

octet_linear_options linear_defaults() {
  octet_linear_options o{};
  o.struct_size = sizeof(o);
  o.bias = 1;
  o.params_dtype = OCTET_DTYPE_FP32;
  o.weight_storage = OCTET_WEIGHTS_HIGH_PRECISION;
  return o;
}

octet_layernorm_linear_options layernorm_linear_defaults() {
  octet_layernorm_linear_options o{};
  o.struct_size = sizeof(o);
  o.norm = OCTET_LAYER_LAYERNORM;
  o.epsilon = 1e-5f;
  return o;
}

octet_layernorm_mlp_options layernorm_mlp_defaults() {
  octet_layernorm_mlp_options o{};
  o.struct_size = sizeof(o);
  o.norm = OCTET_LAYER_LAYERNORM;
  o.epsilon = 1e-5f;
  o.activation = OCTET_LAYER_GELU;
  return o;
}

void require_flag(int32_t v, const char* name) { require(v == 0 || v == 1, "options->", name, " (", v, ") must be 0 or 1"); }

void check_linear_options(const octet_linear_options& o, const char* prefix) {
  require(o.in_features >= 1, prefix, "in_features (", o.in_features, ") must be >= 1");
  require(o.params_dtype == OCTET_DTYPE_FP32 || o.params_dtype == OCTET_DTYPE_BF16, prefix, "params_dtype (",
          o.params_dtype, ") must be OCTET_DTYPE_FP32 or OCTET_DTYPE_BF16");
  require(o.weight_storage == OCTET_WEIGHTS_HIGH_PRECISION || o.weight_storage == OCTET_WEIGHTS_FP8_ONLY, prefix,
          "weight_storage (", o.weight_storage, ") must be an octet_weight_storage");
  require_flag(o.bias, "bias");
  require_flag(o.save_original_input, "save_original_input");
  require_flag(o.minimize_memory, "minimize_memory");
  require_flag(o.weight_cache, "weight_cache");
  require_flag(o.skip_weight_allocation, "skip_weight_allocation");
  if (o.weight_storage == OCTET_WEIGHTS_FP8_ONLY) {
    require(o.recipe != nullptr, prefix, "recipe is NULL: FP8-only weights need the layer's recipe at creation");
    require(!o.skip_weight_allocation, prefix, "skip_weight_allocation cannot be combined with FP8-only weights");
  }
}

void add_param(LayerState& L, const std::string& name, int32_t ndim, int64_t d0, int64_t d1, bool matrix) {
  Parameter p;
  p.name = name;
  p.ndim = ndim;
  p.shape[0] = d0;
  p.shape[1] = d1;
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = L.options.params_dtype;
  d.ndim = ndim;
  d.shape[0] = d0;
  d.shape[1] = d1;
  if (matrix && fp8_only(L)) {
    d.dtype = L.recipe->dtype_for(OCTET_ROLE_WEIGHT);
    d.usages = OCTET_USAGE_ROWWISE;
    d.scaling_mode = L.recipe->scaling_mode_for(OCTET_ROLE_WEIGHT);
  }
  if (!(matrix && L.options.skip_weight_allocation)) {
    p.value = TensorPtr(create_tensor(L.ctx, d, OCTET_MEMORY_PARAMETERS).release());
    p.value->state.recategorize(OCTET_MEMORY_PARAMETERS);  // FP8-only weights are the parameters
  }
  L.params.push_back(std::move(p));
}

void add_linear(LayerState& L, const std::string& prefix, int64_t in, int64_t out) {
  LinearUnit u;
  u.in = in;
  u.out = out;
  u.weight = L.params.size();
  add_param(L, prefix + "weight", 2, out, in, true);
  if (L.options.bias) {
    u.bias = int(L.params.size());
    add_param(L, prefix + "bias", 1, out, 0, false);
  }
  for (int32_t role = 0; role < 3; ++role) {
    auto q = std::make_shared<QuantizerState>();
    q->role = role;
    if (L.recipe) {
      q->recipe = L.recipe;
      if (L.recipe->kind == OCTET_RECIPE_DELAYED) q->resize_history(size_t(L.recipe->delayed.amax_history_len));
      if (L.recipe->kind == OCTET_RECIPE_STATIC) {
        q->scale = L.recipe->fixed.scale;
        q->scale_inv = 1.0f / q->scale;
      }
    }
    u.quantizers[size_t(role)] = std::shared_ptr<octet_quantizer>(new octet_quantizer{std::move(q)});
  }
  L.linears.push_back(std::move(u));
}

void check_norm_options(int32_t norm, float epsilon) {
  require(norm == OCTET_LAYER_LAYERNORM || norm == OCTET_LAYER_RMSNORM, "options->norm (", norm,
          ") must be OCTET_LAYER_LAYERNORM or OCTET_LAYER_RMSNORM");
  require(epsilon >= 0.0f, "options->epsilon (", epsilon, ") must be >= 0");
}

// The normalisation over in_features and its parameters, which stay in
// params_dtype even with FP8-only weights.
void add_norm(LayerState& L, int32_t norm, float epsilon) {
  L.norm = norm;
  L.epsilon = epsilon;
  L.norm_weight = int(L.params.size());
  add_param(L, "norm_weight", 1, L.options.in_features, 0, false);
  if (norm == OCTET_LAYER_LAYERNORM) {
    L.norm_bias = int(L.params.size());
    add_param(L, "norm_bias", 1, L.options.in_features, 0, false);
  }
}

std::unique_ptr<octet_layer> new_layer(octet_context* context, const octet_linear_options* linear, LayerKind kind,
                                       const char* prefix) {
  context_arg(context);
  require(linear != nullptr, "argument '", prefix, "' is NULL");
  octet_linear_options o = read_versioned(linear, linear_defaults(), prefix);
  check_linear_options(o, (std::string(prefix) + "->").c_str());
  auto layer = std::make_unique<octet_layer>();
  LayerState& L = layer->state;
  L.ctx = context->state;
  L.id = next_layer_id++;
  L.kind = kind;
  L.options = o;
  if (o.recipe != nullptr) {
    require_live_handle(o.recipe, HandleKind::Recipe, (std::string(prefix) + "->recipe").c_str());
    L.recipe = o.recipe->state;
  }
  L.options.recipe = nullptr;  // kept through L.recipe
  return layer;
}

// A layer argument: not NULL, live, and its context held for the running call.
LayerState& layer_arg(const octet_layer* layer) {
  require_live_handle(layer, HandleKind::Layer, "layer");
  enter_context(*layer->state.ctx);
  return const_cast<LayerState&>(layer->state);
}

Parameter& param_arg(LayerState& L, size_t index) {
  require(index < L.params.size(), "argument 'index' (", index, ") must be < the parameter count (", L.params.size(),
          ")");
  return L.params[index];
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_linear_options_init(octet_linear_options* options) {
  return guarded("octet_linear_options_init", [&] {
    require(options != nullptr, "argument 'options' is NULL");
    *options = linear_defaults();
  });
}

OCTET_API octet_status octet_layernorm_linear_options_init(octet_layernorm_linear_options* options) {
  return guarded("octet_layernorm_linear_options_init", [&] {
    require(options != nullptr, "argument 'options' is NULL");
    *options = layernorm_linear_defaults();
  });
}

OCTET_API octet_status octet_layernorm_mlp_options_init(octet_layernorm_mlp_options* options) {
  return guarded("octet_layernorm_mlp_options_init", [&] {
    require(options != nullptr, "argument 'options' is NULL");
    *options = layernorm_mlp_defaults();
  });
}

OCTET_API octet_status octet_layer_create_linear(octet_context* context, const octet_linear_options* options,
                                                 octet_layer** layer) {
  return guarded("octet_layer_create_linear", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    auto made = new_layer(context, options, LayerKind::Linear, "options");
    LayerState& L = made->state;
    require(L.options.out_features >= 1, "options->out_features (", L.options.out_features, ") must be >= 1");
    add_linear(L, "", L.options.in_features, L.options.out_features);
    *layer = made.release();
  });
}

OCTET_API octet_status octet_layer_create_layernorm_linear(octet_context* context,
                                                           const octet_layernorm_linear_options* options,
                                                           octet_layer** layer) {
  return guarded("octet_layer_create_layernorm_linear", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    octet_layernorm_linear_options o = read_versioned(options, layernorm_linear_defaults(), "options");
    check_norm_options(o.norm, o.epsilon);
    auto made = new_layer(context, o.linear, LayerKind::LayerNormLinear, "options->linear");
    LayerState& L = made->state;
    require(L.options.out_features >= 1, "options->linear->out_features (", L.options.out_features, ") must be >= 1");
    require(!L.options.save_original_input,
            "options->linear->save_original_input applies to Linear only (a LayerNormLinear's GEMM input is its own "
            "normalisation output)");
    add_norm(L, o.norm, o.epsilon);
    add_linear(L, "", L.options.in_features, L.options.out_features);
    *layer = made.release();
  });
}

OCTET_API octet_status octet_layer_create_layernorm_mlp(octet_context* context,
                                                        const octet_layernorm_mlp_options* options,
                                                        octet_layer** layer) {
  return guarded("octet_layer_create_layernorm_mlp", [&] {
    require(layer != nullptr, "argument 'layer' is NULL");
    octet_layernorm_mlp_options o = read_versioned(options, layernorm_mlp_defaults(), "options");
    check_norm_options(o.norm, o.epsilon);
    require(o.activation == OCTET_LAYER_GELU || o.activation == OCTET_LAYER_SWIGLU, "options->activation (",
            o.activation, ") must be OCTET_LAYER_GELU or OCTET_LAYER_SWIGLU");
    require(o.ffn_features >= 1, "options->ffn_features (", o.ffn_features, ") must be >= 1");
    auto made = new_layer(context, o.linear, LayerKind::LayerNormMlp, "options->linear");
    LayerState& L = made->state;
    require(!L.options.save_original_input,
            "options->linear->save_original_input applies to Linear only (the MLP's GEMM inputs are its own "
            "intermediate tensors)");
    L.activation = o.activation;
    L.ffn = o.ffn_features;
    const int64_t hidden = L.options.in_features;
    add_norm(L, o.norm, o.epsilon);
    add_linear(L, "fc1_", hidden, L.activation == OCTET_LAYER_SWIGLU ? 2 * L.ffn : L.ffn);
    add_linear(L, "fc2_", L.ffn, hidden);
    *layer = made.release();
  });
}

OCTET_API void octet_layer_destroy(octet_layer* layer) {
  if (layer == nullptr) return;
  std::shared_ptr<ContextState> keep;  // outlives the call's hold on the context
  guarded("octet_layer_destroy", [&] {
    keep = layer_arg(layer).ctx;
    delete layer;
  });
}

OCTET_API octet_status octet_layer_parameter_count(const octet_layer* layer, size_t* count) {
  return guarded("octet_layer_parameter_count", [&] {
    const LayerState& L = layer_arg(layer);
    require(count != nullptr, "argument 'count' is NULL");
    *count = L.params.size();
  });
}

OCTET_API octet_status octet_layer_parameter_name(const octet_layer* layer, size_t index, const char** name) {
  return guarded("octet_layer_parameter_name", [&] {
    LayerState& L = const_cast<LayerState&>(layer_arg(layer));
    require(name != nullptr, "argument 'name' is NULL");
    *name = param_arg(L, index).name.c_str();
  });
}

OCTET_API octet_status octet_layer_find_parameter(const octet_layer* layer, const char* name, size_t* index) {
  return guarded("octet_layer_find_parameter", [&] {
    const LayerState& L = layer_arg(layer);
    require(name != nullptr, "argument 'name' is NULL");
    require(index != nullptr, "argument 'index' is NULL");
    for (size_t i = 0; i < L.params.size(); ++i)
      if (L.params[i].name == name) {
        *index = i;
        return;
      }
    fail(OCTET_STATUS_NOT_FOUND, "the layer has no parameter named '", name, "'");
  });
}

OCTET_API octet_status octet_layer_get_parameter(octet_layer* layer, size_t index, octet_tensor** parameter) {
  return guarded("octet_layer_get_parameter", [&] {
    LayerState& L = layer_arg(layer);
    require(parameter != nullptr, "argument 'parameter' is NULL");
    Parameter& p = param_arg(L, index);
    if (p.value) {
      *parameter = p.value.get();
      return;
    }
    if (p.borrowed == nullptr)
      fail(OCTET_STATUS_NOT_FOUND, "parameter '", p.name,
           "' is not allocated (skip_weight_allocation) and no weight was given with octet_layer_set_weight");
    *parameter = const_cast<octet_tensor*>(p.borrowed);
  });
}

OCTET_API octet_status octet_layer_get_gradient(octet_layer* layer, size_t index, octet_tensor** gradient) {
  return guarded("octet_layer_get_gradient", [&] {
    LayerState& L = layer_arg(layer);
    require(gradient != nullptr, "argument 'gradient' is NULL");
    Parameter& p = param_arg(L, index);
    const bool fp8_weight = fp8_only(L) && p.ndim == 2;
    if (fp8_weight)
      fail(OCTET_STATUS_UNSUPPORTED, "parameter '", p.name, "' is an FP8-only (inference) weight: it has no gradient");
    bool fresh = false;
    TensorState& g = ensure_grad(L, p, &fresh);
    if (fresh) fill_zero(g);
    *gradient = p.grad.get();
  });
}

OCTET_API octet_status octet_layer_set_weight(octet_layer* layer, size_t index, const octet_tensor* weight) {
  return guarded("octet_layer_set_weight", [&] {
    LayerState& L = layer_arg(layer);
    Parameter& p = param_arg(L, index);
    require(L.options.skip_weight_allocation && p.ndim == 2, "parameter '", p.name,
            "' is not a weight matrix of a layer created with skip_weight_allocation = 1");
    const TensorState& w = tensor_arg(weight, *L.ctx, "weight");
    require(!w.quantized() && w.dtype == L.options.params_dtype, "tensor 'weight' must be a plain ",
            dtype_name(L.options.params_dtype), " tensor (it is ", dtype_name(w.dtype), ")");
    require(w.rows == p.shape[0] && w.cols == p.shape[1], "tensor 'weight' has shape ", shape_text(w), " but '",
            p.name, "' is ", p.shape[0], "x", p.shape[1]);
    p.borrowed = weight;
    for (LinearUnit& u : L.linears)
      if (u.weight == index) u.cached_weight.reset();
  });
}

OCTET_API octet_status octet_layer_load_weight(octet_layer* layer, size_t index, const octet_tensor* weight) {
  return guarded("octet_layer_load_weight", [&] {
    LayerState& L = layer_arg(layer);
    Parameter& p = param_arg(L, index);
    require(fp8_only(L) && p.ndim == 2, "parameter '", p.name,
            "' is not an FP8-only weight (weight_storage = OCTET_WEIGHTS_FP8_ONLY); write high-precision "
            "parameters with octet_layer_get_parameter and octet_tensor_copy_from_host");
    const TensorState& w = tensor_arg(weight, *L.ctx, "weight");
    require(!w.quantized() && is_high_precision(w.dtype), "tensor 'weight' must be a plain FP32, BF16 or FP16 tensor");
    require(w.rows == p.shape[0] && w.cols == p.shape[1], "tensor 'weight' has shape ", shape_text(w), " but '",
            p.name, "' is ", p.shape[0], "x", p.shape[1]);
    for (LinearUnit& u : L.linears)
      if (u.weight == index) quantize_role(L.ctx, u, OCTET_ROLE_WEIGHT, L.recipe, w, OCTET_USAGE_ROWWISE, p.value);
  });
}

OCTET_API octet_status octet_layer_new_step(octet_layer* layer) {
  return guarded("octet_layer_new_step", [&] {
    LayerState& L = layer_arg(layer);
    for (LinearUnit& u : L.linears) u.cached_weight.reset();
  });
}

OCTET_API octet_status octet_layer_get_quantizer(octet_layer* layer, size_t linear_index, int32_t role,
                                                 octet_quantizer** quantizer) {
  return guarded("octet_layer_get_quantizer", [&] {
    LayerState& L = layer_arg(layer);
    require(quantizer != nullptr, "argument 'quantizer' is NULL");
    require(linear_index < L.linears.size(), "argument 'linear_index' (", linear_index, ") must be < ",
            L.linears.size());
    require_role(role);
    *quantizer = L.linears[linear_index].quantizers[size_t(role)].get();
  });
}

OCTET_API octet_status octet_layer_forward(octet_layer* layer, const octet_tensor* input, octet_tensor* output,
                                           int32_t training, octet_saved** saved) {
  return guarded("octet_layer_forward", [&] {
    LayerState& L = layer_arg(layer);
    require(training == 0 || training == 1, "argument 'training' (", training, ") must be 0 or 1");
    require(!training || saved != nullptr,
            "argument 'saved' is NULL: a training forward returns the handle its backward consumes");
    auto handle = std::make_unique<octet_saved>();
    handle->state.layer_id = L.id;
    handle->state.ctx = L.ctx;
    layer_forward(L, input, output, training != 0, handle->state);
    if (saved != nullptr) *saved = handle.release();
  });
}

OCTET_API octet_status octet_layer_backward(octet_layer* layer, octet_saved** saved, const octet_tensor* grad_output,
                                            octet_tensor* grad_input, int32_t accumulate) {
  return guarded("octet_layer_backward", [&] {
    LayerState& L = layer_arg(layer);
    require(saved != nullptr && *saved != nullptr,
            "argument 'saved' is NULL (or points to NULL): pass the handle a training forward returned; each "
            "handle is consumed by one backward");
    require_live_handle(*saved, HandleKind::Saved, "*saved");
    SavedState& s = (*saved)->state;
    require(s.layer_id == L.id, "the saved handle was returned by a forward of another layer");
    require(s.training, "the saved handle comes from an inference forward (training = 0), which keeps nothing for "
                        "backward");
    require(accumulate == 0 || accumulate == 1, "argument 'accumulate' (", accumulate, ") must be 0 or 1");
    const ContextState& ctx = *L.ctx;
    const TensorState& dy = tensor_arg(grad_output, ctx, "grad_output");
    check_activation(L, dy, "grad_output", s.rows, layer_out(L));
    TensorState* dx = nullptr;
    if (grad_input != nullptr) {
      dx = &tensor_arg(grad_input, ctx, "grad_input");
      check_activation(L, *dx, "grad_input", s.rows, layer_in(L));
      require(grad_input != grad_output, "tensors 'grad_output' and 'grad_input' must be different tensors");
    }
    require_backward_entries(L);
    std::unique_ptr<octet_saved> owner(*saved);  // consumed from here on
    *saved = nullptr;
    layer_backward(L, owner->state, dy, dx, accumulate != 0);
  });
}

OCTET_API void octet_saved_destroy(octet_saved* saved) {
  if (saved == nullptr) return;
  std::shared_ptr<ContextState> keep;  // outlives the call's hold on the context
  guarded("octet_saved_destroy", [&] {
    require_live_handle(saved, HandleKind::Saved, "saved");
    keep = saved->state.ctx;
    if (keep) enter_context(*keep);
    delete saved;
  });
}

}  // extern "C"
