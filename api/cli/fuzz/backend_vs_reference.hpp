// One input of the backend-vs-reference fuzzer: the tensor program of
// tensor_program.hpp run on the reference and on another backend, with the
// properties numerics.md states for every backend:
// - the same status as the reference, or UNSUPPORTED ("fine, but not
//   here"); a failure leaves a message and the output untouched;
// - element-wise results (codes, scales, amax, dequantized and converted
//   values) bit-identical to the reference's;
// - GEMM results, per-tensor and block-scaled, within numerics.md sections
//   8 and 12's bound of the exact result, computed here in double from the
//   decoded operands and scales; the reference's own results are held to the
//   same bound. (An FP8 GEMM output: the status only.)
// Used by tests/fuzz/fuzz_backend_vs_reference.cpp (libFuzzer and the corpus
// replay) and by `octet conformance` (a bounded number of seeded inputs).
#pragma once

#include "fuzz/tensor_program.hpp"

namespace octet_fuzz {

// A context on `backend` (native profile), or NULL with the library's
// message in octet_last_error_message().
inline octet_context* make_backend_context(const char* backend) {
  octet_context_options o;
  octet_context_options_init(&o);
  o.backend = backend;
  octet_context* c = nullptr;
  return octet_context_create(&o, &c) == OCTET_STATUS_SUCCESS ? c : nullptr;
}

// Runs the program `data` describes on fresh contexts of the reference and
// of `backend`. Throws PropertyViolation when a property does not hold.
inline void check_backend_vs_reference(const char* backend, const uint8_t* data, size_t size) {
  octet_context* reference = make_backend_context("reference");
  octet_context* other = make_backend_context(backend);
  if (reference == nullptr || other == nullptr) {
    octet_context_destroy(reference);
    octet_context_destroy(other);
    fail("octet_context_create", -1);
  }
  Program p({reference, other}, /*bounded_gemm=*/true);
  Input in(data, size);
  run_program(p, in);
}

}  // namespace octet_fuzz
