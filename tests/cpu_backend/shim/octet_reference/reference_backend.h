/* Test shim: the reference's table suites (tests/reference, the *_test.cpp files) call
 * octet_reference_backend_entry(); compiled with this header first on the
 * include path, the same suites drive the cpu plugin's table instead
 * (plugin_table.cpp loads liboctet_backend_cpu.so and forwards to its
 * octet_backend_entry). */
#ifndef OCTET_REFERENCE_BACKEND_H
#define OCTET_REFERENCE_BACKEND_H

#include <octet/octet_backend.h>

#ifdef __cplusplus
extern "C" {
#endif

int32_t octet_reference_backend_entry(uint32_t host_abi_major, uint32_t host_abi_minor,
                                      const octet_backend_api** api_out);

#ifdef __cplusplus
}
#endif

#endif
