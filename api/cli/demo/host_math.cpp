#include "demo/host_math.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace octet_cli {
namespace demo {

uint64_t Rng::next_u64() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

float Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return static_cast<float>(spare_);
  }
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 2.0 * 3.14159265358979323846 * u2;
  spare_ = r * std::sin(a);
  has_spare_ = true;
  return static_cast<float>(r * std::cos(a));
}

Teacher Teacher::create(int64_t in, int64_t hidden, int64_t out, uint64_t seed) {
  Teacher t;
  t.in = in;
  t.hidden = hidden;
  t.out = out;
  Rng rng(seed);
  const float s1 = 2.0f / std::sqrt(static_cast<float>(in));
  const float s2 = 1.0f / std::sqrt(static_cast<float>(hidden));
  t.w1.resize(static_cast<size_t>(hidden * in));
  for (float& w : t.w1) w = s1 * rng.normal();
  t.b1.resize(static_cast<size_t>(hidden));
  for (float& b : t.b1) b = 0.5f * rng.normal();
  t.w2.resize(static_cast<size_t>(out * hidden));
  for (float& w : t.w2) w = s2 * rng.normal();
  t.b2.resize(static_cast<size_t>(out));
  for (float& b : t.b2) b = 0.1f * rng.normal();
  return t;
}

std::vector<float> Teacher::forward(const std::vector<float>& x, int64_t rows) const {
  if (static_cast<int64_t>(x.size()) != rows * in) throw std::invalid_argument("teacher input size");
  std::vector<float> h(static_cast<size_t>(hidden));
  std::vector<float> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = &x[static_cast<size_t>(r * in)];
    for (int64_t j = 0; j < hidden; ++j) {
      double acc = b1[static_cast<size_t>(j)];
      for (int64_t k = 0; k < in; ++k) acc += double(w1[static_cast<size_t>(j * in + k)]) * xr[k];
      h[static_cast<size_t>(j)] = static_cast<float>(std::tanh(acc));
    }
    for (int64_t o = 0; o < out; ++o) {
      double acc = b2[static_cast<size_t>(o)];
      for (int64_t j = 0; j < hidden; ++j)
        acc += double(w2[static_cast<size_t>(o * hidden + j)]) * h[static_cast<size_t>(j)];
      y[static_cast<size_t>(r * out + o)] = static_cast<float>(acc);
    }
  }
  return y;
}

double mse_loss(const std::vector<float>& y, const std::vector<float>& t, std::vector<float>* grad) {
  if (y.size() != t.size() || y.empty()) throw std::invalid_argument("mse_loss: sizes");
  const double n = static_cast<double>(y.size());
  double sum = 0.0;
  if (grad) grad->resize(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = double(y[i]) - double(t[i]);
    sum += d * d;
    if (grad) (*grad)[i] = static_cast<float>(2.0 * d / n);
  }
  return sum / n;
}

void Adam::update(std::vector<float>& param, const std::vector<float>& grad, std::vector<float>& m,
                  std::vector<float>& v, int64_t step) const {
  if (grad.size() != param.size() || m.size() != param.size() || v.size() != param.size())
    throw std::invalid_argument("Adam::update: sizes");
  if (step < 1) throw std::invalid_argument("Adam::update: step starts at 1");
  const double c1 = 1.0 - std::pow(double(beta1), double(step));
  const double c2 = 1.0 - std::pow(double(beta2), double(step));
  for (size_t i = 0; i < param.size(); ++i) {
    m[i] = beta1 * m[i] + (1.0f - beta1) * grad[i];
    v[i] = beta2 * v[i] + (1.0f - beta2) * grad[i] * grad[i];
    const double mhat = m[i] / c1;
    const double vhat = v[i] / c2;
    param[i] = static_cast<float>(param[i] - lr * mhat / (std::sqrt(vhat) + eps));
  }
}

double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t half = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half), values.end());
  const double upper = values[half];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(half));
  return 0.5 * (lower + upper);
}

double tail_mean(const std::vector<double>& values, size_t count) {
  if (values.empty()) return 0.0;
  if (count == 0 || count > values.size()) count = values.size();
  double sum = 0.0;
  for (size_t i = values.size() - count; i < values.size(); ++i) sum += values[i];
  return sum / static_cast<double>(count);
}

}  // namespace demo
}  // namespace octet_cli
