// The host arithmetic of `octet demo` (api/cli/demo/host_math.*), against values
// computed here independently.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "demo/host_math.hpp"

namespace {

using namespace octet_cli::demo;

TEST(DemoMath, MseLossAndGradientByHand) {
  const std::vector<float> y = {1.0f, -2.0f, 0.5f, 3.0f};
  const std::vector<float> t = {0.0f, -1.0f, 0.5f, 1.0f};
  std::vector<float> g;
  // (1 + 1 + 0 + 4) / 4
  EXPECT_DOUBLE_EQ(mse_loss(y, t, &g), 1.5);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_FLOAT_EQ(g[0], 0.5f);   // 2 * 1 / 4
  EXPECT_FLOAT_EQ(g[1], -0.5f);  // 2 * -1 / 4
  EXPECT_FLOAT_EQ(g[2], 0.0f);
  EXPECT_FLOAT_EQ(g[3], 1.0f);  // 2 * 2 / 4
}

TEST(DemoMath, MseGradientMatchesFiniteDifferences) {
  Rng rng(7);
  std::vector<float> y(24), t(24);
  for (auto& v : y) v = rng.normal();
  for (auto& v : t) v = rng.normal();
  std::vector<float> g;
  mse_loss(y, t, &g);
  for (size_t i = 0; i < y.size(); ++i) {
    const float h = 1e-2f;
    std::vector<float> yp = y, ym = y;
    yp[i] += h;
    ym[i] -= h;
    const double fd = (mse_loss(yp, t, nullptr) - mse_loss(ym, t, nullptr)) / (2.0 * h);
    EXPECT_NEAR(g[i], fd, 1e-4) << i;
  }
}

TEST(DemoMath, MseRejectsMismatchedSizes) {
  EXPECT_THROW(mse_loss({1.0f}, {1.0f, 2.0f}, nullptr), std::invalid_argument);
}

TEST(DemoMath, AdamFirstStepMovesEachParameterByLearningRate) {
  // With bias correction, step 1 gives m_hat = g, v_hat = g^2: the update is
  // lr * g / (|g| + eps), i.e. lr * sign(g) for |g| >> eps.
  Adam adam;
  adam.lr = 0.01f;
  std::vector<float> p = {1.0f, 1.0f, 1.0f}, g = {0.3f, -2.0f, 0.0f};
  std::vector<float> m(3, 0.0f), v(3, 0.0f);
  adam.update(p, g, m, v, 1);
  EXPECT_NEAR(p[0], 0.99f, 1e-6f);
  EXPECT_NEAR(p[1], 1.01f, 1e-6f);
  EXPECT_FLOAT_EQ(p[2], 1.0f);
  EXPECT_NEAR(m[0], 0.1 * 0.3, 1e-7);
  EXPECT_NEAR(v[1], 0.001 * 4.0, 1e-7);  // 1 - 0.999f is 0.00099999 in float
}

TEST(DemoMath, AdamSecondStepByHand) {
  Adam adam;
  adam.lr = 0.1f;
  std::vector<float> p = {0.0f}, m = {0.0f}, v = {0.0f};
  adam.update(p, {1.0f}, m, v, 1);
  adam.update(p, {3.0f}, m, v, 2);
  const double m2 = 0.9 * 0.1 + 0.1 * 3.0;        // 0.39
  const double v2 = 0.999 * 0.001 + 0.001 * 9.0;  // 0.009999
  const double mhat = m2 / (1 - 0.81), vhat = v2 / (1 - 0.998001);
  const double expected = -0.1 - 0.1 * mhat / (std::sqrt(vhat) + 1e-8);
  EXPECT_NEAR(p[0], expected, 1e-6);
}

TEST(DemoMath, RngIsDeterministicAndNormal) {
  Rng a(42), b(42), c(43);
  double sum = 0, sum2 = 0;
  const int n = 20000;
  bool differs = false;
  for (int i = 0; i < n; ++i) {
    const float x = a.normal();
    EXPECT_EQ(x, b.normal());
    differs |= x != c.normal();
    sum += x;
    sum2 += double(x) * x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sum2 / n, 1.0, 0.05);
}

TEST(DemoMath, TeacherForwardByHand) {
  Teacher t = Teacher::create(2, 2, 1, 1);
  t.w1 = {1.0f, 0.0f, 0.5f, -1.0f};
  t.b1 = {0.0f, 0.25f};
  t.w2 = {2.0f, -1.0f};
  t.b2 = {0.5f};
  const std::vector<float> x = {1.0f, 2.0f, -1.0f, 0.0f};
  const std::vector<float> y = t.forward(x, 2);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_NEAR(y[0], 2 * std::tanh(1.0) - std::tanh(0.5 - 2 + 0.25) + 0.5, 1e-6);
  EXPECT_NEAR(y[1], 2 * std::tanh(-1.0) - std::tanh(-0.5 + 0.25) + 0.5, 1e-6);
}

TEST(DemoMath, TailMean) {
  EXPECT_DOUBLE_EQ(tail_mean({1, 2, 3, 4}, 2), 3.5);
  EXPECT_DOUBLE_EQ(tail_mean({1, 2, 3}, 10), 2.0);
  EXPECT_DOUBLE_EQ(tail_mean({}, 10), 0.0);
}

TEST(DemoMath, MedianIsTheMiddleValueOrTheMeanOfTheTwoMiddleOnes) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3.0);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  // One slow first step moves a mean but not the median.
  EXPECT_DOUBLE_EQ(median({100, 2, 2, 3, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median({7}), 7.0);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

}  // namespace
