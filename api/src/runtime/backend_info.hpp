#pragma once

#include <octet/octet_backend.h>

#include "runtime/registry.hpp"
#include "runtime/versioned_struct.hpp"

namespace octet::core {

// Fills a caller's octet_backend_info (honouring its struct_size) from a
// backend and the capabilities in effect.
void fill_backend_info(const Backend& backend, const octet_backend_caps& caps,
                       octet_backend_info* out);

}  // namespace octet::core
