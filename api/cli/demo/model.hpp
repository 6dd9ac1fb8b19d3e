// The model `octet demo` trains, built from Octet layers through the public
// ABI: two residual blocks x + LayerNormMLP(x) (GELU) and a Linear head. The
// host keeps FP32 master copies of every parameter and runs Adam on them;
// the layers hold the parameters in their params_dtype (FP32 or BF16).
#pragma once

#include <octet/octet.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "demo/host_math.hpp"

namespace octet_cli {
namespace demo {

struct ModelShape {
  int64_t batch = 64;
  int64_t hidden = 64;  // model width (input features too)
  int64_t ffn = 128;    // MLP inner width (2 x hidden)
  int64_t out = 8;      // regression targets
};

// Uploads host FP32 values into a tensor of dtype FP32 or BF16 (rounded to
// nearest even), and back.
void upload_floats(octet_tensor* tensor, int32_t dtype, const std::vector<float>& values);
std::vector<float> download_floats(const octet_tensor* tensor, int32_t dtype, size_t count);

// A parameter as the host holds it: where it lives in the model, its shape
// ([rows, cols] for weight matrices, [rows] with cols 0 for vectors) and its
// FP32 master copy.
struct ParameterInfo {
  octet_layer* layer = nullptr;
  size_t index = 0;
  std::string name;
  int64_t rows = 0, cols = 0;
  const std::vector<float>* master = nullptr;
  bool matrix() const { return cols > 0; }
};

class Model {
 public:
  // Creates the layers on `context` with parameters of `params_dtype` and
  // initialises them from `seed` (the same values for every precision).
  // given_weights: the layers allocate no weight matrices
  // (skip_weight_allocation); the caller gives each with
  // octet_layer_set_weight before a step and updates them itself (the
  // masters are still made here, the same values).
  Model(octet::Context& context, const ModelShape& shape, int32_t params_dtype, uint64_t seed,
        bool given_weights = false);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // One training step on (x [batch, hidden], target [batch, out]): forward,
  // MSE loss on the host, backward, all inside an autocast scope of `recipe`
  // when it is not null. Returns the loss (before the update). With
  // `optimizer` null, parameters are left unchanged.
  double step(const std::vector<float>& x, const std::vector<float>& target, const octet_recipe* recipe,
              const Adam* optimizer, int64_t step_number);

  // The step's forward, loss and backward, without the update: the
  // gradients are left in the layers. `prepare` (if set) runs first inside
  // the autocast scope (a distributed step gathers its weights there); the
  // loss gradient is multiplied by grad_scale (1 / ranks for a rank's share
  // of a batch split over ranks).
  double forward_backward(const std::vector<float>& x, const std::vector<float>& target, const octet_recipe* recipe,
                          const std::function<void()>& prepare = {}, float grad_scale = 1.0f);
  // Adam on every parameter (matrices too unless skip_matrices), from the
  // layers' gradients; then octet_layer_new_step.
  void apply_optimizer(const Adam& optimizer, int64_t step_number, bool skip_matrices = false);

  std::vector<ParameterInfo> parameters() const;

  // The layers, for inspection (quantizers): 0, 1 the MLP blocks, 2 the head.
  octet_layer* layer(size_t i) const { return layers_.at(i).layer; }
  size_t layer_count() const { return layers_.size(); }
  // Number of linears (GEMM-bearing sub-layers) of layer i.
  size_t linear_count(size_t i) const { return i < 2 ? 2 : 1; }

 private:
  struct Param {
    size_t index = 0;
    std::string name;
    int64_t rows = 0, cols = 0;
    std::vector<float> master, m, v;
  };
  struct Layer {
    octet_layer* layer = nullptr;
    std::vector<Param> params;
  };

  void init_parameters(Layer& layer, size_t layer_index, Rng& rng);
  octet_tensor* tensor(const std::vector<int64_t>& shape);

  octet::Context& context_;
  ModelShape shape_;
  int32_t dtype_;
  bool given_weights_;
  std::vector<Layer> layers_;
  std::vector<octet::Tensor> tensors_;
  // activations and gradients, created once
  octet_tensor *x_ = nullptr, *m1_ = nullptr, *h1_ = nullptr, *m2_ = nullptr, *h2_ = nullptr, *y_ = nullptr,
               *dy_ = nullptr, *dh2_ = nullptr, *g2_ = nullptr, *dh1_ = nullptr;
};

}  // namespace demo
}  // namespace octet_cli
