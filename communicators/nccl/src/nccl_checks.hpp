// liboctet_nccl's argument rules, without CUDA or NCCL: the entries and
// init apply them before any CUDA call, and tests/nccl checks them on a
// machine with no GPU. Each returns "" when the argument is good, else the
// message (the caller's status is INVALID_ARGUMENT).
#pragma once

#include <octet/octet.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace octet_nccl {

// Where a buffer is, as cudaPointerGetAttributes says.
enum class BufferKind { unregistered_host, registered_host, device, managed };

// Bytes of one element of a dtype the collectives move; 0 if none.
size_t element_bytes(int32_t dtype);

// init's arguments (before any CUDA call).
std::string check_init(const void* id, int rank, int size, int device, const void* communicator, size_t struct_size);

// A reduction's dtype and op: FP32, BF16, FP16 with SUM or MAX.
std::string check_reduction(const char* entry, int32_t dtype, int32_t op);

// count elements of `bytes` each fit in size_t (and in the entry's scale:
// `ranks` copies for a gather or scatter).
std::string check_count(const char* entry, size_t count, size_t bytes, int ranks);

// A buffer argument: not NULL (unless count is 0) and device or managed
// memory of `device` (buffer_device: the device cudaPointerGetAttributes
// gives).
std::string check_buffer(const char* entry, const char* name, const void* pointer, size_t count, BufferKind kind,
                         int buffer_device, int device);

// The timeout: finite and >= 0.
std::string check_timeout(double seconds);

// Parses OCTET_NCCL_TIMEOUT_SECONDS (`text`, NULL or "" if unset) into
// *seconds; "" when good or unset.
std::string timeout_from_text(const char* text, double* seconds);

}  // namespace octet_nccl
