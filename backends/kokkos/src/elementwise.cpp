// Element-wise kernels: convert, amax, transpose, per-tensor quantize (one
// pass writing both usages, with optional statistics) and dequantize
// (numerics.md sections 6, 7 and 10). Each element is independent, so a
// Kokkos MDRange over (row, col) computes what the reference's loops do, bit
// for bit; amax and statistics are order-free reductions.
#include <string>

#include "views.hpp"

namespace octet_kokkos {

int32_t convert_kernel(const octet_matrix_view* input, const octet_matrix_view* output, int32_t saturate) {
  const char* kernel = "convert";
  if (int32_t s = check_not_null(kernel, "input", input)) return s;
  if (int32_t s = check_not_null(kernel, "output", output)) return s;
  if (int32_t s = check_matrix(kernel, "input", *input, DtypeClass::Any)) return s;
  if (int32_t s = check_matrix(kernel, "output", *output, DtypeClass::Any)) return s;
  if (int32_t s = check_shape(kernel, "output", *output, input->rows, input->cols, "same rows x cols as input"))
    return s;
  const Mat in(*input), out(*output);
  if (in.empty()) return OCTET_STATUS_SUCCESS;
  const bool sat = saturate != 0;
  Kokkos::parallel_for(
      "octet_kokkos::convert", Range2({0, 0}, {in.rows, in.cols}),
      KOKKOS_LAMBDA(int64_t r, int64_t c) { out.put(r, c, in.at(r, c), sat); });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

int32_t amax_kernel(const octet_matrix_view* input, float* amax_out) {
  const char* kernel = "amax";
  if (int32_t s = check_not_null(kernel, "input", input)) return s;
  if (int32_t s = check_not_null(kernel, "amax_out", amax_out)) return s;
  if (int32_t s = check_matrix(kernel, "input", *input, DtypeClass::HighPrecision)) return s;
  const Mat in(*input);
  float amax = 0.0f;
  if (!in.empty()) {
    Kokkos::parallel_reduce(
        "octet_kokkos::amax", Range2({0, 0}, {in.rows, in.cols}),
        KOKKOS_LAMBDA(int64_t r, int64_t c, float& m) {
          const float x = in.at(r, c);
          if (!is_nan(x) && abs_of(x) > m) m = abs_of(x);  // NaN (signalling too) ignored
        },
        Kokkos::Max<float>(amax));
    if (!(amax > 0.0f)) amax = 0.0f;  // the identity of Max is -FLT_MAX
  }
  write_scalar(amax_out, amax);
  return OCTET_STATUS_SUCCESS;
}

int32_t transpose_kernel(const octet_matrix_view* input, const octet_matrix_view* output) {
  const char* kernel = "transpose";
  if (int32_t s = check_not_null(kernel, "input", input)) return s;
  if (int32_t s = check_not_null(kernel, "output", output)) return s;
  if (int32_t s = check_matrix(kernel, "input", *input, DtypeClass::Any)) return s;
  if (int32_t s = check_matrix(kernel, "output", *output, DtypeClass::Any)) return s;
  if (output->dtype != input->dtype) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kernel) + ": output.dtype is " +
                                                     dtype_name(output->dtype) + " but must equal input.dtype (" +
                                                     dtype_name(input->dtype) + ")");
  }
  if (int32_t s = check_shape(kernel, "output", *output, input->cols, input->rows, "input.cols x input.rows"))
    return s;
  const Mat in(*input), out(*output);
  if (in.empty()) return OCTET_STATUS_SUCCESS;
  const int64_t size = static_cast<int64_t>(dtype_size(in.dtype));
  // Bytes moved as they are: a transpose never changes a value.
  Kokkos::parallel_for(
      "octet_kokkos::transpose", Range2({0, 0}, {in.rows, in.cols}), KOKKOS_LAMBDA(int64_t r, int64_t c) {
        const unsigned char* from = in.bytes.data() + (r * in.ld + c) * size;
        unsigned char* to = out.bytes.data() + (c * out.ld + r) * size;
        for (int64_t b = 0; b < size; ++b) to[b] = from[b];
      });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

