// Fuzzes another backend against the reference with the programs of
// tensor calls of tensor_program.hpp (create, quantize in every scaling
// mode, dequantize, convert, amax, GEMMs of every layout, epilogue, bias and
// output dtype). The backend is named by OCTET_FUZZ_BACKEND (default "cpu")
// and found through plugin discovery (OCTET_BACKEND_PATH). Properties, for
// any bytes, as numerics.md states them for every backend:
// - the same status as the reference, or UNSUPPORTED ("fine, but not
//   here"); a failure leaves a message and the output untouched;
// - element-wise results (codes, scales, amax, dequantized and converted
//   values) bit-identical to the reference's;
// - GEMM results, per-tensor and block-scaled, within numerics.md sections
//   8 and 12's bound of the exact result, computed here in double from the
//   decoded operands and scales; the reference's own results are held to the
//   same bound. (An FP8 GEMM output: the status only.)
// When the backend cannot be used here (a cuda plugin without a GPU), every
// input returns at once after one line saying why.
#include "tensor_program.hpp"

namespace {

octet_context* make_context(const char* backend) {
  octet_context_options o;
  octet_context_options_init(&o);
  o.backend = backend;
  octet_context* c = nullptr;
  return octet_context_create(&o, &c) == OCTET_STATUS_SUCCESS ? c : nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace octet_fuzz;
  static const char* backend = std::getenv("OCTET_FUZZ_BACKEND") ? std::getenv("OCTET_FUZZ_BACKEND") : "cpu";
  static bool usable = [] {
    octet_context* c = make_context(backend);
    if (c == nullptr) {
      std::fprintf(stderr, "fuzz_backend_vs_reference: backend '%s' cannot be used here, nothing is fuzzed: %s\n",
                   backend, octet_last_error_message());
      return false;
    }
    octet_context_destroy(c);
    return true;
  }();
  if (!usable) return 0;
  octet_context* reference = make_context("reference");
  octet_context* other = make_context(backend);
  if (reference == nullptr || other == nullptr) fail("octet_context_create", -1);
  Program p({reference, other}, /*bounded_gemm=*/true);
  Input in(data, size);
  run_program(p, in);
  return 0;
}
