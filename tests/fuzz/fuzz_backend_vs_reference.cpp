// Fuzzes another backend against the reference with the programs of
// tensor calls of api/cli/fuzz/tensor_program.hpp (create, quantize in every
// scaling mode, dequantize, convert, amax, GEMMs of every layout, epilogue,
// bias and output dtype); the properties are
// api/cli/fuzz/backend_vs_reference.hpp's, which `octet conformance` also
// runs. The backend is named by OCTET_FUZZ_BACKEND (default "cpu") and found
// through plugin discovery (OCTET_BACKEND_PATH). When the backend cannot be
// used here (a cuda plugin without a GPU), every input returns at once after
// one line saying why. A property that does not hold aborts, with what was
// seen on stderr.
#include "fuzz/backend_vs_reference.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace octet_fuzz;
  static const char* backend = std::getenv("OCTET_FUZZ_BACKEND") ? std::getenv("OCTET_FUZZ_BACKEND") : "cpu";
  static bool usable = [] {
    octet_context* c = make_backend_context(backend);
    if (c == nullptr) {
      std::fprintf(stderr, "fuzz_backend_vs_reference: backend '%s' cannot be used here, nothing is fuzzed: %s\n",
                   backend, octet_last_error_message());
      return false;
    }
    octet_context_destroy(c);
    return true;
  }();
  if (!usable) return 0;
  try {
    check_backend_vs_reference(backend, data, size);
  } catch (const PropertyViolation& e) {
    std::fprintf(stderr, "fuzz: %s\n", e.what());
    std::abort();
  }
  return 0;
}
