// Rows for octet_gemm. Every case is compared with a double-precision GEMM
// the CLI computes from the operands as the backend stored them (FP8 codes
// decoded with octet_fp8_decode, times SCALE_INV), under the bound of
// numerics.md section 8; targets other than the plain reference are also
// compared with the reference context's result under twice that bound.
#include <cmath>

#include "capability_words.hpp"
#include "validate/row_families.hpp"

namespace octet_cli {
namespace {

struct GemmShape {
  int64_t m, n, k;
};
const GemmShape kShapes[] = {{1, 1, 1}, {7, 13, 5}, {67, 131, 29}, {129, 65, 257}};
const bool kTranspose[4][2] = {{false, false}, {false, true}, {true, false}, {true, true}};

bool is_fp8(octet_dtype d) {
  return d == OCTET_DTYPE_E4M3 || d == OCTET_DTYPE_E5M2 || d == OCTET_DTYPE_E4M3FNUZ || d == OCTET_DTYPE_E5M2FNUZ;
}

struct GemmCase {
  GemmShape shape;
  octet_dtype a_dtype, b_dtype, out_dtype;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  float a_scale = 1.0f, b_scale = 1.0f;  // quantization scales of FP8 operands
  bool must_be_exact = false;            // every step is exact in FP32
  // High-precision sources, stored as the operands are ([m,k] or [k,m], ...).
  std::vector<float> a_source, b_source;
  HostArray c;     // D's initial contents when beta != 0
  HostArray bias;  // empty when there is no bias
};

// An operand as the backend holds it, read back in row-major stored order.
struct Operand {
  std::vector<double> values;  // decoded, unscaled
  double scale_inv = 1.0;
};

std::vector<int64_t> stored_shape(int64_t outer, int64_t k, bool transposed) {
  return transposed ? std::vector<int64_t>{k, outer} : std::vector<int64_t>{outer, k};
}

// Quantizes an FP8 operand with both usages (so the core can pick either
// access) or uploads a high-precision one as is.
octet::Tensor make_operand(octet::Context& context, octet_dtype dtype, const std::vector<int64_t>& shape,
                           const std::vector<float>& source, float scale, Operand* read_back) {
  if (!is_fp8(dtype)) {
    const HostArray a = encode_array(dtype, shape, source);
    const std::vector<float> w = widen(a);
    read_back->values.assign(w.begin(), w.end());
    return upload_plain(context, a);
  }
  octet::Tensor src = upload_plain(context, encode_array(OCTET_DTYPE_FP32, shape, source));
  octet::Tensor q = octet::Tensor::create(context, dtype, shape, OCTET_USAGE_BOTH);
  q.set_scale(scale);
  octet::quantize(context, src, q);
  const octet_tensor_info info = q.info();
  HostArray codes;
  if (info.has_rowwise_data) {
    codes = download(q, OCTET_COMPONENT_DATA, dtype, shape);
  } else {
    const HostArray t = download(q, OCTET_COMPONENT_COLUMNWISE_DATA, dtype, {shape[1], shape[0]});
    codes = make_array(dtype, shape);
    codes.bytes = transpose_bytes(t.bytes, shape[1], shape[0], 1);
  }
  for (size_t i = 0; i < codes.count(); ++i) read_back->values.push_back(octet_fp8_decode(codes.bytes[i], dtype));
  read_back->scale_inv = q.scale_inv();
  return q;
}

struct GemmResult {
  HostArray d;
  Operand a, b;
};

GemmResult run_gemm(octet::Context& context, const GemmCase& c) {
  const GemmShape& s = c.shape;
  GemmResult r;
  octet::Tensor a = make_operand(context, c.a_dtype, stored_shape(s.m, s.k, c.trans_a), c.a_source, c.a_scale, &r.a);
  octet::Tensor b = make_operand(context, c.b_dtype, stored_shape(s.n, s.k, c.trans_b), c.b_source, c.b_scale, &r.b);
  octet::Tensor d = octet::Tensor::create(context, c.out_dtype, {s.m, s.n});
  if (c.beta != 0.0f) d.copy_from_host(OCTET_COMPONENT_DATA, c.c.bytes.data(), c.c.bytes.size());
  octet::Tensor bias;
  if (!c.bias.bytes.empty()) bias = upload_plain(context, c.bias);
  octet::GemmOptions options;
  options.trans_a = c.trans_a;
  options.trans_b = c.trans_b;
  options.alpha = c.alpha;
  options.beta = c.beta;
  options.bias = c.bias.bytes.empty() ? nullptr : &bias;
  octet::gemm(context, a, b, d, options);
  r.d = download(d, OCTET_COMPONENT_DATA, c.out_dtype, {s.m, s.n});
  return r;
}

// The exact result in double and the bound of numerics.md section 8 for
// every element of D, from the operands the backend actually used.
struct Expectation {
  std::vector<double> value, bound;
};

Expectation exact_gemm(const GemmCase& c, const Operand& a, const Operand& b) {
  const GemmShape& s = c.shape;
  const double scale = static_cast<double>(c.alpha) * a.scale_inv * b.scale_inv;
  const double unit = std::ldexp(1.0, -23) * static_cast<double>(s.k + 4);
  Expectation e;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const double av = c.trans_a ? a.values[kk * s.m + i] : a.values[i * s.k + kk];
        const double bv = c.trans_b ? b.values[kk * s.n + j] : b.values[j * s.k + kk];
        sum += av * bv;
        magnitude += std::fabs(av * bv);
      }
      double value = scale * sum, extra = 0;
      if (c.beta != 0.0f) {
        const double old = c.c.get(static_cast<size_t>(i * s.n + j));
        value += c.beta * old;
        extra += std::fabs(c.beta * old);
      }
      if (!c.bias.bytes.empty()) {
        value += c.bias.get(static_cast<size_t>(j));
        extra += std::fabs(c.bias.get(static_cast<size_t>(j)));
      }
      const double arithmetic = unit * (std::fabs(scale) * magnitude + extra);
      e.value.push_back(value);
      e.bound.push_back(arithmetic + ulp_of(c.out_dtype, std::fabs(value) + arithmetic));
    }
  }
  return e;
}

