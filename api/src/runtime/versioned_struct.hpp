// Structs that cross the ABI start with `size_t struct_size` (ABI rule 4):
// a caller built against an older header passes a shorter struct, a newer
// caller a longer one. These helpers read and write only the common prefix.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "runtime/error.hpp"

namespace octet::core {

// Checks an option/info struct pointer and its struct_size.
inline void require_struct(const void* s, size_t struct_size, const char* name) {
  require(s != nullptr, "argument '", name, "' is NULL");
  require(struct_size >= sizeof(size_t), "argument '", name, "' has struct_size ", struct_size,
          ": set it to sizeof the struct (or use its _init function)");
}

// The caller's struct laid over `defaults`: fields beyond the caller's
// struct_size keep their defaults; NULL gives the defaults.
template <typename T>
T read_versioned(const T* in, T defaults, const char* name) {
  defaults.struct_size = sizeof(T);
  if (in == nullptr) return defaults;
  require_struct(in, in->struct_size, name);
  std::memcpy(reinterpret_cast<char*>(&defaults) + sizeof(size_t), reinterpret_cast<const char*>(in) + sizeof(size_t),
              std::min(in->struct_size, sizeof(T)) - sizeof(size_t));
  return defaults;
}

// Writes `value` into the caller's struct, as much as its struct_size holds;
// the caller's struct_size is kept.
template <typename T>
void write_versioned(const T& value, T* out, const char* name) {
  require_struct(out, out != nullptr ? out->struct_size : 0, name);
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&value) + sizeof(size_t),
              std::min(out->struct_size, sizeof(T)) - sizeof(size_t));
}

// An _init function's work for a caller whose struct is `size` bytes: the
// defaults, cut to min(size, sizeof(T)), with struct_size set to that.
template <typename T>
void write_defaults(T defaults, T* out, size_t size) {
  defaults.struct_size = std::min(size, sizeof(T));
  std::memcpy(out, &defaults, defaults.struct_size);
}

// The body of an _init function whose struct kept its size since it was
// added: the defaults, whole.
template <typename T>
void init_options(T* out, const T& defaults) {
  require(out != nullptr, "argument 'options' is NULL");
  *out = defaults;
}

// The body of an _init_sized function: the caller says how large its struct
// is (its sizeof), so an older caller's shorter struct is never overrun.
template <typename T>
void init_sized(T* out, T defaults, size_t size) {
  require(out != nullptr, "argument 'options' is NULL");
  require(size >= sizeof(size_t), "argument 'struct_size' (", size, ") cannot hold even the struct_size field");
  write_defaults(defaults, out, size);
}

}  // namespace octet::core
