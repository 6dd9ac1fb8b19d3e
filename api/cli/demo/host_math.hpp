// Host-side arithmetic of `octet demo`: synthetic data, the teacher network,
// the MSE loss and its gradient, and the Adam update. Plain C++ with no Octet
// calls, so tests/demo checks it on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace octet_cli {
namespace demo {

// Deterministic generator (splitmix64 + Box-Muller): the same seed gives the
// same numbers on every platform, so every precision sees the same data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  double uniform();  // [0, 1)
  float normal();    // N(0, 1)

 private:
  uint64_t state_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// Fixed random teacher: t = W2 tanh(W1 x + b1) + b2, with x [rows, in].
struct Teacher {
  int64_t in = 0, hidden = 0, out = 0;
  std::vector<float> w1, b1, w2, b2;  // w1 [hidden, in], w2 [out, hidden]
  static Teacher create(int64_t in, int64_t hidden, int64_t out, uint64_t seed);
  std::vector<float> forward(const std::vector<float>& x, int64_t rows) const;
};

// loss = mean over all elements of (y - t)^2; grad (if not null) receives
// dloss/dy = 2 (y - t) / n. Accumulates in double.
double mse_loss(const std::vector<float>& y, const std::vector<float>& t, std::vector<float>* grad);

// Adam (Kingma & Ba) with bias correction, on FP32 master values.
struct Adam {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  // One update of param with grad; m and v are its moment buffers (same
  // size), step is the 1-based step number.
  void update(std::vector<float>& param, const std::vector<float>& grad, std::vector<float>& m, std::vector<float>& v,
              int64_t step) const;
};

// Mean of the last `count` values (all of them if fewer).
double tail_mean(const std::vector<double>& values, size_t count);

// The median of values (the mean of the two middle ones for an even
// count); 0 for none. The demo's ms/step: a step's first-call costs (thread
// pools, first-touch pages) and another process's bursts move a mean, not
// the median.
double median(std::vector<double> values);

}  // namespace demo
}  // namespace octet_cli
