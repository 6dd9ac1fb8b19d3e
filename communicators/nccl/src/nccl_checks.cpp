// liboctet_nccl's argument rules (nccl_checks.hpp).
#include "nccl_checks.hpp"

#include <cmath>
#include <cstdlib>
#include <limits>

namespace octet_nccl {

size_t element_bytes(int32_t dtype) { return octet_dtype_size(static_cast<octet_dtype>(dtype)); }

std::string check_init(const void* id, int rank, int size, int device, const void* communicator, size_t struct_size) {
  if (communicator == nullptr) return "octet_nccl: argument 'communicator' is NULL";
  const size_t needed = offsetof(octet_communicator, wait) + sizeof(static_cast<octet_communicator*>(nullptr)->wait);
  if (struct_size < needed)
    return "octet_nccl: argument 'struct_size' (" + std::to_string(struct_size) +
           ") does not hold the users' ABI 1.7 octet_communicator (" + std::to_string(sizeof(octet_communicator)) +
           " bytes)";
  if (id == nullptr) return "octet_nccl: argument 'id' is NULL (make it with octet_nccl_get_unique_id on one rank)";
  if (size < 1) return "octet_nccl: argument 'size' (" + std::to_string(size) + ") must be >= 1";
  if (rank < 0 || rank >= size)
    return "octet_nccl: argument 'rank' (" + std::to_string(rank) + ") must be in [0, size) = [0, " +
           std::to_string(size) + ")";
  if (device < 0) return "octet_nccl: argument 'device' (" + std::to_string(device) + ") must be >= 0";
  return "";
}

std::string check_reduction(const char* entry, int32_t dtype, int32_t op) {
  const bool dtype_ok = dtype == OCTET_DTYPE_FP32 || dtype == OCTET_DTYPE_BF16 || dtype == OCTET_DTYPE_FP16;
  if (dtype_ok && (op == OCTET_REDUCE_SUM || op == OCTET_REDUCE_MAX)) return "";
  return std::string("octet_nccl: ") + entry + ": dtype " + octet_dtype_name(dtype) + " with op " + std::to_string(op) +
         " has no reduction (FP32, BF16, FP16 with SUM or MAX)";
}

std::string check_count(const char* entry, size_t count, size_t bytes, int ranks) {
  const size_t limit = std::numeric_limits<size_t>::max() / (bytes == 0 ? 1 : bytes) / size_t(ranks < 1 ? 1 : ranks);
  if (count <= limit) return "";
  return std::string("octet_nccl: ") + entry + ": count " + std::to_string(count) + " of " + std::to_string(bytes) +
         "-byte elements on " + std::to_string(ranks) + " ranks exceeds the addressable bytes";
}

std::string check_buffer(const char* entry, const char* name, const void* pointer, size_t count, BufferKind kind,
                         int buffer_device, int device) {
  const std::string head = std::string("octet_nccl: ") + entry + ": argument '" + name + "'";
  if (pointer == nullptr) return count == 0 ? "" : head + " is NULL";
  switch (kind) {
    case BufferKind::device:
      if (buffer_device != device)
        return head + " is memory of CUDA device " + std::to_string(buffer_device) +
               ", not of the communicator's device " + std::to_string(device);
      return "";
    case BufferKind::managed:
      return "";
    case BufferKind::registered_host:
    case BufferKind::unregistered_host:
      return head +
             " is host memory: the NCCL communicator takes device memory (memory_kinds = "
             "OCTET_COMM_DEVICE_MEMORY)";
  }
  return head + " is in an unknown memory";
}

std::string check_timeout(double seconds) {
  if (std::isfinite(seconds) && seconds >= 0) return "";
  return "octet_nccl: argument 'seconds' (" + std::to_string(seconds) + ") must be finite and >= 0 (0: no timeout)";
}

std::string timeout_from_text(const char* text, double* seconds) {
  if (text == nullptr || *text == '\0') return "";
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v) || v < 0)
    return std::string("octet_nccl: OCTET_NCCL_TIMEOUT_SECONDS ('") + text +
           "') must be a number of seconds >= 0 (0: no timeout)";
  *seconds = v;
  return "";
}

}  // namespace octet_nccl
