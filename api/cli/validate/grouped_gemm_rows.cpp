// Rows for octet_grouped_gemm (docs/grouped_gemm.md): ragged groups, empty
// ones included, for the forward layout (split M, one stacked input, a
// weight per group) and the wgrad layout (split K, stacked dY and X). Each
// group must equal, bit for bit, the target's own octet_gemm on that group's
// operands (the contract), and lie within numerics.md section 8's bound of a
// double-precision GEMM of the operands as stored; targets other than the
// plain reference are also held to twice that bound of the reference.
#include <cmath>

#include "capability_words.hpp"
#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

const int64_t kSplits[] = {3, 0, 29, 1, 67};
constexpr size_t kGroups = sizeof(kSplits) / sizeof(kSplits[0]);

bool fp8(octet_dtype d) { return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2; }

// A stored [rows, cols] operand from `source` (FP8: quantized with `scale`
// and both usages), and its values as stored (decoded times SCALE_INV).
octet::Tensor make(octet::Context& context, octet_dtype dtype, int64_t rows, int64_t cols,
                   const std::vector<float>& source, float scale, std::vector<double>* values) {
  const HostArray plain = encode_array(fp8(dtype) ? OCTET_DTYPE_FP32 : dtype, {rows, cols}, source);
  if (!fp8(dtype)) {
    const std::vector<float> w = widen(plain);
    values->assign(w.begin(), w.end());
    return upload_plain(context, plain);
  }
  octet::Tensor src = upload_plain(context, plain);
  octet::Tensor q = octet::Tensor::create(context, dtype, {rows, cols}, OCTET_USAGE_BOTH);
  q.set_scale(scale);
  octet::quantize(context, src, q);
  const HostArray codes = download(q, OCTET_COMPONENT_DATA, dtype, {rows, cols});
  const double scale_inv = q.scale_inv();
  values->clear();
  for (size_t i = 0; i < codes.count(); ++i) values->push_back(octet_fp8_decode(codes.bytes[i], dtype) * scale_inv);
  return q;
}

std::vector<float> rows_of(const std::vector<float>& m, int64_t cols, int64_t first, int64_t count) {
  return std::vector<float>(m.begin() + first * cols, m.begin() + (first + count) * cols);
}

void grouped(octet::Context& context, const std::vector<const octet::Tensor*>& a,
             const std::vector<const octet::Tensor*>& b, const std::vector<octet::Tensor*>& d, int32_t split,
             bool trans_a, bool trans_b) {
  octet_grouped_gemm_options options;
  octet_grouped_gemm_options_init(&options);
  options.split = split;
  options.trans_a = trans_a;
  options.trans_b = trans_b;
  std::vector<const octet_tensor*> ha, hb;
  std::vector<octet_tensor*> hd;
  for (const octet::Tensor* t : a) ha.push_back(t->get());
  for (const octet::Tensor* t : b) hb.push_back(t->get());
  for (octet::Tensor* t : d) hd.push_back(t->get());
  octet::check(octet_grouped_gemm(context.get(), kGroups, kSplits, ha.data(), ha.size(), hb.data(), hb.size(),
                                  hd.data(), hd.size(), &options));
}

// |got - want| against the bound for one group's [m, n] result, the sums
// over `k` products of A'[i, :] and B'[j, :] given as functions.
template <typename A, typename B>
void bound_group(RowCheck& check, const HostArray& got, size_t offset, int64_t m, int64_t n, int64_t k, A a_at, B b_at,
                 const HostArray* reference) {
  const double unit = std::ldexp(1.0, -23) * static_cast<double>(k + 4);
  double worst_error = 0, worst_bound = 0, worst_ratio = -1;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum += a_at(i, kk) * b_at(j, kk);
        magnitude += std::fabs(a_at(i, kk) * b_at(j, kk));
      }
      const double bound = unit * magnitude + ulp_of(OCTET_DTYPE_FP32, std::fabs(sum) + unit * magnitude);
      const size_t at = offset + static_cast<size_t>(i * n + j);
      const double error = std::fabs(static_cast<double>(got.get(at)) - sum);
      const double ratio = error / bound;
      if (!(ratio <= worst_ratio)) {
        worst_ratio = ratio;
        worst_error = error;
        worst_bound = bound;
      }
      if (reference != nullptr) {
        const double to_reference = std::fabs(static_cast<double>(got.get(at)) - reference->get(at));
        if (!(to_reference / (2 * bound) <= worst_ratio)) {
          worst_ratio = to_reference / (2 * bound);
          worst_error = to_reference;
          worst_bound = 2 * bound;
        }
      }
    }
  check.bounded(worst_error, worst_bound);
}

