// Versions, status names and dtype helpers of the users' ABI.
#include <octet/octet.h>

#include "runtime/error.hpp"

extern "C" {

OCTET_API octet_version octet_library_version(void) {
  return octet_version{OCTET_VERSION_MAJOR, OCTET_VERSION_MINOR, OCTET_VERSION_PATCH};
}

OCTET_API octet_version octet_abi_version(void) {
  return octet_version{OCTET_ABI_MAJOR, OCTET_ABI_MINOR, 0};
}

OCTET_API const char* octet_status_name(octet_status status) {
  switch (status) {
    case OCTET_STATUS_SUCCESS: return "OCTET_STATUS_SUCCESS";
    case OCTET_STATUS_INVALID_ARGUMENT: return "OCTET_STATUS_INVALID_ARGUMENT";
    case OCTET_STATUS_UNSUPPORTED: return "OCTET_STATUS_UNSUPPORTED";
    case OCTET_STATUS_OUT_OF_MEMORY: return "OCTET_STATUS_OUT_OF_MEMORY";
    case OCTET_STATUS_NOT_FOUND: return "OCTET_STATUS_NOT_FOUND";
    case OCTET_STATUS_BACKEND_ERROR: return "OCTET_STATUS_BACKEND_ERROR";
    case OCTET_STATUS_ABI_MISMATCH: return "OCTET_STATUS_ABI_MISMATCH";
    case OCTET_STATUS_UNAVAILABLE: return "OCTET_STATUS_UNAVAILABLE";
    case OCTET_STATUS_INTERNAL: return "OCTET_STATUS_INTERNAL";
    default: return "OCTET_STATUS_UNKNOWN";
  }
}

}  // extern "C"
