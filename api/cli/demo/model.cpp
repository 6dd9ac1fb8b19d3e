#include "demo/model.hpp"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace octet_cli {
namespace demo {

void upload_floats(octet_tensor* tensor, int32_t dtype, const std::vector<float>& values) {
  if (dtype == OCTET_DTYPE_FP32) {
    octet::check(
        octet_tensor_copy_from_host(tensor, OCTET_COMPONENT_DATA, values.data(), values.size() * sizeof(float)));
    return;
  }
  std::vector<uint16_t> codes(values.size());
  octet::check(octet_bf16_encode_array(values.data(), codes.data(), values.size()));
  octet::check(
      octet_tensor_copy_from_host(tensor, OCTET_COMPONENT_DATA, codes.data(), codes.size() * sizeof(uint16_t)));
}

std::vector<float> download_floats(const octet_tensor* tensor, int32_t dtype, size_t count) {
  std::vector<float> out(count);
  if (dtype == OCTET_DTYPE_FP32) {
    octet::check(octet_tensor_copy_to_host(tensor, OCTET_COMPONENT_DATA, out.data(), count * sizeof(float)));
    return out;
  }
  std::vector<uint16_t> codes(count);
  octet::check(octet_tensor_copy_to_host(tensor, OCTET_COMPONENT_DATA, codes.data(), count * sizeof(uint16_t)));
  octet::check(octet_bf16_decode_array(codes.data(), out.data(), count));
  return out;
}

namespace {

size_t element_count(const octet_tensor* t) {
  octet_tensor_info info{};
  info.struct_size = sizeof info;
  octet::check(octet_tensor_get_info(t, &info));
  size_t n = 1;
  for (int32_t d = 0; d < info.ndim; ++d) n *= static_cast<size_t>(info.shape[d]);
  return n;
}

// Runs a layer backward; the saved handle is consumed (or dropped on error).
struct SavedGuard {
  octet_saved* saved = nullptr;
  ~SavedGuard() { octet_saved_destroy(saved); }
};

// Closes an autocast scope left open by an exception.
struct ScopeGuard {
  octet_context* context = nullptr;
  ~ScopeGuard() {
    if (context) octet_autocast_end(context);
  }
  void end() {
    octet_context* c = context;
    context = nullptr;
    octet::check(octet_autocast_end(c));
  }
};

void add_into(std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

}  // namespace

octet_tensor* Model::tensor(const std::vector<int64_t>& shape) {
  tensors_.push_back(octet::Tensor::create(context_, dtype_, shape));
  return tensors_.back().get();
}

Model::Model(octet::Context& context, const ModelShape& shape, int32_t params_dtype, uint64_t seed, bool given_weights)
    : context_(context), shape_(shape), dtype_(params_dtype), given_weights_(given_weights) {
  try {
    for (int block = 0; block < 2; ++block) {
      octet_linear_options lo;
      octet::check(octet_linear_options_init(&lo));
      lo.in_features = shape.hidden;
      lo.out_features = shape.hidden;
      lo.params_dtype = params_dtype;
      lo.skip_weight_allocation = given_weights ? 1 : 0;
      octet_layernorm_mlp_options mo;
      octet::check(octet_layernorm_mlp_options_init(&mo));
      mo.linear = &lo;
      mo.ffn_features = shape.ffn;
      mo.activation = OCTET_LAYER_GELU;
      Layer l;
      octet::check(octet_layer_create_layernorm_mlp(context.get(), &mo, &l.layer));
      layers_.push_back(std::move(l));
    }
    octet_linear_options lo;
    octet::check(octet_linear_options_init(&lo));
    lo.in_features = shape.hidden;
    lo.out_features = shape.out;
    lo.params_dtype = params_dtype;
    lo.skip_weight_allocation = given_weights ? 1 : 0;
    Layer head;
    octet::check(octet_layer_create_linear(context.get(), &lo, &head.layer));
    layers_.push_back(std::move(head));

    Rng rng(seed);
    for (size_t i = 0; i < layers_.size(); ++i) init_parameters(layers_[i], i, rng);

    x_ = tensor({shape.batch, shape.hidden});
    m1_ = tensor({shape.batch, shape.hidden});
    h1_ = tensor({shape.batch, shape.hidden});
    m2_ = tensor({shape.batch, shape.hidden});
    h2_ = tensor({shape.batch, shape.hidden});
    y_ = tensor({shape.batch, shape.out});
    dy_ = tensor({shape.batch, shape.out});
    dh2_ = tensor({shape.batch, shape.hidden});
    g2_ = tensor({shape.batch, shape.hidden});
    dh1_ = tensor({shape.batch, shape.hidden});
  } catch (...) {
    for (Layer& l : layers_) octet_layer_destroy(l.layer);
    throw;
  }
}

Model::~Model() {
  tensors_.clear();
  for (Layer& l : layers_) octet_layer_destroy(l.layer);
}

void Model::init_parameters(Layer& layer, size_t layer_index, Rng& rng) {
  size_t count = 0;
  octet::check(octet_layer_parameter_count(layer.layer, &count));
  for (size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    octet::check(octet_layer_parameter_name(layer.layer, i, &name));
    Param param;
    param.index = i;
    param.name = name;
    const std::string& nm = param.name;
    // Shapes as octet.h lists them (a given weight matrix has no tensor yet).
    if (nm == "fc1_weight") {
      param.rows = shape_.ffn, param.cols = shape_.hidden;
    } else if (nm == "fc2_weight") {
      param.rows = shape_.hidden, param.cols = shape_.ffn;
    } else if (nm == "weight") {
      param.rows = layer_index < 2 ? shape_.hidden : shape_.out, param.cols = shape_.hidden;
    } else {
      octet_tensor* p = nullptr;
      octet::check(octet_layer_get_parameter(layer.layer, i, &p));
      param.rows = static_cast<int64_t>(element_count(p));
    }
    const size_t n = static_cast<size_t>(param.rows * (param.cols > 0 ? param.cols : 1));
    param.master.assign(n, 0.0f);
    if (nm == "norm_weight") {
      param.master.assign(n, 1.0f);
    } else if (nm.find("bias") != std::string::npos) {
      // zeros
    } else {
      // weight [out, in]: N(0, 1/in); FC2 (the residual branch's output)
      // starts smaller so each block starts close to the identity.
      const float fan_in = static_cast<float>(param.cols);
      const float s = (nm == "fc2_weight" ? 0.5f : 1.0f) / std::sqrt(fan_in);
      for (float& w : param.master) w = s * rng.normal();
    }
    param.m.assign(n, 0.0f);
    param.v.assign(n, 0.0f);
    if (!(given_weights_ && param.cols > 0)) {
      octet_tensor* p = nullptr;
      octet::check(octet_layer_get_parameter(layer.layer, i, &p));
      upload_floats(p, dtype_, param.master);
    }
    layer.params.push_back(std::move(param));
  }
  octet::check(octet_layer_new_step(layer.layer));
}

std::vector<ParameterInfo> Model::parameters() const {
  std::vector<ParameterInfo> out;
  for (const Layer& l : layers_)
    for (const Param& p : l.params) {
      ParameterInfo info;
      info.layer = l.layer;
      info.index = p.index;
      info.name = p.name;
      info.rows = p.rows;
      info.cols = p.cols;
      info.master = &p.master;
      out.push_back(info);
    }
  return out;
}

double Model::step(const std::vector<float>& x, const std::vector<float>& target, const octet_recipe* recipe,
                   const Adam* optimizer, int64_t step_number) {
  const double loss = forward_backward(x, target, recipe);
  if (optimizer) apply_optimizer(*optimizer, step_number);
  return loss;
}

double Model::forward_backward(const std::vector<float>& x, const std::vector<float>& target,
                               const octet_recipe* recipe, const std::function<void()>& prepare, float grad_scale) {
  const size_t nh = static_cast<size_t>(shape_.batch * shape_.hidden);
  const size_t no = static_cast<size_t>(shape_.batch * shape_.out);
  if (x.size() != nh || target.size() != no) throw std::invalid_argument("Model::step: sizes");

  ScopeGuard scope;
  if (recipe) {
    octet::check(octet_autocast_begin(context_.get(), recipe));
    scope.context = context_.get();
  }
  if (prepare) prepare();
  SavedGuard s1, s2, s3;
  // Forward: h1 = x + mlp1(x), h2 = h1 + mlp2(h1), y = head(h2). The
  // residual sums are taken on the host in the parameter dtype's values.
  upload_floats(x_, dtype_, x);
  const std::vector<float> xr = download_floats(x_, dtype_, nh);  // x as the layers see it
  octet::check(octet_layer_forward(layers_[0].layer, x_, m1_, 1, &s1.saved));
  std::vector<float> h1 = download_floats(m1_, dtype_, nh);
  add_into(h1, xr);
  upload_floats(h1_, dtype_, h1);
  h1 = download_floats(h1_, dtype_, nh);
  octet::check(octet_layer_forward(layers_[1].layer, h1_, m2_, 1, &s2.saved));
  std::vector<float> h2 = download_floats(m2_, dtype_, nh);
  add_into(h2, h1);
  upload_floats(h2_, dtype_, h2);
  octet::check(octet_layer_forward(layers_[2].layer, h2_, y_, 1, &s3.saved));
  const std::vector<float> y = download_floats(y_, dtype_, no);

  std::vector<float> dy;
  const double loss = mse_loss(y, target, &dy);
  if (grad_scale != 1.0f)
    for (float& g : dy) g *= grad_scale;

  // Backward: dh2 = head'(dy); dh1 = dh2 + mlp2'(dh2); mlp1'(dh1) (its input
  // gradient is not needed).
  upload_floats(dy_, dtype_, dy);
  octet::check(octet_layer_backward(layers_[2].layer, &s3.saved, dy_, dh2_, 0));
  octet::check(octet_layer_backward(layers_[1].layer, &s2.saved, dh2_, g2_, 0));
  std::vector<float> dh1 = download_floats(g2_, dtype_, nh);
  add_into(dh1, download_floats(dh2_, dtype_, nh));
  upload_floats(dh1_, dtype_, dh1);
  octet::check(octet_layer_backward(layers_[0].layer, &s1.saved, dh1_, nullptr, 0));
  if (recipe) scope.end();  // delayed scaling: the scales are updated here
  return loss;
}

void Model::apply_optimizer(const Adam& optimizer, int64_t step_number, bool skip_matrices) {
  for (Layer& l : layers_) {
    for (Param& p : l.params) {
      if (skip_matrices && p.cols > 0) continue;
      octet_tensor* g = nullptr;
      octet::check(octet_layer_get_gradient(l.layer, p.index, &g));
      const std::vector<float> grad = download_floats(g, dtype_, p.master.size());
      optimizer.update(p.master, grad, p.m, p.v, step_number);
      octet_tensor* param = nullptr;
      octet::check(octet_layer_get_parameter(l.layer, p.index, &param));
      upload_floats(param, dtype_, p.master);
    }
    octet::check(octet_layer_new_step(l.layer));
  }
}

}  // namespace demo
}  // namespace octet_cli
