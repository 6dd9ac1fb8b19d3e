// The 2-D tensors a layer makes and moves: plain and FP8 tensors, copies,
// gradient accumulation, and a quantized tensor's scalars.
#include "layers/layer_tensors.hpp"

#include <vector>

#include "runtime/error.hpp"

namespace octet::core {

octet_tensor_desc tensor_desc(octet_dtype dtype, int32_t ndim, int64_t d0, int64_t d1) {
  octet_tensor_desc d{};
  d.struct_size = sizeof(d);
  d.dtype = dtype;
  d.ndim = ndim;
  d.shape[0] = d0;
  d.shape[1] = d1;
  return d;
}

TensorPtr make_tensor(const ContextPtr& ctx, const octet_tensor_desc& desc, int32_t category) {
  return TensorPtr(create_tensor(ctx, desc, category).release());
}

TensorPtr make_plain(const ContextPtr& ctx, octet_dtype dtype, int64_t rows, int64_t cols, int32_t category) {
  return make_tensor(ctx, tensor_desc(dtype, 2, rows, cols), category);
}

TensorPtr make_fp8(const ContextPtr& ctx, octet_dtype dtype, int64_t rows, int64_t cols, uint32_t usages,
                   int32_t scaling_mode) {
  octet_tensor_desc d = tensor_desc(dtype, 2, rows, cols);
  d.usages = usages;
  d.scaling_mode = scaling_mode;
  return make_tensor(ctx, d, OCTET_MEMORY_QUANTIZED_COPIES);
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

TensorPtr copy_of(const ContextPtr& ctx, const TensorState& src, int32_t category) {
  TensorPtr t = make_plain(ctx, src.dtype, src.rows, src.cols, category);
  copy_into(*ctx, src, t->state);
  return t;
}

void accumulate_into(const ContextState& ctx, const TensorState& x, TensorState& y, bool accumulate) {
  require_entry(ctx, has_feature(ctx, OCTET_FEATURE_ACCUMULATE), "accumulate");
  octet_matrix_view vx{x.data.data(), x.dtype, 0, 1, x.numel(), x.numel()};
  octet_matrix_view vy{y.data.data(), y.dtype, 0, 1, y.numel(), y.numel()};
  call_backend(ctx, "accumulate", [&] { return ctx.api().accumulate(ctx.handle, &vx, &vy, accumulate ? 1 : 0); });
}

float read_scalar(const TensorState& t, ScalarSlot slot) {
  float v = 0.0f;
  t.scalars.copy_to_host(&v, sizeof(v), sizeof(float) * size_t(slot));
  return v;
}

void write_scale(TensorState& t, float scale) {
  t.scalars.copy_from_host(&scale, sizeof(scale), sizeof(float) * kScale);
}

void keep_columnwise_only(TensorState& t) {
  if (t.columnwise) {
    t.data = Buffer();
    t.rowwise_scale_inv = Buffer();
  }
  t.usages = OCTET_USAGE_COLUMNWISE;
}

}  // namespace octet::core
