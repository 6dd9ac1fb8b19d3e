/* The embedded reference backend: the same plugin ABI as any plugin, linked
 * into liboctet instead of loaded from a file. */
#ifndef OCTET_REFERENCE_BACKEND_H
#define OCTET_REFERENCE_BACKEND_H

#include <octet/octet_backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Same contract as octet_backend_entry (see octet_backend.h). */
int32_t octet_reference_backend_entry(uint32_t host_abi_major,
                                      uint32_t host_abi_minor,
                                      const octet_backend_api** api_out);

#ifdef __cplusplus
}
#endif

#endif