void same_bits(RowCheck& check, const HostArray& grouped_d, size_t offset, const HostArray& own, size_t group) {
  for (size_t i = 0; i < own.count(); ++i)
    if (grouped_d.get(offset + i) != own.get(i) && !(std::isnan(grouped_d.get(offset + i)) && std::isnan(own.get(i)))) {
      check.exact("group " + std::to_string(group) + " element " + std::to_string(i) + " is " +
                  std::to_string(grouped_d.get(offset + i)) + ", its own octet_gemm gives " +
                  std::to_string(own.get(i)));
      return;
    }
}

// Forward: Y[sum m, n] = X W_g^T, X stacked, W_g one per group.
HostArray forward(octet::Context& context, octet_dtype dtype, const std::vector<float>& x,
                  const std::vector<std::vector<float>>& w, int64_t n, int64_t k, std::vector<double>* x_values,
                  std::vector<std::vector<double>>* w_values, std::vector<HostArray>* own) {
  int64_t total = 0;
  for (int64_t s : kSplits) total += s;
  octet::Tensor tx = make(context, dtype, total, k, x, 16.0f, x_values);
  std::vector<octet::Tensor> tw;
  w_values->assign(kGroups, {});
  for (size_t g = 0; g < kGroups; ++g) tw.push_back(make(context, dtype, n, k, w[g], 64.0f, &(*w_values)[g]));
  std::vector<const octet::Tensor*> b;
  for (const octet::Tensor& t : tw) b.push_back(&t);
  octet::Tensor y = octet::Tensor::create(context, OCTET_DTYPE_FP32, {total, n});
  grouped(context, {&tx}, b, {&y}, OCTET_GROUP_SPLIT_M, false, false);
  if (own != nullptr) {
    int64_t first = 0;
    for (size_t g = 0; g < kGroups; ++g) {
      const int64_t m = kSplits[g];
      if (m > 0) {
        std::vector<double> unused;
        octet::Tensor xg = make(context, dtype, m, k, rows_of(x, k, first, m), 16.0f, &unused);
        octet::Tensor yg = octet::Tensor::create(context, OCTET_DTYPE_FP32, {m, n});
        octet::gemm(context, xg, tw[g], yg, octet::GemmOptions{});
        own->push_back(download(yg, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {m, n}));
      } else {
        own->push_back(HostArray{});
      }
      first += m;
    }
  }
  return download(y, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {total, n});
}

// Wgrad: dW_g[n, k] = dY_g^T X_g, dY and X stacked along the tokens.
HostArray wgrad(octet::Context& context, octet_dtype dtype, const std::vector<float>& dy, const std::vector<float>& x,
                int64_t n, int64_t k, std::vector<double>* dy_values, std::vector<double>* x_values,
                std::vector<HostArray>* own) {
  int64_t total = 0;
  for (int64_t s : kSplits) total += s;
  octet::Tensor tdy = make(context, dtype, total, n, dy, 16.0f, dy_values);
  octet::Tensor tx = make(context, dtype, total, k, x, 16.0f, x_values);
  octet::Tensor dw = octet::Tensor::create(context, OCTET_DTYPE_FP32, {int64_t(kGroups), n, k});
  grouped(context, {&tdy}, {&tx}, {&dw}, OCTET_GROUP_SPLIT_K, true, true);
  if (own != nullptr) {
    int64_t first = 0;
    for (size_t g = 0; g < kGroups; ++g) {
      const int64_t m = kSplits[g];
      if (m > 0) {
        std::vector<double> unused;
        octet::Tensor a = make(context, dtype, m, n, rows_of(dy, n, first, m), 16.0f, &unused);
        octet::Tensor b = make(context, dtype, m, k, rows_of(x, k, first, m), 16.0f, &unused);
        octet::Tensor d = octet::Tensor::create(context, OCTET_DTYPE_FP32, {n, k});
        octet::GemmOptions options;
        options.trans_a = true;
        options.trans_b = true;
        octet::gemm(context, a, b, d, options);
        own->push_back(download(d, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {n, k}));
      } else {
        own->push_back(HostArray{});
      }
      first += m;
    }
  }
  return download(dw, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {int64_t(kGroups), n, k});
}

}  // namespace

