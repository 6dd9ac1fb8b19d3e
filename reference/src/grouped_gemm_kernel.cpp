// The reference grouped GEMM: the groups one after another, each exactly the
// reference's gemm or block_gemm on its arguments (octet_backend.h, "Grouped
// GEMMs"), which is what defines a grouped GEMM's results.
#include <string>

#include "argument_checks.hpp"
#include "host_errors.hpp"
#include "kernels.hpp"

namespace octet::ref {

int32_t grouped_gemm(const octet_grouped_gemm_args* args) {
  constexpr const char* kKernel = "grouped_gemm";
  if (int32_t s = check_not_null(kKernel, "args", args)) return s;
  if (int32_t s = check_struct_size(kKernel, "args", args->struct_size, sizeof(octet_grouped_gemm_args))) return s;
  if (args->group_count < 1) {
    return report(OCTET_STATUS_INVALID_ARGUMENT, std::string(kKernel) + ": args->group_count is " +
                                                     std::to_string(args->group_count) + "; it must be >= 1");
  }
  if ((args->gemms == nullptr) == (args->block_gemms == nullptr)) {
    return report(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string(kKernel) + ": exactly one of args->gemms and args->block_gemms must be set");
  }
  for (int64_t g = 0; g < args->group_count; ++g) {
    const int32_t s = args->gemms != nullptr ? gemm(args->gemms[g]) : block_gemm(args->block_gemms[g]);
    if (s != OCTET_STATUS_SUCCESS) return s;
  }
  return OCTET_STATUS_SUCCESS;
}

}  // namespace octet::ref