// Records the element with the worst error/bound ratio.
void record_worst(RowCheck& check, const HostArray& d, const std::vector<double>& expected,
                  const std::vector<double>& bound, double bound_factor) {
  double worst_error = 0, worst_bound = bound_factor * bound[0], worst_ratio = -1;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double error = std::fabs(static_cast<double>(d.get(i)) - expected[i]);
    const double b = bound_factor * bound[i];
    const double ratio = error / b;
    if (!(ratio <= worst_ratio)) {  // NaN is always the worst
      worst_ratio = ratio;
      worst_error = error;
      worst_bound = b;
    }
  }
  check.bounded(worst_error, worst_bound);
}

void run_case(const ValidationRun& run, RowCheck& check, const GemmCase& c) {
  const std::string name = shape_words({c.shape.m, c.shape.n, c.shape.k}) + " " + layout_name(c.trans_a, c.trans_b);
  check.run_case(name, [&] {
    const GemmResult got = run_gemm(*run.context, c);
    const Expectation exact = exact_gemm(c, got.a, got.b);
    record_worst(check, got.d, exact.value, exact.bound, 1.0);
    if (c.must_be_exact) {
      for (size_t i = 0; i < exact.value.size(); ++i)
        if (static_cast<double>(got.d.get(i)) != exact.value[i]) {
          check.exact("element " + std::to_string(i) + " is " + std::to_string(got.d.get(i)) + ", expected exactly " +
                      std::to_string(exact.value[i]));
          break;
        }
    }
    if (!run.target.is_plain_reference()) {
      // Two results each within the bound of the exact value are within
      // twice the bound of each other.
      const GemmResult ref = run_gemm(*run.reference, c);
      std::vector<double> ref_values(ref.d.count());
      for (size_t i = 0; i < ref_values.size(); ++i) ref_values[i] = ref.d.get(i);
      record_worst(check, got.d, ref_values, exact.bound, 2.0);
    }
  });
}

GemmCase make_case(const GemmShape& s, octet_dtype a, octet_dtype b, octet_dtype out, int layout,
                   std::mt19937_64& rng) {
  GemmCase c;
  c.shape = s;
  c.a_dtype = a;
  c.b_dtype = b;
  c.out_dtype = out;
  c.trans_a = kTranspose[layout][0];
  c.trans_b = kTranspose[layout][1];
  // Sources in [-2, 2] scaled into the upper part of each format's range.
  const auto scale_of = [](octet_dtype d) {
    return d == OCTET_DTYPE_E5M2 || d == OCTET_DTYPE_E5M2FNUZ ? 1000.0f : 100.0f;
  };
  c.a_scale = scale_of(a);
  c.b_scale = scale_of(b);
  c.a_source = uniform_floats(static_cast<size_t>(s.m * s.k), rng, -2.0f, 2.0f);
  c.b_source = uniform_floats(static_cast<size_t>(s.n * s.k), rng, -2.0f, 2.0f);
  return c;
}