namespace {

int32_t check_quantize_args(const char* kernel, const octet_quantize_args* args) {
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_quantize_args))) return s;
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::HighPrecision)) return s;
  if (!is_fp8(args->out_dtype)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kernel) + ": args->out_dtype is " + dtype_name(args->out_dtype) + " (" +
                      std::to_string(args->out_dtype) + ") but must be " + kFp8DtypeNames);
  }
  return check_not_null(kernel, "args->scale", args->scale);
}

}  // namespace

// q = fp8(x * scale) into the rowwise [rows, cols] and columnwise [cols, rows]
// codes (both dense) in one pass; amax and statistics reduced in the same pass.
void quantize_checked(const octet_quantize_args& args, octet_quantize_statistics* stats_out) {
  const Mat in(args.input);
  const int32_t dtype = args.out_dtype;
  const bool sat = args.saturate != 0;
  const float scale = read_scalar(args.scale);
  const int64_t rows = in.rows, cols = in.cols;
  const int64_t count = in.empty() ? 0 : rows * cols;
  const DeviceView<uint8_t> rowwise(args.rowwise_out, args.rowwise_out != nullptr ? static_cast<size_t>(count) : 0);
  const DeviceView<uint8_t> columnwise(args.columnwise_out,
                                       args.columnwise_out != nullptr ? static_cast<size_t>(count) : 0);
  const bool write_rowwise = args.rowwise_out != nullptr, write_columnwise = args.columnwise_out != nullptr;
  const bool want_stats = stats_out != nullptr;
  Stats stats;
  if (count > 0) {
    Kokkos::parallel_reduce(
        "octet_kokkos::quantize", Range2({0, 0}, {rows, cols}),
        KOKKOS_LAMBDA(int64_t r, int64_t c, Stats& s) {
          const float x = in.at(r, c);
          const float scaled = mul(x, scale);
          const uint8_t code = fp8_encode(scaled, dtype, sat);
          if (write_rowwise) rowwise(r * cols + c) = code;
          if (write_columnwise) columnwise(c * rows + r) = code;
          if (want_stats) {
            s.count(x, scaled, code, dtype);
          } else if (!is_nan(x) && abs_of(x) > s.amax) {
            s.amax = abs_of(x);  // amax only: NaN (signalling too) ignored
          }
        },
        Kokkos::Sum<Stats>(stats));
  }
  if (args.scale_inv_out != nullptr) write_scalar(args.scale_inv_out, div(1.0f, scale));
  if (args.amax_out != nullptr) write_scalar(args.amax_out, stats.amax);
  if (stats_out != nullptr) write_scalar(stats_out, stats.result());
}

int32_t quantize_kernel(const octet_quantize_args* args, octet_quantize_statistics* stats_out) {
  if (int32_t s = check_quantize_args("quantize", args)) return s;
  quantize_checked(*args, stats_out);
  return OCTET_STATUS_SUCCESS;
}

int32_t dequantize_kernel(const octet_dequantize_args* args) {
  const char* kernel = "dequantize";
  if (int32_t s = check_not_null(kernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kernel, "args", args->struct_size, sizeof(octet_dequantize_args))) return s;
  if (int32_t s = check_matrix(kernel, "args->input", args->input, DtypeClass::Fp8)) return s;
  if (int32_t s = check_not_null(kernel, "args->scale_inv", args->scale_inv)) return s;
  if (int32_t s = check_matrix(kernel, "args->output", args->output, DtypeClass::HighPrecision)) return s;
  if (int32_t s = check_shape(kernel, "args->output", args->output, args->input.rows, args->input.cols,
                              "same rows x cols as args->input"))
    return s;
  const Mat in(args->input), out(args->output);
  if (in.empty()) return OCTET_STATUS_SUCCESS;
  const float scale_inv = read_scalar(args->scale_inv);
  Kokkos::parallel_for(
      "octet_kokkos::dequantize", Range2({0, 0}, {in.rows, in.cols}),
      KOKKOS_LAMBDA(int64_t r, int64_t c) { out.put(r, c, mul(in.at(r, c), scale_inv), true); });
  Kokkos::fence();
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet_kokkos
