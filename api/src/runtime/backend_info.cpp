// Backend enumeration, load failures and explicit loading in the users' ABI,
// and octet_backend_info filled from a backend (also for octet_context_get_info).
#include <octet/octet.h>

#include <algorithm>
#include <cstring>

#include "runtime/backend_info.hpp"
#include "runtime/error.hpp"
#include "runtime/registry.hpp"

namespace octet::core {

void fill_backend_info(const Backend& backend, const octet_backend_caps& caps,
                       octet_backend_info* out) {
  octet_backend_info info{};
  info.struct_size = sizeof(info);
  info.name = backend.name.c_str();
  info.version = backend.version.c_str();
  info.device = backend.device.c_str();
  info.path = backend.path.c_str();
  info.memory_kind = caps.memory_kind;
  info.available = backend.available ? 1 : 0;
  info.unavailable_reason = backend.unavailable_reason.c_str();
  info.abi_major = backend.api->abi_major;
  info.abi_minor = backend.api->abi_minor;
  info.dtypes = caps.dtypes;
  info.scaling_modes = caps.scaling_modes;
  info.native_columnwise = caps.native_columnwise;
  info.fp8_gemm_layouts = caps.fp8_gemm_layouts;
  info.features = backend.features;
  if (!caps.fused_cast_transpose) info.features &= ~uint32_t(OCTET_FEATURE_FUSED_CAST_TRANSPOSE);
  info.alignment = caps.alignment;
  info.caller_alignment = caps.caller_alignment != 0 ? caps.caller_alignment : caps.alignment;
  write_versioned(info, out, "info");
}

}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_backend_count(size_t* count) {
  return guarded("octet_backend_count", [&] {
    require(count != nullptr, "argument 'count' is NULL");
    *count = Registry::instance().backends().size();
  });
}

OCTET_API octet_status octet_backend_get_info(size_t index, octet_backend_info* info) {
  return guarded("octet_backend_get_info", [&] {
    require_struct(info, info ? info->struct_size : 0, "info");
    auto backends = Registry::instance().backends();
    require(index < backends.size(), "argument 'index' (", index, ") must be below the backend count (",
            backends.size(), ")");
    fill_backend_info(*backends[index], backends[index]->caps, info);
  });
}

OCTET_API octet_status octet_backend_failure_count(size_t* count) {
  return guarded("octet_backend_failure_count", [&] {
    require(count != nullptr, "argument 'count' is NULL");
    *count = Registry::instance().failures().size();
  });
}

OCTET_API octet_status octet_backend_get_failure(size_t index, octet_backend_failure* failure) {
  return guarded("octet_backend_get_failure", [&] {
    require_struct(failure, failure ? failure->struct_size : 0, "failure");
    auto failures = Registry::instance().failures();
    require(index < failures.size(), "argument 'index' (", index,
            ") must be below the failure count (", failures.size(), ")");
    octet_backend_failure out{};
    out.struct_size = sizeof(out);
    out.path = failures[index]->path.c_str();
    out.reason = failures[index]->reason.c_str();
    write_versioned(out, failure, "failure");
  });
}

OCTET_API octet_status octet_backend_load(const char* path) {
  return guarded("octet_backend_load", [&] {
    require(path != nullptr && *path != '\0', "argument 'path' is NULL or empty");
    Registry::instance().load_explicit(path);
  });
}

}  // extern "C"