// alpha, beta (with D's old contents representable in the output dtype) and
// a bias of `bias_dtype`.
void add_epilogue(GemmCase& c, octet_dtype bias_dtype, std::mt19937_64& rng) {
  c.alpha = 0.75f;
  c.beta = 0.5f;
  c.c = encode_array(c.out_dtype, {c.shape.m, c.shape.n},
                     uniform_floats(static_cast<size_t>(c.shape.m * c.shape.n), rng, -3, 3));
  c.bias = encode_array(bias_dtype, {c.shape.n}, uniform_floats(static_cast<size_t>(c.shape.n), rng, -1, 1));
}

// Integers in [-4, 3] with scale 1: exact in both FP8 formats and every
// product and sum exact in FP32, so the result must be exact.
GemmCase fixed_case(octet_dtype a, octet_dtype b, int layout) {
  const GemmShape s{7, 13, 5};
  std::mt19937_64 unused(0);
  GemmCase c = make_case(s, a, b, OCTET_DTYPE_FP32, layout, unused);
  c.a_scale = c.b_scale = 1.0f;
  c.must_be_exact = true;
  for (size_t i = 0; i < c.a_source.size(); ++i) c.a_source[i] = static_cast<float>(static_cast<int>((i * 3) % 7) - 3);
  for (size_t i = 0; i < c.b_source.size(); ++i) c.b_source[i] = static_cast<float>(static_cast<int>((i * 5) % 8) - 4);
  return c;
}

}  // namespace

void check_gemm_fp8(const ValidationRun& run) {
  // The FNUZ pairs (E4M3FNUZ/E5M2FNUZ) are "unsupported" on a backend that
  // does not declare them.
  const octet_dtype pairs[5][2] = {{OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3},
                                   {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2},
                                   {OCTET_DTYPE_E5M2, OCTET_DTYPE_E4M3},
                                   {OCTET_DTYPE_E4M3FNUZ, OCTET_DTYPE_E4M3FNUZ},
                                   {OCTET_DTYPE_E5M2FNUZ, OCTET_DTYPE_E4M3FNUZ}};
  for (const auto& pair : pairs) {
    for (int layout = 0; layout < 4; ++layout) {
      const std::string operation = std::string("gemm ") + octet_dtype_name(pair[0]) + " x " +
                                    octet_dtype_name(pair[1]) + " " +
                                    layout_name(kTranspose[layout][0], kTranspose[layout][1]) + " -> fp32";
      run.row(operation, [&](RowCheck& check) {
        std::mt19937_64 rng(run.seed + 40 + static_cast<uint64_t>(layout));
        for (const GemmShape& s : kShapes)
          run_case(run, check, make_case(s, pair[0], pair[1], OCTET_DTYPE_FP32, layout, rng));
        run_case(run, check, fixed_case(pair[0], pair[1], layout));
      });
    }
  }
  for (octet_dtype out : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    const std::string operation =
        std::string("gemm e4m3 x e4m3 alpha/beta/bias -> ") + octet_dtype_name(out) + " (all layouts)";
    run.row(operation, [&](RowCheck& check) {
      std::mt19937_64 rng(run.seed + 50);
      for (int layout = 0; layout < 4; ++layout)
        for (const GemmShape& s : kShapes) {
          GemmCase c = make_case(s, OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, out, layout, rng);
          add_epilogue(c, OCTET_DTYPE_FP32, rng);
          run_case(run, check, c);
        }
    });
  }
}

