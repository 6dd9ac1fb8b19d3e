#pragma once

#include <octet/octet_backend.h>

#include "registry.hpp"

namespace octet::core {

// Fills a caller's octet_backend_info (honouring its struct_size) from a
// backend and the capabilities in effect.
void fill_backend_info(const Backend& backend, const octet_backend_caps& caps,
                       octet_backend_info* out);
// Checks an option/info struct pointer and its struct_size.
void require_struct(const void* s, size_t struct_size, const char* name);

}  // namespace octet::core
