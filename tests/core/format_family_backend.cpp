// Test plugins for dtype capabilities: the reference's kernels behind a
// backend that declares one FP8 family only. Built twice:
// OCTET_TEST_FNUZ_ONLY=1 gives "fnuz_only" (E4M3FNUZ and E5M2FNUZ, as an
// MI300-class device), 0 gives "ocp_only" (E4M3 and E5M2, as the cpu, cuda
// and kokkos backends). Every entry the core calls with a matrix counts the
// FP8 dtypes it sees outside the family, so a test can show the core never
// hands one over (octet_test_foreign_dtype_calls).
// OCTET_TEST_FNUZ_LIAR=1 (with OCTET_TEST_FNUZ_ONLY=1) gives "fnuz_liar" for
// `octet conformance` (tests/conformance): it declares the FNUZ family but
// its quantize writes the OCP codes of the same values (E4M3 for E4M3FNUZ,
// E5M2 for E5M2FNUZ), a lie only a probe in FNUZ catches.
#include <octet/octet_backend.h>
#include <octet_reference/reference_backend.h>

#include <atomic>
#include <cstdint>

namespace {

const octet_backend_api* g_ref = nullptr;
octet_backend_api g_api;
std::atomic<uint64_t> g_foreign{0};

#if OCTET_TEST_FNUZ_ONLY
constexpr uint32_t kFamily = OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ);
#if defined(OCTET_TEST_FNUZ_LIAR) && OCTET_TEST_FNUZ_LIAR
constexpr const char* kName = "fnuz_liar";
#else
constexpr const char* kName = "fnuz_only";
#endif
#else
constexpr uint32_t kFamily = OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2);
constexpr const char* kName = "ocp_only";
#endif
constexpr uint32_t kAllFp8 = OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2) |
                             OCTET_DTYPE_BIT(OCTET_DTYPE_E4M3FNUZ) | OCTET_DTYPE_BIT(OCTET_DTYPE_E5M2FNUZ) |
                             OCTET_DTYPE_BIT(OCTET_DTYPE_E2M1);

void see(int32_t dtype) {
  if (dtype >= 0 && dtype < 32 && (kAllFp8 & ~kFamily & OCTET_DTYPE_BIT(dtype)) != 0) ++g_foreign;
}

int32_t f_initialize(const octet_host_services* host, octet_backend_caps* caps) {
  const int32_t status = g_ref->initialize(host, caps);
  if (status != OCTET_STATUS_SUCCESS) return status;
  caps->device = "reference kernels, one FP8 family";
  caps->dtypes = (caps->dtypes & ~kAllFp8) | kFamily;
  return OCTET_STATUS_SUCCESS;
}

int32_t f_quantize(octet_backend_context* c, const octet_quantize_args* a) {
  if (a != nullptr) see(a->out_dtype);
#if defined(OCTET_TEST_FNUZ_LIAR) && OCTET_TEST_FNUZ_LIAR
  if (a != nullptr && a->struct_size >= sizeof(octet_quantize_args) &&
      (a->out_dtype == OCTET_DTYPE_E4M3FNUZ || a->out_dtype == OCTET_DTYPE_E5M2FNUZ)) {
    octet_quantize_args lie = *a;  // the lie: OCP codes in an FNUZ tensor
    lie.out_dtype = a->out_dtype == OCTET_DTYPE_E4M3FNUZ ? OCTET_DTYPE_E4M3 : OCTET_DTYPE_E5M2;
    return g_ref->quantize(c, &lie);
  }
#endif
  return g_ref->quantize(c, a);
}

int32_t f_dequantize(octet_backend_context* c, const octet_dequantize_args* a) {
  if (a != nullptr) see(a->input.dtype);
  return g_ref->dequantize(c, a);
}

int32_t f_gemm(octet_backend_context* c, const octet_gemm_args* a) {
  if (a != nullptr) {
    see(a->a.dtype);
    see(a->b.dtype);
    see(a->d.dtype);
  }
  return g_ref->gemm(c, a);
}

}  // namespace

extern "C" OCTET_BACKEND_EXPORT int32_t octet_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                            const octet_backend_api** api_out) {
  const int32_t status = octet_reference_backend_entry(host_abi_major, host_abi_minor, &g_ref);
  if (status != OCTET_STATUS_SUCCESS) return status;
  g_api = *g_ref;
  g_api.name = kName;
  g_api.initialize = f_initialize;
  g_api.quantize = f_quantize;
  g_api.dequantize = f_dequantize;
  g_api.gemm = f_gemm;
  *api_out = &g_api;
  return OCTET_STATUS_SUCCESS;
}

extern "C" OCTET_BACKEND_EXPORT uint64_t octet_test_foreign_dtype_calls(void) { return g_foreign.load(); }