void check_gemm_fp8_output(const ValidationRun& run) {
  // The contract (octet.h, octet_gemm): D's codes are fp8(r * SCALE) with r
  // the FP32 value an FP32 D receives from the same call, SCALE_INV = 1/SCALE,
  // AMAX = max |r|. r comes from the target itself, so the check is exact on
  // any backend; r's own accuracy is the rows above.
  for (octet_dtype out : {OCTET_DTYPE_E4M3, OCTET_DTYPE_E5M2}) {
    for (bool saturate : {true, false}) {
      const std::string operation = std::string("gemm e4m3 x e4m3 bias -> ") + octet_dtype_name(out) +
                                    (saturate ? " saturating" : " non-saturating") + " (fp8 output, amax)";
      run.row(operation, [&](RowCheck& check) {
        std::mt19937_64 rng(run.seed + 80);
        for (int layout = 0; layout < 4; ++layout)
          for (const GemmShape& s : kShapes) {
            GemmCase c = make_case(s, OCTET_DTYPE_E4M3, OCTET_DTYPE_E4M3, OCTET_DTYPE_FP32, layout, rng);
            add_epilogue(c, OCTET_DTYPE_FP32, rng);
            c.beta = 0.0f;  // FP8 D is never accumulated into
            check.run_case(shape_words({s.m, s.n, s.k}) + " " + layout_name(c.trans_a, c.trans_b), [&] {
              octet::Context& context = *run.context;
              Operand unused_a, unused_b;
              octet::Tensor a =
                  make_operand(context, c.a_dtype, stored_shape(s.m, s.k, c.trans_a), c.a_source, c.a_scale, &unused_a);
              octet::Tensor b =
                  make_operand(context, c.b_dtype, stored_shape(s.n, s.k, c.trans_b), c.b_source, c.b_scale, &unused_b);
              octet::Tensor bias = upload_plain(context, c.bias);
              octet::GemmOptions options;
              options.trans_a = c.trans_a;
              options.trans_b = c.trans_b;
              options.alpha = c.alpha;
              options.bias = &bias;
              options.saturate_output = saturate;
              octet::Tensor r_tensor = octet::Tensor::create(context, OCTET_DTYPE_FP32, {s.m, s.n});
              octet::gemm(context, a, b, r_tensor, options);
              const HostArray r = download(r_tensor, OCTET_COMPONENT_DATA, OCTET_DTYPE_FP32, {s.m, s.n});
              // A scale that sends the largest results past the format's range.
              const float scale = (out == OCTET_DTYPE_E4M3 ? 600.0f : 80000.0f) / 4.0f;
              octet::Tensor d = octet::Tensor::create(context, out, {s.m, s.n}, OCTET_USAGE_ROWWISE);
              d.set_scale(scale);
              octet::gemm(context, a, b, d, options);
              const octet_tensor_info info = d.info();
              HostArray codes;
              if (info.has_rowwise_data) {
                codes = download(d, OCTET_COMPONENT_DATA, out, {s.m, s.n});
              } else {
                const HostArray t = download(d, OCTET_COMPONENT_COLUMNWISE_DATA, out, {s.n, s.m});
                codes = make_array(out, {s.m, s.n});
                codes.bytes = transpose_bytes(t.bytes, s.n, s.m, 1);
              }
              float amax = 0.0f;
              std::string difference;
              for (size_t i = 0; i < r.count() && difference.empty(); ++i) {
                const float v = static_cast<float>(r.get(i));
                const uint8_t want = octet_fp8_encode(v * scale, out, saturate ? 1 : 0);
                if (codes.bytes[i] != want)
                  difference = "code " + std::to_string(i) + " is " + std::to_string(codes.bytes[i]) + ", expected " +
                               std::to_string(want) + " (r = " + std::to_string(v) + ")";
              }
              for (size_t i = 0; i < r.count(); ++i) amax = std::fmax(amax, std::fabs(static_cast<float>(r.get(i))));
              if (difference.empty() && d.amax() != amax)
                difference = "AMAX is " + std::to_string(d.amax()) + ", expected " + std::to_string(amax);
              if (difference.empty() && d.scale_inv() != 1.0f / scale)
                difference = "SCALE_INV is " + std::to_string(d.scale_inv()) + ", expected 1/SCALE";
              check.exact(difference);
            });
          }
      });
    }
  }
}

void check_gemm_high_precision(const ValidationRun& run) {
  for (octet_dtype dtype : {OCTET_DTYPE_FP32, OCTET_DTYPE_BF16, OCTET_DTYPE_FP16}) {
    const std::string name = octet_dtype_name(dtype);
    run.row("gemm " + name + " x " + name + " -> fp32 (all layouts)", [&](RowCheck& check) {
      std::mt19937_64 rng(run.seed + 60);
      for (int layout = 0; layout < 4; ++layout)
        for (const GemmShape& s : kShapes)
          run_case(run, check, make_case(s, dtype, dtype, OCTET_DTYPE_FP32, layout, rng));
    });
    run.row("gemm " + name + " x " + name + " alpha/beta/bias -> " + name + " (all layouts)", [&](RowCheck& check) {
      std::mt19937_64 rng(run.seed + 70);
      for (int layout = 0; layout < 4; ++layout)
        for (const GemmShape& s : kShapes) {
          GemmCase c = make_case(s, dtype, dtype, dtype, layout, rng);
          add_epilogue(c, dtype, rng);
          run_case(run, check, c);
        }
    });
  }
}

}  // namespace octet_cli