void check_grouped_gemm(const ValidationRun& run) {
  const int64_t n = 24, k = 40;
  int64_t total = 0;
  for (int64_t s : kSplits) total += s;
  for (octet_dtype dtype : {OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32}) {
    const std::string name = octet_dtype_name(dtype);
    run.row("grouped gemm " + name + " split m (5 experts, ragged) -> fp32", [&](RowCheck& check) {
      check.run_case("forward", [&] {
        std::mt19937_64 rng(run.seed + 90);
        const std::vector<float> x = uniform_floats(static_cast<size_t>(total * k), rng, -2.0f, 2.0f);
        std::vector<std::vector<float>> w;
        for (size_t g = 0; g < kGroups; ++g) w.push_back(uniform_floats(static_cast<size_t>(n * k), rng, -2, 2));
        std::vector<double> xv;
        std::vector<std::vector<double>> wv;
        std::vector<HostArray> own;
        const HostArray got = forward(*run.context, dtype, x, w, n, k, &xv, &wv, &own);
        HostArray ref;
        if (!run.target.is_plain_reference()) {
          std::vector<double> unused_x;
          std::vector<std::vector<double>> unused_w;
          ref = forward(*run.reference, dtype, x, w, n, k, &unused_x, &unused_w, nullptr);
        }
        int64_t first = 0;
        for (size_t g = 0; g < kGroups; ++g) {
          const int64_t m = kSplits[g];
          if (m > 0) {
            const size_t offset = static_cast<size_t>(first * n);
            same_bits(check, got, offset, own[g], g);
            bound_group(
                check, got, offset, m, n, k, [&](int64_t i, int64_t kk) { return xv[size_t((first + i) * k + kk)]; },
                [&](int64_t j, int64_t kk) { return wv[g][size_t(j * k + kk)]; },
                run.target.is_plain_reference() ? nullptr : &ref);
          }
          first += m;
        }
      });
    });
    run.row("grouped gemm " + name + " split k (wgrad, 5 experts, ragged) -> fp32", [&](RowCheck& check) {
      check.run_case("wgrad", [&] {
        std::mt19937_64 rng(run.seed + 91);
        const std::vector<float> dy = uniform_floats(static_cast<size_t>(total * n), rng, -2.0f, 2.0f);
        const std::vector<float> x = uniform_floats(static_cast<size_t>(total * k), rng, -2.0f, 2.0f);
        std::vector<double> dyv, xv;
        std::vector<HostArray> own;
        const HostArray got = wgrad(*run.context, dtype, dy, x, n, k, &dyv, &xv, &own);
        HostArray ref;
        if (!run.target.is_plain_reference()) {
          std::vector<double> unused_dy, unused_x;
          ref = wgrad(*run.reference, dtype, dy, x, n, k, &unused_dy, &unused_x, nullptr);
        }
        int64_t first = 0;
        for (size_t g = 0; g < kGroups; ++g) {
          const int64_t m = kSplits[g];
          const size_t offset = g * static_cast<size_t>(n * k);
          if (m > 0) same_bits(check, got, offset, own[g], g);
          bound_group(
              check, got, offset, n, k, m, [&](int64_t i, int64_t t) { return dyv[size_t((first + t) * n + i)]; },
              [&](int64_t j, int64_t t) { return xv[size_t((first + t) * k + j)]; },
              run.target.is_plain_reference() ? nullptr : &ref);
          first += m;
        }
      });
    });
  }
}

}  // namespace octet_cli
