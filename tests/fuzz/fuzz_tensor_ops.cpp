// Fuzzes the tensor operations of octet.h (create, quantize, dequantize,
// convert, amax, GEMM with every layout, epilogue and output dtype, scales
// written by the caller) as programs: each input is a sequence of calls over
// a small pool of tensors, with shapes, dtypes, usages, scaling modes,
// values (NaN, inf, subnormals and raw bit patterns included) and options
// drawn from its bytes.
//
// The same program runs on three reference contexts: the native, the
// hopper-like and the blackwell-like capability profile. A profile changes
// only where the core keeps each usage (a transposed copy or the native
// one) and which GEMM layouts it may call, never a number (docs/abi.md,
// tests/core/capability_profiles_test.cpp). Properties, for any bytes:
// - every call returns the same status on the three contexts; a failure
//   leaves a message and its outputs as they were;
// - every output the call wrote is bit-identical on the three contexts,
//   each usage of a quantized tensor read as the logical [rows, cols] codes
//   (a transposed copy is transposed back);
// - a per-tensor quantize writes, element by element, the scalar codec's
//   fp8(x * scale) (octet_fp8_encode, octet_math_mul), SCALE_INV = 1/scale
//   and AMAX = max |x| with NaN ignored, computed here.
#include "fuzz/tensor_program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace octet_fuzz;
  std::vector<octet_context*> contexts;
  for (int32_t profile : {OCTET_PROFILE_NATIVE, OCTET_PROFILE_HOPPER_LIKE, OCTET_PROFILE_BLACKWELL_LIKE}) {
    octet_context_options o;
    octet_context_options_init(&o);
    o.backend = "reference";
    o.capability_profile = profile;
    octet_context* c = nullptr;
    if (octet_context_create(&o, &c) != OCTET_STATUS_SUCCESS) fail("octet_context_create", -1);
    contexts.push_back(c);
  }
  try {
    Program p(std::move(contexts), /*bounded_gemm=*/false);
    Input in(data, size);
    run_program(p, in);
  } catch (const PropertyViolation& e) {
    std::fprintf(stderr, "fuzz: %s\n", e.what());
    std::abort();
  }
  return 0;
}
